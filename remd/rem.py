"""The REM cycle: flag weak memories, cluster them, distil each cluster into one synthesis node.

A run (:func:`run_rem`):

1. refreshes importance at ``now`` (:mod:`remd.importance`) and flags live memories older than
   ``rem.min_age_days`` whose importance is < τ or whose confidence is low (fact nodes are left
   alone unless ``rem.consolidate_facts``: a folded fact could no longer be superseded);
2. clusters them (:mod:`remd.remplan`, :mod:`remd.cluster`);
3. asks the synthesiser for each cluster (LLM calls run on ``llm.concurrency`` threads, outside
   any transaction); an error, an answer that keeps too few of the members' names and
   numbers, or a cluster the offline merge cannot make denser (NotDenser) skips the cluster
   and its members stay live. An offline synthesis may fold part of a cluster (a split):
   what it left out is merged again on its own, as a further cluster of the run;
4. commits each cluster in ONE transaction (:mod:`remd.consolidate`): the synthesis node (FTS
   row, tags, vector: by default the normalised mean of its members' vectors), DERIVED_FROM
   edges to its members, the members' outside edges re-pointed to it (the old edge is retired,
   never rewritten, and a copy inserted; duplicates keep the highest weight), the members
   soft-deprecated, the rem_clusters row with what the members were before, the run's counters
   and the lease heartbeat. A crash loses at most the cluster in flight.
5. with ``rem.synthesis_vector = "embed"``, embeds the new synthesis texts in one batch at the
   end instead (a crash leaves them in the embedding backlog).

Only one run per namespace at a time: a lease row in ``remd_meta`` (pid, host, heartbeat) is
taken inside ``BEGIN IMMEDIATE``; a ``running`` run whose process is gone (or whose heartbeat is
older than ``rem.lease_seconds``) is marked ``interrupted`` by the next one, and its committed
clusters stay valid and can be rolled back.

:func:`rollback` undoes a run exactly; see its docstring for what "exactly" covers. It also
holds the run's members back from later runs (:mod:`remd.holds`): they are not flagged again
until they change or ``rem.hold_days`` pass, unless a run is asked to ``include_held``.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import apsw
import numpy as np

from remd import holds
from remd.backlog import embed_pending
from remd.cluster import Cluster
from remd.consolidate import Answer, ClusterStatus, ClusterWriter, Job, Members
from remd.errors import Conflict, InvalidInput, LLMError, NotDenser, NotFound, RollbackRefused
from remd.ids import new_id
from remd.ingest import check_namespace
from remd.lexical import unindex_text
from remd.logs import get_logger
from remd.merge import Embed
from remd.models import TriggerReason
from remd.remplan import Plan, plan_run
from remd.synthesis import LLMSynthesiser, Synthesiser, make_synthesiser

if TYPE_CHECKING:
    from remd.engine import Engine

log = get_logger("remd.rem")

PREVIEW_CHARS = 80


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"
    DRY_RUN = "dry_run"  # a plan only: nothing was written


@dataclass(frozen=True, kw_only=True)
class MemberPreview:
    id: str
    preview: str
    importance: float


@dataclass(frozen=True, kw_only=True)
class PlannedCluster:
    """A cluster of a dry run: its members and what the run would do with it, by the same
    checks (``status`` committed or skipped, ``reason`` when skipped, the ``synthesis`` text
    it would write and how many members it would fold)."""

    cluster_no: int
    coherence: float
    members: tuple[MemberPreview, ...]
    status: str = ""
    reason: str | None = None
    synthesis: str | None = None
    folded: int = 0


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


@dataclass(frozen=True, kw_only=True)
class RemRun:
    """One REM run (or, with ``dry_run``, the plan of one)."""

    run_id: str | None
    namespace: str
    status: RunStatus
    trigger: str | None
    flagged: int
    clusters: int
    synthesised: int
    skipped: int
    live_before: int
    live_after: int
    synthesiser: str
    model: str
    prompt_version: str
    started_at: float
    finished_at: float | None = None
    held: int = 0  # weak memories left unflagged because a rollback holds them
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    plan: tuple[PlannedCluster, ...] = ()
    # Why live memories were not flagged: too young, important enough, facts, held, ...
    unflagged: dict[str, int] = field(default_factory=dict)
    # What became of each cluster: cluster_no, status, size, synthesis_id, reason
    outcomes: tuple[dict[str, Any], ...] = ()

    @property
    def why_none(self) -> str:
        """A sentence saying why nothing was flagged ("" when something was)."""
        if self.flagged:
            return ""
        parts = [f"{n} {_WHY[k]}" for k, n in self.unflagged.items() if n and k in _WHY]
        return ("nothing flagged: " + "; ".join(parts)) if parts else (
            "nothing flagged: the namespace has no live memory")

    @property
    def dry_run(self) -> bool:
        return self.status is RunStatus.DRY_RUN

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        out["dry_run"] = self.dry_run
        if not self.dry_run:
            del out["plan"]
        if not self.flagged:
            out["why"] = self.why_none
        return out


@dataclass(frozen=True, kw_only=True)
class RollbackResult:
    run_id: str
    members_restored: int
    synthesis_removed: int
    edges_removed: int
    edges_restored: int
    held: int = 0  # members held back from later runs (rem.hold_days)


_WHY = {
    "young": "younger than rem.min_age_days",
    "important": "important enough (importance >= rem.tau, confidence not low)",
    "facts": "fact memories (rem.consolidate_facts is off)",
    "held": "held back by a rollback (run-rem --include-held)",
    "fresh": "syntheses of a recent run",
    "unembedded": "without a vector yet",
}


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS - 1] + "…"


# -- the lease -----------------------------------------------------------------------------------
def _lease_key(namespace: str) -> str:
    return f"rem_lease:{namespace}"


def _alive(lease: dict[str, Any], now: float, lease_seconds: float) -> bool:
    """Whether the process holding a lease may still be running its REM run."""
    if now - float(lease.get("heartbeat", 0.0)) > lease_seconds:
        return False
    if lease.get("host") != socket.gethostname():
        return True  # can't see its processes: trust the heartbeat
    try:
        os.kill(int(lease.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def _read_lease(conn: apsw.Connection, namespace: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM remd_meta WHERE key = ?",
                       (_lease_key(namespace),)).fetchone()
    return json.loads(row[0]) if row else None


def _write_lease(conn: apsw.Connection, namespace: str, run_id: str, at: float) -> None:
    value = json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                        "heartbeat": at})
    conn.execute("INSERT INTO remd_meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                 "DO UPDATE SET value = excluded.value", (_lease_key(namespace), value))


def _start(engine: Engine, ns: str, run_id: str, at: float, trigger: str,
           synth: Synthesiser) -> None:
    """Insert the run row and take the lease. Raises Conflict if another run is alive."""
    with engine.store.transaction() as conn:
        lease = _read_lease(conn, ns)
        running = [r[0] for r in conn.execute(
            "SELECT run_id FROM rem_runs WHERE namespace = ? AND status = 'running'", (ns,))]
        wall = engine.clock()
        if lease and lease.get("run_id") in running and _alive(
                lease, wall, engine.config.rem.lease_seconds):
            raise Conflict(f"REM run {lease['run_id']} is already running in namespace {ns!r} "
                           f"(pid {lease.get('pid')} on {lease.get('host')})")
        for stale in running:
            conn.execute("UPDATE rem_runs SET status = 'interrupted', finished_at = ?, "
                         "error = 'left running by a process that stopped' "
                         "WHERE namespace = ? AND run_id = ?", (at, ns, stale))
            log.warning("rem.interrupted_run_found", namespace=ns, run_id=stale)
        conn.execute(
            "INSERT INTO rem_runs (run_id, namespace, status, started_at, synthesiser, model, "
            "prompt_version, trigger) VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
            (run_id, ns, at, synth.name, synth.model, synth.prompt_version, trigger))
        _write_lease(conn, ns, run_id, wall)


# -- synthesis -----------------------------------------------------------------------------------
def _synthesise(synth: Synthesiser, job: Job) -> Answer:
    try:
        return synth.synthesise(job[1], job[2], job[3])
    except (LLMError, InvalidInput, NotDenser) as exc:  # the documented failures: skip it
        return exc


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
def sentence_embed(engine: Engine) -> Embed:
    """Sentence vectors from the engine's embedder (loaded on first use), None without one:
    how the offline synthesiser tells restatements apart."""
    def embed(texts: list[str]) -> Any:
        embedder = engine.embedder
        return None if embedder is None else embedder.embed(texts)
    return embed


def run_rem(
    engine: Engine,
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
    rollback holds (:mod:`remd.holds`) are not flagged, and counted as ``held``, unless
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
        synthesiser = owned = make_synthesiser(cfg.llm, cfg.rem.offline_density,
                                               cfg.store.encoding, sentence_embed(engine))
    try:
        return _cycle(engine, ns, at, reason, synthesiser, dry_run=dry_run,
                      include_held=include_held, stop=should_stop or (lambda: False),
                      progress=progress)
    finally:
        if owned is not None:  # a synthesiser made for this run: its HTTP client goes with it
            owned.close()


def _cycle(engine: Engine, ns: str, at: float, reason: str, synth: Synthesiser, *, dry_run: bool,
           include_held: bool, stop: Callable[[], bool],
           progress: Callable[[ClusterOutcome], None] | None) -> RemRun:
    started = time.perf_counter()
    if dry_run:
        return _dry_run(engine, ns, at, reason, synth, include_held=include_held, stop=stop)

    # The lease comes first, so two processes never refresh and plan the same namespace.
    run_id = new_id("rem_")
    _start(engine, ns, run_id, at, reason, synth)
    timings: dict[str, float] = {}
    status, error = RunStatus.COMPLETED, None
    try:
        plan = plan_run(engine, ns, at, write=True, include_held=include_held)
        timings.update(plan.timings)
        with engine.store.transaction() as conn:
            conn.execute("UPDATE rem_runs SET flagged = ?, held = ?, clusters = ?, "
                         "live_before = ?, unflagged = ? WHERE namespace = ? AND run_id = ?",
                         (len(plan.flagged), plan.held, len(plan.clusters), plan.live_before,
                          json.dumps(plan.unflagged), ns, run_id))
        log.info("rem.planned", namespace=ns, run_id=run_id,
                 flagged=len(plan.flagged), held=plan.held, clusters=len(plan.clusters),
                 unembedded=plan.unembedded)
        writer = ClusterWriter(engine, ns, run_id, at, _members(plan), lambda conn: _write_lease(
            conn, ns, run_id, engine.clock()))
        jobs = [writer.job(no, c) for no, c in enumerate(plan.clusters)]
        if progress:
            progress(ClusterOutcome(cluster_no=-1, done=0, total=len(jobs),
                                    status=ClusterStatus.STARTED, size=0))
        workers = engine.config.llm.concurrency if isinstance(synth, LLMSynthesiser) else 1
        done = 0
        t0 = time.perf_counter()
        next_no = len(jobs)
        for job, answer in _answers(synth, jobs, workers, stop):
            outcome = writer.write(job, answer)
            done += 1
            if progress:
                progress(ClusterOutcome(done=done, total=len(jobs), **outcome))
            # A split folded part of the cluster: what it left out may still merge on its own
            # ("Druvorhos costs ..." restated, beside "Druvorhos went live ..." restated).
            while len(left := writer.left_out.pop(job[0], [])) >= 2 and not stop():
                job = writer.job(next_no, Cluster(members=tuple(left), coherence=0.0))
                next_no += 1
                outcome = writer.write(job, _synthesise(synth, job))
                if progress:
                    progress(ClusterOutcome(done=done, total=len(jobs), **outcome))
        timings["synthesise_and_write"] = time.perf_counter() - t0
        if done < len(jobs):
            status = RunStatus.INTERRUPTED
        t0 = time.perf_counter()
        if writer.synthesis_rids:  # one batch; a crash before this leaves them in the backlog
            embed_pending(engine, ns, rids=writer.synthesis_rids)
        timings["embed"] = time.perf_counter() - t0
    except BaseException as exc:  # record why the run ended, then let the error go on
        status = RunStatus.INTERRUPTED if isinstance(exc, KeyboardInterrupt) else \
            RunStatus.FAILED
        _finish(engine, ns, run_id, status, at, started, timings, f"{type(exc).__name__}: {exc}")
        raise
    return _finish(engine, ns, run_id, status, at, started, timings, error)


def _members(plan: Plan) -> Members:
    return Members(
        rids=[int(plan.scores.rids[i]) for i in plan.flagged],
        ids=[plan.scores.ids[i] for i in plan.flagged],
        importance=plan.scores.scores.importance[plan.flagged],
        created_at=plan.scores.created_at[plan.flagged],
        content=plan.content, vectors=plan.vectors, live_before=plan.live_before)


def _dry_run(engine: Engine, ns: str, at: float, reason: str, synth: Synthesiser, *,
             include_held: bool, stop: Callable[[], bool]) -> RemRun:
    """The plan of a run and what the run would do with each cluster: the synthesiser is
    asked (an LLM one too) and the run's checks applied (ClusterWriter.check), nothing is
    written, so a dry run and the run after it agree."""
    started = time.perf_counter()
    plan = plan_run(engine, ns, at, write=False, include_held=include_held)
    ids, imp = plan.scores.ids, plan.scores.scores.importance
    checker = ClusterWriter(engine, ns, "dry-run", at, _members(plan), lambda conn: None)
    jobs = [checker.job(no, c) for no, c in enumerate(plan.clusters)]
    workers = engine.config.llm.concurrency if isinstance(synth, LLMSynthesiser) else 1
    planned: list[PlannedCluster] = []

    def record(job: Job, answer: Answer, coherence: float) -> None:
        out = checker.preview(job, answer)
        planned.append(PlannedCluster(
            cluster_no=job[0], coherence=coherence, members=tuple(
                MemberPreview(id=ids[plan.flagged[m]],
                              preview=_preview(plan.content[int(plan.scores.rids[
                                  plan.flagged[m]])]),
                              importance=round(float(imp[plan.flagged[m]]), 6))
                for m in checker.cluster(job[0])),
            status=out["status"].value, reason=out["reason"], synthesis=out["synthesis"],
            folded=0 if out["reason"] else out["size"]))

    next_no = len(jobs)
    for job, answer in _answers(synth, jobs, workers, stop):
        record(job, answer, plan.clusters[job[0]].coherence)
        while len(left := checker.left_out.pop(job[0], [])) >= 2 and not stop():
            job = checker.job(next_no, Cluster(members=tuple(left), coherence=0.0))
            next_no += 1
            record(job, _synthesise(synth, job), 0.0)
    planned.sort(key=lambda p: p.cluster_no)
    done = [p for p in planned if p.status == ClusterStatus.COMMITTED.value]
    elapsed = time.perf_counter() - started
    return RemRun(
        run_id=None, namespace=ns, status=RunStatus.DRY_RUN, trigger=reason,
        flagged=len(plan.flagged), held=plan.held, clusters=len(planned),
        synthesised=len(done), skipped=len(planned) - len(done), live_before=plan.live_before,
        live_after=plan.live_before - sum(p.folded for p in done) + len(done),
        synthesiser=synth.name, model=synth.model, prompt_version=synth.prompt_version,
        started_at=at, timings={**{k: round(v, 4) for k, v in plan.timings.items()},
                                "total": round(elapsed, 4)},
        plan=tuple(planned), unflagged=plan.unflagged,
        outcomes=tuple({"cluster_no": p.cluster_no, "status": p.status, "size": p.folded
                        or len(p.members), "synthesis_id": None, "reason": p.reason}
                       for p in planned))


def _finish(engine: Engine, ns: str, run_id: str, status: RunStatus, at: float,
            started: float, phases: dict[str, float], error: str | None) -> RemRun:
    elapsed = time.perf_counter() - started
    timings = {**{k: round(v, 4) for k, v in phases.items()}, "total": round(elapsed, 4)}
    with engine.store.transaction() as conn:
        live = conn.execute("SELECT count(*) FROM nodes WHERE namespace = ? AND status = 'live'",
                            (ns,)).fetchone()
        # Every cluster asked about (a split's remainder too) is committed or skipped, so the
        # counts add up: clusters = synthesised + skipped (of those not reached: none).
        conn.execute(
            "UPDATE rem_runs SET status = ?, finished_at = ?, live_after = ?, timings = ?, "
            "error = ?, clusters = (SELECT count(*) FROM rem_clusters c WHERE c.namespace = ? "
            "AND c.run_id = ?) WHERE namespace = ? AND run_id = ?",
            (status.value, at + elapsed, int(live[0]) if live else 0, json.dumps(timings),
             error, ns, run_id, ns, run_id))
        holds.prune(conn, ns)  # the holds of memories this run folded end with it
        lease = _read_lease(conn, ns)
        if lease and lease.get("run_id") == run_id:
            conn.execute("DELETE FROM remd_meta WHERE key = ?", (_lease_key(ns),))
    result = get_run(engine, ns, run_id)
    log.info("rem.finished", namespace=ns, run_id=run_id, status=status.value,
             flagged=result.flagged, clusters=result.clusters,
             synthesised=result.synthesised, skipped=result.skipped,
             live_before=result.live_before, live_after=result.live_after)
    return result


def get_run(engine: Engine, ns: str, run_id: str) -> RemRun:
    """A recorded run of this namespace. Raises NotFound, InvalidInput."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput(f"run id must be a non-empty string, not {run_id!r}")
    row = engine.store.one(
        "SELECT run_id, namespace, status, trigger, flagged, clusters, synthesised, skipped, "
        "live_before, live_after, synthesiser, model, prompt_version, started_at, "
        "finished_at, timings, error, held, unflagged FROM rem_runs "
        "WHERE run_id = ? AND namespace = ?", (run_id, ns))
    if row is None:
        raise NotFound("REM run", run_id, ns)
    outcomes = tuple(
        {"cluster_no": int(no), "status": str(status), "size": len(json.loads(members)),
         "synthesis_id": sid, "reason": why}
        for no, status, members, sid, why in engine.store.query(
            "SELECT cluster_no, status, members, synthesis_id, reason FROM rem_clusters "
            "WHERE namespace = ? AND run_id = ? ORDER BY cluster_no", (ns, run_id)))
    return RemRun(run_id=row[0], namespace=row[1], status=RunStatus(row[2]), trigger=row[3],
                  flagged=row[4], clusters=row[5], synthesised=row[6], skipped=row[7],
                  live_before=row[8], live_after=row[9], synthesiser=row[10], model=row[11],
                  prompt_version=row[12], started_at=row[13], finished_at=row[14],
                  timings=json.loads(row[15] or "{}"), error=row[16], held=row[17],
                  unflagged=json.loads(row[18] or "{}"), outcomes=outcomes)


# -- rollback -------------------------------------------------------------------------------------
def rollback(engine: Engine, namespace: str, run_id: str, *,
             now: float | None = None) -> RollbackResult:
    """Undo a REM run in one transaction, at ``now`` (default: the engine's clock).

    Restored exactly: every node the run deprecated gets back its status, importance and
    deprecated_by; every edge the run retired is live again with its original row (same eid,
    weight, context, created_at); every edge the run inserted (DERIVED_FROM and re-pointed
    copies) is deleted; every synthesis node it created is deleted with its tags (tags.df
    decremented), FTS row, vectors and access-log rows. The run is marked rolled_back; its
    rem_clusters rows stay as the audit trail. Not undone: the importance refresh the run did
    first (a pure function of ``now`` that the next refresh recomputes anyway), vectors computed
    for memories that had none, packs that recorded a synthesis node, and edges written later
    by agents that point at a synthesis id (they dangle, which edges may).

    In the same transaction, the restored members are held back from later runs for
    ``rem.hold_days`` from ``now``, or until they change (:mod:`remd.holds`): a run that would
    follow (the daemon's next tick) does not fold them again.

    Raises NotFound (unknown run), RollbackRefused (already rolled back, still running, or a
    later run that is not rolled back built on its synthesis nodes or edges).
    """
    ns = check_namespace(namespace)
    at = engine.clock() if now is None else now
    if isinstance(at, bool) or not isinstance(at, int | float) or not np.isfinite(at):
        raise InvalidInput(f"now must be a finite POSIX time, not {at!r}")
    with engine.store.transaction() as conn:
        run = get_run(engine, ns, run_id)  # read under the write lock: no run can start meanwhile
        if run.status is RunStatus.ROLLED_BACK:
            raise RollbackRefused(f"REM run {run_id} is already rolled back")
        lease = _read_lease(conn, ns)
        if run.status is RunStatus.RUNNING and lease and lease.get("run_id") == run_id and _alive(
                lease, engine.clock(), engine.config.rem.lease_seconds):
            raise RollbackRefused(f"REM run {run_id} is still running")
        later = sorted({r[0] for r in conn.execute(
            "SELECT run_id FROM rem_runs WHERE namespace = ? AND run_id != ? "
            "AND status != ? AND (run_id IN (SELECT retired_by FROM edges "
            "WHERE namespace = ? AND rem_run = ? AND retired_by IS NOT NULL) "
            "OR run_id IN (SELECT s.rem_run FROM nodes n JOIN nodes s "
            "ON s.namespace = n.namespace AND s.id = n.deprecated_by "
            "WHERE n.namespace = ? AND n.rem_run = ?))",
            (ns, run_id, RunStatus.ROLLED_BACK.value, ns, run_id, ns, run_id))})
        if later:
            raise RollbackRefused(
                f"REM run {run_id} cannot be rolled back: later run(s) {', '.join(later)} "
                "built on it; roll those back first")
        restored = 0
        member_ids: list[str] = []
        committed: list[Any] = conn.execute(
            "SELECT members FROM rem_clusters WHERE namespace = ? AND run_id = ? "
            "AND status = 'committed' ORDER BY cluster_no DESC", (ns, run_id)).fetchall()
        for (members,) in committed:
            for m in json.loads(members):
                conn.execute(
                    "UPDATE nodes SET status = ?, importance = ?, deprecated_by = ? "
                    "WHERE id = ? AND namespace = ?",
                    (m["status"], m["importance"], m["deprecated_by"], m["id"], ns))
                member_ids.append(m["id"])
                restored += 1
        # Held as restored, so the fingerprint is the one they had before the run.
        held = holds.hold(conn, ns, run_id, member_ids, float(at), engine.config.rem.hold_days)
        holds.release_run_nodes(conn, ns, run_id)
        synth = conn.execute("SELECT rid, content FROM nodes WHERE namespace = ? AND rem_run = ?",
                             (ns, run_id)).fetchall()
        for rid, content in synth:
            conn.execute("UPDATE tags SET df = max(df - 1, 0) WHERE namespace = ? AND tid IN "
                         "(SELECT tid FROM node_tags WHERE namespace = ? AND rid = ?)",
                         (ns, ns, rid))
            unindex_text(conn, int(str(rid)), ns, str(content))
            for table in ("node_tags", "node_vec_bit", "sentence_vec", "access_log", "nodes"):
                conn.execute(f"DELETE FROM {table} WHERE namespace = ? AND rid = ?", (ns, rid))
        removed = conn.execute("DELETE FROM edges WHERE namespace = ? AND rem_run = ? "
                               "RETURNING eid", (ns, run_id)).fetchall()
        back = conn.execute("UPDATE edges SET live = 1, retired_by = NULL WHERE namespace = ? "
                            "AND retired_by = ? RETURNING eid", (ns, run_id)).fetchall()
        conn.execute("UPDATE rem_runs SET status = ? WHERE namespace = ? AND run_id = ?",
                     (RunStatus.ROLLED_BACK.value, ns, run_id))
        if lease and lease.get("run_id") == run_id:
            conn.execute("DELETE FROM remd_meta WHERE key = ?", (_lease_key(ns),))
    log.info("rem.rolled_back", namespace=ns, run_id=run.run_id, members=restored,
             synthesis=len(synth), held=held)
    return RollbackResult(run_id=run_id, members_restored=restored, synthesis_removed=len(synth),
                          edges_removed=len(removed), edges_restored=len(back), held=held)
