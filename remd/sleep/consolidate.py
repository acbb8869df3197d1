"""What one REM cluster writes: the synthesis node and the graph around it.

:class:`ClusterWriter` commits one cluster in ONE transaction: the synthesis node (its FTS row
and tags), DERIVED_FROM edges to the members, the members' outside edges re-pointed to it, the
members soft-deprecated, the ``rem_clusters`` row recording what the members were before, the
run's counters and the lease heartbeat. Edges are never rewritten in place: the member's edge is
retired (``live = 0, retired_by = run``) and a copy inserted (``rem_run = run``), which is what
makes :func:`remd.sleep.rollback.rollback` exact. Before writing, :func:`coverage` checks that the
answer
kept the members' names and numbers (an LLM that was talked out of its job by a memory's text,
or that summarised too hard, gets its cluster skipped instead).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from remd.errors import InvalidInput, LLMError, NotDenser
from remd.ids import new_id
from remd.logs import get_logger
from remd.sleep import holds
from remd.sleep.cluster import Cluster, specific_cap
from remd.sleep.merge import synthesis_limit
from remd.sleep.merge import target_tokens as target_tokens  # the density target
from remd.sleep.remruns import CHANGED as _CHANGED
from remd.sleep.remruns import ECHO, WHOSE, AskedBefore
from remd.sleep.remruns import LOSES as _LOSES
from remd.sleep.remruns import UNREADABLE as _UNREADABLE
from remd.sleep.synthesis import NOT_NAMES, Fragment, SynthesisAnswer
from remd.store.seam import Connection
from remd.text.clauses import Member, attribute, split
from remd.text.details import missing
from remd.text.readability import problems
from remd.text.reading import gives_self_away
from remd.text.tagging import extract_entities, is_verb_form, normalise_tag
from remd.text.words import STOP_WORDS, content_words
from remd.write.graph import GraphWriter, NodeRow, mark_embedded

if TYPE_CHECKING:
    from remd.parts import Parts

log = get_logger("remd.rem")

_CAUSAL_TYPES = ("DEPENDS_ON", "EXTENDS", "CONTRADICTS", "SUPERSEDES")
# (the reasons a cluster is skipped: remd.sleep.remruns counts them by kind)
Job = tuple[int, list[Fragment], list[tuple[str, str, str]], int]  # ..., target tokens
Answer = SynthesisAnswer | LLMError | InvalidInput | NotDenser | AskedBefore


class ClusterStatus(StrEnum):
    """What became of a cluster (``rem_clusters.status``; ``started`` is only the progress
    event sent before the first cluster)."""

    STARTED = "started"
    COMMITTED = "committed"
    SKIPPED = "skipped"


@dataclass(frozen=True, kw_only=True)
class Members:
    """The flagged memories a run plans with (parallel sequences, index = flagged position)."""

    rids: Sequence[int]
    ids: Sequence[str]
    importance: npt.NDArray[np.float64]
    created_at: npt.NDArray[np.float64]
    content: dict[int, str]  # rid -> content
    vectors: npt.NDArray[np.float32]  # unit rows
    live_before: int


# -- faithfulness ---------------------------------------------------------------------------------
_NUMBER = re.compile(r"\d{2,}")
_NAME = re.compile(r"\b[A-Z][\w'’-]{2,}")


def key_terms(text: str) -> set[str]:
    """Names (capitalised words, not sentence-openers like "The") and numbers of a text."""
    names = {m.group(0).casefold() for m in _NAME.finditer(text)
             if m.group(0).lower() not in NOT_NAMES}
    return names | set(_NUMBER.findall(text))


def coverage(answer: SynthesisAnswer, fragments: Sequence[Fragment]) -> float:
    """Share of the fragments' names and numbers found anywhere in the answer."""
    wanted = set().union(*(key_terms(f.content) for f in fragments))
    if not wanted:
        return 1.0
    blob = " ".join([answer.synthesis, *answer.key_entities, *answer.causal_chains,
                     *answer.temporal_anchors]).casefold()
    numbers = set(_NUMBER.findall(blob))
    found = sum(1 for t in wanted if (t in numbers if t.isdigit() else t in blob))
    return found / len(wanted)



class ClusterWriter:
    """Commits one cluster per transaction (see the module docstring, step 4)."""

    def __init__(self, engine: Parts, namespace: str, run_id: str, now: float,
                 members: Members, heartbeat: Callable[[Connection], None]) -> None:
        self.engine = engine
        self.ns = namespace
        self.run_id = run_id
        self.now = now
        self.m = members
        self.heartbeat = heartbeat  # renews the run's lease inside each cluster transaction
        self.synthesis_rids: list[int] = []
        self._members: dict[int, list[int]] = {}
        # Per committed cluster that a split folded in part: the members left out (held).
        self.left_out: dict[int, list[int]] = {}
        self.by_model = False  # the answers come from an LLM (the run sets it)

    def cluster(self, no: int) -> list[int]:
        """The members (flagged positions) of cluster ``no``."""
        return self._members[no]

    def job(self, no: int, cluster: Cluster) -> Job:
        """The synthesiser's input for a cluster: its fragments and causal edges among them."""
        members = list(cluster.members)
        self._members[no] = members
        m = self.m
        frags = [Fragment(id=m.ids[k], content=m.content[m.rids[k]],
                          importance=float(m.importance[k]), created_at=float(m.created_at[k]),
                          vector=m.vectors[k] if len(m.vectors) > k else None)
                 for k in members]
        ids = [m.ids[k] for k in members]
        marks = ",".join("?" * len(ids))
        edges = self.engine.store.query(
            f"SELECT src, dst, type FROM edges WHERE namespace = ? AND live = 1 "
            f"AND type IN ({','.join('?' * len(_CAUSAL_TYPES))}) "
            f"AND src IN ({marks}) AND dst IN ({marks}) ORDER BY eid",
            (self.ns, *_CAUSAL_TYPES, *ids, *ids))
        target = synthesis_limit(self.engine.counter.count_many([f.content for f in frags]))
        return no, frags, [(s, d, t) for s, d, t in edges], target

    def check(self, job: Job, answer: Answer) -> tuple[list[int], str | None]:
        """The members an answer would fold and, if it can't be committed, why (the same
        checks for a run and its dry run). A member whose details (:mod:`remd.text.details`) the
        synthesis does not all keep stays live; fewer than two folded members is a skip."""
        no, frags, _, _ = job
        members = self._members[no]
        if isinstance(answer, AskedBefore):
            return members, str(answer)
        if isinstance(answer, LLMError | InvalidInput | NotDenser):
            return members, f"{type(answer).__name__}: {answer}"
        if answer.replaces:  # a split: the synthesis stands for some members only
            ids = set(answer.replaces)
            members = [k for k in members if self.m.ids[k] in ids]
            frags = [f for f in frags if f.id in ids]
            if len(members) < 2 or len(members) != len(ids):
                return members, "the synthesis names members that are not the cluster's"
        said = {w.lower() for f in frags for w in content_words(f.content)}
        if said and not {w.lower() for w in content_words(answer.synthesis)} & said:
            return members, ECHO  # a small model wrote its prompt's example back
        lost = {k: missing(self.m.content[self.m.rids[k]], answer.synthesis) for k in members}
        kept = [k for k in members if not lost[k]]
        # Of the members it would fold, the answer must name the names and numbers (an LLM
        # talked out of its job by a memory's text writes something else).
        ids = {self.m.ids[k] for k in kept}
        cov = coverage(answer, [f for f in frags if f.id in ids]) if kept else 0.0
        if len(kept) >= 2 and cov < self.engine.config.rem.min_coverage:
            return members, (f"synthesis keeps {cov:.0%} of the members' names and numbers "
                             f"(< {self.engine.config.rem.min_coverage:.0%})")
        if len(kept) < 2:
            words = sorted({w for k in members for w in lost[k]})
            return members, (_LOSES + " its members hold (names and "
                             "numbers, words): " + ", ".join(words[:8])
                             + ("…" if len(words) > 8 else ""))
        texts = [self.m.content[self.m.rids[k]] for k in kept]
        if gives_self_away(texts, answer.synthesis):
            # what the speaker said of themself now reads as someone else's ("I passed my exam"
            # became "Maya passed her exam"); an account with no subject is not that
            return members, f"{WHOSE}: its members speak as 'I', it gives that to someone else"
        bad = problems(answer.synthesis, texts)
        if bad:  # what a person would not write (remd.text.readability), offline or a model's
            return members, f"{_UNREADABLE}: " + "; ".join(bad[:3])
        return kept, None

    def preview(self, job: Job, answer: Answer) -> dict[str, Any]:
        """What :meth:`write` would do, without writing (a dry run)."""
        no = job[0]
        members, reason = self.check(job, answer)
        folded = set() if reason else set(members)
        left = [k for k in self._members[no] if k not in folded]
        if folded and left:
            self.left_out[no] = left
        return {"cluster_no": no, "status": ClusterStatus.SKIPPED if reason
                else ClusterStatus.COMMITTED, "size": len(members), "synthesis_id": None,
                "reason": reason, "synthesis": None if reason or not isinstance(
                    answer, SynthesisAnswer) else answer.synthesis}

    def write(self, job: Job, answer: Answer) -> dict[str, Any]:
        """Commit (or record as skipped) one cluster; returns its outcome fields."""
        no = job[0]
        members, reason = self.check(job, answer)
        with self.engine.store.transaction(self.ns) as conn:
            rows = conn.execute(
                f"SELECT rid, id, status, importance, deprecated_by, confidence, created_at, "
                f"last_access, valid_from FROM nodes "
                f"WHERE namespace = ? AND rid IN ({','.join('?' * len(members))}) ORDER BY rid",
                [self.ns, *(self.m.rids[k] for k in members)]).fetchall()
            if reason is None and (len(rows) != len(members)
                                   or any(r[2] != "live" for r in rows)):
                reason = _CHANGED
            before = [{"id": r[1], "status": r[2], "importance": r[3], "deprecated_by": r[4]}
                      for r in rows]
            synthesis_id = None
            status = ClusterStatus.SKIPPED if reason else ClusterStatus.COMMITTED
            if reason is None:
                assert isinstance(answer, SynthesisAnswer)
                synthesis_id = self._commit(conn, rows, answer, members)
            conn.execute(
                "INSERT INTO rem_clusters (namespace, run_id, cluster_no, status, synthesis_id, "
                "members, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.ns, self.run_id, no, status.value, synthesis_id,
                 json.dumps(before), reason))
            # Nothing denser can be written from these as they are (the whole cluster, or what
            # a split left out): later automatic runs leave them alone until they change or
            # the hold ends (remd.sleep.holds).
            folded = set(members) if status is ClusterStatus.COMMITTED else set()
            unreadable = bool(reason and reason.startswith(_UNREADABLE))
            if isinstance(answer, NotDenser) or unreadable or folded:
                left = [k for k in self._members[no] if k not in folded]
                holds.hold(conn, self.ns, self.run_id, [self.m.ids[k] for k in left],
                           self.now, self.engine.config.rem.hold_days)
                if folded and left:
                    self.left_out[no] = left
            conn.execute(
                "UPDATE rem_runs SET synthesised = synthesised + ?, skipped = skipped + ?, "
                "clusters = max(clusters, ?) WHERE namespace = ? AND run_id = ?",
                (0 if reason else 1, 1 if reason else 0, no + 1, self.ns, self.run_id))
            self.heartbeat(conn)
        if reason:
            # Left alone because nothing denser keeps its facts: what REM is meant to do, not a
            # fault, and a run over distinct facts may leave thousands alone (debug; the run's
            # `skipped` count and its outcomes say why); a failed or unfaithful synthesis is one
            # (warning).
            # A member that changed meanwhile (an agent's newer save updated it) is the shared
            # file at work, not a fault either.
            # A synthesis that would drop a member's detail is the detail check at work: the
            # members stay live, and the run's outcomes say which words (info).
            # A model's answer the checks refused (a template echoed, details lost) is the
            # model failing at its job: a warning, as its failures are.
            routine = isinstance(answer, NotDenser) or reason == _CHANGED
            emit = log.debug if routine else (
                log.info if isinstance(answer, AskedBefore) or (
                    reason.startswith((_LOSES, _UNREADABLE)) and not self.by_model)
                else log.warning)
            emit("rem.cluster_skipped", namespace=self.ns, run_id=self.run_id,
                 cluster=no, size=len(members), reason=reason)
        return {"cluster_no": no, "status": status,
                "size": len(members), "synthesis_id": synthesis_id, "reason": reason}

    def _commit(self, conn: Connection, rows: list[tuple[Any, ...]],
                answer: SynthesisAnswer, members: list[int]) -> str:
        cfg = self.engine.config.rem
        rids = [int(r[0]) for r in rows]
        ids = [r[1] for r in rows]
        mean_imp = float(np.mean([r[3] for r in rows]))
        importance = answer.importance if answer.importance is not None else min(
            1.0, mean_imp * (1.0 + cfg.synthesis_boost))
        confidence = float(np.clip(np.mean([r[5] for r in rows]), 0.0, 1.0))
        content = answer.synthesis
        # The synthesis is dated by what it summarises, not by the run: it was saved when its
        # latest member was (recent, history, inject's recency and date match read created_at)
        # and holds from its earliest member's start (valid_from, else created_at). Its last
        # access is the members' latest: nobody has read this content since, and a run is not
        # a use, so recency-based importance goes on decaying where the members left it.
        # (REM's own "too fresh to fold" check reads the run's start instead, see remplan.plan_run.)
        created = max(float(r[6]) for r in rows)
        last_access = max(created, max(float(r[7]) for r in rows))
        valid_from = min(float(r[6] if r[8] is None else r[8]) for r in rows)
        sid = new_id()
        graph = GraphWriter(conn, self.ns)
        rid = graph.insert_node(NodeRow(
            id=sid, kind="synthesis", content=content, source=f"rem:{self.run_id}",
            status="live", created_at=created, last_access=last_access, access_count=0,
            confidence=confidence, importance=importance,
            tokens=self.engine.counter.count(content), valid_from=valid_from,
            rem_run=self.run_id, clauses=self._clauses(content, rows)))
        self._tags(conn, graph, rid, rids, answer)
        self._inherit(conn, graph, sid, ids)  # first: the DERIVED_FROM edges below stay
        graph.derive(sid, ids, self.now, self.run_id)
        graph.deprecate(rids, sid)
        if cfg.synthesis_vector == "centroid":
            centroid = self.m.vectors[members].astype(np.float64).sum(axis=0)
            norm = float(np.linalg.norm(centroid))
            if norm > 0:
                vec = (centroid / norm).astype(np.float32)
                graph.write_vector(rid, vec)
                mark_embedded(conn, [(self.ns, rid)])
                return sid
        self.synthesis_rids.append(rid)  # embedded from its text after the run
        return sid

    def _clauses(self, content: str, rows: list[tuple[Any, ...]]) -> str:
        """The synthesis's subject and clauses, each with the members it came from and their
        latest day (remd.text.clauses), as stored."""
        members = [Member(id=str(r[1]), rid=int(r[0]), content=self.m.content[int(r[0])],
                          created_at=float(r[6])) for r in rows]
        return attribute(split(content), members).to_json()

    def _tags(self, conn: Connection, graph: GraphWriter, rid: int, members: list[int],
              answer: SynthesisAnswer) -> None:
        """Tag the synthesis with what its members are about: names, then specific nouns.

        Candidates are the members' tags and the answer's key entities that are tags of the
        namespace already. Never a tag: one without a letter (a number, a year, a date), one
        with a verb form in it (:func:`remd.text.tagging.is_verb_form`: "investigated", "hitting",
        "built"), a stop word. A *name* is a tag the members' text is sure is a name
        (:func:`remd.text.tagging.extract_entities`: capitalised inside a sentence, several words,
        an acronym) or a key entity of several words. Chosen, up to ``synthesis_max_tags``:
        names carried by two members or more, then nouns carried by two members or more and
        specific (on at most :func:`remd.sleep.cluster.specific_cap` live memories, the clustering's
        cut-off), then names of one member; each group by members x IDF. A cluster left with
        none of these gets its best remaining candidate, so it is never untagged when its
        members had a usable tag.
        """
        marks = ",".join("?" * len(members))
        rows: list[tuple[Any, ...]] = conn.execute(
            f"SELECT nt.tid, t.name, nt.weight FROM node_tags nt JOIN tags t "
            f"ON t.namespace = nt.namespace AND t.tid = nt.tid "
            f"WHERE nt.namespace = ? AND nt.rid IN ({marks})", (self.ns, *members)).fetchall()
        count: Counter[int] = Counter(r[0] for r in rows)
        weight: dict[int, float] = {}
        name_of: dict[int, str] = {}
        for tid, name, w in rows:
            weight[tid] = max(weight.get(tid, 0.0), float(w))
            name_of[tid] = name
        sure = set().union(*(extract_entities(self.m.content.get(r, "")) for r in members))
        keys: dict[str, bool] = {}  # normalised key entity -> counts as a name
        for entity in answer.key_entities:
            try:
                keys[normalise_tag(entity)] = len(entity.split()) > 1
            except InvalidInput:
                continue
        if keys:
            kmarks = ",".join("?" * len(keys))
            found: list[Any] = conn.execute(
                f"SELECT tid, name FROM tags WHERE namespace = ? AND name IN ({kmarks})",
                (self.ns, *keys)).fetchall()
            for tid, name in found:
                name_of.setdefault(tid, name)
                weight.setdefault(tid, 1.0)

        def is_name(t: int) -> bool:
            return name_of[t] in sure or keys.get(name_of[t], False)

        usable = [t for t, name in name_of.items() if _taggable(name, is_name(t))]
        if not usable:
            return
        tmarks = ",".join("?" * len(usable))
        df_rows: list[Any] = conn.execute(
            f"SELECT tid, count(*) FROM node_tags WHERE namespace = ? AND live = 1 "
            f"AND tid IN ({tmarks}) GROUP BY tid", (self.ns, *usable)).fetchall()
        live_df: dict[int, int] = {int(t): int(c) for t, c in df_rows}
        n = max(self.m.live_before, 1)
        cap = specific_cap(self.engine.config.rem, n)

        def rank(t: int) -> tuple[float, int]:
            return -max(count[t], 1) * float(np.log1p(n / max(live_df.get(t, 1), 1))), t

        shared_names = sorted((t for t in usable if count[t] >= 2 and is_name(t)), key=rank)
        nouns = sorted((t for t in usable if count[t] >= 2 and not is_name(t)
                        and live_df.get(t, 0) <= cap), key=rank)
        lone_names = sorted((t for t in usable if count[t] < 2 and is_name(t)), key=rank)
        chosen = (shared_names + nouns + lone_names)[:self.engine.config.rem.synthesis_max_tags]
        if not chosen:
            chosen = sorted(usable, key=rank)[:1]
        graph.tag(rid, [(t, weight[t]) for t in chosen])

    def _inherit(self, conn: Connection, graph: GraphWriter, sid: str,
                 ids: list[str]) -> None:
        """Re-point the members' edges to and from outside the cluster onto the synthesis."""
        marks = ",".join("?" * len(ids))
        # A member's own DERIVED_FROM edges (it is an earlier synthesis) stay with it: the new
        # node derives from the member, which derives from its fragments.
        out: list[tuple[Any, ...]] = conn.execute(
            f"SELECT eid, dst, type, weight, context, created_at FROM edges WHERE namespace = ? "
            f"AND live = 1 AND src IN ({marks}) AND dst NOT IN ({marks}) "
            f"AND type != 'DERIVED_FROM' ORDER BY eid", (self.ns, *ids, *ids)).fetchall()
        inbound: list[tuple[Any, ...]] = conn.execute(
            f"SELECT eid, src, type, weight, context, created_at FROM edges WHERE namespace = ? "
            f"AND live = 1 AND dst IN ({marks}) AND src NOT IN ({marks}) ORDER BY eid",
            (self.ns, *ids, *ids)).fetchall()
        for rows, outward in ((out, True), (inbound, False)):
            best: dict[tuple[str, str], tuple[Any, ...]] = {}
            for row in rows:
                key = (row[1], row[2])
                if key not in best or row[3] > best[key][3]:
                    best[key] = row
            graph.copy_edges(
                [(sid if outward else other, other if outward else sid, type_, w, ctx, created)
                 for (other, type_), (_, _, _, w, ctx, created) in best.items()], self.run_id)
            graph.retire_edges([row[0] for row in rows], self.run_id)


def _taggable(name: str, is_name: bool) -> bool:
    """Can this tag describe a synthesis (see :meth:`ClusterWriter._tags`)? It needs a letter;
    a single word must not be a stop word; a tag that is not a name must have no verb form in
    it (a name may: "Lost", "Sterling")."""
    words = name.split("-")
    if not any(c.isalpha() for c in name) or (len(words) == 1 and name in STOP_WORDS):
        return False
    return is_name or not any(is_verb_form(w) for w in words)
