"""The plan of a REM run: which memories it flags and how it clusters them.

Importance is refreshed at ``now``; live memories older than ``rem.min_age_days`` whose
importance is < τ or whose confidence is low are flagged (fact nodes are left alone unless
``rem.consolidate_facts``; a synthesis is fresh while the run that wrote it is; held memories,
:mod:`remd.sleep.holds`, and values kept exact, ``Judged.EXACT``, are left out); then
:func:`remd.sleep.cluster.build_clusters` groups them by their vectors, their tags (months,
weekdays and years aside) and the names their text writes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from remd.sleep import holds
from remd.sleep.cluster import Cluster, build_clusters
from remd.sleep.importance import DAY, NamespaceScores, compute_importance, store_importance
from remd.sleep.restatements import plain_words
from remd.store import from_int8, rows_in
from remd.text.clauses import parse, render
from remd.text.tagging import is_verb_form, name_tags
from remd.text.updates import frame_slot, read
from remd.text.wording import settles
from remd.text.words import is_time_word, names
from remd.write.backlog import embed_pending

if TYPE_CHECKING:
    from remd.parts import Parts

_CHUNK = 500  # ids per IN (...) list


@dataclass(kw_only=True)
class Plan:
    """What a run is to fold: the namespace's scores, the flagged memories, their clusters."""

    scores: NamespaceScores
    flagged: list[int]  # indices into scores
    held: int  # candidates left out for a hold
    clusters: list[Cluster]  # member indices into ``flagged``
    content: dict[int, str]  # rid -> content
    live_before: int
    unembedded: int
    timings: dict[str, float]
    vectors: np.ndarray  # one unit row per flagged memory
    unflagged: dict[str, int]  # live memories not flagged, by reason (RemRun.why_none)


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def _vectors(engine: Parts, ns: str, rids: Sequence[int]) -> dict[int, np.ndarray]:
    """The stored vectors of ``rids`` as float32 unit rows (node_vec_bit, B-tree seeks)."""
    with engine.store.snapshot() as conn:
        rows = list(rows_in(conn, "SELECT rid, vec FROM node_vec_bit "
                                  "WHERE namespace = ? AND rid IN ({marks})", rids, (ns,)))
    if not rows:
        return {}
    mat = from_int8([r[1] for r in rows])
    return {int(r[0]): mat[i] for i, r in enumerate(rows)}


def plan_run(engine: Parts, ns: str, now: float, *, write: bool, include_held: bool) -> Plan:
    """Refresh importance (stored when ``write``), flag the weak old memories that no hold
    keeps out (unless ``include_held``), embed any that have no vector, and cluster them."""
    cfg = engine.config
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    scores = compute_importance(engine, ns, now)
    if write:
        store_importance(engine, ns, scores)
    timings["importance"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    s = scores.scores
    weak = (s.importance < cfg.rem.tau) | (s.confidence < cfg.importance.low_confidence)
    since = now - cfg.rem.min_age_days * DAY
    old = scores.created_at <= since
    # A synthesis is dated by its members (consolidate.ClusterWriter._commit), so its created_at
    # says nothing of when it was written: it is fresh while the run that wrote it is.
    fresh = [int(r) for (r,) in engine.store.query(
        "SELECT n.rid FROM rem_runs r JOIN nodes n "
        "ON n.namespace = r.namespace AND n.rem_run = r.run_id "
        "WHERE r.namespace = ? AND r.started_at > ? AND n.status = 'live'", (ns, since))]
    recent = np.isin(scores.rids, fresh) if fresh else np.zeros(len(scores), bool)
    old &= ~recent
    kinds = np.asarray(scores.kinds, dtype=object)
    allowed = np.ones(len(scores), bool) if cfg.rem.consolidate_facts else kinds != "fact"
    # A value kept exact (a LangGraph store item) is returned byte for byte by its key: never
    # flagged, however weak, so never clustered, folded or deprecated.
    exact = scores.exact
    allowed &= ~exact
    # A memory a rollback holds is counted as held whatever else it is now (a restored member
    # may have become important, or been used): "N memories held" after a rollback and the
    # next plan's held count are the same memories, until a hold ends.
    kept = set() if include_held else holds.held_rids(engine, ns, now)
    held_mask = (np.isin(scores.rids, np.fromiter(kept, np.int64, len(kept))) if kept
                 else np.zeros(len(scores), bool))
    free = ~held_mask
    candidates = [int(i) for i in np.flatnonzero(weak & old & allowed & free)]
    unflagged = {"young": int((~old & ~recent & ~exact & free).sum()),
                 "fresh": int((recent & free).sum()), "exact": int((exact & free).sum()),
                 "facts": int((old & ~allowed & ~exact & free).sum()),
                 "important": int((old & allowed & ~weak & free).sum())}
    held = int(held_mask.sum())
    rids = [int(scores.rids[i]) for i in candidates]
    vectors = _vectors(engine, ns, rids)
    missing = [r for r in rids if r not in vectors]
    if missing and engine.embedder is not None:
        if write:
            embed_pending(engine, ns, rids=missing)
            vectors.update(_vectors(engine, ns, missing))
        else:  # a dry run writes nothing: embed in memory only
            texts = dict(_content(engine, ns, missing))
            for rid, vec in zip(missing, engine.embedder.embed([texts[r] for r in missing]),
                                strict=True):
                vectors[rid] = vec
    flagged = [i for i, r in zip(candidates, rids, strict=True) if r in vectors]
    flagged_rids = [int(scores.rids[i]) for i in flagged]
    content = dict(_content(engine, ns, flagged_rids))
    position = {rid: k for k, rid in enumerate(flagged_rids)}
    tags: list[list[int]] = [[] for _ in flagged]
    names: list[list[int]] = [[] for _ in flagged]
    named = {rid: name_tags(content[rid]) for rid in flagged_rids}
    for part in _chunks(flagged_rids):
        marks = ",".join("?" * len(part))
        for tid, rid, name in engine.store.query(
                f"SELECT nt.tid, nt.rid, t.name FROM node_tags nt JOIN tags t "
                f"ON t.namespace = nt.namespace AND t.tid = nt.tid "
                f"WHERE nt.namespace = ? AND nt.rid IN ({marks})", (ns, *part)):
            # A shared month or year is not a shared subject: "Risris launched 22 Mar" and
            # "a full disk on Bellum on 17 Mar" are two facts.
            if not is_time_word(name):
                tags[position[rid]].append(int(tid))
                if name in named[rid]:
                    names[position[rid]].append(int(tid))
    tag_df = dict(engine.store.query(
        "SELECT tid, count(*) FROM node_tags WHERE namespace = ? AND live = 1 GROUP BY tid",
        (ns,)))
    by_id = {scores.ids[i]: k for k, i in enumerate(flagged)}
    edges: list[tuple[int, int]] = []
    apart: list[tuple[int, int]] = []
    for a, b, kind in engine.store.query(
            "SELECT src, dst, type FROM edges WHERE namespace = ? AND live = 1", (ns,)):
        if a in by_id and b in by_id:
            # A statement and the newer one that probably updates it are never one synthesis
            # (its current value would read as one of two); other links are evidence.
            (apart if kind in ("CONTRADICTS", "SUPERSEDES") else edges).append(
                (by_id[a], by_id[b]))
    apart += _versions(engine, ns, flagged_rids, content)
    apart += _settled(engine, ns, flagged_rids, content)
    timings["flag"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    matrix = (np.vstack([vectors[r] for r in flagged_rids]) if flagged_rids
              else np.zeros((0, 384), np.float32))
    result = build_clusters(matrix, tags, [len(content[r]) for r in flagged_rids],
                            tag_df=tag_df, live_count=len(scores), config=cfg.rem, edges=edges,
                            names=names, apart=apart)
    timings["cluster"] = time.perf_counter() - t0
    unflagged |= {"held": held, "unembedded": len(candidates) - len(flagged)}
    return Plan(scores=scores, flagged=flagged, held=held, clusters=list(result.clusters),
                 content=content, live_before=len(scores), unembedded=len(candidates) -
                 len(flagged), timings=timings, vectors=matrix, unflagged=unflagged)


_VERSIONS_GROUP = 40  # flagged memories of one attribute compared pairwise, at most


def _versions(engine: Parts, ns: str, rids: Sequence[int], content: dict[int, str]
              ) -> list[tuple[int, int]]:
    """Pairs (flagged positions) that give two values of one attribute of one subject
    (remd.text.updates.frame_slot): two versions, never one synthesis, whatever nothing
    decided between them yet."""
    position = {rid: k for k, rid in enumerate(rids)}
    groups: dict[str, list[int]] = {}
    for part in _chunks(rids):
        marks = ",".join("?" * len(part))
        for key, rid in engine.store.query(
                f"SELECT key, rid FROM node_keys WHERE namespace = ? AND rid IN ({marks})",
                (ns, *part)):
            if not str(key).startswith("m:"):  # a frame of several values: additions
                groups.setdefault(str(key), []).append(int(rid))
    out: set[tuple[int, int]] = set()
    for members in groups.values():
        members = sorted(members)[:_VERSIONS_GROUP]
        readings = {r: read(content[r]) for r in members if r in content}
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                ra, rb = readings.get(a), readings.get(b)
                if ra and rb and frame_slot(ra, rb, ra.words & rb.words) is not None:
                    out.add((position[a], position[b]))
    return sorted(out)


def _settled(engine: Parts, ns: str, rids: Sequence[int], content: dict[int, str]
              ) -> list[tuple[int, int]]:
    """Pairs (flagged positions) of a note and a later one that settles something it is about
    ("the spare room radiator is cold at the top" / "bled the radiators, the spare room is
    warm now": remd.text.wording.settles, sharing a content word): never one synthesis, so
    none states as current what stopped being true."""
    settling = [k for k, r in enumerate(rids) if settles(content[r])]
    if not settling:
        return []
    at: dict[int, float] = {}
    for part in _chunks(rids):
        marks = ",".join("?" * len(part))
        at.update((int(r), float(c)) for r, c in engine.store.query(
            f"SELECT rid, created_at FROM nodes WHERE namespace = ? AND rid IN ({marks})",
            (ns, *part)))
    def about(rid: int) -> set[str]:  # the things a note is about: not how it happened,
        text = content[rid]  # nor the names that only say whose or where it is
        named = {w.casefold() for n in names(text) for w in n.split()}
        return {w for w in plain_words(text) if not is_verb_form(w) and w not in named}

    by_word: dict[str, list[int]] = {}
    for k in settling:
        for w in about(rids[k]):
            by_word.setdefault(w, []).append(k)
    # ("Tom fixed the fence" said three times is one fact: two settling notes may fold.)
    settled_too = [False] * len(rids)
    for k in settling:
        settled_too[k] = True
    out: set[tuple[int, int]] = set()
    for j, rid in enumerate(rids):
        for w in about(rid) & by_word.keys():
            out.update((j, k) for k in by_word[w] if k != j and at[rid] < at[rids[k]]
                       and not settled_too[j])
    return sorted(out)


def _content(engine: Parts, ns: str, rids: Sequence[int]) -> Iterator[tuple[int, str]]:
    """Each memory's text; a synthesis's without the clauses a later update retired (those
    values are no longer true: a new fold must not bring them back)."""
    for part in _chunks(rids):
        marks = ",".join("?" * len(part))
        for rid, content, raw in engine.store.query(
                f"SELECT rid, content, clauses FROM nodes WHERE namespace = ? "
                f"AND rid IN ({marks})", (ns, *part)):
            bundle = parse(raw) if raw else None
            if bundle is not None and len(bundle.live()) < len(bundle.clauses):
                live = [i for i, c in enumerate(bundle.clauses) if c.live]
                yield rid, render(bundle, live)
            else:
                yield rid, content
