"""Inject: the memories that matter for a query, packed into a hard token budget.

The pipeline (every step bounded by configuration, never by the namespace's size):

1. Seeds. Tags are extracted from the query exactly as at write time and matched to the
   namespace's vocabulary; at most ``max_seed_tags`` are kept, IDF-weighted once the namespace
   holds ``idf_min_memories`` memories. The ``vector_k`` nearest memories by vector
   (:mod:`remd.index.vectors`) are candidates themselves, and the tags of the closest few are extra,
   weaker seeds, so a paraphrase that shares no tag with its memory still reaches it (MME's
   cold-start weakness). FTS5 ``bm25()`` hits on the query's words are candidates too.
2. Propagation (:mod:`remd.query.walk`). From each activated tag follow at most ``fanout`` (M)
   highest-weight tag edges plus IS_SUBTYPE_OF children, to ``depth`` (D) hops, multiplying by
   ``decay`` (alpha), the edge weight and the target tag's specificity per hop; keep the best
   ``beam`` (B) activated tags. Each tag remembers the path that activated it.
3. Candidates. At most ``per_tag_cap`` live memories per activated tag (one range scan of
   ``node_tags_live_top``: dead rows are never read), at most ``max_candidates`` in all,
   plus the vector and lexical hits. Never superseded, deprecated, forgotten, expired or
   other-namespace nodes: a vector or lexical hit on a fragment a REM run deprecated counts
   for the live synthesis that carries its words.
4. Score. The graph, vector and lexical rankings are fused by weighted reciprocal rank (each
   source is evidence; none is required), then multiplied by mild recency and importance
   factors, ``(1 - w) + w * x``, so an old but relevant memory is not crushed, and by
   ``1 + date_weight`` when the query names a date ("on 1 May, 2022", "in October 2023") and
   the memory was saved then (a synthesis: any time from its earliest member to its latest):
   the words and vectors of a turn rarely carry its date.
5. Pack (result types in :mod:`remd.query.pack`). Greedy by score with a diversity penalty (the
   share of an item's tags already carried by chosen items, times ``diversity_penalty``, taken
   off its score). The budget is hard: ``tokens_used`` is the exact tiktoken count of the items
   joined by ``separator``; an item that does not fit is skipped, never truncated.
6. Record. The pack and its items (with score and path) are stored, the items' access counts and
   last access updated, all in one transaction. :mod:`remd.query.feedback` learns from it later.

The rows inject reads again and again (tag edges and members, node metadata, FTS5 term
counts) come from in-process caches kept exact by change logs (:mod:`remd.index.graphcache`,
:mod:`remd.index.nodemirror`, :mod:`remd.index.lexical`). Steps 1 and 3 (the seeds and the
candidates
of every source) are :mod:`remd.query.candidates`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from remd.checks import check_budget, check_namespace, check_text
from remd.errors import InvalidInput, ReadOnlyStore
from remd.ids import new_id
from remd.index import nodemirror
from remd.index.caches import View
from remd.logs import get_logger
from remd.models import NodeKind
from remd.query import chatter, clauses, cues, newest, packer, render
from remd.query.candidates import Candidate, CandidateReader
from remd.query.pack import Pack, PackItem, ScoreParts, Seed
from remd.query.subjects import subject_hits
from remd.query.walk import Specificity, Walk, propagate
from remd.store.seam import Connection
from remd.text.dates import DAY, Period, query_period
from remd.text.fact_questions import question_keys as fact_keys
from remd.text.frames import asked, words
from remd.text.questions import asks_when

if TYPE_CHECKING:
    from remd.parts import Parts

log = get_logger("remd.inject")

_SOURCES = ("graph", "vector", "lexical", "subject")
_NEWER = 1e-3  # of two live facts of one key, the newer scores this much more
_KINDS = {code: NodeKind(name) for name, code in nodemirror.KINDS.items()}

@dataclass
class _Ranked:
    """What the read path found for a query: scored candidates and how they were reached."""

    cands: dict[int, Candidate] = field(default_factory=dict)
    walk: Walk = field(default_factory=Walk)
    seeds: tuple[Seed, ...] = ()
    touched: int = 0
    facts: int = 0  # live memories of the fact key the question asks for
    unrelated: str | None = None  # why the query is about nothing stored (None: it is not)


class _Injector(CandidateReader):
    """One inject call: reads in one snapshot (the candidates: :class:`CandidateReader`), then
    one write transaction to record the pack."""

    def __init__(self, engine: Parts, namespace: str, now: float, view: View) -> None:
        super().__init__(engine, namespace, now, view)
        self.period: Period | None = None  # the dates the query names, set in rank()
        self.ids: dict[int, str] = {}  # rid -> node id, read with the picked items' texts

    # -- scoring --------------------------------------------------------------------------
    def _load(self, cands: dict[int, Candidate]) -> None:
        """Keep live, unexpired candidates of this namespace and fill what scoring needs (from
        the node mirror: no SQL)."""
        nodes = self.nodes
        rids, pos = nodes.positions(cands)
        ok = nodes.usable(pos, self.now)
        rids, pos = rids[ok], pos[ok]
        keep = set(rids.tolist())
        for rid in [r for r in cands if r not in keep]:
            del cands[rid]
        for rid, p, kind, created, importance, tokens in zip(
                rids.tolist(), pos.tolist(), nodes.kind[pos].tolist(),
                nodes.created[pos].tolist(), nodes.importance[pos].tolist(),
                nodes.tokens[pos].tolist(), strict=True):
            c = cands[rid]
            c.pos, c.kind, c.created_at = p, _KINDS[kind], created
            c.importance, c.tokens = importance, tokens

    def _score(self, cands: dict[int, Candidate]) -> None:
        """base = relevance x recency x importance x date for every loaded candidate (numpy
        over the candidates; recency, importance and dates from the node mirror)."""
        cfg = self.cfg
        cl = list(cands.values())
        if not cl:
            return
        weights = np.array([cfg.graph_weight, cfg.vector_weight, cfg.lexical_weight,
                            cfg.subject_weight])
        values = np.array([(c.graph, c.vector, c.lexical, c.subject) for c in cl], np.float64)
        if not values[:, 3].any():  # a question about no subject key: three sources
            weights[3] = 0.0
        total = float(weights.sum()) or 1.0
        evidence = np.zeros_like(values)
        for j in range(4):
            v = values[:, j]
            has = v > 0
            if not has.any():
                continue
            if cfg.fusion == "score":  # each source's values over its best: in (0, 1]
                evidence[has, j] = v[has] / v[has].max()
            elif cfg.fusion == "minmax":
                top, low = v[has].max(), v[has].min()
                evidence[has, j] = 0.05 + 0.95 * (v[has] - low) / ((top - low) or 1.0)
            else:
                # Reciprocal rank, 1.0 at rank 1. Competition ranking: ties (many memories
                # on one tag) share the better rank: 1 + how many values are greater.
                asc = np.sort(v[has])
                rank = 1 + len(asc) - np.searchsorted(asc, v[has], side="right")
                evidence[has, j] = (cfg.fusion_k + 1) / (cfg.fusion_k + rank)
        rel = evidence @ weights / total
        pos = np.fromiter((c.pos for c in cl), np.int64, len(cl))
        created = self.nodes.created[pos]
        age = np.maximum(0.0, self.now - created)
        recency = (1 - cfg.recency_weight) + cfg.recency_weight * np.exp2(
            -age / (cfg.recency_half_life_days * DAY))
        importance = (1 - cfg.importance_weight) + cfg.importance_weight * np.clip(
            self.nodes.importance[pos], 0.0, 1.0)
        date = np.ones(len(cl))
        if self.period is not None:
            date[self.period.overlaps_many(self.nodes.since[pos], created,
                                           cfg.date_pad_days * DAY)] += cfg.date_weight
        base = rel * recency * importance * date
        for c, b, r, rc, im, d in zip(cl, base.tolist(), rel.tolist(), recency.tolist(),
                                      importance.tolist(), date.tolist(), strict=True):
            c.base, c.relevance, c.recency, c.weight, c.date, c.context = b, r, rc, im, d, 0.0

    def _context(self, conn: Connection, cands: dict[int, Candidate]) -> int:
        """Give the memories saved just before and after the best candidates a share of
        their score; returns how many rows were looked at.

        Memories saved together (turns of one conversation) explain each other: the answer
        to "what did Melanie paint?" is often the turn after the one that matches the words.
        The neighbours come from the node mirror (the nearest live rows on either side);
        ``context_from`` sources at most.
        """
        cfg = self.cfg
        if cfg.context_weight <= 0 or cfg.context_from <= 0:
            return 0
        top = [c for c in sorted(cands.values(), key=lambda c: (-c.base, c.rid))
               [: cfg.context_from]
               if c.kind is not NodeKind.SYNTHESIS]  # a REM run's node has no neighbours
        nodes = self.nodes
        boost: dict[int, float] = {}
        read = 0
        for c in top:
            for step in (-1, 1):
                read += 1
                i = nodes.neighbour(c.pos, step)
                if i == nodemirror.FAR:  # a long run of dead rows: one index seek instead
                    i = self._seek_neighbour(conn, c.rid, step)
                if (i < 0 or nodes.kind[i] == nodemirror.SYNTHESIS
                        or abs(float(nodes.created[i]) - c.created_at) > cfg.context_window):
                    continue
                rid = int(nodes.rid[i])
                boost[rid] = max(boost.get(rid, 0.0), cfg.context_weight * c.base)
        fresh = {rid: Candidate(rid) for rid in boost if rid not in cands}
        self._load(fresh)
        if fresh:
            self._score(fresh)  # no evidence of their own: multipliers only
        cands.update(fresh)
        for rid, extra in boost.items():
            near = cands.get(rid)
            if near is not None:
                near.base += extra
                near.context = extra
        return read

    # -- the call -------------------------------------------------------------------------
    def rank(self, conn: Connection, query: str) -> _Ranked:
        """Steps 1-4 of the pipeline in the caller's snapshot: every candidate, scored."""
        cfg = self.cfg
        self.terms = self._search_terms(conn, query)
        self._sync(conn, query)
        self.spec = Specificity(self._size(), cfg.idf_min_memories)
        self.period = query_period(query) if cfg.date_weight > 0 else None
        scan = self._start_vector_scan(conn, query)
        lexical = self._lexical_hits(conn, scan)  # while the scan runs
        qseeds = self._query_seeds(conn, query)
        cands: dict[int, Candidate] = {}
        near = self._resolve_top(conn, self._finish_scans(conn, scan), cfg.vector_k)
        vseeds = self._vector_seeds(conn, near, set(qseeds))
        seeds = [Seed(tag=n, weight=w, origin="query") for n, w in qseeds.values()]
        seeds += [Seed(tag=n, weight=w, origin="vector") for n, w in vseeds.values()]
        walk = propagate(conn, self.cache, cfg, self.ns, self.spec, {**qseeds, **vseeds})
        self._graph_candidates(conn, walk, cands)
        for rid, sim in near:
            cands.setdefault(rid, Candidate(rid)).vector = max(sim, 1e-9)
        for rid, score in lexical:
            cands.setdefault(rid, Candidate(rid)).lexical = max(score, 1e-9)
        # The live memories of what the question asks about, however they say it ("who's my
        # boss?" reaches "I report to Sanne now"), each the same evidence (remd.query.subjects).
        if cfg.subject_weight > 0:
            for rid in subject_hits(conn, self.ns, query, cfg.subject_k):
                cands.setdefault(rid, Candidate(rid)).subject = 1.0
        self._load(cands)
        self._score(cands)
        self._context(conn, cands)
        chatter.weigh(conn, self.nodes, self.cache, list(cands.values()), cfg.chatter_weight)
        cues.speaker_boost(conn, self.ns, query, cands, cfg.speaker_weight,
                           lambda rid: cands[rid].kind is NodeKind.SYNTHESIS)
        facts = self._facts(conn, query, cands)
        newest.prefer_newest(conn, self.ns, cands, query, self._fresh)
        unrelated = None
        if scan is not None and not facts:
            best = max((s for _, s in near), default=0.0)
            unrelated = cues.unrelated(conn, self.ns, cfg.floor_similarity, best, lexical,
                                       set(self.terms), self.query_tags)
            # (a question whose attribute some memory speaks of, in any words, is not)
            if unrelated is None and cfg.floor_similarity > 0 and best < cfg.floor_weak and (
                    near) and not any(
                    c.subject > 0 for c in cands.values()):
                unrelated = cues.never_said(conn, self.ns, self.terms,
                                            self.engine.caches.terms, near[0][0],
                                            {n for n, _ in qseeds.values()} | {
                                                w for f in asked(query) for w in words(f)})
        # Distinct memories scored (rows read twice count once): at most the namespace's.
        return _Ranked(cands=cands, walk=walk, seeds=tuple(seeds), touched=len(cands),
                       facts=facts, unrelated=unrelated)

    def _fresh(self, rids: list[int]) -> dict[int, Candidate]:
        """Candidates of live memories no source reached, loaded and scored (multipliers only:
        no evidence of their own)."""
        fresh = {rid: Candidate(rid) for rid in rids}
        self._load(fresh)
        self._score(fresh)
        return fresh

    def _facts(self, conn: Connection, query: str, cands: dict[int, Candidate]) -> int:
        """Put the live memory of the fact key the question asks for first ("where do I
        live?" -> ``user/city``, :mod:`remd.text.fact_questions`); returns how many there are.

        Its score becomes the best candidate's times ``1 + fact_weight``. Superseded values
        are never live, so they never come back this way.
        """
        cfg = self.cfg
        keys = fact_keys(query) if cfg.fact_weight > 0 else []
        if not keys:
            return 0
        marks = ",".join("?" * len(keys))
        rids = [int(r) for (r,) in conn.execute(
            f"SELECT rid FROM nodes WHERE namespace = ? AND fact_key IN ({marks}) "
            f"AND status = 'live' LIMIT 8", (self.ns, *keys))]
        fresh = {rid: Candidate(rid) for rid in rids if rid not in cands}
        self._load(fresh)
        self._score(fresh)
        top = max((c.base for c in cands.values()), default=0.0)
        cands.update(fresh)
        found = [cands[r] for r in rids if r in cands]
        # Two live values of one key (a restored one beside its newer one: the user said both
        # hold): both are answers, the newer first.
        for age, c in enumerate(sorted(found, key=lambda c: (c.created_at, c.rid))):
            c.fact = 1.0 + cfg.fact_weight
            c.base = max(top, c.base, 1e-6) * c.fact * (1.0 + _NEWER * age)
        return len(found)

    def pack(self, conn: Connection, ranked: _Ranked, budget: int, fill: bool,
             dated: bool = False, reserve: bool = True
             ) -> tuple[list[tuple[Candidate, float, float]], packer.Stop]:
        """Step 5: fill the budget greedily, then (unless ``fill``) trim to the relevance floor
        (:mod:`remd.query.packer`); the items in pack order and why the pack stops there.
        ``dated``: each item's date counts (:mod:`remd.query.render`), reserved before packing
        unless not ``reserve`` (then the dated texts are fitted after: :func:`packer.fit`)."""
        cfg = self.cfg
        sep_tokens = self.engine.counter.count(cfg.separator) if cfg.separator else 0
        if cfg.clause_max > 0:  # a synthesis: its subject and the clauses the query needs
            clauses.fit_syntheses(conn, self.ns, ranked.cands, self.terms, self.origins,
                                  self.engine.counter.count, cfg.clause_max, budget)
        if dated and reserve:
            extra = self.engine.counter.count(render.DATE_SAMPLE)
            for c in ranked.cands.values():
                c.tokens += extra
        picked, left_out = packer.greedy(list(ranked.cands.values()),
                                         lambda rids: self.nodes.tag_sets(conn, rids),
                                         budget, sep_tokens, cfg)
        stop = (packer.Stop("budget", "the next best candidate does not fit the budget")
                if left_out else
                packer.Stop("candidates", f"every candidate is in ({len(picked)})"))
        if not picked:
            stop = packer.Stop("empty", "no candidate for this query" if not ranked.cands
                               else "no candidate fits the budget")
        elif not fill:
            picked, cut = packer.relevance_floor(picked, cfg, ranked.unrelated)
            stop = cut or stop
        return picked, stop

    def run(self, query: str, budget: int, fill: bool, dated: bool = False,
            turns: bool = True) -> Pack:
        cfg = self.cfg
        picked: list[tuple[Candidate, float, float]] = []
        ranked = _Ranked()
        contents: dict[int, str] = {}
        names: dict[int, tuple[str, ...]] = {}
        stop = packer.Stop("empty", "the budget is 0")
        if budget > 0:
            with self.engine.store.snapshot() as conn:
                ranked = self.rank(conn, query)
                picked, stop = self.pack(conn, ranked, budget, fill, dated, turns)
                contents, names = self._texts(conn, [c.rid for c, _, _ in picked])
                for c, _, _ in picked:
                    if c.text is not None:
                        contents[c.rid] = c.text
                picked = packer.distinct(picked, contents)
        dates = {c.rid: render.item_date(c.created_at, float(self.nodes.since[c.pos]))
                 for c, _, _ in picked}
        exact = self.engine.tokens_exact or all(c.text is not None for c, _, _ in picked)
        if not exact and any(c.text is not None for c, _, _ in picked):
            for (c, _, _), n in zip(picked, self.engine.counter.count_many(
                    [contents[c.rid] for c, _, _ in picked]), strict=True):
                c.tokens = n
            exact = True
        if dated and picked:  # each text with its date: counted anew
            for c, _, _ in picked:  # (turns: also a transcript turn that carries its stamp)
                if turns or not render.stamped(contents[c.rid]):
                    contents[c.rid] = render.dated_text(contents[c.rid], dates[c.rid],
                                                        c.created_at)
            for (c, _, _), n in zip(picked, self.engine.counter.count_many(
                    [contents[c.rid] for c, _, _ in picked]), strict=True):
                c.tokens = n
            exact = True
        picked, used = packer.fit(picked, contents, budget, self.engine.counter, cfg.separator,
                                  exact)
        # Each item's count was taken when it was saved (same encoding: Parts.tokens_exact),
        # or when its text was dated.
        counts = ([c.tokens for c, _, _ in picked] if exact
                  else self.engine.counter.count_many([contents[c.rid] for c, _, _ in picked]))
        walk = ranked.walk
        # The walk from a seed to each item's activating tag, once per tag (tag ids).
        paths: dict[int | None, list[int]] = {c.via: walk.path(c.via) for c, _, _ in picked
                                              if c.via}
        items = tuple(self._item(c, score, penalty, contents[c.rid], n, names.get(c.rid, ()),
                                 tuple(walk.names.get(t, str(t)) for t in paths.get(c.via, ())),
                                 dates[c.rid])
                      for (c, score, penalty), n in zip(picked, counts, strict=True))
        pack = Pack(pack_id=new_id(), namespace=self.ns, query=query, budget=budget,
                    tokens_used=used, items=items, separator=cfg.separator, seeds=ranked.seeds,
                    tags_activated=len(walk.act), memories_touched=ranked.touched,
                    fill=fill, stop=stop.reason, stop_detail=stop.detail)
        try:
            self._record(pack, picked, paths)
        except ReadOnlyStore as exc:  # an agent that can only read still gets its memories
            log.warning("inject.not_recorded", pack_id=pack.pack_id, error=str(exc))
            return replace(pack, recorded=False)
        return pack

    def _texts(self, conn: Connection, rids: Sequence[int]
               ) -> tuple[dict[int, str], dict[int, tuple[str, ...]]]:
        if not rids:
            return {}, {}
        marks = ",".join("?" * len(rids))
        read = (f"SELECT rid, id, content FROM nodes WHERE namespace = ? AND rid IN ({marks})",
                (self.ns, *rids))
        tags = self.nodes.tags_of(conn, rids)  # the packer's: cached
        tids = {tid for pairs in tags.values() for tid, _ in pairs}
        # On PostgreSQL the texts and the tags' names in one round trip.
        conn.prefetch(lambda: [read, *self.cache.name_reads(tids)])
        contents: dict[int, str] = {}
        for r, ident, text in conn.execute(*read):
            contents[int(r)] = str(text)
            self.ids[int(r)] = str(ident)
        info = self.cache.names(conn, tids)
        names = {rid: tuple(sorted(info[tid][0] for tid, _ in pairs if tid in info))
                 for rid, pairs in tags.items()}
        return contents, names

    def _item(self, c: Candidate, score: float, penalty: float, content: str, tokens: int,
              tags: tuple[str, ...], path: tuple[str, ...], date: str) -> PackItem:
        sources = tuple(s for s in _SOURCES if getattr(c, s) > 0)
        parts = ScoreParts(relevance=c.relevance, graph=c.graph, vector=c.vector,
                           lexical=c.lexical, recency=c.recency, importance=c.weight,
                           diversity=penalty, context=c.context, date=c.date, fact=c.fact,
                           speaker=c.speaker, subject=c.subject)
        return PackItem(id=self.ids[c.rid], content=content, tokens=tokens,
                        score=score, tags=tags, kind=c.kind, created_at=c.created_at,
                        parts=parts, path=path, sources=sources, date=date, part=c.part,
                        outdated_by=self.ids.get(c.outdated_by) if c.outdated_by else None)

    def _record(self, pack: Pack, picked: Sequence[tuple[Candidate, float, float]],
                paths: dict[int | None, list[int]]) -> None:
        """One transaction: the pack, its items, and the items' access bookkeeping."""
        statements: list[tuple[str, Sequence[Any]]] = [(
            "INSERT INTO packs (pack_id, namespace, query, budget, tokens_used, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (pack.pack_id, self.ns, pack.query, pack.budget, pack.tokens_used, self.now))]
        # A statement per table (per 500 items), not per item; on PostgreSQL all of them go
        # in one message (Store.write_all).
        ranked = list(enumerate(picked))
        for start in range(0, len(ranked), 500):
            part = ranked[start:start + 500]
            rows: list[Any] = []
            for rank, (c, score, _) in part:
                path = f"[{', '.join(map(str, paths.get(c.via, ())))}]"  # as json.dumps writes
                rows += (self.ns, pack.pack_id, rank, c.rid, score, pack.items[rank].tokens,
                         c.importance, path)
            marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(part))
            rids = [c.rid for _, (c, _, _) in part]
            statements += [
                ("INSERT INTO pack_items (namespace, pack_id, rank, rid, score, tokens, "
                 f"importance, path) VALUES {marks}", rows),
                ("UPDATE nodes SET access_count = access_count + 1, "
                 "last_access = max(last_access, ?) WHERE namespace = ? "
                 f"AND rid IN ({','.join('?' * len(rids))})", (self.now, self.ns, *rids)),
                ("INSERT INTO access_log (rid, namespace, at, pack_id) VALUES "
                 + ", ".join(["(?, ?, ?, ?)"] * len(part)),
                 [v for rid in rids for v in (rid, self.ns, self.now, pack.pack_id)])]
        self.engine.store.write_all(statements, self.ns)


def first_item(engine: Parts, namespace: str, query: str, token_budget: int) -> int | None:
    """The rid of the first item ``query`` would get now (the relevance floor on), nothing
    recorded; None for an empty pack. For a REM run's check of recent questions
    (:mod:`remd.sleep.usefulness`)."""
    with engine.caches.use(namespace) as view:
        injector = _Injector(engine, namespace, engine.clock(), view)
        with engine.store.snapshot() as conn:
            ranked = injector.rank(conn, query)
            picked, _ = injector.pack(conn, ranked, token_budget, False)
    return picked[0][0].rid if picked else None


def inject(engine: Parts, namespace: str, query: str, token_budget: int, *,
           fill: bool = False, dated: bool | None = None) -> Pack:
    """The pack of memories that matter for ``query``, within ``token_budget`` tokens.

    The pack stops at the relevance floor (:mod:`remd.query.packer`); ``fill=True`` packs to the
    budget whatever the rest is worth. ``dated=True`` writes each item's date before its text
    and resolves its relative dates (:mod:`remd.query.render`), counted in the budget;
    ``None`` (the default) dates the pack of a question that asks for a date ("when did I
    ...?", :func:`remd.text.questions.asks_when`) and no other, leaving a transcript turn that
    carries its own stamp ("[8 May, 2023] Caroline: ...") as it is.

    A budget too small for any item gives an empty pack (still recorded). Raises InvalidInput
    for an empty or oversized query, a negative or non-integer budget or a bad namespace;
    StoreError if the file can't be read or written.
    """
    ns = check_namespace(namespace)
    text = check_text(query, engine.config.store.max_content_chars, "query")
    budget = check_budget(token_budget)
    for flag, value in (("fill", fill), ("dated", True if dated is None else dated)):
        if not isinstance(value, bool):
            raise InvalidInput(f"{flag} must be true or false, not {type(value).__name__}")
    turns = dated is not None  # asked: every item; by default a turn's own stamp is its date
    if dated is None:
        dated = asks_when(text)
    # The view is taken before the read snapshot opens (and kept until the pack is recorded
    # by the snapshot's end), so the snapshots a namespace's caches follow only move forward.
    started = time.perf_counter()
    with engine.caches.use(ns) as view:
        pack = _Injector(engine, ns, engine.clock(), view).run(text, budget, fill, dated, turns)
    engine.telemetry.injected(time.perf_counter() - started)
    return pack
