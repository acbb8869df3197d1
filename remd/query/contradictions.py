"""Live memories that disagree: pairs joined by a live CONTRADICTS edge (update detection's
"probably", or a ``[[memory:id]] contradicts`` link), newest edge first, optionally about a
topic or touching one memory. Every front end offers it (``remd contradictions``,
``GET /v1/contradictions``, MCP's ``find_contradictions``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from remd.errors import InvalidInput
from remd.index.noderows import NODE_COLUMNS, from_rows
from remd.models import Node
from remd.query import nodes
from remd.store import rows_in
from remd.store.seam import Connection, Store
from remd.text.tagging import extract_query_tags
from remd.text.words import FUNCTION_WORDS

MAX_CONTRADICTIONS = 200  # pairs in one answer at most
Pair = tuple[Node, Node, float, "str | None"]  # (newer, older, confidence, reason)


def edges(conn: Connection, namespace: str, memory_id: str | None = None
          ) -> list[tuple[int, int, float, str | None]]:
    """(newer rid, older rid, confidence, reason) of the live pairs, newest edge first;
    ``memory_id``: those touching it."""
    touching = "" if memory_id is None else "AND (e.src = ? OR e.dst = ?) "
    rows: Any = conn.execute(
        "SELECT a.rid, b.rid, e.weight, e.context FROM edges e "
        "JOIN nodes a ON a.id = e.src AND a.namespace = e.namespace AND a.status = 'live' "
        "JOIN nodes b ON b.id = e.dst AND b.namespace = e.namespace AND b.status = 'live' "
        f"WHERE e.namespace = ? AND e.type = 'CONTRADICTS' AND e.live = 1 {touching}"
        "ORDER BY e.created_at DESC, e.eid DESC",
        (namespace, *(() if memory_id is None else (memory_id, memory_id)))).fetchall()
    return [(int(s), int(d), float(w), c) for s, d, w, c in rows]


def about(topic: str) -> Callable[[Node], bool]:
    """Whether a memory is about ``topic``: it carries one of the topic's tags or contains one
    of its words (of three letters or more, not a function word such as "the": those are in
    every memory). Raises InvalidInput for an empty topic."""
    if not isinstance(topic, str) or not topic.strip():
        raise InvalidInput("topic must be a non-empty string")
    tags = {t for t, _ in extract_query_tags(topic)}
    words = {w for w in topic.lower().split() if len(w) > 2 and w not in FUNCTION_WORDS}

    def test(node: Node) -> bool:
        return bool(tags.intersection(node.tags)) or any(w in node.content.lower()
                                                         for w in words)
    return test


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not (
            1 <= limit <= MAX_CONTRADICTIONS):
        raise InvalidInput(f"limit must be an integer in 1..{MAX_CONTRADICTIONS}, not {limit!r}")
    return limit


def contradictions(store: Store, namespace: str, memory_id: str | None = None,
                   topic: str | None = None, limit: int | None = None) -> list[Pair]:
    """The pairs (``limit`` at most; None: all), those where either memory is :func:`about`
    ``topic`` if one is given. Raises NotFound for an unknown ``memory_id``, InvalidInput for a
    bad limit or topic."""
    if limit is not None:
        check_limit(limit)
    keep = None if topic is None else about(topic)
    if memory_id is not None:
        nodes.get(store, namespace, memory_id)
    with store.snapshot() as conn:  # the pairs and their memories, read in one state
        found = edges(conn, namespace, memory_id)
        if keep is None and limit is not None:
            found = found[:limit]
        rids = sorted({rid for newer, older, _, _ in found for rid in (newer, older)})
        rows = list(rows_in(
            conn, f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? AND rid IN ({{marks}})",
            rids, (namespace,)))
        by_rid = dict(zip((int(r[0]) for r in rows), from_rows(store, rows), strict=True))
    out: list[Pair] = []
    for newer, older, weight, context in found:
        pair = (by_rid[newer], by_rid[older])
        if keep is not None and not any(keep(n) for n in pair):
            continue
        out.append((*pair, weight, context))
        if limit is not None and len(out) >= limit:
            break
    return out
