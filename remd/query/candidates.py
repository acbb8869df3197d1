"""Candidates: the seeds of a query and the memories they reach (steps 1 and 3 of
:mod:`remd.query.inject`).

Every source is bounded by configuration: the query's tags matched to the namespace's
vocabulary, the nearest memories by vector (and the tags of the closest few, as weaker seeds),
FTS5 ``bm25()`` hits on the query's words, and the live members of the tags the walk activated
(:mod:`remd.query.walk`). A hit on a dead node counts for the live node that stands for it
(:mod:`remd.query.standins`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apsw

from remd.config import InjectConfig
from remd.index import changelog, lexical, vectors
from remd.index.caches import View
from remd.logs import get_logger
from remd.models import NodeKind
from remd.query import standins
from remd.query.walk import SUBTYPES_PROBE, Specificity, Walk
from remd.store.seam import Connection, Read
from remd.text.embed import EmbedError
from remd.text.tagging import extract_query_tags, query_candidates

if TYPE_CHECKING:
    from remd.parts import Parts

# inject's events: under the logger name hosts already filter them by.
log = get_logger("remd.inject")


@dataclass
class Candidate:
    """A memory a query reached: its evidence from each source and what scoring made of it."""

    rid: int
    graph: float = 0.0
    vector: float = 0.0
    lexical: float = 0.0
    subject: float = 0.0  # among the live memories of the question's subject keys (newest: 1)
    text: str | None = None  # what the pack writes for it, when not its saved text (clauses)
    part: str = ""  # e.g. "2 of 6 clauses" (remd.query.clauses)
    via: int | None = None  # the activated tag that gave the most graph evidence
    via_act: float = 0.0
    # filled from the node mirror:
    pos: int = -1  # position in the mirror's arrays
    kind: NodeKind = NodeKind.EPISODIC
    created_at: float = 0.0
    importance: float = 0.5
    tokens: int = 0
    base: float = 0.0
    # what base is made of (ScoreParts): relevance x recency x importance x date + context
    relevance: float = 0.0
    recency: float = 1.0
    weight: float = 1.0  # the importance multiplier
    date: float = 1.0
    context: float = 0.0
    fact: float = 1.0  # the multiplier for being the live fact the question asks for
    speaker: float = 1.0  # the multiplier for being said by someone the query names
    outdated_by: int | None = None  # a newer live memory probably updates it (remd.query.newest)
    info: float = 1.0  # how specific its tags are (remd.query.chatter)


def _tags_named(namespace: str, names: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    """The read of the tags of ``namespace`` with these names: (tid, name, df)."""
    marks = ",".join("?" * len(names))
    return (f"SELECT tid, name, df FROM tags WHERE namespace = ? AND name IN ({marks})",
            (namespace, *names))


class CandidateReader:
    """The reads of one inject call, in one snapshot: its caches brought up to date, the
    query's seeds and the candidates of every source (scored by :mod:`remd.query.inject`).

    ``view`` is the namespace's cached state (:mod:`remd.index.caches`), held by the caller for the
    whole read phase.
    """

    def __init__(self, engine: Parts, namespace: str, now: float, view: View) -> None:
        self.engine = engine
        self.ns = namespace
        self.now = now
        self.cfg: InjectConfig = engine.config.inject
        self.spec = Specificity(0, self.cfg.idf_min_memories)  # set in rank()
        self._specs: dict[int, float] = {}
        self.view = view
        self.cache = view.graph
        self.nodes = view.mirror
        self.terms: dict[str, str] = {}  # the query's words worth searching (remd.index.lexical)
        # stand-in -> the folded or superseded nodes whose hits counted for it, with their scores
        self.origins: standins.Origins = {}
        self.query_tags = (0, 0)  # (tags of the query the namespace has, tags of the query)
        self._synced = False

    def _sync(self, conn: Connection, query: str | None = None) -> None:
        """Bring the in-process caches to this snapshot (once per inject): evict the tags and
        re-read the memories written since the last look."""
        if not self._synced:
            def probes() -> list[Read]:  # every cache's first question, in one round trip
                reads: list[Read] = [changelog.newest_probe(conn, "node_log", self.ns),
                                     changelog.newest_probe(conn, "tag_log", self.ns)]
                if self.cfg.vector_k > 0:
                    reads += self.view.bits.probes() + self.view.sentences.probes()
                if self.cfg.subtype_weight > 0:
                    reads.append((SUBTYPES_PROBE, (self.ns,)))
                if query is not None:  # and the query's first reads: its tags, its words
                    names = query_candidates(query)
                    reads += [_tags_named(self.ns, names)] if names else []
                    reads += self.engine.caches.terms.probes(conn, self.ns, self.terms,
                                                             self.cfg.fts_max_postings)
                return reads

            conn.prefetch(probes)  # (on SQLite, nothing: probes is never asked)
            self.nodes.refresh(conn)
            self.cache.size_for(self.nodes.n)
            self.cache.sync(conn)
            self._synced = True

    # -- seeds ----------------------------------------------------------------------------
    def _size(self) -> int:
        """Memories in the namespace (every status), for IDF: the mirror's row count."""
        return self.nodes.n

    def _query_seeds(self, conn: Connection, query: str) -> dict[int, tuple[str, float]]:
        found: dict[str, tuple[int, int]] = {}  # name -> (tid, df) of the tags looked up
        asked: set[str] = set()

        def lookup(names: Iterable[str]) -> None:
            wanted = [n for n in names if n not in asked]
            if wanted:
                asked.update(wanted)
                for tid, name, df in conn.execute(*_tags_named(self.ns, wanted)):
                    found[str(name)] = (int(tid), int(df))

        def known(names: list[str]) -> set[str]:
            lookup(names)
            return {n for n in names if n in found}

        weights = dict(extract_query_tags(query, known=known, max_tags=8))
        self.query_tags = (0, len(weights))
        if not weights:
            return {}
        lookup(weights)  # usually asked already, through known()
        scored = []
        for name in weights:
            if name in found:
                tid, df = found[name]
                scored.append((weights[name] * self.spec.one(df), tid, name))
        scored.sort(key=lambda s: (-s[0], s[2]))
        self.query_tags = (len(scored), len(weights))
        return {tid: (name, w) for w, tid, name in scored[: self.cfg.max_seed_tags]}

    def _start_vector_scan(self, conn: Connection, query: str) -> list[vectors.Scan] | None:
        """Embed the query and start the Hamming pre-filters (:func:`remd.index.vectors.start_scan`)
        over the memories' vectors and their sentences'; None when there is no vector
        search."""
        if self.cfg.vector_k <= 0:
            return None
        try:
            qvec = self.engine.query_vector(query)
        except EmbedError as exc:  # inject still works on tags and words
            log.warning("inject.embed_failed", error=str(exc))
            return None
        if qvec is None:
            return None
        want = self.cfg.vector_k * max(1, self.cfg.vector_rerank)
        scans = [vectors.start_scan(index, conn, qvec, want)
                 for index in (self.view.bits, self.view.sentences)]
        return [s for s in scans if s is not None] or None

    @staticmethod
    def _finish_scans(conn: Connection, scans: list[vectors.Scan] | None
                      ) -> list[tuple[int, float]]:
        """(rid, cosine) best first: a memory's best of its own vector and its sentences'."""
        return vectors.best_per_rid(hit for scan in scans or () for hit in scan.finish(conn))

    def _vector_seeds(self, conn: Connection, near: Sequence[tuple[int, float]],
                      taken: set[int]) -> dict[int, tuple[str, float]]:
        cfg = self.cfg
        near = list(near[: cfg.vector_seed_nodes])
        if not near or cfg.vector_seed_tags <= 0 or cfg.vector_seed_weight <= 0:
            return {}
        top_sim = max(s for _, s in near) or 1.0
        sims = {rid: max(0.0, s) / top_sim for rid, s in near}
        rows = [(rid, tid, weight) for rid, pairs in self.nodes.tags_of(conn, list(sims)).items()
                for tid, weight in pairs if tid not in taken]
        info = self.cache.names(conn, {tid for _, tid, _ in rows})
        best: dict[int, tuple[str, float]] = {}
        for rid, tid, weight in rows:
            if tid not in info:
                continue
            name, df = info[tid]
            w = cfg.vector_seed_weight * sims[rid] * weight * self.spec.one(df)
            if w > best.get(tid, ("", 0.0))[1]:
                best[tid] = (name, w)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][1], kv[1][0]))
        return dict(ranked[: cfg.vector_seed_tags])

    def _graph_candidates(self, conn: Connection, walk: Walk,
                          cands: dict[int, Candidate]) -> int:
        """Live memories of the activated tags, best tags first; returns rows read."""
        cfg = self.cfg
        read = 0
        top = max(walk.act.values(), default=0.0)
        order = sorted(walk.act, key=lambda t: -walk.act[t])[: cfg.read_tags]
        self.cache.prefetch(conn, "members", order, cfg.per_tag_cap)
        for tid in order:
            if len(cands) >= cfg.max_candidates:
                break
            act = walk.act[tid]
            # Weakly activated tags contribute little: read fewer of their memories.
            cap = max(4, math.ceil(cfg.per_tag_cap * act / top)) if top > 0 else 4
            members = self.cache.top_members(conn, tid, cfg.per_tag_cap)
            for rid, weight in zip(members.ids[: min(cap, cfg.per_tag_cap)], members.weights,
                                   strict=False):
                read += 1
                c = cands.get(rid)
                if c is None:
                    if len(cands) >= cfg.max_candidates:
                        continue
                    c = cands[rid] = Candidate(rid)
                contribution = act * float(weight)
                c.graph += contribution
                if contribution > c.via_act:
                    c.via, c.via_act = tid, contribution
        return read

    # -- lexical --------------------------------------------------------------------------
    def _search_terms(self, conn: Connection, query: str) -> dict[str, str]:
        """The query's words worth searching (:func:`remd.index.lexical.query_terms`), once per
        inject: none when lexical search is off or a tokenizer edge case fails (logged)."""
        if self.cfg.fts_k <= 0:
            return {}
        try:
            return lexical.query_terms(conn, query, self.cfg.fts_max_terms)
        except apsw.SQLError as exc:  # a tokenizer edge case must not fail the inject
            log.warning("inject.fts_failed", error=str(exc))
            return {}

    def _lexical_hits(self, conn: Connection,
                      scans: list[vectors.Scan] | None) -> list[tuple[int, float]]:
        """The best ``fts_k`` bm25 matches of this namespace (remd/index/lexical.py), a deprecated
        fragment's match counting for the synthesis that carries its words (the words of
        :meth:`_search_terms`). On PostgreSQL the vector ``scans``' reads go in the same round
        trip, when their candidates are known."""
        cfg = self.cfg
        if cfg.fts_k <= 0 or not self.terms:
            return []
        counts = self.engine.caches.terms
        k = cfg.fts_k
        try:
            counts.sync(conn, self.ns)
            match = lexical.match_expression(conn, self.ns, self.terms, counts,
                                             max_postings=cfg.fts_max_postings)
            if match is None:
                return []
            # On PostgreSQL bm25 on its way while the scans finish, then theirs.
            conn.prefetch(
                lambda: [conn.search_read(match, 2 * k, self.ns, filtered=False)],
                then=lambda: [r for r in (s.read(conn) for s in scans or ()) if r is not None])
            # FTS5 alone first: joining nodes for the namespace and status costs a row lookup
            # per matching posting. _resolve keeps this namespace's live hits.
            rows = lexical.search(conn, match, 2 * k, self.ns)
            hits = self._resolve(conn, rows)
            if len(hits) < k and len(rows) == 2 * k:
                # Most matches belong to other namespaces or dead nodes: filter in SQL.
                hits = self._resolve(conn, lexical.search(conn, match, k, self.ns, filtered=True))
        except apsw.SQLError as exc:  # a tokenizer edge case must not fail the inject
            log.warning("inject.fts_failed", error=str(exc))
            return []
        return hits[:k]

    # -- stand-ins --------------------------------------------------------------------------
    def _stand_ins(self, conn: Connection, rids: Iterable[int]) -> dict[int, int]:
        """rid -> the live node that stands for it (:func:`remd.query.standins.stand_ins`)."""
        self._sync(conn)
        return standins.stand_ins(self.nodes, conn, rids)

    def _resolve(self, conn: Connection, hits: Sequence[tuple[int, float]]
                 ) -> list[tuple[int, float]]:
        """Hits mapped to their stand-ins (:func:`remd.query.standins.resolve`)."""
        self._sync(conn)
        return standins.resolve(self.nodes, conn, hits, self.origins)

    def _resolve_top(self, conn: Connection, hits: Sequence[tuple[int, float]], k: int
                     ) -> list[tuple[int, float]]:
        """The best ``k`` of ``hits`` after :meth:`_resolve` (:func:`remd.query.standins.top`)."""
        self._sync(conn)
        return standins.top(self.nodes, conn, hits, k, self.origins)

    def _seek_neighbour(self, conn: Connection, rid: int, step: int) -> int:
        return standins.seek_neighbour(self.nodes, conn, self.ns, rid, step)
