"""Supersession: the one place that decides that a new memory updates an older one, writes
the decision, and undoes it when the user says it was wrong.

A memory is judged once (``nodes.judged``, migration 0012), when its vector is written
(:func:`remd.write.backlog.embed_pending`, in the same transaction), or in its save's transaction
when the engine has no embedder. Its candidates are the live memories nearest to it by vector
(the namespace's in-process bit index, then the exact cosine of the best
:data:`SCANNED`), the live memories sharing its specific tags, and the memories judged in the
same batch; each pair is judged by :func:`remd.text.updates.judge`, the later one (valid time) as
the newer whichever was saved first, so importing an old export never supersedes what is
newer. Then:

- ``UPDATE``: the older memory is superseded (status ``superseded``, ``valid_until``) and a
  SUPERSEDES edge from the newer one records the confidence (``weight``) and the reason
  (``context``): it leaves inject as a superseded fact does, and stays in history.
- ``MAYBE``: both stay live; a CONTRADICTS edge records it. Inject ranks the newer one first
  whenever the older one is a candidate, and a pack without ``fill`` leaves the older out.

:func:`restore` undoes the decisions about a memory: it is live again, the edges are retired
by ``user`` (``retired_by``), and a retired edge is a veto: the same pair is never decided
again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remd.errors import InvalidInput, NotFound
from remd.index.keys import live_keyed
from remd.index.vectors import BitIndex, exact, unit
from remd.logs import get_logger
from remd.models import EdgeType, Judged
from remd.store import rows_in
from remd.store.seam import Connection
from remd.text.clauses import parse, statement
from remd.text.frames import subject_keys, update_keys
from remd.text.updates import (
    CROWD_ALIKE,
    CROWD_BAND,
    UNALIKE,
    Verdict,
    VerdictKind,
    frame_slot,
    judge,
    one_attribute,
    read,
    restates,
)
from remd.write.graph import GraphWriter

log = get_logger("remd.supersede")

F32 = npt.NDArray[np.float32]
SCANNED = 32  # Hamming candidates whose exact cosine is read
JUDGED = 8  # nearest live memories a new memory is judged against
KEYED = 6  # ...and the newest live memories of its subject keys (remd.index.keys)
TAG_CAP = 256  # a tag on more memories than this is too common to propose candidates
MAX_UPDATES = 2  # older memories one new memory may update
USER = "user"  # edges.retired_by of a decision the user undid: never made again
_MODEL = "llm"  # edges.retired_by of an offline decision the LLM judge replaced
DECIDED = (EdgeType.SUPERSEDES.value, EdgeType.CONTRADICTS.value)


@dataclass(frozen=True, kw_only=True)
class Fresh:
    """A memory to judge: its row, and its unit vector when it has one."""

    rid: int
    id: str
    content: str
    created_at: float
    vector: F32 | None = None


@dataclass(frozen=True, kw_only=True)
class Decision:
    newer: str
    older: str
    verdict: Verdict
    clause: int | None = None  # of a synthesis: the clause the newer one updates


@dataclass(frozen=True, kw_only=True)
class Other:
    rid: int
    id: str
    content: str
    created_at: float
    clause: int | None = None  # a clause of a synthesis (remd.text.clauses), as a statement


def judge_pending(conn: Connection, namespace: str, fresh: Sequence[Fresh], at: float, *,
                  bits: BitIndex | None = None) -> list[Decision]:
    """Judge ``fresh`` memories (this namespace's, in its write transaction) against the live
    ones and each other; write the decisions; mark them judged. Returns the decisions."""
    if not fresh:
        return []
    vetoed = _vetoes(conn, namespace, [f.id for f in fresh])
    decisions: list[Decision] = []
    superseded: set[str] = set()
    for i, new in enumerate(fresh):
        near = nearest_live(conn, namespace, new, bits)
        for prior in fresh[:i]:  # the batch: not in the index yet
            cos = float(prior.vector @ new.vector) if (
                prior.vector is not None and new.vector is not None) else 0.0
            near.append((Other(rid=prior.rid, id=prior.id, content=prior.content,
                               created_at=prior.created_at), cos))
        near.sort(key=lambda pair: -pair[1])
        keys = _fact_keys(conn, namespace, [new.rid, *(o.rid for o, _ in near)])
        top = near[0][1] if near else 0.0
        crowd = sum(1 for _, c in near if c > 0.0 and c >= max(top - CROWD_BAND, CROWD_ALIKE)) - 1
        found: list[Decision] = []
        # The current version of each attribute the new memory speaks of: of the candidates
        # about one attribute with it (remd.text.frames), the latest said before it.
        mine = read(new.content)
        about = [o for o, _ in near if o.created_at < new.created_at
                 and one_attribute(read(o.content), mine)]
        current = max(about, key=lambda o: (o.created_at, o.rid)).id if about else None
        for rank, (other, cos) in enumerate(near):
            if other.id in superseded or other.id == new.id:
                continue
            if other.created_at == new.created_at:
                continue  # told at one moment (one save_many): neither is the later word
            if 0.0 < cos < UNALIKE and not one_attribute(read(other.content), read(new.content)):
                continue  # about something else (no vectors: 0, their words are compared)
            if new.rid in keys and other.rid in keys:
                continue  # two facts ("my weakest subject is ..."): the fact grammar decides
            margin = cos - near[1][1] if rank == 0 and len(near) > 1 else 0.0
            newer, older = ((new.id, new.content), (other.id, other.content))
            if (other.created_at, other.rid) > (new.created_at, new.rid):
                if other.clause is not None:
                    continue  # a synthesis's clause is only ever the older side
                newer, older = older, newer
            if (newer[0], older[0]) in vetoed:
                continue
            verdict = judge(read(older[1]), read(newer[1]), cos,
                            nearest=rank == 0 or other.id == current, margin=margin, crowd=crowd)
            if verdict is not None and (other.clause is None
                                        or verdict.kind is VerdictKind.UPDATE):
                found.append(Decision(newer=newer[0], older=older[0], verdict=verdict,
                                      clause=other.clause))
        found.sort(key=lambda d: -d.verdict.confidence)
        found = found[:MAX_UPDATES]
        found += _restatements(found, near, new, superseded)
        for d in found:
            if d.older in superseded or d.newer in superseded:
                continue
            _write(conn, namespace, d, at)
            if d.verdict.kind is VerdictKind.UPDATE and d.clause is None:
                superseded.add(d.older)
            decisions.append(d)
    conn.executemany("UPDATE nodes SET judged = 1 WHERE namespace = ? AND rid = ?",
                     [(namespace, f.rid) for f in fresh])
    for d in decisions:
        log.info("update.decided", namespace=namespace, newer=d.newer, older=d.older,
                 kind=d.verdict.kind.value, confidence=d.verdict.confidence)
    return decisions


def _restatements(found: Sequence[Decision], near: Sequence[tuple[Other, float]], new: Fresh,
                  superseded: set[str]) -> list[Decision]:
    """A version chain: when ``new`` updates a memory, the older live memories that say the
    same value again (restatements: "I'm vegetarian", "still vegetarian, Callum made me ...")
    are updated with it."""
    out: list[Decision] = []
    updated = [d for d in found if d.verdict.kind is VerdictKind.UPDATE and d.newer == new.id
               and d.clause is None]
    texts = {o.id: o for o, _ in near if o.clause is None}
    now = read(new.content)
    for d in updated:
        old = texts.get(d.older)
        if old is None:
            continue
        was = read(old.content)
        slot = frame_slot(was, now, was.words & now.words)
        if slot is None:
            continue  # a change said otherwise: what else said the old value is not known
        for other, _ in near:
            if other.id in (d.older, new.id) or other.id in superseded or (
                    other.created_at >= new.created_at) or other.clause is not None:
                continue
            if any(x.older == other.id for x in [*found, *out]):
                continue
            if restates(was, read(other.content), slot):
                out.append(Decision(newer=new.id, older=other.id, verdict=Verdict(
                    VerdictKind.UPDATE, d.verdict.confidence,
                    f"says again what {d.older} said, which this updates")))
    return out


def _fact_keys(conn: Connection, ns: str, rids: Sequence[int]) -> dict[int, str]:
    """rid -> fact key, of those the fact grammar parsed (remd.text.facts)."""
    marks = ",".join("?" * len(rids))
    rows: Any = conn.execute(f"SELECT rid, fact_key FROM nodes WHERE namespace = ? AND rid IN "
                             f"({marks}) AND fact_key IS NOT NULL", (ns, *rids)).fetchall()
    return {int(r): str(k) for r, k in rows}


def nearest_live(conn: Connection, ns: str, new: Fresh, bits: BitIndex | None
                 ) -> list[tuple[Other, float]]:
    """The live memories nearest to ``new``: (memory, cosine) best first, at most JUDGED."""
    keys: set[int] = set()
    q = unit(new.vector) if new.vector is not None else None
    if q is not None and bits is not None and len(bits):
        keys.update(int(r) for r in bits.candidates(q, SCANNED))
    keys.update(_tag_neighbours(conn, ns, new.rid))
    keys.discard(new.rid)
    # By subject: the live memories of its attributes (one value at a time) and habit slots,
    # however unalike their words (remd.index.keys); judged besides the nearest.
    keyed = live_keyed(conn, ns, update_keys(subject_keys(new.content)), exclude=[new.rid],
                       limit=KEYED)
    if not keys and not keyed:
        return []
    ranked: dict[int, float] = dict.fromkeys(keys, 0.0)
    if q is not None:
        ranked.update(exact(conn, ns, np.fromiter(keys, np.int64, len(keys)), q))
    for rid in keyed:
        ranked.setdefault(rid, 0.0)
    if q is not None and keyed:
        ranked.update(exact(conn, ns, np.fromiter(keyed, np.int64, len(keyed)), q))
    # Texts of the nearest only (the bit scan's candidates are mostly live, unfolded ones).
    order = sorted(ranked, key=lambda r: (-ranked[r], r))[:2 * JUDGED]
    order += [r for r in keyed if r not in order]
    # A value kept exact (a store item) is never an update's side; a synthesis is judged by
    # its live clauses, each a statement of its own (the newer one retires the one it updates).
    rows = {int(r[0]): r for r in rows_in(
        conn, "SELECT rid, id, content, created_at, kind, clauses FROM nodes "
              "WHERE namespace = ? AND status = 'live' AND judged != ? AND rid IN ({marks})",
        sorted(order), (ns, int(Judged.EXACT)))}
    best = [rid for rid in order if rid in rows]
    chosen = best[:JUDGED] + [r for r in keyed if r in rows and r not in best[:JUDGED]]
    out: list[tuple[Other, float]] = []
    for r in chosen:
        rid, node_id, content, created, kind, raw = rows[r]
        if kind != "synthesis":
            out.append((Other(rid=r, id=str(node_id), content=str(content),
                              created_at=float(created)), ranked[r]))
            continue
        bundle = parse(raw)
        if bundle is None:
            continue  # a synthesis written before its clauses were kept: judged as before, never
        for i, clause in enumerate(bundle.clauses):
            if clause.live:
                out.append((Other(rid=r, id=str(node_id), content=statement(bundle, i),
                                  created_at=clause.at or float(created), clause=i), ranked[r]))
    return out


def decided_by(conn: Connection, ns: str, newer: str) -> list[Other]:
    """The memories the offline detector decided ``newer`` updates (superseded or live)."""
    rows: Any = conn.execute(
        "SELECT n.rid, n.id, n.content, n.created_at FROM edges e JOIN nodes n "
        "ON n.namespace = e.namespace AND n.id = e.dst WHERE e.namespace = ? AND e.src = ? "
        f"AND e.live = 1 AND e.type IN ({','.join('?' * len(DECIDED))}) ORDER BY e.eid",
        (ns, newer, *DECIDED)).fetchall()
    return [Other(rid=int(r), id=str(i), content=str(c), created_at=float(t))
            for r, i, c, t in rows]


def _tag_neighbours(conn: Connection, ns: str, rid: int) -> list[int]:
    """Live memories sharing the most of ``rid``'s specific tags (each on at most TAG_CAP)."""
    # The memory's few specific tags first (materialised: that order whatever a planner's
    # statistics say, e.g. PostgreSQL's during a bulk save), then each tag's live members.
    rows: Any = conn.execute(
        "WITH mine AS MATERIALIZED (SELECT a.tid FROM node_tags a "
        "JOIN tags t ON t.namespace = a.namespace AND t.tid = a.tid AND t.df <= ? "
        "WHERE a.namespace = ? AND a.rid = ?) "
        "SELECT b.rid, count(*) AS shared FROM mine JOIN node_tags b "
        "ON b.namespace = ? AND b.tid = mine.tid AND b.live = 1 AND b.rid != ? "
        "GROUP BY b.rid ORDER BY shared DESC, b.rid DESC LIMIT ?",
        (TAG_CAP, ns, rid, ns, rid, JUDGED)).fetchall()
    return [int(r[0]) for r in rows]


def _vetoes(conn: Connection, ns: str, ids: Sequence[str]) -> set[tuple[str, str]]:
    """(newer, older) pairs touching ``ids`` whose decision the user undid."""
    marks = ",".join("?" * len(ids))
    rows: Any = conn.execute(
        f"SELECT src, dst FROM edges WHERE namespace = ? AND retired_by = ? "
        f"AND (src IN ({marks}) OR dst IN ({marks}))", (ns, USER, *ids, *ids)).fetchall()
    return {(str(src), str(dst)) for src, dst in rows}


def _write(conn: Connection, ns: str, d: Decision, at: float) -> None:
    verdict = d.verdict
    graph = GraphWriter(conn, ns)
    if d.clause is not None:  # a synthesis keeps its other clauses: this one is retired
        graph.retire_clause(d.older, d.clause, d.newer, at)
        log.info("update.clause_retired", namespace=ns, synthesis=d.older, clause=d.clause,
                 newer=d.newer, reason=verdict.reason)
        return
    if verdict.kind is VerdictKind.UPDATE:
        graph.supersede_live(d.older, at)
        kind = EdgeType.SUPERSEDES
    else:
        kind = EdgeType.CONTRADICTS
    graph.add_edge(d.newer, d.older, kind, at, weight=verdict.confidence,
                   context=f"{verdict.kind.value}: {verdict.reason}")


@dataclass(frozen=True, kw_only=True)
class Restored:
    """What :func:`restore` undid."""

    id: str
    status_before: str
    edges_retired: int
    by: tuple[str, ...]  # the memories whose decision was undone


def restore(conn: Connection, ns: str, node_id: str) -> Restored:
    """Undo the decisions that ``node_id`` was updated: it is live again, the SUPERSEDES and
    CONTRADICTS edges into it are retired by the user, and the same pairs are never decided
    again. Raises NotFound (no such memory), InvalidInput (nothing says it was updated, or it
    was folded or forgotten)."""
    row = conn.execute("SELECT status FROM nodes WHERE namespace = ? AND id = ?",
                       (ns, node_id)).fetchone()
    if row is None:
        raise NotFound("memory", node_id, ns)
    status = str(row[0])
    if status not in ("live", "superseded"):
        raise InvalidInput(f"memory {node_id} is {status}, not superseded: restore undoes an "
                           "update decision (a REM fold is undone by rollback)")
    edges = conn.execute(
        "SELECT eid, src FROM edges WHERE namespace = ? AND dst = ? AND live = 1 "
        f"AND type IN ({','.join('?' * len(DECIDED))})", (ns, node_id, *DECIDED)).fetchall()
    if not edges and status == "live":
        raise InvalidInput(f"memory {node_id} is live and nothing says it was updated")
    graph = GraphWriter(conn, ns)
    graph.retire_edges([eid for eid, _ in edges], USER)
    if status == "superseded":
        graph.unsupersede(node_id)
    log.info("update.restored", namespace=ns, id=node_id, edges=len(edges))
    return Restored(id=node_id, status_before=status, edges_retired=len(edges),
                    by=tuple(str(src) for _, src in edges))


Judge = Callable[[Connection, str, Sequence[Fresh], float], list[Decision]]


MODEL_ALONE = 0.6  # a CONTRADICTS edge's weight when only the model says "update"


def apply_judgement(conn: Connection, ns: str, newer: str, relations: dict[str, str],
                    at: float, model: str, support: dict[str, str]) -> int:
    """Write a model's judgement of a new memory against older ones (:mod:`remd.llm.judge`).
    A weak model answers "update" for unrelated pairs, so its "update" acts only as far as the
    offline reading agrees (``support``, older id -> :func:`remd.text.updates.model_support`;
    an older memory an offline decision already joins to the newer one is "supersede"):
    "supersede" supersedes the older one (an offline CONTRADICTS edge between them is
    replaced), "contradict" makes at most a CONTRADICTS edge (the newer ranks first, both stay
    live), and "" does nothing. "add" and "same" undo a probable offline decision (a
    CONTRADICTS edge), never a sure one (SUPERSEDES: the user restores). Pairs the user decided
    stay as the user left them. Returns how many pairs changed."""
    vetoed = _vetoes(conn, ns, [newer])
    graph = GraphWriter(conn, ns)
    changed = 0
    for older, relation in relations.items():
        if (newer, older) in vetoed:
            continue
        edges = conn.execute(
            "SELECT eid, type FROM edges WHERE namespace = ? AND src = ? AND dst = ? "
            f"AND live = 1 AND type IN ({','.join('?' * len(DECIDED))})",
            (ns, newer, older, *DECIDED)).fetchall()
        kinds = {str(t) for _, t in edges}
        backed = "supersede" if edges else support.get(older, "")
        if relation == "update" and backed == "supersede" and (
                EdgeType.SUPERSEDES.value not in kinds):
            graph.retire_edges([eid for eid, _ in edges], _MODEL)
            _write(conn, ns, Decision(newer=newer, older=older, verdict=Verdict(
                VerdictKind.UPDATE, 1.0, f"the model ({model}) judged it an update; the "
                "offline reading finds one attribute of one subject")), at)
            changed += 1
        elif relation == "update" and backed == "contradict" and not edges:
            _write(conn, ns, Decision(newer=newer, older=older, verdict=Verdict(
                VerdictKind.MAYBE, MODEL_ALONE, f"the model ({model}) judged it an update; "
                "the offline reading finds no shared attribute, so both stay live")), at)
            changed += 1
        elif relation == "update" and not backed:
            log.info("update.llm_unsupported", namespace=ns, newer=newer, older=older,
                     model=model)
            continue
        elif relation in ("add", "same") and EdgeType.SUPERSEDES.value in kinds:
            # a sure offline update stands against the model's word (a 1.5B model called
            # "we finally moved to Sheffield" an addition to "I live in Leeds"); `remd
            # restore` undoes it
            log.info("update.llm_overruled", namespace=ns, newer=newer, older=older,
                     relation=relation, model=model)
            continue
        elif relation in ("add", "same") and edges:
            graph.retire_edges([eid for eid, _ in edges], _MODEL)
            changed += 1
        log.info("update.llm_decided", namespace=ns, newer=newer, older=older,
                 relation=relation, model=model)
    return changed
