"""Whether an engine is ready to serve: its database answers with the current schema, would
accept a write, and its embedding backlog is under a bound.

What ``GET /readyz`` of ``remd serve --http`` checks (the front end adds its own check: not
draining after SIGTERM). Each check is cheap and bounded: the schema check reads the
migrations table, the write check asks the store without taking a lock (a few syscalls on a
SQLite file, one read of the privileges on PostgreSQL), and the backlog is counted through the
partial index of memories without a vector, never past ``bound + 1`` rows, whatever the size
of the file or the number of namespaces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from remd.errors import StoreError, first_line

if TYPE_CHECKING:
    from remd.engine import Engine


@dataclass(frozen=True, kw_only=True)
class Check:
    """One check's result (``detail`` is what a person looking at ``/readyz`` wants to see)."""

    ok: bool
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, **self.detail}


def pending_embeddings(engine: Engine, cap: int) -> int:
    """Memories of the whole file still waiting for their vector, counted up to ``cap`` (a
    result of ``cap`` means "at least"). Raises StoreError."""
    return int(engine.store.scalar(
        "SELECT count(*) FROM (SELECT 1 FROM nodes WHERE embedded = 0 LIMIT ?) AS pending",
        (cap,)))


def count_namespaces(engine: Engine) -> int:
    """Namespaces holding memories in the whole file. Raises StoreError."""
    return int(engine.store.scalar(
        "SELECT count(*) FROM (SELECT DISTINCT namespace FROM nodes) AS n"))


def check_database(engine: Engine) -> Check:
    """The database answers a read and holds every migration of this code."""
    store = engine.store
    try:
        with store.snapshot():  # a read transaction: any database error is a StoreError
            version = store.schema_version()
            pending = store.pending_migrations()
    except StoreError as exc:
        return Check(ok=False, detail={"error": type(exc).__name__,
                                       "message": first_line(exc)})
    return Check(ok=not pending, detail={"schema_version": version,
                                         "pending_migrations": pending})


def check_writable(engine: Engine) -> Check:
    """A write would be accepted: the file is still the one opened and writable (with its
    -wal, -shm and directory), or the PostgreSQL role may write remd's tables."""
    try:
        engine.store.check_writable()
    except StoreError as exc:
        return Check(ok=False, detail={"error": type(exc).__name__,
                                       "message": first_line(exc)})
    return Check(ok=True)


def check_backlog(engine: Engine, bound: int) -> Check:
    """At most ``bound`` memories wait for a vector (always ready without an embedder: nothing
    would embed them)."""
    if not engine.embeds:
        return Check(ok=True, detail={"pending": None, "bound": bound, "embedder": False})
    try:
        pending = pending_embeddings(engine, bound + 1)
    except StoreError as exc:
        return Check(ok=False, detail={"error": type(exc).__name__,
                                       "message": first_line(exc)})
    shown: int | str = pending if pending <= bound else f"more than {bound}"
    return Check(ok=pending <= bound, detail={"pending": shown, "bound": bound})


def readiness(engine: Engine, backlog_bound: int) -> dict[str, Check]:
    """Every engine-level check, by name (the database first: the others are not asked of a
    database that does not answer)."""
    database = check_database(engine)
    checks = {"database": database}
    if database.ok:
        checks["writable"] = check_writable(engine)
        checks["embedding_backlog"] = check_backlog(engine, backlog_bound)
    return checks
