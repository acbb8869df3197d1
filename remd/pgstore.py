"""The PostgreSQL store: the same interface as :class:`remd.store.Store`, on a server.

Selected by a ``postgresql://`` (or ``postgres://``) URL wherever a file path is taken
(``--db``, ``REMD_DB``, ``Memory(url)``). The engine's SQL is written once, in SQLite's dialect;
:class:`PgConnection` runs each statement through :func:`remd.pgsql.translate` and offers the
part of apsw's connection interface the engine uses (``execute`` returning a cursor,
``executemany``, ``total_changes``, ``in_transaction``).

Semantics kept from SQLite:

- A write transaction is serialised with every other write transaction on the database (one
  transaction-scoped advisory lock, taken at BEGIN): SQLite's one-writer rule, which the change
  logs rely on (seq order = commit order; see the schema) and the write path's read-then-write
  steps (fact supersession, tag counts) assume. Reads never wait for it.
- ``snapshot()`` is a REPEATABLE READ transaction: several reads see one state.
- Named migrations (remd/pg_migrations/), with the same refusal of a newer schema.

Connections come from a psycopg_pool pool of ``store.max_connections`` per process, leased to
a thread for the outermost block as the SQLite store does.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

from remd import store
from remd.config import StoreConfig
from remd.errors import (
    DatabaseLocked,
    InvalidInput,
    PoolExhausted,
    ReadOnlyStore,
    SchemaVersionError,
    StoreError,
    first_line,
)
from remd.logs import get_logger
from remd.pgconnect import reach, redact
from remd.pgsql import as_arrays, group, translate

if TYPE_CHECKING:
    import apsw
    import psycopg

log = get_logger("remd.pgstore")

URL_PREFIXES = ("postgresql://", "postgres://")
WRITE_LOCK = 0x72656D64  # "remd": the advisory lock every write transaction holds
_BEGIN = ("BEGIN", f"SELECT pg_advisory_xact_lock({WRITE_LOCK:d})")
PG_MIGRATIONS: tuple[str, ...] = ("0001_initial", "0002_update_judged")


def _commit() -> tuple[str, ...]:
    """COMMIT, after pruning the change logs as the SQLite store does (remd.store._prune_logs:
    the oldest rows of a log once it holds LOG_KEEP + a step), sent together. Here each log's
    pruning is one statement, its condition evaluated once before any row is looked at
    (SQLite would test it row by row: it probes first instead)."""
    return _commit_sql(store.LOG_KEEP, store._LOG_STEP)


@functools.cache
def _commit_sql(keep: int, step: int) -> tuple[str, ...]:
    return (*(f"DELETE FROM {log} WHERE (SELECT max(seq) - min(seq) FROM {log}) >= "
              f"{keep + step:d} AND seq < (SELECT max(seq) FROM {log}) - {keep:d}"
              for log in ("tag_log", "node_log")), "COMMIT")


def is_url(path: object) -> bool:
    """Whether ``path`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(path, str) and path.startswith(URL_PREFIXES)


def is_postgres(obj: object) -> bool:
    """Whether ``obj`` (a store or one of its connections) is PostgreSQL's rather than
    SQLite's."""
    return getattr(obj, "dialect", "sqlite") == "postgresql"


def shown(path: object) -> str:
    """``path`` as messages and logs may show it: a URL without its password."""
    return redact(path) if isinstance(path, str) and is_url(path) else str(path)


def _migration_sql(name: str) -> str:
    return (resources.files("remd") / "pg_migrations" / f"{name}.sql").read_text(
        encoding="utf-8")


class _Cursor:
    """What apsw's cursor gives the engine: fetchall, fetchone, iteration."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows
        self._at = 0

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows[self._at:], []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while self._at < len(self._rows):
            self._at += 1
            yield self._rows[self._at - 1]


def _value(v: Any) -> Any:
    if isinstance(v, bool):  # apsw binds a bool as an integer; PostgreSQL would type it boolean
        return int(v)
    if isinstance(v, str) and "\x00" in v:  # SQLite text can hold NUL, PostgreSQL's can't
        raise InvalidInput("text can't contain a NUL character (U+0000)")
    return v


# A read for PgConnection.prefetch: (SQL, parameters) or (SQL, parameters, binary).
Read = tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], bool]


def _key(sql: str, params: Any) -> tuple[str, tuple[Any, ...]]:
    """A read's key in a snapshot's memo (lists, e.g. an array parameter, as tuples)."""
    return sql, tuple(tuple(p) if isinstance(p, list) else p for p in params)


def _send(cur: Any, sql: str, params: Any, *, binary: bool = False) -> None:
    """Execute a read on a server-side binding cursor, IN lists as arrays: one statement text
    (one prepared plan) for any length."""
    text, spans = as_arrays(translate(sql))
    cur.execute(text, group(_params(params), spans) if params else None, binary=binary)


def _params(params: Any) -> Any:
    if isinstance(params, dict):
        return {k: _value(v) for k, v in params.items()}
    return [_value(v) for v in params]


class PgConnection:
    """A pooled psycopg connection speaking to the engine as an apsw connection does."""

    dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any], url: str) -> None:
        self.raw = conn
        self.url = url
        self.changes = 0
        # Inside a read snapshot (PgStore.snapshot): the rows of each read already made in it.
        # The snapshot sees one state, so the same read gives the same rows: the caches'
        # coherence checks (the same change log asked by two of them) cost one round trip.
        # Any other statement empties it.
        self.memo: dict[tuple[str, tuple[Any, ...]], list[tuple[Any, ...]]] | None = None
        # A snapshot's BEGIN, not sent yet: it goes with the first statement (in the same
        # message when that is a prefetch). PostgreSQL takes the snapshot at the first
        # statement anyway, so the reads see one state all the same.
        self.pending = ""

    def _begin(self) -> None:
        if self.pending:
            begin, self.pending = self.pending, ""
            self.script(begin)

    @property
    def in_transaction(self) -> bool:
        import psycopg.pq

        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def total_changes(self) -> int:
        return self.changes

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        import psycopg

        self._begin()
        key = None
        if self.memo is not None:
            if sql.lstrip()[:6].upper() == "SELECT" and not isinstance(params, dict):
                key = _key(sql, params)
                if key in self.memo:
                    return _Cursor(self.memo[key])
            else:
                self.memo.clear()
        try:
            # Reads in a snapshot are bound server-side, so psycopg prepares the ones a
            # connection repeats (their plans are reused); everything else client-side.
            with (psycopg.Cursor(self.raw) if key is not None else self.raw.cursor()) as cur:
                if key is not None:
                    _send(cur, sql, params)
                else:
                    cur.execute(translate(sql), _params(params) if params else None)
                self.changes += max(cur.rowcount, 0) if cur.description is None else 0
                rows = cur.fetchall() if cur.description is not None else []
                if key is not None and self.memo is not None:
                    self.memo[key] = rows
                return _Cursor(rows)
        except psycopg.Error as exc:
            raise wrap(exc, self.url) from exc
        except UnicodeEncodeError as exc:  # a bound string with a lone surrogate
            raise InvalidInput("value is not valid UTF-8") from exc

    def blobs(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """The rows of a read of binary columns (vectors), bound server-side and returned in
        binary: bytea comes back as its bytes, not as hex text twice their size to decode."""
        import psycopg

        if self.memo is not None:
            got = self.memo.get(_key(sql, params))
            if got is not None:
                return got
        self._begin()
        try:
            with psycopg.Cursor(self.raw) as cur:
                _send(cur, sql, params, binary=True)
                return cur.fetchall()
        except psycopg.Error as exc:
            raise wrap(exc, self.url) from exc

    def executemany(self, sql: str, seq: Any) -> None:
        import psycopg

        rows = [_params(p) for p in seq]
        if not rows:
            return
        self._begin()
        try:
            with self.raw.cursor() as cur:
                cur.executemany(translate(sql), rows)
                self.changes += max(cur.rowcount, 0)
        except psycopg.Error as exc:
            raise wrap(exc, self.url) from exc
        except UnicodeEncodeError as exc:
            raise InvalidInput("value is not valid UTF-8") from exc

    def prefetch(self, statements: Sequence[Read],
                 then: Callable[[], Sequence[Read]] | None = None) -> None:
        """Inside a read snapshot: send ``statements`` (reads: SQL and parameters, and
        optionally True for :meth:`blobs`'s binary rows) in one pipeline, with the snapshot's
        BEGIN when it has not gone yet, keeping their rows for when :meth:`execute` or
        :meth:`blobs` asks them. One round trip instead of one each, each statement bound
        and prepared as those methods do. ``then`` gives more reads once the first are on
        their way: what it waits for (a vector scan on another thread) overlaps the server's
        work on them. Outside a snapshot, nothing."""
        memo = self.memo
        if memo is None:
            return

        def unread(reads: Sequence[Read]) -> dict[tuple[str, tuple[Any, ...]], Read]:
            todo: dict[tuple[str, tuple[Any, ...]], Read] = {}
            for read in reads:
                key = _key(read[0], read[1])
                if key not in memo:
                    todo.setdefault(key, read)
            return todo

        first = unread(statements)
        if not first and then is not None:  # nothing to overlap with: one message
            first, then = unread(then()), None
        if not first:
            return
        later: dict[tuple[str, tuple[Any, ...]], Read] = {}

        def more() -> list[Read]:
            assert then is not None
            later.update((k, r) for k, r in unread(then()).items() if k not in first)
            return list(later.values())

        cursors = self._pipeline(list(first.values()), more if then is not None else None)
        for key, cur in zip([*first, *later], cursors, strict=True):
            memo[key] = cur.fetchall()

    def pipelined(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` (no rows wanted) in one pipeline: one round trip, each bound
        server-side (IN lists as arrays), so the ones repeated are prepared once."""
        self._pipeline(statements)

    def _pipeline(self, first: Sequence[Read], then: Callable[[], Sequence[Read]] | None = None
                  ) -> list[Any]:
        """Send ``first``, then what ``then`` gives, in one pipeline after the pending BEGIN:
        their cursors, rows in."""
        import psycopg

        begin, self.pending = self.pending, ""
        cursors: list[Any] = []

        def send(reads: Sequence[Read]) -> None:
            for sql, params, *binary in reads:
                cursors.append(cur := psycopg.Cursor(self.raw))
                _send(cur, sql, params, binary=bool(binary and binary[0]))

        try:
            with self.raw.pipeline():
                if begin:
                    psycopg.Cursor(self.raw).execute(cast(Any, begin))
                send(first)
                if then is not None:
                    send(then())
        except psycopg.Error as exc:
            raise wrap(exc, self.url) from exc
        except UnicodeEncodeError as exc:
            raise InvalidInput("value is not valid UTF-8") from exc
        return cursors

    def script(self, sql: str) -> None:
        """Run several statements as they are (schema files: no translation)."""
        import psycopg

        try:
            self.raw.execute(cast(Any, sql))
        except psycopg.Error as exc:
            raise wrap(exc, self.url) from exc


def wrap(exc: Exception, url: str) -> Exception:
    """Turn a psycopg error into the StoreError a caller can act on."""
    import psycopg.errors as e

    where = redact(url)
    if isinstance(exc, e.LockNotAvailable | e.DeadlockDetected | e.SerializationFailure):
        return DatabaseLocked(f"database {where!r} is busy: {exc.__class__.__name__}")
    if isinstance(exc, e.ReadOnlySqlTransaction | e.InsufficientPrivilege):
        return ReadOnlyStore(f"database {where!r} is read-only for this user")
    if isinstance(exc, e.UntranslatableCharacter | e.CharacterNotInRepertoire):
        return InvalidInput(f"value can't be stored in {where!r}: {exc}")
    if isinstance(exc, e.DiskFull):
        return StoreError(f"database {where!r}: disk is full")
    if isinstance(exc, e.OperationalError):
        return StoreError(f"cannot use database {where!r}: {first_line(exc).strip()[:200]}")
    return StoreError(f"database {where!r}: {str(exc).strip()[:300]}")


@functools.cache
def _float8_dumper() -> type:
    from psycopg.types.numeric import FloatDumper

    class Float8(FloatDumper):
        """A Python float bound client-side as ``(0.9::float8)``, not a bare ``0.9``, which
        PostgreSQL would read as numeric: ``1.0 - 0.9`` must be the float arithmetic SQLite
        does (0.09999999999999998), not exact decimal arithmetic."""

        def quote(self, obj: Any) -> bytes:
            literal = bytes(super().quote(obj))
            return literal if b"::" in literal else b"(" + literal + b"::float8)"

    return Float8


class PgStore:
    """A PostgreSQL database through a bounded pool; the interface of :class:`Store`."""

    def __init__(self, url: str, config: StoreConfig, *, create: bool = True) -> None:
        import psycopg
        from psycopg.types.numeric import FloatLoader

        _Float8 = _float8_dumper()
        from psycopg_pool import ConnectionPool

        self.path = url
        self.config = config
        self.create = create
        self.dialect = "postgresql"
        self._local = threading.local()
        self._savepoints = itertools.count()
        self._closed = False

        self.opened = 0  # connections opened so far (at most max_connections at once)

        def configure(conn: psycopg.Connection[Any]) -> None:
            self.opened += 1
            conn.adapters.register_dumper(float, _Float8)
            # sum()/avg() of integers are numeric: the engine computes with floats.
            conn.adapters.register_loader("numeric", FloatLoader)

        reach(url, config)
        try:
            self._pool = ConnectionPool(
                url, min_size=0, max_size=config.max_connections, open=True,
                # Client-side binding: a parameter's type never has to be inferred (SQLite
                # never asks), and one round trip per statement.
                kwargs={"autocommit": True, "cursor_factory": psycopg.ClientCursor},
                configure=configure,
                timeout=config.pool_wait_ms / 1000, name="remd")
        except Exception as exc:  # a malformed URL
            raise StoreError(f"cannot use database {redact(url)!r}: {exc}") from exc
        try:
            self.migrate()
        except BaseException:
            self._pool.close()
            raise

    # -- the pool -----------------------------------------------------------------------
    @property
    def conn(self) -> apsw.Connection:
        held = getattr(self._local, "conn", None)
        if held is None:
            raise StoreError("no connection is held by this thread (use Store.connection())")
        return cast("apsw.Connection", held)

    @contextlib.contextmanager
    def connection(self) -> Iterator[apsw.Connection]:
        """A connection leased to this thread for the block (the held one when nested).
        Raises PoolExhausted when none frees up within ``pool_wait_ms``."""
        import psycopg
        import psycopg_pool

        held: PgConnection | None = getattr(self._local, "conn", None)
        if held is not None:
            yield cast("apsw.Connection", held)
            return
        if self._closed:
            raise StoreError(f"database {redact(self.path)!r} is closed")
        try:
            raw = self._pool.getconn()
        except psycopg_pool.PoolTimeout as exc:
            if self._pool.get_stats()["pool_size"] < self.config.max_connections:
                reach(self.path, self.config)  # the pool could not grow: say why, if it can't
            raise PoolExhausted(
                f"all {self.config.max_connections} connections to {redact(self.path)!r} are "
                f"in use (waited {self.config.pool_wait_ms} ms); retry later") from exc
        except psycopg.Error as exc:
            raise wrap(exc, self.path) from exc
        conn = PgConnection(raw, self.path)
        self._local.conn, self._local.depth = conn, 0
        try:
            yield cast("apsw.Connection", conn)
        finally:
            self._local.conn = None
            if conn.in_transaction:  # a generator abandoned mid-block: never leak a lock
                with contextlib.suppress(Exception):
                    raw.execute("ROLLBACK")
            self._pool.putconn(raw)

    # -- transactions -------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[apsw.Connection]:
        """BEGIN + the write lock ... COMMIT; a SAVEPOINT when nested; rollback on error."""
        with self.connection() as held:
            conn = cast(PgConnection, held)
            local = self._local
            if local.depth:
                with store.savepoint(held, local, f"remd_sp{next(self._savepoints)}"):
                    yield held
                return
            local.depth = 1
            try:
                conn.script("; ".join(_BEGIN))  # one round trip
                yield held
            except BaseException:
                _rollback(conn)
                raise
            else:
                try:
                    conn.script("; ".join(_commit()))  # pruning and COMMIT: one round trip
                except BaseException:
                    _rollback(conn)
                    raise
            finally:
                local.depth = 0

    def write_all(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` (SQL, parameters) in one write transaction: one pipeline (one
        round trip), BEGIN and the write lock to the pruning and COMMIT (inside a transaction
        already: on it, one by one)."""
        if self._local.depth:
            with self.transaction() as held:
                for sql, params in statements:
                    held.execute(sql, params)
            return
        with self.connection() as held:
            conn = cast(PgConnection, held)
            self._local.depth = 1
            try:
                conn.pipelined([*((sql, ()) for sql in _BEGIN), *statements,
                                *((sql, ()) for sql in _commit())])
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.depth = 0

    # -- reads --------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        """A REPEATABLE READ transaction: several reads that see one state."""
        with self.connection() as held:
            conn = cast(PgConnection, held)
            local = self._local
            if local.depth:
                yield held
                return
            conn.pending = "BEGIN ISOLATION LEVEL REPEATABLE READ"
            local.depth = 1
            conn.memo = {}
            try:
                yield held
            finally:
                conn.memo = None
                conn.pending = ""  # never sent: nothing to end
                local.depth = 0
                _rollback(conn)

    # -- schema -------------------------------------------------------------------------
    def applied(self) -> list[str]:
        with self.connection() as held:
            return self._recorded(cast(PgConnection, held))

    @staticmethod
    def _recorded(conn: PgConnection) -> list[str]:
        if not conn.execute("SELECT to_regclass('remd_migrations') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
            return []
        return [str(r[0]) for r in conn.execute("SELECT name FROM remd_migrations ORDER BY seq")]

    def schema_version(self) -> int:
        return len(self.applied())

    def migrate(self) -> None:
        """Apply the migrations the database lacks; refuse a newer one (SchemaVersionError)
        and a database that holds tables but is not remd's (StoreError)."""
        with self.connection() as held:
            conn = cast(PgConnection, held)
            if not self._pending(self._recorded(conn)):
                return
            if not self.create and not self._recorded(conn):  # as a missing file is
                raise StoreError(f"no such database: {redact(self.path)}")
            with self.transaction():
                done = self._recorded(conn)
                todo = self._pending(done)
                if not todo:
                    return
                if not done and conn.execute(
                        "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                        ).fetchone()[0]:  # type: ignore[index]
                    raise StoreError(f"{redact(self.path)!r} has tables but is not a remd "
                                     "database")
                for name in todo:
                    conn.script(_migration_sql(name))
                    conn.execute("INSERT INTO remd_migrations (name, applied_at) VALUES (?, ?)",
                                 (name, datetime.now(UTC).isoformat(timespec="seconds")))
                conn.execute(
                    "INSERT INTO remd_meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(len(PG_MIGRATIONS)),))

    def _pending(self, done: Sequence[str]) -> list[str]:
        unknown = [name for name in done if name not in PG_MIGRATIONS]
        if unknown:
            raise SchemaVersionError(
                f"database {redact(self.path)!r} has migration {unknown[0]!r} ({len(done)} in "
                f"all), newer than this remd ({len(PG_MIGRATIONS)}); upgrade remd")
        return [name for name in PG_MIGRATIONS if name not in done]

    def close(self) -> None:
        self._closed = True
        self._pool.close()


def _rollback(conn: PgConnection) -> None:
    if conn.in_transaction:
        with contextlib.suppress(Exception):
            conn.raw.execute("ROLLBACK")
