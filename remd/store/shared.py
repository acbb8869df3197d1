"""What the two stores (remd/store/sqlite/store.py, remd/store/postgres/store.py) share, written
once: the connection a thread holds, ``one`` and ``scalar`` over ``query``, the refusal of a
database that records a migration this code does not know, the savepoint of a nested transaction
and how much of the change logs a commit keeps."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar

from remd.errors import SchemaVersionError, StoreError
from remd.store.seam import Connection

# tag_log rows kept for readers (remd/index/graphcache.py); pruned in steps of LOG_STEP.
LOG_KEEP = 65_536
LOG_STEP = 4096

C = TypeVar("C")


class Leases(Generic[C]):
    """A store whose connections (of type ``C``) are leased to a thread for the outermost
    block (``_local.conn``, ``_local.depth``: how deep the transactions are nested)."""

    _local: threading.local

    @property
    def conn(self) -> C:
        """The connection this thread holds (inside a ``connection``, ``snapshot`` or
        ``transaction`` block). Raises StoreError outside one."""
        held: C | None = getattr(self._local, "conn", None)
        if held is None:
            raise StoreError("no connection is held by this thread (use Store.connection())")
        return held

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    def applied(self) -> list[str]:
        raise NotImplementedError

    def schema_version(self) -> int:
        """How many of this code's migrations the database has (a database newer than this
        code has more than it knows)."""
        return len(self.applied())


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
