"""Holds: the members of a rolled-back run are left out of later REM runs for a while.

A rollback says "not these, not like this". Without a hold the daemon redid the run at its next
tick: the members were as weak as before and a trigger still fired. So :func:`hold` (called by
:func:`remd.sleep.rollback.rollback`, in its transaction) records one ``rem_holds`` row per member
of each
committed cluster, and a run's plan leaves held memories unflagged unless it is asked to
include them (``run_rem(include_held=True)``, ``remd run-rem --include-held``).

A hold ends at ``held_until`` (``rem.hold_days`` after the rollback; 0 days: no hold is
recorded) or as soon as the memory changes. "Changes" is what people and agents can change
about a memory (its content never changes): its status (superseded, forgotten), its confidence
(a contradiction), its access count and last access (an inject returned it), its valid_until.
Those are recorded as a fingerprint after the rollback restored the member, and compared with
the memory's current ones when a run plans. A run that folds a held memory (by hand) changes
its status, which ends the hold; :func:`prune`, at the end of every run, drops the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remd.sleep.importance import DAY
from remd.store.seam import Connection

if TYPE_CHECKING:
    from remd.parts import Parts

# Computed by SQLite both when a hold is recorded and when it is checked, so the two texts
# compare equal exactly when the columns do. ``n`` is the nodes row.
FINGERPRINT = ("json_array(n.status, n.confidence, n.access_count, n.last_access, "
               "n.valid_until)")
_CHUNK = 500  # ids per IN (...) list


def hold(conn: Connection, namespace: str, run_id: str, node_ids: Sequence[str],
         at: float, days: float) -> int:
    """Hold the live memories ``node_ids`` back from later runs for ``days`` from ``at``, for
    the rolled-back ``run_id`` (inside the caller's transaction). A memory already held gets
    the new hold. Returns how many are held; none when ``days`` is 0."""
    if days <= 0:
        return 0
    held = 0
    until = at + days * DAY
    for start in range(0, len(node_ids), _CHUNK):
        part = list(node_ids[start:start + _CHUNK])
        marks = ",".join("?" * len(part))
        held += len(conn.execute(
            "INSERT INTO rem_holds (namespace, node_id, run_id, held_at, held_until, "
            f"fingerprint) SELECT n.namespace, n.id, ?, ?, ?, {FINGERPRINT} FROM nodes n "
            f"WHERE n.namespace = ? AND n.status = 'live' AND n.id IN ({marks}) "
            "ON CONFLICT (namespace, node_id) DO UPDATE SET run_id = excluded.run_id, "
            "held_at = excluded.held_at, held_until = excluded.held_until, "
            "fingerprint = excluded.fingerprint RETURNING node_id",
            (run_id, at, until, namespace, *part)).fetchall())
    return held


def release_run_nodes(conn: Connection, namespace: str, run_id: str) -> None:
    """Drop the holds on the synthesis nodes ``run_id`` created (its rollback deletes them)."""
    conn.execute("DELETE FROM rem_holds WHERE namespace = ? AND node_id IN "
                 "(SELECT id FROM nodes WHERE namespace = ? AND rem_run = ?)",
                 (namespace, namespace, run_id))


def held_rids(engine: Parts, namespace: str, at: float) -> set[int]:
    """The rids of the memories of ``namespace`` held at ``at``: hold not expired, memory
    unchanged since it was recorded."""
    return {int(r[0]) for r in engine.store.query(
        f"SELECT n.rid FROM rem_holds h JOIN nodes n ON n.id = h.node_id "
        f"WHERE h.namespace = ? AND n.namespace = h.namespace AND h.held_until > ? "
        f"AND h.fingerprint = {FINGERPRINT}", (namespace, at))}


def prune(conn: Connection, namespace: str) -> int:
    """Drop the holds that can never apply again (inside the caller's transaction): on memories
    gone, no longer live (a run folded them), or changed since (an access count only grows).
    Expired ones stay: time is a parameter, and a run planned at an earlier ``now`` still sees
    them. Returns how many were dropped."""
    return len(conn.execute(
        "DELETE FROM rem_holds WHERE namespace = ? AND NOT EXISTS (SELECT 1 FROM nodes n "
        "WHERE n.id = rem_holds.node_id AND n.namespace = rem_holds.namespace "
        f"AND n.status = 'live' AND {FINGERPRINT} = rem_holds.fingerprint) "
        "RETURNING node_id", (namespace,)).fetchall())
