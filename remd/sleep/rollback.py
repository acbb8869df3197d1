"""Undoing a REM run: :func:`rollback` restores what the run folded, exactly.

It also holds the run's members back from later runs (:mod:`remd.sleep.holds`): they are not flagged
again until they change or ``rem.hold_days`` pass, unless a run is asked to ``include_held``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from remd.checks import check_namespace
from remd.errors import InvalidInput, RollbackRefused
from remd.logs import get_logger
from remd.sleep import holds
from remd.sleep.leases import alive, lease_key, read_lease
from remd.sleep.remruns import RunStatus, get_run
from remd.write.graph import GraphWriter

if TYPE_CHECKING:
    from remd.parts import Parts

log = get_logger("remd.rem")


@dataclass(frozen=True, kw_only=True)
class RollbackResult:
    run_id: str
    members_restored: int
    synthesis_removed: int
    edges_removed: int
    edges_restored: int
    held: int = 0  # members held back from later runs (rem.hold_days)


def later_runs(conn: Any, ns: str, run_id: str) -> list[str]:
    """The runs, not rolled back, that built on ``run_id``'s synthesis nodes or edges (its
    rollback is refused until they are rolled back), sorted."""
    return sorted({r[0] for r in conn.execute(
        "SELECT run_id FROM rem_runs WHERE namespace = ? AND run_id != ? "
        "AND status != ? AND (run_id IN (SELECT retired_by FROM edges "
        "WHERE namespace = ? AND rem_run = ? AND retired_by IS NOT NULL) "
        "OR run_id IN (SELECT s.rem_run FROM nodes n JOIN nodes s "
        "ON s.namespace = n.namespace AND s.id = n.deprecated_by "
        "WHERE n.namespace = ? AND n.rem_run = ?))",
        (ns, run_id, RunStatus.ROLLED_BACK.value, ns, run_id, ns, run_id))})


def rollback(engine: Parts, namespace: str, run_id: str, *,
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
    ``rem.hold_days`` from ``now``, or until they change (:mod:`remd.sleep.holds`): a run that would
    follow (the daemon's next tick) does not fold them again.

    Raises NotFound (unknown run), RollbackRefused (already rolled back, still running, or a
    later run that is not rolled back built on its synthesis nodes or edges).
    """
    ns = check_namespace(namespace)
    at = engine.clock() if now is None else now
    if isinstance(at, bool) or not isinstance(at, int | float) or not np.isfinite(at):
        raise InvalidInput(f"now must be a finite POSIX time, not {at!r}")
    with engine.store.transaction(ns) as conn:
        run = get_run(engine, ns, run_id)  # read under the write lock: no run can start meanwhile
        if run.status is RunStatus.ROLLED_BACK:
            raise RollbackRefused(f"REM run {run_id} is already rolled back")
        lease = read_lease(conn, ns)
        if run.status is RunStatus.RUNNING and lease and lease.get("run_id") == run_id and alive(
                lease, engine.clock(), engine.config.rem.lease_seconds):
            raise RollbackRefused(f"REM run {run_id} is still running")
        later = later_runs(conn, ns, run_id)
        if later:
            raise RollbackRefused(
                f"REM run {run_id} cannot be rolled back: later run(s) {', '.join(later)} "
                "built on it; roll those back first")
        graph = GraphWriter(conn, ns)
        restored = 0
        member_ids: list[str] = []
        committed: list[Any] = conn.execute(
            "SELECT members FROM rem_clusters WHERE namespace = ? AND run_id = ? "
            "AND status = 'committed' ORDER BY cluster_no DESC", (ns, run_id)).fetchall()
        for (members,) in committed:
            for m in json.loads(members):
                graph.restore(m["id"], m["status"], m["importance"], m["deprecated_by"])
                member_ids.append(m["id"])
                restored += 1
        # Held as restored, so the fingerprint is the one they had before the run.
        held = holds.hold(conn, ns, run_id, member_ids, float(at), engine.config.rem.hold_days)
        holds.release_run_nodes(conn, ns, run_id)
        synth = conn.execute("SELECT rid, content FROM nodes WHERE namespace = ? AND rem_run = ?",
                             (ns, run_id)).fetchall()
        for rid, content in synth:
            graph.remove_node(int(str(rid)), str(content))
        removed = graph.drop_run_edges(run_id)
        back = graph.revive_edges(run_id)
        conn.execute("UPDATE rem_runs SET status = ? WHERE namespace = ? AND run_id = ?",
                     (RunStatus.ROLLED_BACK.value, ns, run_id))
        if lease and lease.get("run_id") == run_id:
            conn.execute("DELETE FROM remd_meta WHERE key = ?", (lease_key(ns),))
    engine.telemetry.rolled_back()
    log.info("rem.rolled_back", namespace=ns, run_id=run.run_id, members=restored,
             synthesis=len(synth), held=held)
    return RollbackResult(run_id=run_id, members_restored=restored, synthesis_removed=len(synth),
                          edges_removed=len(removed), edges_restored=len(back), held=held)
