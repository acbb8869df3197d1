"""The bounded tag-graph walk of inject (the MME seed's propagation).

From the seed tags, follow at most ``fanout`` (M) highest-weight tag edges of each of the
``expand_per_hop`` most activated tags of a hop, to ``depth`` (D) hops, multiplying the
activation by ``decay`` (alpha), the edge weight and the target tag's specificity per hop, and
keep the ``beam`` (B) most activated tags. IS_SUBTYPE_OF children are followed like edges of
weight ``subtype_weight``. Every tag remembers the tag that activated it, so each item of a
pack can show its path (seed -> ... -> tag). The work is bounded by M, D, B and
``expand_per_hop``, never by the namespace's size: edges come from the tag-graph cache
(remd/index/graphcache.py) or one index range scan per tag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from remd.config import InjectConfig
from remd.index.graphcache import TagGraphCache
from remd.store.seam import Connection


@dataclass
class Walk:
    """Activated tags: activation, parent in the walk (None for seeds), names."""

    act: dict[int, float] = field(default_factory=dict)
    parent: dict[int, int | None] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    edges_read: int = 0

    def path(self, tid: int) -> list[int]:
        out = [tid]
        seen = {tid}
        while (p := self.parent.get(out[-1])) is not None and p not in seen:
            out.append(p)
            seen.add(p)
        return out[::-1]



class Specificity:
    """A tag's specificity in (0, 1]: its IDF over the IDF of a tag on one memory (uniform,
    1.0, while the namespace has fewer than ``idf_min_memories``)."""

    def __init__(self, memories: int, idf_min_memories: int) -> None:
        self.n = memories
        self.uniform = memories < idf_min_memories
        self.top = math.log((memories + 1) / 1.5)
        self._cache: dict[int, float] = {}

    def one(self, df: int) -> float:
        spec = self._cache.get(df)
        if spec is None:
            if self.uniform:
                spec = 1.0
            else:
                spec = max(0.02, min(1.0, math.log((self.n + 1) / (max(df, 0) + 0.5)) / self.top))
            self._cache[df] = spec
        return spec

    def many(self, df: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """:meth:`one` of each document frequency; a negative one (no such tag) gives 0."""
        if self.uniform:
            spec = np.ones(len(df))
        else:
            spec = np.clip(np.log((self.n + 1) / (np.maximum(df, 0) + 0.5)) / self.top,
                           0.02, 1.0)
        spec[df < 0] = 0.0
        return spec


SUBTYPES_PROBE = "SELECT 1 FROM tag_parents WHERE namespace = ? LIMIT 1"  # any hierarchy?


def propagate(conn: Connection, cache: TagGraphCache, cfg: InjectConfig, namespace: str,
              specificity: Specificity, seeds: dict[int, tuple[str, float]]) -> Walk:
    """Walk from ``seeds`` (tag id -> (name, activation)) in the caller's snapshot."""
    walk = Walk()
    seeds = dict(sorted(seeds.items(), key=lambda kv: -kv[1][1])[: cfg.beam])
    for tid, (name, w) in seeds.items():
        walk.act[tid], walk.parent[tid], walk.names[tid] = w, None, name
    # One probe of the hierarchy's (namespace, parent) index, not a scan of the namespace's
    # tags (12.9 ms at 200k tags; tests/query/test_inject.py counts the work).
    subtypes = cfg.subtype_weight > 0 and conn.execute(
        SUBTYPES_PROBE, (namespace,)).fetchone() is not None
    frontier = sorted(seeds, key=lambda t: -walk.act[t])
    for _ in range(cfg.depth):
        # A tag below the beam's floor is trimmed at the end of the hop, and activation
        # only shrinks along a path (decay, weights and specificity are <= 1): a source
        # that cannot beat the floor is not expanded, and its edges (strongest first) are
        # read only while they can. This prunes work, never results.
        others = sorted((a for t, a in walk.act.items() if walk.parent[t] is not None),
                        reverse=True)
        room = cfg.beam - len(seeds)
        floor = others[room - 1] if 0 < room <= len(others) else 0.0
        if room <= 0:
            break
        improved: dict[int, float] = {}
        # The hop's edges first (from the cache or one index range scan per source),
        # then the targets' names and document frequencies in one read, then the
        # activations as array arithmetic: per target, the best source wins (ties: the
        # first, in frontier order).
        dsts: list[npt.NDArray[np.int64]] = []
        weights: list[npt.NDArray[np.float64]] = []
        reaches: list[npt.NDArray[np.float64]] = []
        srcs: list[npt.NDArray[np.int64]] = []
        cache.prefetch(conn, "edges", [s for s in frontier[: cfg.expand_per_hop]
                                       if walk.act[s] * cfg.decay > floor], cfg.fanout)
        for src in frontier[: cfg.expand_per_hop]:
            reach = walk.act[src] * cfg.decay
            if reach <= floor:
                break  # the frontier is sorted: no later source can do better
            edges = cache.top_edges(conn, src, cfg.fanout)
            top_w = edges.weights[: cfg.fanout]
            n_keep = int(np.count_nonzero(reach * top_w > floor))  # weights are sorted
            if subtypes:
                children = [int(c) for (c,) in conn.execute(
                    "SELECT child FROM tag_parents WHERE namespace = ? AND parent = ? LIMIT ?",
                    (namespace, src, cfg.fanout))]
                dsts += [edges.ids[:n_keep], np.array(children, np.int64)]
                weights += [top_w[:n_keep], np.full(len(children), cfg.subtype_weight)]
                n_keep += len(children)
            else:
                dsts.append(edges.ids[:n_keep])
                weights.append(top_w[:n_keep])
            reaches.append(np.full(n_keep, reach))
            srcs.append(np.full(n_keep, src, np.int64))
        if not dsts:
            break
        dst, wts = np.concatenate(dsts), np.concatenate(weights)
        reach_a, src_a = np.concatenate(reaches), np.concatenate(srcs)
        walk.edges_read += len(dst)
        uniq, inverse = np.unique(dst, return_inverse=True)
        info = cache.names(conn, uniq.tolist())
        spec = specificity.many(np.array([info[t][1] if t in info else -1
                                        for t in uniq.tolist()], np.float64))
        act = reach_a * wts * spec[inverse]
        order = np.lexsort((np.arange(len(act)), -act))  # best first, then hop order
        _, first = np.unique(dst[order], return_index=True)
        best = order[first]
        for d, a, src in zip(dst[best].tolist(), act[best].tolist(), src_a[best].tolist(),
                             strict=True):
            if a > 0 and a > walk.act.get(d, 0.0):
                walk.act[d], walk.parent[d], walk.names[d] = a, src, info[d][0]
                improved[d] = a
        if len(walk.act) > cfg.beam:  # beam: keep the B most activated (seeds first)
            keep = sorted(walk.act, key=lambda t: (walk.parent[t] is not None,
                                                   -walk.act[t]))[: cfg.beam]
            kept = set(keep)
            for tid in list(walk.act):
                if tid not in kept:
                    del walk.act[tid], walk.parent[tid], walk.names[tid]
            improved = {t: a for t, a in improved.items() if t in kept}
        frontier = sorted(improved, key=lambda t: -improved[t])
        if not frontier:
            break
    return walk
