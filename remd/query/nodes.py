"""Reading memories back as :class:`~remd.models.Node` values, and forgetting one (engine
level: a store and a namespace, no facade)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remd.errors import InvalidInput, NotFound
from remd.models import Node, NodeKind, NodeStatus
from remd.store.reads import rows_in
from remd.store.seam import Store
from remd.write.graph import GraphWriter

NODE_COLUMNS = (
    "rid, id, namespace, kind, content, source, status, created_at, last_access, "
    "access_count, confidence, importance, tokens, valid_from, valid_until, deprecated_by, "
    "fact_key, fact_value"
)


def tags_of(store: Store, namespace: str, rids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """The tag names of each memory of ``namespace``, sorted."""
    if not rids:
        return {}
    out: dict[int, list[str]] = {rid: [] for rid in rids}
    with store.snapshot() as conn:
        for rid, name in rows_in(
                conn, "SELECT nt.rid, t.name FROM node_tags nt JOIN tags t "
                      "ON t.namespace = nt.namespace AND t.tid = nt.tid "
                      "WHERE nt.namespace = ? AND nt.rid IN ({marks}) ORDER BY nt.rid, t.name",
                rids, (namespace,)):
            out[rid].append(name)
    return {rid: tuple(names) for rid, names in out.items()}


def from_rows(store: Store, rows: Sequence[tuple[Any, ...]]) -> list[Node]:
    """Nodes from rows of ``SELECT {NODE_COLUMNS}``, with their tags."""
    by_namespace: dict[str, list[int]] = {}
    for r in rows:
        by_namespace.setdefault(str(r[2]), []).append(int(r[0]))
    tags: dict[int, tuple[str, ...]] = {}
    for namespace, rids in by_namespace.items():
        tags.update(tags_of(store, namespace, rids))
    return [
        Node(id=r[1], namespace=r[2], kind=NodeKind(r[3]), content=r[4], source=r[5],
             status=NodeStatus(r[6]), created_at=r[7], last_access=r[8],
             access_count=r[9], confidence=r[10], importance=r[11], tokens=r[12],
             valid_from=r[13], valid_until=r[14], deprecated_by=r[15], fact_key=r[16],
             fact_value=r[17], tags=tags.get(r[0], ()))
        for r in rows
    ]


def _check_id(node_id: object) -> str:
    if not isinstance(node_id, str):
        raise InvalidInput(f"memory id must be a string, not {type(node_id).__name__}")
    return node_id


def get(store: Store, namespace: str, node_id: str) -> Node:
    """The memory with this id in this namespace. Raises NotFound, InvalidInput."""
    _check_id(node_id)
    rows = store.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ? AND namespace = ?",
                       (node_id, namespace))
    if not rows:
        raise NotFound("memory", node_id, namespace)
    return from_rows(store, rows)[0]


def rid_of(store: Store, namespace: str, node_id: str) -> int:
    """The integer key of a memory. Raises NotFound, InvalidInput."""
    _check_id(node_id)
    rid = store.scalar("SELECT rid FROM nodes WHERE id = ? AND namespace = ?",
                       (node_id, namespace))
    if rid is None:
        raise NotFound("memory", node_id, namespace)
    return int(rid)


def forget(store: Store, namespace: str, node_id: str) -> None:
    """Soft-delete: the node stays in the file (status forgotten) but is never injected.
    Raises NotFound, InvalidInput."""
    rid = rid_of(store, namespace, node_id)
    with store.transaction(namespace) as conn:
        GraphWriter(conn, namespace).forget(rid)


def recent(store: Store, namespace: str, n: int = 10, *,
           include_inactive: bool = False) -> list[Node]:
    """The n most recently created live memories (all statuses if include_inactive).
    Raises InvalidInput for a bad ``n``."""
    if not isinstance(n, int) or n < 0:
        raise InvalidInput(f"n must be a non-negative integer, not {n!r}")
    status = "" if include_inactive else "AND status = 'live'"
    rows = store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? {status} "
        "ORDER BY created_at DESC, rid DESC LIMIT ?", (namespace, n))
    return from_rows(store, rows)


def history(store: Store, namespace: str, node_id: str) -> list[Node]:
    """The SUPERSEDES chain through this memory, oldest first. Raises NotFound."""
    get(store, namespace, node_id)
    seen = {node_id}
    frontier = [node_id]
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = store.query(
            f"SELECT src, dst FROM edges WHERE namespace = ? AND type = 'SUPERSEDES' "
            f"AND live = 1 AND (src IN ({marks}) OR dst IN ({marks}))",
            (namespace, *frontier, *frontier))
        frontier = []
        for src, dst in rows:
            for other in (src, dst):
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
    marks = ",".join("?" * len(seen))
    rows = store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? AND id IN ({marks}) "
        "ORDER BY created_at, rid", (namespace, *seen))
    return from_rows(store, rows)


def live_by_source(store: Store, namespace: str, source: str, *,
                   like: bool = False) -> list[tuple[Any, ...]]:
    """(id, content, source, created_at) of the live memories whose source is ``source``
    (a LIKE pattern if ``like``), newest first."""
    sql = ("SELECT id, content, source, created_at FROM nodes WHERE namespace = ? "
           "AND status = 'live' AND source " + ("LIKE ?" if like else "= ?")
           + " ORDER BY created_at DESC, rid DESC")
    return list(store.query(sql, (namespace, source)))


def live_namespaces(store: Store, base: str, source_like: str) -> list[str]:
    """The namespaces ``base`` and ``base.*`` holding live memories whose source matches the
    LIKE pattern ``source_like``: a range of the ``(namespace, status, rid)`` index ("base"
    itself, then "base." up to "base/", the character after "."), never the other
    namespaces' memories."""
    return [str(r[0]) for r in store.query(
        "SELECT DISTINCT namespace FROM nodes WHERE (namespace = ? OR (namespace >= ? "
        "AND namespace < ?)) AND status = 'live' AND source LIKE ?",
        (base, base + ".", base + "/", source_like))]
