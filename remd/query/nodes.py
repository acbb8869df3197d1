"""Reading memories back as :class:`~remd.models.Node` values (engine level: a store and a
namespace, no facade). The row decoding is :mod:`remd.index.noderows`'s; forgetting is
:mod:`remd.write.forget`'s."""

from __future__ import annotations

from typing import Any

from remd.errors import InvalidInput, NotFound
from remd.index.noderows import NODE_COLUMNS, check_id, from_rows
from remd.models import Node
from remd.store.seam import Store


def get(store: Store, namespace: str, node_id: str) -> Node:
    """The memory with this id in this namespace. Raises NotFound, InvalidInput."""
    check_id(node_id)
    rows = store.query(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ? AND namespace = ?",
                       (node_id, namespace))
    if not rows:
        raise NotFound("memory", node_id, namespace)
    return from_rows(store, rows)[0]


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
