"""Chatter: how much a memory says, so that notes that say little rank below ones that say
something.

An agent saves everything a person says: "Worked from home today, mostly emails.", "Second
coffee, don't judge", "ok thanks!". Such notes share the everyday words of many questions
("work", "coffee") and, being short, match them well; a question then gets a pack of them
instead of the one statement that answers it. A memory's *information* is how specific its
tags are: the mean inverse document frequency of its best :data:`TOP` tags, ``ln(N / df)``
over the namespace's memories, as a share of the largest possible (``ln N``). A note made of
words on a hundred memories scores low; one that names a bike, a river and twenty minutes
scores high; one with no tag at all ("lol") scores 0. Inject multiplies a candidate's score
by ``(1 - w) + w * information`` (``inject.chatter_weight``).

Reads the tags of the candidates (cached by the node mirror, which the packer reads anyway)
and the document frequencies of those tags (the graph cache) of the best :data:`WEIGHED`
candidates: bounded by the pack, not by the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from remd.index.graphcache import TagGraphCache
from remd.index.nodemirror import NodeMirror
from remd.models import NodeKind
from remd.store.seam import Connection

TOP = 3  # a memory's most specific tags that count
WEIGHED = 64  # best candidates whose information is read (more than a pack holds)


class Weighted(Protocol):
    rid: int
    base: float
    info: float


def information(conn: Connection, mirror: NodeMirror, cache: TagGraphCache,
                rids: Sequence[int], syntheses: Sequence[int] = ()) -> dict[int, float]:
    """rid -> how specific the memory's tags are, in [0, 1] (see the module docstring). A
    tag's count holds the memories a REM run folded: for the ``syntheses`` among ``rids``, the
    members each one folded are not counted (they are the synthesis)."""
    tags = mirror.tags_of(conn, list(rids))
    info = cache.names(conn, {tid for pairs in tags.values() for tid, _ in pairs})
    folded = _folded(conn, mirror.namespace, syntheses) if syntheses else {}
    n = max(mirror.n, 2)
    top = math.log(n)
    out: dict[int, float] = {}
    for rid in rids:
        mine = folded.get(rid, {})
        idf = sorted((math.log(n / max(info[tid][1] - mine.get(tid, 0), 1))
                      for tid, _ in tags.get(rid, ()) if tid in info), reverse=True)[:TOP]
        out[rid] = min(1.0, sum(idf) / (TOP * top)) if idf else 0.0
    return out


def _folded(conn: Connection, namespace: str, syntheses: Sequence[int]
            ) -> dict[int, dict[int, int]]:
    """synthesis rid -> {tid: how many of the members it folded carry the tag}."""
    marks = ",".join("?" * len(syntheses))
    out: dict[int, dict[int, int]] = {}
    rows: Any = conn.execute(
        f"SELECT s.rid, nt.tid, count(*) FROM nodes s JOIN nodes m ON m.namespace = s.namespace "
        f"AND m.deprecated_by = s.id JOIN node_tags nt ON nt.namespace = m.namespace "
        f"AND nt.rid = m.rid WHERE s.namespace = ? AND s.rid IN ({marks}) "
        f"GROUP BY s.rid, nt.tid", (namespace, *syntheses)).fetchall()
    for rid, tid, count in rows:
        out.setdefault(int(rid), {})[int(tid)] = int(count)
    return out


def weigh(conn: Connection, mirror: NodeMirror, cache: TagGraphCache,
          cands: Sequence[Weighted], weight: float) -> None:
    """Multiply each candidate's score by ``(1 - weight) + weight * information``.

    Only the best :data:`WEIGHED` are read; the rest take the lowest factor, ``1 - weight``.
    That changes no order a pack can see: a weighed candidate keeps at least ``1 - weight``
    of a score at least as high as any unweighed one's."""
    if weight <= 0 or not cands:
        return
    ranked = sorted(cands, key=lambda c: (-c.base, c.rid))
    best = ranked[:WEIGHED]
    info = information(conn, mirror, cache, [c.rid for c in best],
                       [c.rid for c in best if getattr(c, "kind", None) is NodeKind.SYNTHESIS])
    for c in best:
        c.info = info.get(c.rid, 0.0)
        c.base *= (1.0 - weight) + weight * c.info
    for c in ranked[WEIGHED:]:
        c.info = 0.0
        c.base *= 1.0 - weight
