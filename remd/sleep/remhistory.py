"""Reading REM runs back for people: the recent runs of a namespace, and what one run folded
into what, with the tokens before and after and whether it can still be rolled back (engine
level: an engine and a namespace, no facade)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remd.errors import InvalidInput, quote
from remd.models import MAX_SQL_INTEGER
from remd.sleep.leases import alive, read_lease
from remd.sleep.remruns import RemRun, RunStatus, get_run
from remd.sleep.rollback import later_runs
from remd.store.seam import Connection

if TYPE_CHECKING:
    from remd.parts import Parts

__all__ = ["Fold", "FoldMember", "RunFolds", "recent_runs", "run_folds"]

PREVIEW_CHARS = 240  # of a member's or a synthesis's text in a run's folds


@dataclass(frozen=True, kw_only=True)
class FoldMember:
    """A memory a cluster of the run took: its status before the run and now."""

    id: str
    preview: str  # "" when the memory is no longer in the file
    tokens: int
    status_before: str
    status_now: str | None  # None: no longer in the file


@dataclass(frozen=True, kw_only=True)
class Fold:
    """One cluster of a run: its members and the synthesis they were folded into (committed),
    or why it was skipped."""

    cluster_no: int
    status: str  # committed or skipped
    reason: str | None
    members: tuple[FoldMember, ...]
    synthesis_id: str | None
    synthesis: str | None  # its text, None once the synthesis is gone (a rollback)
    tokens_before: int  # the members' tokens
    tokens_after: int  # the synthesis's tokens (committed), else tokens_before


@dataclass(frozen=True, kw_only=True)
class RunFolds:
    run: RemRun
    folds: tuple[Fold, ...]
    tokens_before: int  # of every cluster's members
    tokens_after: int  # what those clusters weigh after the run
    can_rollback: bool
    why_not: str  # why it cannot be rolled back ("" when it can)


def _why_not(engine: Parts, conn: Connection, run: RemRun, now: float) -> str:
    """Why :func:`remd.sleep.rollback.rollback` would refuse ``run`` now ("" if it would not)."""
    if run.status is RunStatus.ROLLED_BACK:
        return "already rolled back"
    if run.status is RunStatus.RUNNING:
        lease = read_lease(conn, run.namespace)
        if lease and lease.get("run_id") == run.run_id and alive(
                lease, now, engine.config.rem.lease_seconds):
            return "still running"
    later = later_runs(conn, run.namespace, str(run.run_id))
    return f"later run(s) {', '.join(later)} built on it" if later else ""


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 1000:
        raise InvalidInput(f"limit must be an integer from 0 to 1000, not {quote(limit)}")
    return limit


def recent_runs(engine: Parts, ns: str, limit: int = 50) -> list[tuple[RemRun, str]]:
    """The namespace's latest runs, newest first, each with why it cannot be rolled back
    ("" when it can). Raises InvalidInput for a bad ``limit``."""
    limit = _check_limit(limit)
    ids = [str(r[0]) for r in engine.store.query(
        "SELECT run_id FROM rem_runs WHERE namespace = ? ORDER BY started_at DESC, run_id "
        "LIMIT ?", (ns, min(limit, MAX_SQL_INTEGER)))]
    now = engine.clock()
    with engine.store.snapshot() as conn:
        runs = [get_run(engine, ns, run_id) for run_id in ids]
        return [(run, _why_not(engine, conn, run, now)) for run in runs]


def run_folds(engine: Parts, ns: str, run_id: str) -> RunFolds:
    """What run ``run_id`` folded into what. Raises NotFound, InvalidInput."""
    with engine.store.snapshot() as conn:
        run = get_run(engine, ns, run_id)
        why_not = _why_not(engine, conn, run, engine.clock())
        clusters = engine.store.query(
            "SELECT cluster_no, status, members, synthesis_id, reason FROM rem_clusters "
            "WHERE namespace = ? AND run_id = ? ORDER BY cluster_no", (ns, run_id))
        ids: set[str] = set()
        for _, _, members, sid, _ in clusters:
            ids.update(str(m["id"]) for m in json.loads(members))
            if sid:
                ids.add(str(sid))
        found = _nodes(engine, ns, sorted(ids))
    folds = []
    for no, status, members, sid, reason in clusters:
        taken = tuple(
            FoldMember(id=m["id"], preview=found.get(m["id"], ("", 0, None))[0],
                       tokens=found.get(m["id"], ("", 0, None))[1],
                       status_before=str(m["status"]),
                       status_now=found.get(m["id"], ("", 0, None))[2])
            for m in json.loads(members))
        before = sum(m.tokens for m in taken)
        synth = found.get(sid) if sid else None
        committed = status == "committed"
        folds.append(Fold(
            cluster_no=int(no), status=str(status), reason=reason, members=taken,
            synthesis_id=sid, synthesis=synth[0] if synth else None, tokens_before=before,
            tokens_after=(synth[1] if synth else 0) if committed else before))
    return RunFolds(run=run, folds=tuple(folds),
                    tokens_before=sum(f.tokens_before for f in folds),
                    tokens_after=sum(f.tokens_after for f in folds),
                    can_rollback=not why_not, why_not=why_not)


def _nodes(engine: Parts, ns: str, ids: list[str]) -> dict[str, tuple[str, int, str]]:
    """(preview, tokens, status) of the memories with these ids that are in the file."""
    out: dict[str, tuple[str, int, str]] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for node_id, content, tokens, status in engine.store.query(
                f"SELECT id, content, tokens, status FROM nodes WHERE namespace = ? "
                f"AND id IN ({','.join('?' * len(chunk))})", (ns, *chunk)):
            text = str(content)
            out[str(node_id)] = (text if len(text) <= PREVIEW_CHARS
                                 else text[:PREVIEW_CHARS - 1] + "…", int(tokens), str(status))
    return out
