"""Reading a memory's live typed edges back (engine level: a store and a namespace, no facade)."""

from __future__ import annotations

from remd.models import Edge, EdgeType
from remd.store.seam import Store

__all__ = ["links", "touching"]


def touching(store: Store, namespace: str, node_id: str) -> list[tuple[str, str, EdgeType, float]]:
    """Live typed edges touching a memory: (src, dst, type, weight)."""
    rows = store.query(
        "SELECT src, dst, type, weight FROM edges WHERE namespace = ? AND live = 1 "
        "AND (src = ? OR dst = ?) ORDER BY eid", (namespace, node_id, node_id))
    return [(s, d, EdgeType(t), w) for s, d, t, w in rows]


def links(store: Store, namespace: str, node_id: str) -> list[Edge]:
    """Live typed edges touching a memory, with their weight and context."""
    rows = store.query(
        "SELECT src, dst, type, weight, context FROM edges WHERE namespace = ? AND live = 1 "
        "AND (src = ? OR dst = ?) ORDER BY eid", (namespace, node_id, node_id))
    return [Edge(src=s, dst=d, type=EdgeType(t), weight=w, context=c)
            for s, d, t, w, c in rows]
