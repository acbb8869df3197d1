"""Did a REM run cost recent questions their answer? A cheap proxy, after every run.

The namespace's last :data:`RECENT` recorded packs are asked again once the run has written
(not recorded, the relevance floor on): a question whose first item is still the memory it
was, or the synthesis that memory was folded into, *kept* its top item; any other first item
(or none) *changed* it. ``run-rem --json`` carries the counts (``usefulness``) and the daemon's
``/metrics`` their totals (``remd_rem_recent_tops_total``). It reads at most :data:`RECENT`
packs and asks as many questions: bounded, never the namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remd.query.inject import first_item

if TYPE_CHECKING:
    from remd.parts import Parts

__all__ = ["RECENT", "Usefulness", "recent_tops"]

RECENT = 20  # recorded packs asked again after a run
_BUDGET = 200  # what a question is asked again with


@dataclass(frozen=True, kw_only=True)
class Usefulness:
    queries: int = 0  # recent questions asked again
    top_kept: int = 0  # first item unchanged (or its synthesis)
    top_changed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"queries": self.queries, "top_kept": self.top_kept,
                "top_changed": self.top_changed}


def recent_tops(engine: Parts, namespace: str) -> Usefulness:
    """Ask the namespace's last :data:`RECENT` recorded questions again; how many kept their
    first item (see the module docstring)."""
    rows: Any = engine.store.query(
        "SELECT p.query, i.rid FROM packs p JOIN pack_items i ON i.namespace = p.namespace "
        "AND i.pack_id = p.pack_id AND i.rank = 0 WHERE p.namespace = ? "
        "ORDER BY p.created_at DESC LIMIT ?", (namespace, RECENT))
    if not rows:
        return Usefulness()
    now = {int(rid): int(rid) for _, rid in rows}
    for _ in range(3):  # a fragment folded, maybe again: the synthesis that stands for it
        current = sorted(set(now.values()))  # two questions may share a first item
        moved = dict(engine.store.query(
            f"SELECT n.rid, s.rid FROM nodes n JOIN nodes s ON s.namespace = n.namespace "
            f"AND s.id = n.deprecated_by WHERE n.namespace = ? AND n.status = 'deprecated' "
            f"AND n.rid IN ({','.join('?' * len(current))})", (namespace, *current)))
        if not moved:
            break
        now = {old: int(moved.get(cur, cur)) for old, cur in now.items()}
    kept = sum(1 for query, rid in rows
               if first_item(engine, namespace, str(query), _BUDGET) == now[int(rid)])
    return Usefulness(queries=len(rows), top_kept=kept, top_changed=len(rows) - kept)
