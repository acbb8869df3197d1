"""The PostgreSQL store: the same interface as :class:`remd.store.sqlite.store.Store`, on a server.

Selected by a ``postgresql://`` (or ``postgres://``) URL wherever a file path is taken
(``--db``, ``REMD_DB``, ``Memory(url)``). The engine's SQL is written once, in SQLite's dialect;
:class:`remd.store.postgres.connection.PgConnection` runs each statement through
:func:`remd.store.postgres.translate.translate`
and offers the part of apsw's connection interface the engine uses (``execute`` returning a
cursor, ``executemany``, ``total_changes``, ``in_transaction``).

Semantics kept from SQLite:

- A write transaction is serialised with every other write transaction on its namespaces
  (transaction-scoped advisory locks, taken at BEGIN: remd/store/postgres/locks.py): SQLite's
  one-writer rule, per namespace, which the change logs rely on (seq order = commit order
  within a namespace; see the schema) and the write path's read-then-write steps (fact
  supersession, tag counts) assume. One that names no namespace is serialised with every
  write transaction, as SQLite's are. Reads never wait for them.
- ``snapshot()`` is a REPEATABLE READ transaction: several reads see one state.
- Named migrations (remd/store/postgres/migrations/), with the same refusal of a newer schema.

Connections come from a psycopg_pool pool of ``store.max_connections`` per process, leased to
a thread for the outermost block as the SQLite store does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from remd.config import StoreConfig
from remd.errors import ConnectionLost, PoolExhausted, ReadOnlyStore, StoreError, first_line
from remd.logs import get_logger
from remd.store import base
from remd.store.base import BaseStore, Names, migration_names, migration_sql
from remd.store.postgres import locks as pglocks
from remd.store.postgres import search as pgsearch
from remd.store.postgres.connect import reach
from remd.store.postgres.connection import PgConnection, wrap
from remd.store.where import redact

if TYPE_CHECKING:
    import psycopg

log = get_logger("remd.pgstore")

# The named migrations: the .sql files of remd/store/postgres/migrations, in name order.
PG_MIGRATIONS = migration_names("remd.store.postgres")

# Is a write refused here: the transaction's read-only setting (a hot standby, or the role's
# default_transaction_read_only), and the first of remd's tables this role may not write.
_WRITABLE = (
    "SELECT current_setting('transaction_read_only'), min(c.relname) FILTER (WHERE NOT ("
    "has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE') AND "
    "has_table_privilege(c.oid, 'DELETE'))) FROM pg_class c JOIN pg_namespace n "
    "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'")


def _begin_sql(names: pglocks.Scope) -> tuple[str, str]:
    """BEGIN and the write locks of a transaction on ``names`` (None: every namespace)."""
    return "BEGIN", pglocks.lock_sql(names)


def _commit_sql(names: pglocks.Scope) -> tuple[str, ...]:
    """The change logs' pruning (of ``names``' rows; None: all) and COMMIT."""
    return pglocks.commit_sql(names, base.LOG_KEEP, base.LOG_STEP)


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


class PgStore(BaseStore[PgConnection]):
    """A PostgreSQL database through a bounded pool; the interface of the SQLite store, its
    flow written once in :mod:`remd.store.base`."""

    def __init__(self, url: str, config: StoreConfig, *, create: bool = True) -> None:
        import psycopg
        from psycopg.types.numeric import FloatLoader

        _Float8 = _float8_dumper()
        from psycopg_pool import ConnectionPool

        super().__init__()
        self.path = url
        self.config = config
        self.create = create

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

    @property
    def where(self) -> str:
        return redact(self.path)

    # -- the pool -----------------------------------------------------------------------
    def _check_out(self) -> PgConnection:
        conn = PgConnection(self._lease(), self.path)
        conn.renew = self._renew
        self._local.held = None
        return conn

    def _check_in(self, conn: PgConnection) -> None:
        conn.deferred.clear()
        if conn.in_transaction and not conn.lost:  # a generator abandoned mid-block
            with contextlib.suppress(Exception):
                conn.raw.execute("ROLLBACK")  # never leak a lock
        self._pool.putconn(conn.raw)  # a broken one is discarded

    def _lease(self) -> Any:
        """A connection of the pool. Raises PoolExhausted when none frees up within
        ``pool_wait_ms`` (StoreError naming the cause when the server can't be reached)."""
        import psycopg
        import psycopg_pool

        try:
            return self._pool.getconn()
        except psycopg_pool.PoolTimeout as exc:
            if self._pool.get_stats()["pool_size"] < self.config.max_connections:
                try:  # the pool could not grow: say why, if it can't
                    reach(self.path, self.config)
                except StoreError as down:
                    log.warning("pgstore.unreachable", database=redact(self.path),
                                error=first_line(down))
                    raise
            raise PoolExhausted(
                f"all {self.config.max_connections} connections to {redact(self.path)!r} are "
                f"in use (waited {self.config.pool_wait_ms} ms); retry later") from exc
        except psycopg.Error as exc:
            raise wrap(exc, self.path) from exc

    def _renew(self, broken: Any) -> Any:
        """A new connection for one found broken (the server restarted): the broken one is
        discarded, and so is every idle one that broke with it (psycopg_pool's check)."""
        self._pool.putconn(broken)
        with contextlib.suppress(Exception):
            self._pool.check()
        return self._lease()

    # -- transactions (the flow: remd.store.base) ------------------------------------------
    # BEGIN + the write locks of the namespaces written (a name, several, or None: every
    # namespace; remd/store/postgres/locks.py) ... COMMIT; a SAVEPOINT when nested, taking
    # the locks the outer transaction lacks.
    def _begin(self, conn: PgConnection, namespace: Names) -> None:
        names = pglocks.scope(namespace)
        self._local.held = names
        conn.begin("; ".join(_begin_sql(names)))  # one round trip (again if lost)

    def _nest(self, conn: PgConnection, namespace: Names) -> None:
        local, names = self._local, pglocks.scope(namespace)
        more = pglocks.more_sql(local.held, names)
        if more is not None:
            conn.script(more)
            local.held = None if names is None else tuple(sorted({*local.held, *names}))

    def _commit(self, conn: PgConnection) -> None:
        try:  # the deferred writes, pruning and COMMIT: one round trip
            conn.settle(then=_commit_sql(self._local.held))
        except ConnectionLost as exc:
            raise ConnectionLost(
                f"{exc} (lost while committing: the transaction may have committed)") from exc
        except BaseException:
            _rollback(conn)
            raise

    def _rollback(self, conn: PgConnection) -> None:
        _rollback(conn)

    def write_all(self, statements: Sequence[tuple[str, Sequence[Any]]],
                  namespace: str | Iterable[str] | None = None) -> None:
        """Run ``statements`` (SQL, parameters) in one write transaction on ``namespace`` (as
        :meth:`transaction`'s): one pipeline (one round trip), BEGIN and the write locks to
        the pruning and COMMIT (inside a transaction already: on it, one by one)."""
        if self._local.depth:
            with self.transaction(namespace) as held:
                for sql, params in statements:
                    held.execute(sql, params)
            return
        names = pglocks.scope(namespace)
        with self.connection() as conn:
            self._local.depth = 1
            try:
                conn.pipelined([*((sql, ()) for sql in _begin_sql(names)), *statements,
                                *((sql, ()) for sql in _commit_sql(names))])
            except BaseException:
                _rollback(conn)
                raise
            finally:
                self._local.depth = 0

    # -- reads --------------------------------------------------------------------------
    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def exact_scan(self, namespace: str, query: Any, k: int) -> list[tuple[int, float]]:
        """(rid, cosine distance) of the k nearest of every stored vector of the namespace,
        nearest first: compared in process (remd/store/postgres/search.py: no vector functions)."""
        return pgsearch.exact_scan(self, namespace, query, k)

    def _begin_read(self, conn: PgConnection) -> None:
        """A REPEATABLE READ transaction, sent with the first read."""
        conn.pending = "BEGIN ISOLATION LEVEL REPEATABLE READ"
        self._local.held = None  # a transaction nested in it takes no lock
        conn.memo = {}

    def _end_read(self, conn: PgConnection) -> None:
        conn.memo = None
        conn.pending = ""  # never sent: nothing to end
        _rollback(conn)

    # -- schema (the flow: remd.store.base) ------------------------------------------------
    def _recorded(self, conn: PgConnection) -> list[str]:
        if not conn.execute("SELECT to_regclass('remd_migrations') IS NOT NULL").fetchone()[0]:  # type: ignore[index]
            return []
        return [str(r[0]) for r in conn.execute("SELECT name FROM remd_migrations ORDER BY seq")]

    def _known(self) -> tuple[str, ...]:
        return PG_MIGRATIONS

    def _before_migrating(self, conn: PgConnection, done: Sequence[str]) -> None:
        if not self.create and not done:  # as a missing file is
            raise StoreError(f"no such database: {redact(self.path)}")

    def _make(self, conn: PgConnection, todo: Sequence[str]) -> None:
        if conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                        ).fetchone()[0]:  # type: ignore[index]
            raise StoreError(f"{redact(self.path)!r} has tables but is not a remd database")
        self._apply(conn, todo)

    def _apply(self, conn: PgConnection, todo: Sequence[str]) -> None:
        for name in todo:
            conn.script(migration_sql("remd.store.postgres", name))

    def compact(self) -> tuple[int, int]:
        raise StoreError("compact rewrites a SQLite file; on PostgreSQL, VACUUM (autovacuum) "
                         "reclaims space: nothing to do here")

    def pool_waits(self) -> tuple[int, int]:
        """(leases that waited for a connection, leases that gave up) so far, as the
        psycopg_pool counts them: requests queued, and requests that ended in an error."""
        stats = self._pool.get_stats()
        queued, errors = stats.get("requests_queued", 0), stats.get("requests_errors", 0)
        return max(queued - errors, 0), errors

    def check_writable(self) -> None:
        """Raise ReadOnlyStore when a write would be refused: transactions are read-only
        here, or this role may not insert into, update or delete from one of remd's tables.
        One read; StoreError when the database does not answer."""
        read_only, table = self.one(_WRITABLE) or ("off", None)
        where = redact(self.path)
        if read_only == "on":
            raise ReadOnlyStore(f"database {where!r} is read-only: transactions are read-only "
                                f"here (a standby, or default_transaction_read_only)")
        if table is not None:
            raise ReadOnlyStore(f"database {where!r} is read-only for this user: no INSERT, "
                                f"UPDATE or DELETE on table {table!r}")

    def close(self) -> None:
        self._closed = True
        self._pool.close()


def _rollback(conn: PgConnection) -> None:
    conn.deferred.clear()  # writes not sent yet: never sent
    if conn.in_transaction and not conn.lost:
        with contextlib.suppress(Exception):
            conn.raw.execute("ROLLBACK")
