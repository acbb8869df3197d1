"""The records of REM runs: the ``rem_runs`` row of a run, from start to finish.

:func:`start_run` inserts a run's row and takes its lease (:mod:`remd.sleep.leases`), marking runs
left ``running`` by a process that stopped as ``interrupted``; :func:`finish_run` records how
the run ended and gives the lease back; :func:`get_run` reads a recorded run as a
:class:`RemRun`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from remd.errors import Conflict, InvalidInput, NotFound
from remd.logs import get_logger
from remd.sleep import holds
from remd.sleep.importance import DAY
from remd.sleep.leases import alive, lease_key, read_lease, write_lease

if TYPE_CHECKING:
    from remd.parts import Parts
    from remd.sleep.synthesis import Synthesiser

log = get_logger("remd.rem")


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


# Why a cluster was skipped (rem_clusters.reason begins with one of these), by kind: what
# `run-rem --json` counts as ``skipped_by``.
CHANGED = "a member changed since the run was planned"
LOSES = "the synthesis would lose details"
UNREADABLE = "the synthesis would not read well"
ECHO = "the synthesis says nothing its members say (a template echoed)"
ASKED_BEFORE = "not asked again"
WHOSE = "the synthesis changes whose it is"
_SKIP_KINDS = (("NotDenser", "not_denser"), ("LLMError: LLM synthesis is", "too_long"),
               ("LLMError", "model_failed"),
               ("LLMStatusError", "endpoint"), ("LLMUnavailable", "endpoint"),
               ("InvalidInput", "model_failed"), (LOSES, "details"),
               (UNREADABLE, "unreadable"), ("synthesis keeps", "coverage"),
               (ECHO, "template_echo"), (CHANGED, "changed"), (ASKED_BEFORE, "asked_before"),
               (WHOSE, "wrong_subject"))


class AskedBefore(Exception):
    """A cluster not asked of the model again: the same members were skipped for a model
    reason by the same model and prompt not long ago (:func:`asked_before`), in ``run``."""

    def __init__(self, run: str) -> None:
        super().__init__(f"{ASKED_BEFORE}: run {run} skipped these members with this model "
                         "and prompt")


# Kinds of skip that say the model failed at a cluster: asking the same model with the same
# members again gives the same answer (an endpoint down or slow, or an answer that is not the
# JSON asked for, is not one: a server's fault, asked again).
_MODEL_KINDS = frozenset(("too_long", "details", "unreadable", "coverage", "template_echo",
                          "wrong_subject", "other"))


def asked_before(engine: Parts, ns: str, synth: Synthesiser, at: float
                 ) -> dict[frozenset[str], str]:
    """Member id sets of clusters that the runs of the last ``rem.llm_skip_days`` (before
    ``at``) skipped for a model reason with this synthesiser's model and prompt version, each
    with the run that did. A new member, another model or prompt, or the days passing asks
    again."""
    since = at - engine.config.rem.llm_skip_days * DAY
    rows = engine.store.query(
        "SELECT c.members, c.reason, c.run_id FROM rem_clusters c JOIN rem_runs r "
        "ON r.namespace = c.namespace AND r.run_id = c.run_id WHERE c.namespace = ? "
        "AND c.status = 'skipped' AND r.synthesiser = ? AND r.model = ? "
        "AND r.prompt_version = ? AND r.started_at > ? AND r.started_at <= ? "
        "ORDER BY r.started_at", (ns, synth.name, synth.model, synth.prompt_version, since, at))
    out: dict[frozenset[str], str] = {}
    for members, reason, run_id in rows:
        if skip_kind(str(reason or "")) in _MODEL_KINDS:
            out[frozenset(str(m["id"]) for m in json.loads(members))] = str(run_id)
    return out


def skip_kind(reason: str) -> str:
    """The kind of a skipped cluster's reason (see :data:`_SKIP_KINDS`; else "other")."""
    return next((kind for prefix, kind in _SKIP_KINDS if reason.startswith(prefix)), "other")


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
    held: int = 0  # live memories a rollback holds back (never flagged, unless include_held)
    timings: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    plan: tuple[PlannedCluster, ...] = ()
    # Why live memories were not flagged: too young, important enough, facts, held, ...
    unflagged: dict[str, int] = field(default_factory=dict)
    # What became of each cluster: cluster_no, status, size, synthesis_id, reason
    outcomes: tuple[dict[str, Any], ...] = ()
    # Recent questions asked again after a run that folded something: queries, top_kept,
    # top_changed (remd.sleep.usefulness); None for a run that folded nothing.
    usefulness: dict[str, int] | None = None

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

    @property
    def skipped_by(self) -> dict[str, int]:
        """Skipped clusters by kind of reason (:func:`skip_kind`)."""
        return dict(Counter(skip_kind(str(o.get("reason") or "")) for o in self.outcomes
                            if o.get("status") == "skipped"))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["status"] = self.status.value
        out["dry_run"] = self.dry_run
        out["skipped_by"] = self.skipped_by
        if not self.dry_run:
            del out["plan"]
        if not self.flagged:
            out["why"] = self.why_none
        return out


_WHY = {
    "young": "younger than rem.min_age_days",
    "important": "important enough (importance >= rem.tau, confidence not low)",
    "facts": "fact memories (rem.consolidate_facts is off)",
    "held": "held back by a rollback (run-rem --include-held)",
    "exact": "values kept exact (LangGraph store items are never folded)",
    "fresh": "syntheses of a recent run",
    "unembedded": "without a vector yet",
}


def start_run(engine: Parts, ns: str, run_id: str, at: float, trigger: str,
              synth: Synthesiser) -> None:
    """Insert the run row and take the lease. Raises Conflict if another run is alive."""
    with engine.store.transaction(ns) as conn:
        lease = read_lease(conn, ns)
        running = [r[0] for r in conn.execute(
            "SELECT run_id FROM rem_runs WHERE namespace = ? AND status = 'running'", (ns,))]
        wall = engine.clock()
        if lease and lease.get("run_id") in running and alive(
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
        write_lease(conn, ns, run_id, wall)


def finish_run(engine: Parts, ns: str, run_id: str, status: RunStatus, at: float,
               started: float, phases: dict[str, float], error: str | None) -> RemRun:
    """Record how the run ended (status, live memories, timings), end the holds of memories
    it folded and give its lease back; the run as recorded."""
    elapsed = time.perf_counter() - started
    timings = {**{k: round(v, 4) for k, v in phases.items()}, "total": round(elapsed, 4)}
    with engine.store.transaction(ns) as conn:
        live = conn.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM nodes "
                            "WHERE namespace = ? AND status = 'live'", (ns,)).fetchone()
        # Every cluster asked about (a split's remainder too) is committed or skipped, so the
        # counts add up: clusters = synthesised + skipped (of those not reached: none).
        conn.execute(
            "UPDATE rem_runs SET status = ?, finished_at = ?, live_after = ?, timings = ?, "
            "error = ?, clusters = (SELECT count(*) FROM rem_clusters c WHERE c.namespace = ? "
            "AND c.run_id = ?) WHERE namespace = ? AND run_id = ?",
            (status.value, at + elapsed, int(live[0]) if live else 0, json.dumps(timings),
             error, ns, run_id, ns, run_id))
        holds.prune(conn, ns)  # the holds of memories this run folded end with it
        lease = read_lease(conn, ns)
        if lease and lease.get("run_id") == run_id:
            conn.execute("DELETE FROM remd_meta WHERE key = ?", (lease_key(ns),))
    result = get_run(engine, ns, run_id)
    engine.telemetry.rem_finished(
        status.value, elapsed, flagged=result.flagged, live=result.live_after,
        live_tokens=int(live[1]) if live else 0,
        folded=sum(o["size"] for o in result.outcomes if o["status"] == "committed"))
    log.info("rem.finished", namespace=ns, run_id=run_id, status=status.value,
             flagged=result.flagged, clusters=result.clusters,
             synthesised=result.synthesised, skipped=result.skipped,
             live_before=result.live_before, live_after=result.live_after)
    return result


def get_run(engine: Parts, ns: str, run_id: str) -> RemRun:
    """A recorded run of this namespace. Raises NotFound, InvalidInput."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput(f"run id must be a non-empty string, not {run_id!r}")
    row = engine.store.one(
        "SELECT run_id, namespace, status, trigger, flagged, clusters, synthesised, skipped, "
        "live_before, live_after, synthesiser, model, prompt_version, started_at, "
        "finished_at, timings, error, held, unflagged, usefulness FROM rem_runs "
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
                  unflagged=json.loads(row[18] or "{}"), outcomes=outcomes,
                  usefulness=json.loads(row[19]) if row[19] else None)
