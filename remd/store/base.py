"""The flow both stores share, written once (huey's ``BaseSqlStorage`` and APScheduler's
datastore base are the models): a connection leased to a thread for the outermost block, a
write transaction (a SAVEPOINT when nested, rolled back on any error), a read snapshot, and
named migrations with the refusal of a database newer than this code. Each backend
(:mod:`remd.store.sqlite.store`, :mod:`remd.store.postgres.store`) fills in the hooks: how a
connection is checked out and back in, how a transaction begins, commits and rolls back, how
its errors read, and what its migrations are.

Also here: how much of the change logs a commit keeps (read at each commit, so a test may
lower it)."""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Generic, TypeVar

from remd.errors import SchemaVersionError, StoreError
from remd.store.seam import Connection

# tag_log rows kept for readers (remd/index/graphcache.py); pruned in steps of LOG_STEP.
LOG_KEEP = 65_536
LOG_STEP = 4096

C = TypeVar("C", bound=Connection)
Names = str | Iterable[str] | None  # the namespaces a transaction writes (None: any)


class BaseStore(Generic[C]):
    """A store whose connections (of type ``C``) are leased to a thread for the outermost
    block (``_local.conn``; ``_local.depth``: how deep the transactions are nested)."""

    path: str
    create: bool

    def __init__(self) -> None:
        self._local = threading.local()
        self._savepoints = itertools.count()
        self._closed = False

    @property
    def where(self) -> str:
        """Where the store is, as messages and logs may show it (a URL without its password)."""
        return self.path

    # -- hooks ----------------------------------------------------------------------------
    def _check_out(self) -> C:
        """A connection for this thread's outermost block (PoolExhausted when none frees up)."""
        raise NotImplementedError

    def _check_in(self, conn: C) -> None:
        """``conn`` back after the block (a transaction left open is rolled back)."""
        raise NotImplementedError

    def _begin(self, conn: C, namespace: Names) -> None:
        """Begin the outermost write transaction on ``namespace``."""
        raise NotImplementedError

    def _nest(self, conn: C, namespace: Names) -> None:
        """Before a transaction nested in another (on ``namespace``): nothing by default."""

    def _commit(self, conn: C) -> None:
        """Commit the outermost write transaction; on failure roll back and raise."""
        raise NotImplementedError

    def _rollback(self, conn: C) -> None:
        """Roll back whatever transaction ``conn`` is in (never raises)."""
        raise NotImplementedError

    def _translated(self, exc: BaseException) -> BaseException | None:
        """The remd error a backend's error inside a block stands for (None: raise as is)."""
        return None

    @contextlib.contextmanager
    def _translating(self) -> Iterator[None]:
        """Raise the remd error (:meth:`_translated`) of a backend error inside the block."""
        try:
            yield
        except BaseException as exc:
            mapped = self._translated(exc)
            if mapped is None:
                raise
            raise mapped from exc

    def _begin_read(self, conn: C) -> None:
        raise NotImplementedError

    def _end_read(self, conn: C) -> None:
        self._rollback(conn)

    def _recorded(self, conn: C) -> list[str]:
        """The names of the migrations the database records, in order."""
        raise NotImplementedError

    def _known(self) -> Sequence[str]:
        """This code's migrations, by name, in order."""
        raise NotImplementedError

    def _before_migrating(self, conn: C, done: Sequence[str]) -> None:
        """Before the migrations' write transaction (e.g. refuse a database never made)."""

    def _make(self, conn: C, todo: Sequence[str]) -> None:
        """Apply ``todo`` (every migration) to a database that records none, or refuse one
        that is not remd's."""
        raise NotImplementedError

    def _apply(self, conn: C, todo: Sequence[str]) -> None:
        """Apply the migrations ``todo`` a database lacks, in order."""
        raise NotImplementedError

    def _schema_number(self) -> int:
        """The ``schema_version`` kept in remd_meta for readers of older remd versions."""
        return len(self._known())

    # -- connections ----------------------------------------------------------------------
    @property
    def conn(self) -> C:
        """The connection this thread holds (inside a ``connection``, ``snapshot`` or
        ``transaction`` block). Raises StoreError outside one."""
        held: C | None = getattr(self._local, "conn", None)
        if held is None:
            raise StoreError("no connection is held by this thread (use Store.connection())")
        return held

    @contextlib.contextmanager
    def connection(self) -> Iterator[C]:
        """A connection leased to this thread for the block (the one it holds already, when
        nested). Raises PoolExhausted when none frees up within ``pool_wait_ms``."""
        held: C | None = getattr(self._local, "conn", None)
        if held is not None:
            yield held
            return
        if self._closed:
            raise StoreError(f"database {self.where!r} is closed")
        conn = self._check_out()
        self._local.conn, self._local.depth = conn, 0
        try:
            yield conn
        finally:
            self._local.conn = None
            self._check_in(conn)

    # -- transactions ---------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, namespace: Names = None) -> Iterator[C]:
        """A write transaction on ``namespace`` (the namespaces written; None: any); a
        SAVEPOINT when nested; rolled back on any error, committed otherwise."""
        with self.connection() as conn:
            local = self._local
            if local.depth:
                self._nest(conn, namespace)
                with savepoint(conn, local, f"remd_sp{next(self._savepoints)}"):
                    yield conn
                return
            self._begin(conn, namespace)
            local.depth = 1
            try:
                with self._translating():
                    try:
                        yield conn
                    except BaseException:
                        self._rollback(conn)
                        raise
                self._commit(conn)
            finally:
                local.depth = 0

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[C]:
        """A read transaction: several reads that see one consistent state."""
        with self.connection() as conn:
            local = self._local
            if local.depth:
                yield conn
                return
            self._begin_read(conn)
            local.depth = 1
            try:
                with self._translating():
                    yield conn
            finally:
                local.depth = 0
                self._end_read(conn)

    # -- reads ----------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    # -- schema ---------------------------------------------------------------------------
    def applied(self) -> list[str]:
        """The names of the migrations recorded in the database, in the order they were
        applied (empty for a new one)."""
        with self.connection() as conn, self._translating():  # not a database, corrupt
            return self._recorded(conn)

    def schema_version(self) -> int:
        """How many of this code's migrations the database has (a database newer than this
        code has more than it knows)."""
        return len(self.applied())

    def pending_migrations(self) -> list[str]:
        """The names of this code's migrations the database lacks (none: the schema is
        current). Raises SchemaVersionError for a database newer than this code."""
        return self._pending(self.applied())

    def _pending(self, done: Sequence[str]) -> list[str]:
        known = self._known()
        refuse_unknown(self.where, done, known)
        have = set(done)
        return [name for name in known if name not in have]

    def migrate(self) -> None:
        """Apply, by name, the migrations the database lacks; refuse one newer than this code.

        Raises SchemaVersionError for a newer database (one that records a migration this
        code does not know), StoreError for a database that is not ours.
        """
        with self.connection() as conn:
            done = self._recorded(conn)
            if not self._pending(done):
                return
            self._before_migrating(conn, done)
            with self.transaction():
                # Decide again under the write lock: agents opening a new database together
                # race to migrate it, and the winner's tables must not make the others call
                # it foreign.
                done = self._recorded(conn)
                todo = self._pending(done)
                if not todo:
                    return
                if done:
                    self._apply(conn, todo)
                else:
                    self._make(conn, todo)
                for name in todo:
                    conn.execute(
                        "INSERT INTO remd_migrations (name, applied_at) VALUES (?, ?)",
                        (name, datetime.now(UTC).isoformat(timespec="seconds")))
                # Kept for readers of older remd versions, which compare it with their own.
                conn.execute(
                    "INSERT INTO remd_meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(self._schema_number()),))


def migration_names(package: str) -> tuple[str, ...]:
    """The named migrations of a store: the ``.sql`` files of ``package``'s ``migrations/``
    folder, in the order of their names (``0001_initial``, ``0002_...``)."""
    folder = resources.files(package) / "migrations"
    return tuple(sorted(f.name.removesuffix(".sql") for f in folder.iterdir()
                        if f.name.endswith(".sql")))


def migration_sql(package: str, name: str) -> str:
    """The SQL of the named migration ``name`` of ``package``'s ``migrations/`` folder."""
    return (resources.files(package) / "migrations" / f"{name}.sql").read_text(encoding="utf-8")


def refuse_unknown(where: str, done: Sequence[str], known: Sequence[str]) -> None:
    """Raise SchemaVersionError when ``done`` (the migrations a database records) holds one
    this code does not know (``known``): the database was written by a newer remd."""
    unknown = [name for name in done if name not in known]
    if unknown:
        raise SchemaVersionError(
            f"database {where!r} has migration {unknown[0]!r} ({len(done)} in all), "
            f"newer than this remd ({len(known)}); upgrade remd")


@contextlib.contextmanager
def savepoint(conn: Connection, local: threading.local, name: str) -> Iterator[None]:
    """A transaction nested in the one ``conn`` is in (either store's): rolled back alone on
    any error; ``local.depth`` counts the nesting."""
    conn.execute(f"SAVEPOINT {name}")
    local.depth += 1
    try:
        yield
        conn.settle()  # a deferred write's error rolls back to the savepoint (PostgreSQL)
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    else:
        conn.execute(f"RELEASE {name}")
    finally:
        local.depth -= 1
