"""Stand-ins: which live memory a vector or lexical hit counts for.

A hit on a live memory counts for itself. A hit on a fragment a REM run deprecated counts for
the live synthesis that absorbed it (``deprecated_by``, followed for a few hops): a synthesis is
as long as several fragments and its vector is their centroid, so a question about one fragment
matches the fragment far better than its synthesis. A hit on a superseded memory counts for the
live memory that superseded it (its ``SUPERSEDES`` edge): the question was about what changed,
and an update in everyday words ("I moved the repo to Codeberg") often shares no word with the
question its old version answered ("Where is my side project hosted?"). Forgotten and
other-namespace nodes stand for nothing. Statuses come from the node mirror
(:mod:`remd.index.nodemirror`); only the folded and superseded ones need SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from remd.index import nodemirror
from remd.index.nodemirror import NodeMirror
from remd.index.vectors import best_per_rid
from remd.store.seam import Connection


def stand_ins(nodes: NodeMirror, conn: Connection, rids: Iterable[int]
              ) -> dict[int, int]:
    """rid -> the live node that stands for it in this namespace: itself when live, else the
    live synthesis a REM run folded it into (``deprecated_by``, followed for a few hops).

    A synthesis is as long as several fragments and its vector is their centroid, so a
    question about one fragment matches the fragment far better than its synthesis; the
    fragment's match is evidence for the synthesis that now carries its words. A superseded
    memory stands for the memory that superseded it (the latest live ``SUPERSEDES`` edge);
    forgotten and other-namespace nodes stand for nothing.
    """
    current = {int(r): int(r) for r in rids}  # original rid -> node to look at
    out: dict[int, int] = {}
    live, deprecated = nodemirror.STATUS["live"], nodemirror.STATUS["deprecated"]
    superseded = nodemirror.STATUS["superseded"]
    for _ in range(4):  # a synthesis folded again by a later run: follow it
        if not current:
            break
        found, pos = nodes.positions(sorted(set(current.values())))
        status = dict(zip(found.tolist(), nodes.status[pos].tolist(), strict=True))
        folded = [r for r, st in status.items() if st == deprecated]
        replaced = [r for r, st in status.items() if st == superseded]
        nxt: dict[int, int] = {}
        if folded:  # only these need SQL: the synthesis that absorbed each
            marks = ",".join("?" * len(folded))
            nxt = {int(r): int(s) for r, s in conn.execute(
                f"SELECT n.rid, s.rid FROM nodes n JOIN nodes s "
                f"ON s.id = n.deprecated_by AND s.namespace = n.namespace "
                f"WHERE n.rid IN ({marks})", folded)}
        if replaced:  # the newest memory that superseded each (ascending: the last one wins)
            marks = ",".join("?" * len(replaced))
            nxt.update({int(r): int(s) for r, s in conn.execute(
                f"SELECT n.rid, s.rid FROM nodes n JOIN edges e ON e.namespace = n.namespace "
                f"AND e.dst = n.id AND e.type = 'SUPERSEDES' AND e.live = 1 "
                f"JOIN nodes s ON s.namespace = n.namespace AND s.id = e.src "
                f"WHERE n.rid IN ({marks}) ORDER BY e.created_at, e.eid", replaced)})
        follow: dict[int, int] = {}
        for orig, rid in current.items():
            st = status.get(rid)
            if st == live:
                out[orig] = rid
            elif st in (deprecated, superseded) and rid in nxt:
                follow[orig] = nxt[rid]
        current = follow
    return out


Origins = dict[int, dict[int, float]]  # stand-in -> {the rid a hit was on: its score}


def resolve(nodes: NodeMirror, conn: Connection, hits: Sequence[tuple[int, float]],
            origins: Origins | None = None) -> list[tuple[int, float]]:
    """Hits mapped to their stand-ins (see :func:`stand_ins`), best score per stand-in, best
    first. ``origins`` collects, for each stand-in another node's hit counted for, that node
    and its score (a folded fragment's: which clause of its synthesis answers)."""
    if not hits:
        return []
    stand = stand_ins(nodes, conn, (r for r, _ in hits))
    if origins is not None:
        for rid, score in hits:
            if rid in stand and stand[rid] != rid:
                mine = origins.setdefault(stand[rid], {})
                mine[rid] = max(mine.get(rid, 0.0), score)
    return best_per_rid((stand[rid], score) for rid, score in hits if rid in stand)


def seek_neighbour(nodes: NodeMirror, conn: Connection, namespace: str, rid: int,
                   step: int) -> int:
    """Mirror position of the nearest live node before/after ``rid`` (-1: none)."""
    op, order = ("<", "DESC") if step < 0 else (">", "ASC")
    row = conn.execute(
        f"SELECT rid FROM nodes WHERE namespace = ? AND status = 'live' AND rid {op} ? "
        f"ORDER BY rid {order} LIMIT 1", (namespace, rid)).fetchone()
    if row is None:
        return -1
    _, pos = nodes.positions([int(row[0])])
    return int(pos[0]) if len(pos) else -1


def top(nodes: NodeMirror, conn: Connection, hits: Sequence[tuple[int, float]], k: int,
        origins: Origins | None = None) -> list[tuple[int, float]]:
    """The best ``k`` of ``hits`` (best first) after :func:`resolve`, looking up stand-ins for as
    few of them as it takes: most hits are live and stand for themselves."""
    out: list[tuple[int, float]] = []
    start, step = 0, 2 * k
    while start < len(hits) and len(out) < k:
        out = best_per_rid([*out, *resolve(nodes, conn, hits[start:start + step], origins)])
        start += step
        step *= 2
    return out[:k]
