"""Triggers: when a namespace needs a REM cycle, and why.

Four checks, each a pure function of the stored state and ``now``, each with its threshold in
:class:`~remd.config.TriggerConfig` (and each switchable off with ``triggers.disabled``):

- ``node_count``: live memories in the namespace that no hold keeps out of runs
  (:mod:`remd.sleep.holds`) and that are not values kept exact (``Judged.EXACT``: LangGraph store
  items, which no run folds) > ``max_live_nodes`` (300).
- ``retrieval_quality``: mean importance (at injection time) of the items of the last
  ``retrieval_window_packs`` packs < ``min_retrieval_importance`` (0.45), and a pack injected
  since the last REM run started (the same packs never start a second run).
- ``idle``: no save or inject for > ``idle_hours`` (4 h), and no REM run started since the
  last activity (otherwise an idle namespace would re-trigger at every check). A rolled-back
  run counts while the holds its rollback recorded last (:mod:`remd.sleep.holds`): otherwise the
  next check would redo it at once.
- ``contradictions``: live memories touching a live CONTRADICTS edge / live memories >
  ``max_contradiction_ratio`` (0.08).

:func:`evaluate_all` measures every namespace of a file with a handful of grouped queries (the
daemon's tick: its cost follows the rows, not the number of namespaces); :func:`evaluate` is
the same code for one namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remd.models import Judged, TriggerReason
from remd.sleep import holds
from remd.store.seam import Connection

if TYPE_CHECKING:
    from remd.config import TriggerConfig
    from remd.parts import Parts

HOUR = 3600.0


@dataclass(frozen=True, kw_only=True)
class TriggerCheck:
    """One trigger evaluated at ``now``. ``value`` is None when there is nothing to measure."""

    reason: TriggerReason
    fired: bool
    enabled: bool
    value: float | None
    threshold: float
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.reason.value, "fired": self.fired, "enabled": self.enabled,
                "value": self.value, "threshold": self.threshold,
                "explanation": self.explanation}


@dataclass(frozen=True, kw_only=True)
class TriggerReport:
    namespace: str
    now: float
    checks: tuple[TriggerCheck, ...]

    @property
    def fired(self) -> tuple[TriggerReason, ...]:
        return tuple(c.reason for c in self.checks if c.fired)

    @property
    def should_run(self) -> bool:
        return bool(self.fired)

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "now": self.now, "should_run": self.should_run,
                "fired": [r.value for r in self.fired],
                "triggers": [c.to_dict() for c in self.checks]}


@dataclass
class _Measures:
    """What the checks of one namespace are computed from (one snapshot)."""

    live: int = 0
    held: int = 0  # live memories a hold keeps out of runs (remd.sleep.holds)
    exact: int = 0  # live values kept exact (Judged.EXACT), which no run folds
    packs: int = 0
    mean_importance: float | None = None
    last_save: float | None = None
    last_inject: float | None = None
    last_rem: float | None = None
    contradicted: int = 0


def _measure(conn: Connection, cfg: TriggerConfig, at: float,
             namespace: str | None) -> dict[str, _Measures]:
    """Every namespace's measures (or one namespace's), a grouped query per measure."""
    # One shape for both: "namespace = ?" lets each query use its namespace index.
    only, args = ("AND namespace = ?", (namespace,)) if namespace is not None else ("", ())
    # The namespaces are those holding memories (the daemon's list); one asked for is there
    # whatever it holds.
    out: dict[str, _Measures] = {} if namespace is None else {namespace: _Measures()}

    def at_ns(ns: str) -> _Measures:
        found = out.get(ns)
        if found is None:
            found = out[ns] = _Measures()
        return found

    for ns, n, exact in conn.execute(
            f"SELECT namespace, count(*), sum(CASE WHEN judged = ? THEN 1 ELSE 0 END) "
            f"FROM nodes WHERE status = 'live' {only} GROUP BY namespace",
            (int(Judged.EXACT), *args)):
        at_ns(ns).live = int(n)
        at_ns(ns).exact = int(exact or 0)
    # Held memories can't be folded by the run a count would start.
    for ns, n in conn.execute(
            f"SELECT h.namespace, count(*) FROM rem_holds h JOIN nodes n ON n.id = h.node_id "
            f"AND n.namespace = h.namespace WHERE h.held_until > ? "
            f"AND h.fingerprint = {holds.FINGERPRINT} "
            f"{only.replace('namespace', 'h.namespace')} GROUP BY h.namespace", (at, *args)):
        if ns in out:
            out[ns].held = int(n)
    # Saves by people and agents, not nodes written by REM itself.
    for ns, t in conn.execute(
            f"SELECT namespace, max(created_at) FROM nodes WHERE rem_run IS NULL {only} "
            "GROUP BY namespace", args):
        at_ns(ns).last_save = t
    for ns, t in conn.execute(
            f"SELECT namespace, max(created_at) FROM packs WHERE 1 {only} GROUP BY namespace",
            args):
        if ns in out:
            out[ns].last_inject = t
    # A rolled-back run still counts while its rollback's holds last (0 hold days: never).
    for ns, t in conn.execute(
            f"SELECT namespace, max(started_at) FROM rem_runs WHERE (status != 'rolled_back' "
            f"OR run_id IN (SELECT run_id FROM rem_holds h WHERE h.namespace = rem_runs.namespace "
            f"AND h.held_until > ?)) {only} "
            "GROUP BY namespace", (at, *args)):
        if ns in out:
            out[ns].last_rem = t
    # The items of each namespace's last retrieval_window_packs packs (up to ``at``).
    for ns, packs, mean in conn.execute(
            f"WITH recent AS (SELECT pack_id, namespace FROM (SELECT pack_id, namespace, "
            f"row_number() OVER (PARTITION BY namespace ORDER BY created_at DESC) AS n "
            f"FROM packs WHERE created_at <= ? {only}) AS ranked WHERE n <= ?) "
            "SELECT r.namespace, count(DISTINCT r.pack_id), avg(i.importance) FROM recent r "
            "LEFT JOIN pack_items i ON i.namespace = r.namespace AND i.pack_id = r.pack_id "
            "GROUP BY r.namespace",
            (at, *args, cfg.retrieval_window_packs)):
        if ns in out:
            out[ns].packs, out[ns].mean_importance = int(packs), mean
    for ns, n in conn.execute(
            f"SELECT namespace, count(*) FROM nodes WHERE status = 'live' {only} AND id IN ("
            f"SELECT src FROM edges WHERE type = 'CONTRADICTS' AND live = 1 {only} UNION "
            f"SELECT dst FROM edges WHERE type = 'CONTRADICTS' AND live = 1 {only}) "
            "GROUP BY namespace", args * 3):
        if ns in out:
            out[ns].contradicted = int(n)
    return out


def evaluate_all(engine: Parts, now: float | None = None) -> list[TriggerReport]:
    """Every namespace's triggers at ``now`` (default: the engine's clock), sorted by
    namespace. Reads only; raises StoreError if the file can't be read."""
    at = engine.clock() if now is None else now
    cfg = engine.config.triggers
    with engine.store.snapshot() as conn:
        measured = _measure(conn, cfg, at, None)
    engine.telemetry.namespaces_seen(len(measured))
    return [_report(ns, at, cfg, m) for ns, m in sorted(measured.items())]


def evaluate(engine: Parts, namespace: str, now: float | None = None) -> TriggerReport:
    """One namespace's triggers at ``now`` (default: the engine's clock).

    Reads only; raises StoreError if the file can't be read.
    """
    at = engine.clock() if now is None else now
    cfg = engine.config.triggers
    with engine.store.snapshot() as conn:
        measured = _measure(conn, cfg, at, namespace)
    return _report(namespace, at, cfg, measured.get(namespace, _Measures()))


def _report(ns: str, at: float, cfg: TriggerConfig, m: _Measures) -> TriggerReport:
    live, mean_imp, contradicted = m.live, m.mean_importance, m.contradicted
    disabled = set(cfg.disabled)
    checks: list[TriggerCheck] = []

    def add(reason: TriggerReason, over: bool, value: float | None, threshold: float,
            text: str) -> None:
        enabled = reason.value not in disabled
        checks.append(TriggerCheck(reason=reason, fired=enabled and over, enabled=enabled,
                                   value=value, threshold=threshold,
                                   explanation=text + ("" if enabled else " (disabled)")))

    foldable = live - m.held - m.exact
    add(TriggerReason.NODE_COUNT, foldable > cfg.max_live_nodes, float(foldable),
        float(cfg.max_live_nodes),
        f"{foldable} live memories not held{' or kept exact' if m.exact else ''} "
        f"{'>' if foldable > cfg.max_live_nodes else '<='} {cfg.max_live_nodes}")

    if mean_imp is None:
        add(TriggerReason.RETRIEVAL_QUALITY, False, None, cfg.min_retrieval_importance,
            "no packs injected yet")
    else:
        low = mean_imp < cfg.min_retrieval_importance
        # Packs older than the last run say nothing new: that run already answered them
        # (else the check would start a run at every tick until the agent injects again).
        stale = m.last_rem is not None and (m.last_inject is None or m.last_inject <= m.last_rem)
        text = (f"mean importance of the items of the last {m.packs} pack(s) is "
                f"{mean_imp:.3f} {'<' if low else '>='} {cfg.min_retrieval_importance}")
        if low and stale:
            text += "; a REM run has started since the last of them"
        add(TriggerReason.RETRIEVAL_QUALITY, low and not stale, round(float(mean_imp), 6),
            cfg.min_retrieval_importance, text)

    activity = max((t for t in (m.last_save, m.last_inject) if t is not None), default=None)
    if activity is None:
        add(TriggerReason.IDLE, False, None, cfg.idle_hours, "no save or inject yet")
    else:
        hours = max(0.0, at - activity) / HOUR
        consolidated = m.last_rem is not None and m.last_rem >= activity
        idle = hours > cfg.idle_hours and not consolidated
        text = f"last save/inject {hours:.2f} h ago ({'>' if hours > cfg.idle_hours else '<='}" \
               f" {cfg.idle_hours} h)"
        if consolidated:
            text += "; a REM run has started since then"
        add(TriggerReason.IDLE, idle, round(hours, 6), cfg.idle_hours, text)

    ratio = contradicted / live if live else 0.0
    over = ratio > cfg.max_contradiction_ratio
    add(TriggerReason.CONTRADICTIONS, over, round(ratio, 6), cfg.max_contradiction_ratio,
        f"{contradicted} of {live} live memories are in a CONTRADICTS edge "
        f"({ratio:.3f} {'>' if over else '<='} {cfg.max_contradiction_ratio})")
    return TriggerReport(namespace=ns, now=at, checks=tuple(checks))
