"""The SQLite file: one connection factory, one transaction primitive, named migrations.

Every connection goes through :func:`connect` (WAL, busy timeout, foreign keys, sqlite-vec).
Every write goes through :meth:`Store.transaction` (``BEGIN IMMEDIATE``; a ``SAVEPOINT`` when
nested), so a logical operation is one short transaction and a crash loses at most the one in
flight. apsw is in autocommit mode by default, which is what makes this explicit control work.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import apsw
import sqlite_vec

from remd.config import StoreConfig
from remd.errors import DatabaseLocked, InvalidInput, SchemaVersionError, StoreError
from remd.logs import get_logger

T = TypeVar("T")

log = get_logger("remd.store")

_SCHEMA_FILE = "schema.sql"


def _schema_sql() -> str:
    return (resources.files("remd") / _SCHEMA_FILE).read_text(encoding="utf-8")


def _migration_sql(name: str) -> Callable[[], str]:
    def read() -> str:
        return (resources.files("remd") / "migrations" / f"{name}.sql").read_text(
            encoding="utf-8")
    return read


# Named migrations, applied in order; each is recorded in remd_migrations in the transaction
# that applies it. The schema version of a file is the number of migrations it has. Never
# edit or reorder an entry once released: append a new one.
MIGRATIONS: tuple[tuple[str, Callable[[], str]], ...] = (
    ("0001_initial", _schema_sql),
    ("0002_vec_bit", _migration_sql("0002_vec_bit")),  # quantised vectors, tag/FTS indexes
    ("0003_vec_generation", _migration_sql("0003_vec_generation")),  # vector index reloads
    ("0004_node_tags_live", _migration_sql("0004_node_tags_live")),  # live rows of a tag
    ("0005_tag_log", _migration_sql("0005_tag_log")),  # tags changed, for the graph cache
    ("0006_node_log", _migration_sql("0006_node_log")),  # nodes changed, for the node mirror
    ("0007_node_tags_rid_cover", _migration_sql("0007_node_tags_rid_cover")),  # tags by memory
)
_LOG_VERSIONS = (("tag_log", 5), ("node_log", 6))  # change log, schema version adding it
# tag_log rows kept for readers (remd/graphcache.py); pruned in steps of _LOG_STEP.
LOG_KEEP = 65_536
_LOG_STEP = 4096
SCHEMA_VERSION = len(MIGRATIONS)


def _wrap(exc: apsw.Error, path: str) -> StoreError:
    """Turn an apsw error into the StoreError a caller can act on."""
    if isinstance(exc, apsw.BusyError | apsw.LockedError):
        return DatabaseLocked(f"database {path!r} is locked by another process (busy timeout)")
    if isinstance(exc, apsw.NotADBError):
        return StoreError(f"{path!r} is not a SQLite database")
    if isinstance(exc, apsw.CorruptError):
        return StoreError(f"database {path!r} is corrupt")
    if isinstance(exc, apsw.ReadOnlyError):
        return StoreError(f"database {path!r} is read-only")
    if isinstance(exc, apsw.FullError):
        return StoreError(f"database {path!r}: disk or database is full")
    if isinstance(exc, apsw.CantOpenError | apsw.PermissionsError):
        return StoreError(f"cannot open database {path!r}")
    if isinstance(exc, apsw.IOError):
        return StoreError(f"I/O error on database {path!r}")
    return StoreError(f"database {path!r}: {exc}")


def connect(path: str | Path, config: StoreConfig, *, create: bool = True) -> apsw.Connection:
    """Open ``path`` with remd's pragmas and sqlite-vec loaded.

    A new file is created with mode 0600 (SQLite then gives the -wal and -shm files the same
    mode). Raises StoreError if the file can't be opened or is not a database.
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
    flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    try:
        conn = apsw.Connection(path, flags=flags)
        conn.set_busy_timeout(config.busy_timeout_ms)
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        _wal(conn, config)
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes in WAL
        conn.execute("PRAGMA temp_store=MEMORY")
        conn.execute("PRAGMA cache_size=-32000")
        conn.execute(f"PRAGMA mmap_size={int(config.mmap_bytes)}")
    except apsw.Error as exc:
        raise _wrap(exc, path) from exc
    return conn


def int_scalar(conn: apsw.Connection, sql: str) -> int:
    """The first column of the first row as an int (0 for no row or NULL), on ``conn`` as it
    is: for reads inside a snapshot the caller already holds (``max(seq)`` of a change log)."""
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


_IN_CHUNK = 500  # ids bound per statement by rows_in


def rows_in(conn: apsw.Connection, sql: str, ids: Sequence[int]) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` for ``ids``, bound as the ``IN ({marks})`` list it holds, in
    statements of at most 500 ids (orderings in ``sql`` hold within each statement)."""
    for start in range(0, len(ids), _IN_CHUNK):
        part = list(ids[start:start + _IN_CHUNK])
        yield from conn.execute(sql.format(marks=",".join("?" * len(part))), part)


def _prune_logs(conn: apsw.Connection, tables: tuple[str, ...]) -> None:
    """Before a commit: drop the oldest rows of each change log (tag_log, node_log) once it
    holds LOG_KEEP + a step.

    Two index probes per log when there is nothing to do. Readers that had not yet seen the
    dropped rows notice and reload (remd/graphcache.py, remd/nodemirror.py).
    """
    for table in tables:
        (top,) = conn.execute(f"SELECT max(seq) FROM {table}").fetchone() or (None,)
        (low,) = conn.execute(f"SELECT min(seq) FROM {table}").fetchone() or (None,)
        if top is not None and top - low >= LOG_KEEP + _LOG_STEP:
            conn.execute(f"DELETE FROM {table} WHERE seq < ?", (top - LOG_KEEP,))


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


class Checkpointer:
    """Copies the WAL back into the database file on a thread of its own.

    SQLite's automatic checkpoint runs inside the commit that takes the WAL past its threshold,
    so one caller in a few dozen (an inject recording its pack, a save) paid for copying
    ~1000 pages and the fsyncs: 10-30 ms on this project's VM, the inject's slowest
    percentile. This hook replaces it (``sqlite3_wal_hook`` turns the automatic one off): a
    commit that leaves ``pages`` or more in the WAL only wakes the thread, which runs a
    PASSIVE checkpoint on its own connection (it never waits for readers or writers; what it
    cannot copy yet is copied next time). Durability is unchanged: in WAL mode a commit is on
    disk in the WAL before the checkpoint. The thread and its connection start with the first
    checkpoint, so a Store that never writes much has neither.
    """

    def __init__(self, path: str, config: StoreConfig) -> None:
        self.path = path
        self.config = config
        self.pages = config.checkpoint_pages
        self.runs = 0  # checkpoints done (tests look)
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def hook(self, conn: apsw.Connection, name: str, pages: int) -> int:
        """The WAL hook: cheap, called after every commit with the WAL's size in pages."""
        if pages >= self.pages and not self._stop:
            with self._guard:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name=f"remd-checkpoint:{self.path}")
                    self._thread.start()
            self._wake.set()
        return apsw.SQLITE_OK

    def _run(self) -> None:
        conn: apsw.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    if conn is None:
                        conn = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READWRITE)
                        conn.set_busy_timeout(self.config.busy_timeout_ms)
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except apsw.Error as exc:  # the next commit past the threshold tries again
                    log.warning("store.checkpoint_failed", path=self.path, error=str(exc))
        finally:
            if conn is not None:
                with contextlib.suppress(apsw.Error):
                    conn.close()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection."""
        with self._guard:
            self._stop = True
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join()


class Store:
    """A connection plus the transaction primitive and the migration runner.

    One Store may be shared by threads: a re-entrant lock serialises its transactions, since
    one SQLite connection can only be in one transaction at a time.
    """

    def __init__(self, path: str | Path, config: StoreConfig, *, create: bool = True) -> None:
        self.path = str(path)
        self.config = config
        self.conn = connect(self.path, config, create=create)
        self.checkpointer: Checkpointer | None = None
        if config.checkpoint_pages > 0 and self.path != ":memory:":
            self.checkpointer = Checkpointer(self.path, config)
            self.conn.set_wal_hook(self.checkpointer.hook)
        self._lock = threading.RLock()
        self._attached: dict[Hashable, Any] = {}
        self._attached_lock = threading.Lock()
        self._depth = 0
        self._savepoints = itertools.count()
        self._logs: tuple[str, ...] = ()  # change logs the file has, pruned at each commit
        self.migrate()
        version = self.schema_version()
        self._logs = tuple(t for t, v in _LOG_VERSIONS if version >= v)

    def attached(self, key: Hashable, make: Callable[[], T],
                 keep: Callable[[T], bool] | None = None) -> T:
        """The in-process object kept under ``key`` for this open store (inject's caches and
        indexes: remd/graphcache.py, nodemirror.py, lexical.py, vectors.py), made by ``make``
        on first use, or again when ``keep`` says the kept one no longer fits."""
        with self._attached_lock:
            obj: T | None = self._attached.get(key)
            if obj is None or (keep is not None and not keep(obj)):
                obj = self._attached[key] = make()
            return obj

    # -- transactions -------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; a SAVEPOINT when nested; rollback on any error.

        Retries BEGIN with jittered backoff when another process holds the write lock past the
        busy timeout; raises DatabaseLocked after ``lock_retries`` attempts. apsw errors inside
        the block become StoreError subclasses.
        """
        with self._lock:
            if self._depth:
                name = f"remd_sp{next(self._savepoints)}"
                self.conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self.conn
                except BaseException:
                    self.conn.execute(f"ROLLBACK TO {name}; RELEASE {name}")
                    raise
                else:
                    self.conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._begin()
            self._depth = 1
            try:
                yield self.conn
            except BaseException as exc:
                self._rollback()
                if isinstance(exc, apsw.Error):
                    raise _wrap(exc, self.path) from exc
                if isinstance(exc, UnicodeEncodeError):  # a bound string with a lone surrogate
                    raise InvalidInput("value is not valid Unicode (lone surrogate)") from exc
                raise
            else:
                try:
                    if self._logs:
                        _prune_logs(self.conn, self._logs)
                    self.conn.execute("COMMIT")
                except apsw.Error as exc:
                    self._rollback()
                    raise _wrap(exc, self.path) from exc
            finally:
                self._depth = 0

    def _begin(self) -> None:
        for attempt in range(self.config.lock_retries + 1):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return
            except apsw.BusyError as exc:
                if attempt == self.config.lock_retries:
                    raise _wrap(exc, self.path) from exc
                time.sleep(min(1.0, 0.02 * 2**attempt) * (0.5 + random.random()))
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            with contextlib.suppress(apsw.Error):
                self.conn.execute("ROLLBACK")

    # -- reads --------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Run a read and return all rows; apsw errors become StoreError."""
        with self._lock:
            try:
                return self.conn.execute(sql, params).fetchall()
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc
            except UnicodeEncodeError as exc:  # a caller's string with a lone surrogate
                raise InvalidInput("value is not valid Unicode (lone surrogate)") from exc

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        """A read transaction: several reads that see one consistent state of the file."""
        with self._lock:
            if self._depth:
                yield self.conn
                return
            try:
                self.conn.execute("BEGIN DEFERRED")
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc
            self._depth = 1
            try:
                yield self.conn
            except apsw.Error as exc:
                raise _wrap(exc, self.path) from exc
            except UnicodeEncodeError as exc:  # a bound string with a lone surrogate
                raise InvalidInput("value is not valid Unicode (lone surrogate)") from exc
            finally:
                self._depth = 0
                self._rollback()

    # -- schema -------------------------------------------------------------------------
    def schema_version(self) -> int:
        has_meta = self.scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'remd_meta'"
        )
        if not has_meta:
            return 0
        value = self.scalar("SELECT value FROM remd_meta WHERE key = 'schema_version'")
        return int(value) if value is not None else 0

    def migrate(self) -> None:
        """Apply the migrations this file lacks; refuse a file newer than this code.

        Raises SchemaVersionError for a newer file, StoreError for a file that is not ours.
        """
        if self._check_version(self.schema_version()):
            return
        with self.transaction() as conn:
            # Decide again under the write lock: agents opening a new file together race to
            # migrate it, and the winner's tables must not make the others call it foreign.
            version = self.schema_version()
            if self._check_version(version):
                return
            if version == 0 and self.scalar(
                    "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
                raise StoreError(f"{self.path!r} is a SQLite database but not a remd one")
            for name, sql in MIGRATIONS[version:]:
                conn.execute(sql())
                conn.execute(
                    "INSERT INTO remd_migrations (name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(UTC).isoformat(timespec="seconds")),
                )
            conn.execute(
                "INSERT INTO remd_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def _check_version(self, version: int) -> bool:
        """True if the file is current; raises SchemaVersionError if it is newer than us."""
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database {self.path!r} has schema version {version}, newer than this remd "
                f"({SCHEMA_VERSION}); upgrade remd"
            )
        return version == SCHEMA_VERSION

    def close(self) -> None:
        with self._lock:
            if self.checkpointer is not None:
                self.checkpointer.close()
            self.conn.close()
