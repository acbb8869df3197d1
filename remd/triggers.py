"""Triggers: when a namespace needs a REM cycle, and why.

Four checks, each a pure function of the stored state and ``now``, each with its threshold in
:class:`~remd.config.TriggerConfig` (and each switchable off with ``triggers.disabled``):

- ``node_count``: live memories in the namespace > ``max_live_nodes`` (300).
- ``retrieval_quality``: mean importance (at injection time) of the items of the last
  ``retrieval_window_packs`` packs < ``min_retrieval_importance`` (0.45).
- ``idle``: no save or inject for > ``idle_hours`` (4 h), and no REM run started since the
  last activity (otherwise an idle namespace would re-trigger at every check).
- ``contradictions``: live memories touching a live CONTRADICTS edge / live memories >
  ``max_contradiction_ratio`` (0.08).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remd.models import TriggerReason

if TYPE_CHECKING:
    from remd.memory import Memory

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


def evaluate(memory: Memory, now: float | None = None) -> TriggerReport:
    """Evaluate every trigger of the memory's namespace at ``now`` (default: its clock).

    Reads only; raises StoreError if the file can't be read.
    """
    at = memory.clock() if now is None else now
    cfg = memory.config.triggers
    ns = memory.namespace
    store = memory.store
    with store.snapshot():
        live = int(store.scalar(
            "SELECT count(*) FROM nodes WHERE namespace = ? AND status = 'live'", (ns,)))
        packs = store.query(
            "SELECT pack_id FROM packs WHERE namespace = ? AND created_at <= ? "
            "ORDER BY created_at DESC LIMIT ?", (ns, at, cfg.retrieval_window_packs))
        mean_imp = None
        if packs:
            marks = ",".join("?" * len(packs))
            mean_imp = store.scalar(
                f"SELECT avg(importance) FROM pack_items WHERE pack_id IN ({marks})",
                [p[0] for p in packs])
        # Saves by people and agents, not nodes written by REM itself.
        last_save = store.scalar(
            "SELECT max(created_at) FROM nodes WHERE namespace = ? AND rem_run IS NULL", (ns,))
        last_inject = store.scalar(
            "SELECT max(created_at) FROM packs WHERE namespace = ?", (ns,))
        last_rem = store.scalar(
            "SELECT max(started_at) FROM rem_runs WHERE namespace = ? "
            "AND status != 'rolled_back'", (ns,))
        contradicted = int(store.scalar(
            "SELECT count(*) FROM nodes WHERE namespace = ? AND status = 'live' AND id IN ("
            "SELECT src FROM edges WHERE namespace = ? AND type = 'CONTRADICTS' AND live = 1 "
            "UNION SELECT dst FROM edges WHERE namespace = ? AND type = 'CONTRADICTS' "
            "AND live = 1)", (ns, ns, ns)))

    disabled = set(cfg.disabled)
    checks: list[TriggerCheck] = []

    def add(reason: TriggerReason, over: bool, value: float | None, threshold: float,
            text: str) -> None:
        enabled = reason.value not in disabled
        checks.append(TriggerCheck(reason=reason, fired=enabled and over, enabled=enabled,
                                   value=value, threshold=threshold,
                                   explanation=text + ("" if enabled else " (disabled)")))

    add(TriggerReason.NODE_COUNT, live > cfg.max_live_nodes, float(live),
        float(cfg.max_live_nodes),
        f"{live} live memories {'>' if live > cfg.max_live_nodes else '<='} "
        f"{cfg.max_live_nodes}")

    if mean_imp is None:
        add(TriggerReason.RETRIEVAL_QUALITY, False, None, cfg.min_retrieval_importance,
            "no packs injected yet")
    else:
        low = mean_imp < cfg.min_retrieval_importance
        add(TriggerReason.RETRIEVAL_QUALITY, low, round(float(mean_imp), 6),
            cfg.min_retrieval_importance,
            f"mean importance of the items of the last {len(packs)} pack(s) is "
            f"{mean_imp:.3f} {'<' if low else '>='} {cfg.min_retrieval_importance}")

    activity = max((t for t in (last_save, last_inject) if t is not None), default=None)
    if activity is None:
        add(TriggerReason.IDLE, False, None, cfg.idle_hours, "no save or inject yet")
    else:
        hours = max(0.0, at - activity) / HOUR
        consolidated = last_rem is not None and last_rem >= activity
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
