"""Feedback: learn from whether a pack helped, by moving the tag edges that built it.

Every item of a recorded pack keeps the path of tag ids that activated it (seed -> ... -> tag).
``feedback(pack_id, accepted)`` moves the weight of each edge on those paths towards the target
by an exponential moving average, ``w <- (1 - eta) * w + eta * target`` (eta =
``inject.feedback_eta``), so accepted packs strengthen the walk that found them and rejected
ones weaken it. Only the direction that was walked is updated. Feedback is recorded per pack
and given once: a second call for the same pack changes nothing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remd.checks import check_namespace
from remd.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from remd.parts import Parts

# An edge never reaches 0: a rejected association can still come back through co-occurrence.
MIN_WEIGHT = 0.01


@dataclass(frozen=True, kw_only=True)
class FeedbackResult:
    pack_id: str
    accepted: float  # the target the edges moved towards (1 accept, 0 reject)
    edges_updated: int
    applied: bool  # False: feedback for this pack had already been given; nothing changed


def check_accepted(accepted: object) -> float:
    """``True``/``False`` or a number in [0, 1]. Raises InvalidInput otherwise."""
    if isinstance(accepted, bool):
        return 1.0 if accepted else 0.0
    if not isinstance(accepted, int | float) or not math.isfinite(accepted) or not (
            0.0 <= accepted <= 1.0):
        raise InvalidInput(f"accepted must be a bool or a number in [0, 1], not {accepted!r}")
    return float(accepted)


def _path_edges(paths: list[str]) -> list[tuple[int, int]]:
    edges: dict[tuple[int, int], None] = {}
    for raw in paths:
        path = json.loads(raw)
        for a, b in zip(path, path[1:], strict=False):
            if isinstance(a, int) and isinstance(b, int) and a != b:
                edges[(a, b)] = None
    return list(edges)


def feedback(engine: Parts, namespace: str, pack_id: str,
             accepted: bool | float) -> FeedbackResult:
    """Apply feedback for a pack once (one transaction). Raises NotFound for a pack id unknown
    in the namespace, InvalidInput for a bad ``accepted`` or namespace."""
    ns = check_namespace(namespace)
    if not isinstance(pack_id, str):
        raise InvalidInput(f"pack id must be a string, not {type(pack_id).__name__}")
    target = check_accepted(accepted)
    eta = engine.config.inject.feedback_eta
    now = engine.clock()
    with engine.store.transaction(ns) as conn:
        if conn.execute("SELECT 1 FROM packs WHERE pack_id = ? AND namespace = ?",
                        (pack_id, ns)).fetchone() is None:
            raise NotFound("pack", pack_id, ns)
        given = conn.execute("SELECT accepted FROM feedback WHERE namespace = ? AND pack_id = ?",
                             (ns, pack_id)).fetchone()
        if given is not None:
            engine.telemetry.fed_back()
            return FeedbackResult(pack_id=pack_id, accepted=float(given[0]),
                                  edges_updated=0, applied=False)
        paths = [str(r[0]) for r in conn.execute(
            "SELECT path FROM pack_items WHERE namespace = ? AND pack_id = ? ORDER BY rank",
            (ns, pack_id))]
        edges = _path_edges(paths)
        updated = 0
        for src, dst in edges:
            # Both tags must still be this namespace's (a merge may have removed one).
            updated += conn.execute(
                "UPDATE tag_edges SET weight = max(?, (1.0 - ?) * weight + ? * ?) "
                "WHERE namespace = ? AND src = ? AND dst = ? RETURNING 1",
                (MIN_WEIGHT, eta, eta, target, ns, src, dst)).fetchone() is not None
        conn.execute("INSERT INTO feedback (namespace, pack_id, accepted, at) "
                     "VALUES (?, ?, ?, ?)", (ns, pack_id, target, now))
    engine.telemetry.fed_back()
    return FeedbackResult(pack_id=pack_id, accepted=target, edges_updated=updated, applied=True)
