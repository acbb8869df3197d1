"""The SQLite file: one connection factory, one transaction primitive, named migrations
(listed in :mod:`remd.store.sqlite.store.schema`, applied by :meth:`Store.migrate`).

Every connection goes through :func:`connect` (WAL, busy timeout, foreign keys, sqlite-vec).
Every write goes through :meth:`Store.transaction` (``BEGIN IMMEDIATE``; a ``SAVEPOINT`` when
nested), so a logical operation is one short transaction and a crash loses at most the one in
flight. apsw is in autocommit mode by default, which is what makes this explicit control work.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

from remd.config import StoreConfig
from remd.errors import (
    DatabaseLocked,
    InvalidInput,
    PoolExhausted,
    StoreError,
)
from remd.logs import get_logger
from remd.store import base
from remd.store.base import BaseStore, Names
from remd.store.quantisation import to_int8
from remd.store.reads import int_scalar
from remd.store.sqlite.checkpoints import Checkpointer
from remd.store.sqlite.dialect import SqliteConnection
from remd.store.sqlite.resident import Resident
from remd.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, schema_sql
from remd.store.sqlite.walfiles import Identity, check_reader, check_writable, keep, why_read_only

log = get_logger("remd.store")

_LOG_VERSIONS = (("tag_log", 5), ("node_log", 6))  # change log, schema version adding it


def _wrap(exc: apsw.Error, path: str) -> StoreError:
    """Turn an apsw error into the StoreError a caller can act on."""
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return DatabaseLocked(f"database {path!r} is locked by another process (busy timeout)")
    if isinstance(exc, apsw.NotADBError):
        return StoreError(f"{path!r} is not a SQLite database")
    if isinstance(exc, apsw.CorruptError):
        return StoreError(f"database {path!r} is corrupt")
    if isinstance(exc, apsw.ReadOnlyError):
        return why_read_only(path)  # names a -wal/-shm another user left
    if isinstance(exc, apsw.FullError):
        return StoreError(f"database {path!r}: disk or database is full")
    if isinstance(exc, apsw.CantOpenError | apsw.PermissionsError):
        return StoreError(f"cannot open database {path!r}")
    if isinstance(exc, apsw.IOError):
        return StoreError(f"I/O error on database {path!r}")
    return StoreError(f"database {path!r}: {exc}")


def connect(path: str | Path, config: StoreConfig, *, create: bool = True) -> SqliteConnection:
    """Open ``path`` with remd's pragmas and sqlite-vec loaded.

    A new file is created with mode 0600 (SQLite then gives the -wal and -shm files the same
    mode), and they are kept (remd/store/sqlite/walfiles.py). Raises StoreError if the file can't
    be opened or is not a database, ReadOnlyStore if only reading it would block its owner.
    """
    path = str(path)
    if path != ":memory:" and create and not os.path.exists(path):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.close(fd)
        except FileExistsError:
            pass  # another process created it between our check and open
        except OSError as exc:
            raise StoreError(f"cannot create database {path!r}: {exc.strerror}") from exc
    if not create and path != ":memory:" and not os.path.exists(path):
        raise StoreError(f"no such database: {path}")  # a typo is not a new empty file
    if not create and os.path.isfile(path) and not os.path.getsize(path):  # WAL would write
        raise StoreError(f"no such database: {path!r} is an empty file")
    check_reader(path)
    flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    try:
        conn = SqliteConnection(path, flags=flags)
        conn.set_busy_timeout(config.busy_timeout_ms)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        _wal(conn, config)
        keep(conn, path)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("PRAGMA cache_size=-32000")
        conn.execute(f"PRAGMA mmap_size={int(config.mmap_bytes)}")
    except apsw.Error as exc:
        raise _wrap(exc, path) from exc
    return conn


def _file_bytes(path: str) -> int:
    """The file and its WAL, in bytes."""
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


def _prune_logs(conn: apsw.Connection, tables: tuple[str, ...]) -> None:
    """Before a commit: drop the oldest rows of each change log (tag_log, node_log) once it
    holds base.LOG_KEEP + a step.

    Two index probes per log when there is nothing to do. Readers that had not yet seen the
    dropped rows notice and reload (remd/index/graphcache.py, remd/index/nodemirror.py).
    """
    for table in tables:
        (top,) = conn.execute(f"SELECT max(seq) FROM {table}").fetchone() or (None,)
        (low,) = conn.execute(f"SELECT min(seq) FROM {table}").fetchone() or (None,)
        if top is not None and top - low >= base.LOG_KEEP + base.LOG_STEP:
            conn.execute(f"DELETE FROM {table} WHERE seq < ?", (top - base.LOG_KEEP,))


def _wal(conn: apsw.Connection, config: StoreConfig) -> None:
    """Put the file in WAL mode (persistent: only a new file needs it).

    Switching needs an exclusive lock, and SQLite answers BUSY at once instead of calling the
    busy handler while another connection reads the new file: agents opening a new file
    together retry here, for up to the busy timeout.
    """
    deadline = time.monotonic() + config.busy_timeout_ms / 1000
    delay = 0.005
    while True:
        mode = conn.execute("PRAGMA journal_mode").fetchone()
        if mode is not None and str(mode[0]).lower() == "wal":
            return
        with contextlib.suppress(apsw.BusyError):
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if mode is not None and str(mode[0]).lower() == "wal":
                return
        if time.monotonic() >= deadline:
            raise apsw.BusyError("database is locked (switching to WAL)")
        time.sleep(delay * (0.5 + random.random()))
        delay = min(0.1, delay * 2)


class Store(BaseStore[SqliteConnection]):
    """The file, through a bounded pool of connections shared by every thread of the process.

    A thread that needs the file leases one connection for the outermost ``transaction``,
    ``snapshot`` or ``connection`` block; nested blocks on the same thread use the same
    connection (a transaction nested in another is a SAVEPOINT). At most
    ``store.max_connections`` connections exist; a thread that finds them all leased waits up
    to ``store.pool_wait_ms`` and then gets :class:`~remd.errors.PoolExhausted` (busy: retry).
    Connections are opened on demand and kept for the next lease.

    The file stays the one first opened (:class:`~remd.store.sqlite.walfiles.Identity`): once
    its path holds another file or none, leases and commits raise StoreError naming the path.

    A write transaction is ``BEGIN IMMEDIATE`` ... ``COMMIT`` (the namespaces it names are
    ignored: a SQLite file has one writer); BEGIN is retried with jittered backoff when another
    process holds the write lock past the busy timeout (DatabaseLocked after ``lock_retries``
    attempts). apsw errors inside a block become StoreError subclasses.
    """

    def __init__(self, path: str | Path, config: StoreConfig, *, create: bool = True) -> None:
        super().__init__()
        self.path = str(path)
        self.config = config
        self.create = create
        self.checkpointer: Checkpointer | None = None
        self.identity: Identity | None = None  # the file, once the first connection opens it
        if config.checkpoint_pages > 0 and self.path != ":memory:":
            self.checkpointer = Checkpointer(self.path, config)
        self.resident: Resident | None = None  # [store] resident_mb: the file kept in memory
        # ":memory:" is one database per connection: the pool keeps it to one.
        size = 1 if self.path == ":memory:" else config.max_connections
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[SqliteConnection] = []
        self._idle_lock = threading.Lock()
        self.opened = 0  # connections opened so far (at most max_connections live at once)
        # Leases that found every connection taken and waited, and those that gave up
        # (PoolExhausted): counted on the waiting path only (remd.http.metrics reads them).
        self._waits = [0, 0]
        self._waits_lock = threading.Lock()
        self._logs: tuple[str, ...] = ()  # change logs the file has, pruned at each commit
        self.migrate()
        self._logs = tuple(t for t, v in _LOG_VERSIONS if self.schema_version() >= v)
        if config.resident_mb and self.path != ":memory:":
            self.resident = Resident(self.path, config.resident_mb << 20)

    # -- the pool -----------------------------------------------------------------------
    def _open(self) -> SqliteConnection:
        conn = connect(self.path, self.config, create=self.create)
        self.opened += 1
        if self.identity is None and self.path != ":memory:":
            self.identity = Identity.of(self.path)
        if self.checkpointer is not None:
            conn.set_wal_hook(self.checkpointer.hook)
        return conn

    def _check_out(self) -> SqliteConnection:
        self.check_file()  # never a read of a file gone, nor a new empty one in its place
        if not self._slots.acquire(blocking=False):
            waited = self._slots.acquire(timeout=self.config.pool_wait_ms / 1000)
            with self._waits_lock:
                self._waits[0 if waited else 1] += 1
            if not waited:
                raise PoolExhausted(
                    f"all {self.config.max_connections} connections to {self.path!r} are in "
                    f"use (waited {self.config.pool_wait_ms} ms); retry later")
        try:
            with self._idle_lock:
                conn = self._idle.pop() if self._idle else None
            return conn if conn is not None else self._open()
        except BaseException:
            self._slots.release()
            raise

    def _check_in(self, conn: SqliteConnection) -> None:
        try:
            if conn.in_transaction:  # a generator abandoned mid-block: never leak a lock
                with contextlib.suppress(apsw.Error):
                    conn.execute("ROLLBACK")
            with self._idle_lock:
                keep = not self._closed
                if keep:
                    self._idle.append(conn)
            if not keep:
                with contextlib.suppress(apsw.Error):
                    conn.close()
        finally:
            self._slots.release()

    def check_file(self) -> None:
        """Raise StoreError when the path no longer holds the file opened (one ``stat``)."""
        if self.identity is not None:
            self.identity.check()

    def check_writable(self) -> None:
        """Raise StoreError (ReadOnlyStore) naming why a write would be refused now, without
        taking a lock (remd/store/sqlite/walfiles.py)."""
        self.check_file()
        check_writable(self.path)

    def compact(self) -> tuple[int, int]:
        """Refresh the planner's statistics, rewrite the file with every table and index in
        key order (``VACUUM``: indexes that grew by random inserts are left ~2/3 full), then
        fold the WAL back in; (bytes before, bytes after: the file and its WAL, as they are
        on disk when it returns). Statistics first, so they are packed too and nothing is
        left in the WAL after the measure. A file that never had statistics may come out a
        few pages larger (SQLite's sqlite_stat1 and sqlite_stat4 tables). Writers wait
        meanwhile (~1 min at 1M memories on a 2-core VM)."""
        before = _file_bytes(self.path)
        with self.connection() as conn:
            try:
                conn.execute("ANALYZE")
                conn.execute("VACUUM")
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc
        return before, _file_bytes(self.path)

    def pool_waits(self) -> tuple[int, int]:
        """(leases that waited for a connection and got one, leases that gave up) so far."""
        with self._waits_lock:
            return self._waits[0], self._waits[1]

    # -- transactions (the flow: remd.store.base) ------------------------------------------
    def _begin(self, conn: SqliteConnection, namespace: Names) -> None:
        for attempt in range(self.config.lock_retries + 1):
            try:
                conn.execute("BEGIN IMMEDIATE")
                break
            except apsw.BusyError as exc:
                if attempt == self.config.lock_retries:
                    raise _wrap(exc, self.path) from exc
                time.sleep(min(1.0, 0.02 * 2**attempt) * (0.5 + random.random()))
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc
        try:
            self.check_file()  # the file may have gone while this thread waited
        except BaseException:
            _rollback(conn)
            raise

    def _commit(self, conn: SqliteConnection) -> None:
        try:
            if self._logs:
                _prune_logs(conn, self._logs)
            self.check_file()  # nothing committed into a file gone from its path
            conn.execute("COMMIT")
        except apsw.Error as exc:
            _rollback(conn)
            raise _wrap(exc, self.path) from exc
        except StoreError:
            _rollback(conn)
            raise
        # Gone between the check and the COMMIT: not acknowledged either.
        self.check_file()

    def _rollback(self, conn: SqliteConnection) -> None:
        _rollback(conn)

    def _translated(self, exc: BaseException) -> BaseException | None:
        if isinstance(exc, apsw.Error):
            return _wrap(exc, self.path)
        if isinstance(exc, UnicodeEncodeError):  # a bound string with a lone surrogate
            return InvalidInput("value is not valid UTF-8")
        return None

    def write_all(self, statements: Sequence[tuple[str, Sequence[Any]]],
                  namespace: str | Iterable[str] | None = None) -> None:
        """Run ``statements`` (SQL, parameters) in one write transaction (``namespace``
        ignored, as :meth:`transaction`'s)."""
        with self.transaction() as conn:
            for sql, params in statements:
                conn.execute(sql, params)

    # -- reads --------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Run a read and return all rows; apsw errors become StoreError."""
        with self.connection() as conn, self._translating():
            return conn.execute(sql, params).fetchall()

    def exact_scan(self, namespace: str, query: Any, k: int) -> list[tuple[int, float]]:
        """(rid, cosine distance) of the k nearest of every stored vector of the namespace
        (every status), nearest first: sqlite-vec's ``vec_distance_cosine`` over the stored
        vectors of the query's dimension (the query in the stored int8 form)."""
        blob = to_int8(query)[0].tobytes()
        return [(int(r), float(d)) for r, d in self.query(
            "SELECT rid, vec_distance_cosine(vec_int8(vec), vec_int8(?)) AS d FROM node_vec_bit "
            "WHERE namespace = ? AND length(vec) = ? ORDER BY d, rid LIMIT ?",
            (blob, namespace, len(blob), k))]

    def _begin_read(self, conn: SqliteConnection) -> None:
        try:
            conn.execute("BEGIN DEFERRED")
        except apsw.Error as exc:
            raise _wrap(exc, self.path) from exc
        if self.resident is not None:
            self.resident.refresh()  # (at most every few seconds: maps what the file gained)

    # -- schema (the flow: remd.store.base) ------------------------------------------------
    def _recorded(self, conn: SqliteConnection) -> list[str]:
        """Migration names recorded in the file (none before 0001 made the table)."""
        if not int_scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                "AND name = 'remd_migrations'"):
            return []
        return [str(r[0]) for r in conn.execute(
            "SELECT name FROM remd_migrations ORDER BY rowid")]

    def _known(self) -> list[str]:
        return [name for name, _ in MIGRATIONS]

    def _schema_number(self) -> int:
        return SCHEMA_VERSION

    def _make(self, conn: SqliteConnection, todo: Sequence[str]) -> None:
        if int_scalar(conn, "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
            raise StoreError(f"{self.path!r} is a SQLite database but not a remd one")
        if not self.create:  # as a missing file is: only init/save/import make one
            raise StoreError(f"no such database: {self.path!r} has no remd tables")
        conn.execute(schema_sql())  # a new file: the whole schema at once

    def _apply(self, conn: SqliteConnection, todo: Sequence[str]) -> None:
        steps = dict(MIGRATIONS)
        for name in todo:
            steps[name](conn)

    def close(self) -> None:
        """Close the idle connections (leased ones close when they come back) and stop the
        checkpointer."""
        with self._idle_lock:
            self._closed = True
            idle, self._idle = self._idle, []
        if idle and self.identity is not None:
            self.identity.settle(idle[0])
        for conn in idle:
            with contextlib.suppress(apsw.Error):
                conn.close()
        if self.checkpointer is not None:
            self.checkpointer.close()
        if self.resident is not None:
            self.resident.close()


def _rollback(conn: apsw.Connection) -> None:
    if conn.in_transaction:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
