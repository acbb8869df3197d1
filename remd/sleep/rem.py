"""The REM cycle: flag weak memories, cluster them, distil each cluster into one synthesis node.

A run (:func:`run_rem`):

1. refreshes importance at ``now`` (:mod:`remd.sleep.importance`) and flags live memories older than
   ``rem.min_age_days`` whose importance is < τ or whose confidence is low (fact nodes are left
   alone unless ``rem.consolidate_facts``: a folded fact could no longer be superseded);
2. clusters them (:mod:`remd.sleep.remplan`, :mod:`remd.sleep.cluster`);
3. asks the synthesiser for each cluster (LLM calls run on ``llm.concurrency`` threads, outside
   any transaction); an error, an answer that keeps too few of the members' names and
   numbers, or a cluster the offline merge cannot make denser (NotDenser) skips the cluster
   and its members stay live. An offline synthesis may fold part of a cluster (a split):
   what it left out is merged again on its own, as a further cluster of the run;
4. commits each cluster in ONE transaction (:mod:`remd.sleep.consolidate`): the synthesis node (FTS
   row, tags, vector: by default the normalised mean of its members' vectors), DERIVED_FROM
   edges to its members, the members' outside edges re-pointed to it (the old edge is retired,
   never rewritten, and a copy inserted; duplicates keep the highest weight), the members
   soft-deprecated, the rem_clusters row with what the members were before, the run's counters
   and the lease heartbeat. A crash loses at most the cluster in flight.
5. with ``rem.synthesis_vector = "embed"``, embeds the new synthesis texts in one batch at the
   end instead (a crash leaves them in the embedding backlog).

Only one run per namespace at a time: a lease row in ``remd_meta`` (pid, host, heartbeat:
:mod:`remd.sleep.leases`) is taken inside ``BEGIN IMMEDIATE``; a ``running`` run whose process is
gone
(or whose heartbeat is older than ``rem.lease_seconds``) is marked ``interrupted`` by the next
one (:mod:`remd.sleep.remruns`), and its committed clusters stay valid and can be rolled back.

:func:`remd.sleep.rollback.rollback` undoes a run exactly; see its docstring for what "exactly"
covers. It also holds the run's members back from later runs (:mod:`remd.sleep.holds`): they are not
flagged again until they change or ``rem.hold_days`` pass, unless a run is asked to
``include_held``.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from remd.checks import check_namespace
from remd.errors import InvalidInput, LLMError, NotDenser
from remd.ids import new_id
from remd.logs import get_logger
from remd.models import TriggerReason
from remd.sleep.cluster import Cluster
from remd.sleep.consolidate import Answer, ClusterStatus, ClusterWriter, Job, Members
from remd.sleep.leases import write_lease
from remd.sleep.merge import Embed
from remd.sleep.remplan import Plan, plan_run
from remd.sleep.remruns import (
    AskedBefore,
    MemberPreview,
    PlannedCluster,
    RemRun,
    RunStatus,
    asked_before,
    finish_run,
    start_run,
)
from remd.sleep.synthesis import LLMSynthesiser, Synthesiser, make_synthesiser
from remd.sleep.usefulness import recent_tops
from remd.telemetry import LLMRole
from remd.write.backlog import embed_pending

if TYPE_CHECKING:
    from remd.parts import Parts

log = get_logger("remd.rem")

PREVIEW_CHARS = 80


@dataclass(frozen=True, kw_only=True)
class ClusterOutcome:
    """What the progress callback receives after each cluster."""

    cluster_no: int
    done: int
    total: int
    status: ClusterStatus
    size: int
    synthesis_id: str | None = None
    reason: str | None = None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS - 1] + "…"


# -- synthesis -----------------------------------------------------------------------------------
def _synthesise(synth: Synthesiser, job: Job) -> Answer:
    try:
        return synth.synthesise(job[1], job[2], job[3])
    except (LLMError, InvalidInput, NotDenser) as exc:  # the documented failures: skip it
        return exc


def _counted(engine: Parts, synth: Synthesiser, answer: Answer) -> Answer:
    """``answer``, counted as a call to the LLM (a failure if it is an LLMError) when the
    synthesiser is the LLM one."""
    if isinstance(synth, LLMSynthesiser):
        engine.telemetry.llm_called(LLMRole.SYNTHESISER, failed=isinstance(answer, LLMError))
    return answer


def _answers(synth: Synthesiser, jobs: Sequence[Job], workers: int,
             should_stop: Callable[[], bool]) -> Iterator[tuple[Job, Answer]]:
    """Answers in job order; at most ``workers`` calls in flight; stops asking on should_stop."""
    if workers <= 1:
        for job in jobs:
            if should_stop():
                return
            yield job, _synthesise(synth, job)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="remd-synth")
    pending: deque[tuple[Job, Future[Answer]]] = deque()
    todo = iter(jobs)
    try:
        for job in todo:
            pending.append((job, pool.submit(_synthesise, synth, job)))
            if len(pending) >= workers:
                break
        while pending:
            job, fut = pending.popleft()
            answer = fut.result()
            if should_stop():
                return
            yield job, answer
            nxt = next(todo, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(_synthesise, synth, nxt)))
    finally:
        # Calls still in flight finish in the background; their answers are dropped.
        pool.shutdown(wait=False, cancel_futures=True)


# -- the run --------------------------------------------------------------------------------------
def sentence_embed(engine: Parts) -> Embed:
    """Sentence vectors from the engine's embedder (loaded on first use), None without one:
    how the offline synthesiser tells restatements apart."""
    def embed(texts: list[str]) -> Any:
        embedder = engine.embedder
        return None if embedder is None else embedder.embed(texts)
    return embed


def run_rem(
    engine: Parts,
    namespace: str,
    *,
    now: float | None = None,
    dry_run: bool = False,
    include_held: bool = False,
    synthesiser: Synthesiser | None = None,
    trigger: TriggerReason | str = TriggerReason.MANUAL,
    should_stop: Callable[[], bool] | None = None,
    progress: Callable[[ClusterOutcome], None] | None = None,
) -> RemRun:
    """Run one REM cycle on ``namespace`` at ``now`` (default: the engine's clock).

    With ``dry_run`` nothing is written and the returned value carries the plan. Memories a
    rollback holds (:mod:`remd.sleep.holds`) are not flagged, and counted as ``held``, unless
    ``include_held`` (a run by hand that redoes what was rolled back). ``should_stop``
    is checked between clusters (the run then ends ``interrupted``); ``progress`` gets a
    :class:`ClusterOutcome` after each cluster. Raises InvalidInput (bad ``now``), Conflict
    (another run is alive in this namespace), StoreError (the file can't be used).
    """
    ns = check_namespace(namespace)
    at = engine.clock() if now is None else now
    if isinstance(at, bool) or not isinstance(at, int | float) or not np.isfinite(at):
        raise InvalidInput(f"now must be a finite POSIX time, not {at!r}")
    at = float(at)
    reason = trigger.value if isinstance(trigger, TriggerReason) else str(trigger)
    owned = None
    if synthesiser is None:
        cfg = engine.config
        synthesiser = owned = make_synthesiser(cfg, sentence_embed(engine))
    try:
        return _cycle(engine, ns, at, reason, synthesiser, dry_run=dry_run,
                      include_held=include_held, stop=should_stop or (lambda: False),
                      progress=progress)
    finally:
        if owned is not None:  # a synthesiser made for this run: its HTTP client goes with it
            owned.close()


def _cycle(engine: Parts, ns: str, at: float, reason: str, synth: Synthesiser, *, dry_run: bool,
           include_held: bool, stop: Callable[[], bool],
           progress: Callable[[ClusterOutcome], None] | None) -> RemRun:
    started = time.perf_counter()
    if dry_run:
        return _dry_run(engine, ns, at, reason, synth, include_held=include_held, stop=stop)

    # The lease comes first, so two processes never refresh and plan the same namespace.
    run_id = new_id("rem_")
    start_run(engine, ns, run_id, at, reason, synth)
    timings: dict[str, float] = {}
    status, error = RunStatus.COMPLETED, None
    try:
        plan = plan_run(engine, ns, at, write=True, include_held=include_held)
        timings.update(plan.timings)
        with engine.store.transaction(ns) as conn:
            conn.execute("UPDATE rem_runs SET flagged = ?, held = ?, clusters = ?, "
                         "live_before = ?, unflagged = ? WHERE namespace = ? AND run_id = ?",
                         (len(plan.flagged), plan.held, len(plan.clusters), plan.live_before,
                          json.dumps(plan.unflagged), ns, run_id))
        log.info("rem.planned", namespace=ns, run_id=run_id,
                 flagged=len(plan.flagged), held=plan.held, clusters=len(plan.clusters),
                 unembedded=plan.unembedded)
        writer = ClusterWriter(engine, ns, run_id, at, _members(plan), lambda conn: write_lease(
            conn, ns, run_id, engine.clock()))
        writer.by_model = isinstance(synth, LLMSynthesiser)
        jobs = [writer.job(no, c) for no, c in enumerate(plan.clusters)]
        if progress:
            progress(ClusterOutcome(cluster_no=-1, done=0, total=len(jobs),
                                    status=ClusterStatus.STARTED, size=0))
        workers = engine.config.llm.concurrency if isinstance(synth, LLMSynthesiser) else 1
        done = 0
        t0 = time.perf_counter()
        next_no = len(jobs)
        # A cluster the same model and prompt failed at, with the same members, lately: its
        # answer would be the same; not asked again (remd.sleep.remruns.asked_before).
        before = asked_before(engine, ns, synth, at) if writer.by_model else {}
        total = len(jobs)
        ask: list[Job] = []
        for job in jobs:
            run = before.get(_member_ids(job))
            if run is None:
                ask.append(job)
                continue
            outcome = writer.write(job, AskedBefore(run))
            done += 1
            if progress:
                progress(ClusterOutcome(done=done, total=total, **outcome))
        for job, answer in _answers(synth, ask, workers, stop):
            outcome = writer.write(job, _counted(engine, synth, answer))
            done += 1
            if progress:
                progress(ClusterOutcome(done=done, total=total, **outcome))
            # A split folded part of the cluster: what it left out may still merge on its own
            # ("Druvorhos costs ..." restated, beside "Druvorhos went live ..." restated).
            while len(left := writer.left_out.pop(job[0], [])) >= 2 and not stop():
                job = writer.job(next_no, Cluster(members=tuple(left), coherence=0.0))
                next_no += 1
                outcome = writer.write(job, _counted(engine, synth, _synthesise(synth, job)))
                if progress:
                    progress(ClusterOutcome(done=done, total=total, **outcome))
        timings["synthesise_and_write"] = time.perf_counter() - t0
        if done < total:
            status = RunStatus.INTERRUPTED
        t0 = time.perf_counter()
        if writer.synthesis_rids:  # one batch; a crash before this leaves them in the backlog
            embed_pending(engine, ns, rids=writer.synthesis_rids)
        timings["embed"] = time.perf_counter() - t0
    except BaseException as exc:  # record why the run ended, then let the error go on
        status = RunStatus.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else \
            RunStatus.FAILED
        finish_run(engine, ns, run_id, status, at, started, timings, f"{type(exc).__name__}: {exc}")
        raise
    result = finish_run(engine, ns, run_id, status, at, started, timings, error)
    if not result.synthesised:
        return result
    tops = recent_tops(engine, ns)  # did the run cost recent questions their answer?
    with engine.store.transaction(ns) as conn:
        conn.execute("UPDATE rem_runs SET usefulness = ? WHERE namespace = ? AND run_id = ?",
                     (json.dumps(tops.to_dict()), ns, run_id))
    engine.telemetry.rem_tops(kept=tops.top_kept, changed=tops.top_changed)
    log.info("rem.recent_tops", namespace=ns, run_id=run_id, **tops.to_dict())
    return replace(result, usefulness=tops.to_dict())


def _member_ids(job: Job) -> frozenset[str]:
    return frozenset(f.id for f in job[1])


def _members(plan: Plan) -> Members:
    return Members(
        rids=[int(plan.scores.rids[i]) for i in plan.flagged],
        ids=[plan.scores.ids[i] for i in plan.flagged],
        importance=plan.scores.scores.importance[plan.flagged],
        created_at=plan.scores.created_at[plan.flagged],
        content=plan.content, vectors=plan.vectors, live_before=plan.live_before)


UNVERIFIED = "unverified"  # a dry run's cluster the model would be asked about
NOT_ASKED = "a dry run never asks the model: the run will, and its checks decide"


def _dry_run(engine: Parts, ns: str, at: float, reason: str, synth: Synthesiser, *,
             include_held: bool, stop: Callable[[], bool]) -> RemRun:
    """The plan of a run and what the run would do with each cluster: the offline
    synthesiser is asked and the run's checks applied (ClusterWriter.check), nothing is
    written, so a dry run and the run after it agree. An LLM synthesiser is never asked: its
    clusters are "unverified" (the run asks and checks)."""
    started = time.perf_counter()
    plan = plan_run(engine, ns, at, write=False, include_held=include_held)
    ids, imp = plan.scores.ids, plan.scores.scores.importance
    checker = ClusterWriter(engine, ns, "dry-run", at, _members(plan), lambda conn: None)
    jobs = [checker.job(no, c) for no, c in enumerate(plan.clusters)]
    workers = engine.config.llm.concurrency if isinstance(synth, LLMSynthesiser) else 1
    planned: list[PlannedCluster] = []

    def previews(no: int) -> tuple[MemberPreview, ...]:
        return tuple(MemberPreview(id=ids[plan.flagged[m]],
                                   preview=_preview(plan.content[int(plan.scores.rids[
                                       plan.flagged[m]])]),
                                   importance=round(float(imp[plan.flagged[m]]), 6))
                     for m in checker.cluster(no))

    def record(job: Job, answer: Answer, coherence: float) -> None:
        out = checker.preview(job, answer)
        planned.append(PlannedCluster(
            cluster_no=job[0], coherence=coherence, members=previews(job[0]),
            status=out["status"].value, reason=out["reason"], synthesis=out["synthesis"],
            folded=0 if out["reason"] else out["size"]))

    next_no = len(jobs)
    if isinstance(synth, LLMSynthesiser):
        # A dry run never spends the model (a 1.5B model on a CPU took minutes a run, and the
        # run asked again): each cluster is planned, unverified; one the model failed at
        # lately is shown as the run will skip it.
        before = asked_before(engine, ns, synth, at)
        for job in jobs:
            coherence = plan.clusters[job[0]].coherence
            run = before.get(_member_ids(job))
            if run is not None:
                record(job, AskedBefore(run), coherence)
            else:
                planned.append(PlannedCluster(
                    cluster_no=job[0], coherence=coherence, members=previews(job[0]),
                    status=UNVERIFIED, reason=NOT_ASKED, synthesis=None, folded=0))
        jobs = []
    for job, answer in _answers(synth, jobs, workers, stop):
        record(job, _counted(engine, synth, answer), plan.clusters[job[0]].coherence)
        while len(left := checker.left_out.pop(job[0], [])) >= 2 and not stop():
            job = checker.job(next_no, Cluster(members=tuple(left), coherence=0.0))
            next_no += 1
            record(job, _counted(engine, synth, _synthesise(synth, job)), 0.0)
    planned.sort(key=lambda p: p.cluster_no)
    done = [p for p in planned if p.status == ClusterStatus.COMMITTED.value]
    unverified = sum(1 for p in planned if p.status == UNVERIFIED)
    elapsed = time.perf_counter() - started
    return RemRun(
        run_id=None, namespace=ns, status=RunStatus.DRY_RUN, trigger=reason,
        flagged=len(plan.flagged), held=plan.held, clusters=len(planned),
        synthesised=len(done), skipped=len(planned) - len(done) - unverified,
        live_before=plan.live_before,
        live_after=plan.live_before - sum(p.folded for p in done) + len(done),
        synthesiser=synth.name, model=synth.model, prompt_version=synth.prompt_version,
        started_at=at, timings={**{k: round(v, 4) for k, v in plan.timings.items()},
                                "total": round(elapsed, 4)},
        plan=tuple(planned), unflagged=plan.unflagged,
        outcomes=tuple({"cluster_no": p.cluster_no, "status": p.status, "size": p.folded
                        or len(p.members), "synthesis_id": None, "reason": p.reason}
                       for p in planned))
