"""Importance: what a memory is worth keeping as it is.

``importance = a·recency + b·access_freq + c·centrality + d·confidence`` (weights in
:class:`~remd.config.ImportanceConfig`, summing to 1). Every component is a pure, vectorised
function of the inputs and ``now``; :func:`refresh_importance` reads the inputs of a whole
namespace, computes all scores with numpy and stores them in one transaction.

- recency = exp(-λ · days since last access), λ = 0.02/day.
- access_freq = accesses in the rolling window (30 days) before ``now``, log-scaled and
  normalised by the namespace maximum (one very popular memory must not flatten the others to 0).
- centrality = live typed-edge degree (in + out, only edges whose other end is a live memory)
  relative to the namespace. Plain degree / max degree calls every node "central" when all
  degrees are alike (and a REM run would then never flag anything), so by default it is the
  degree *in excess of the namespace median*, log-scaled: 0 for a typical node, 1 for the
  best-connected one. ``centrality_baseline = "zero"`` gives plain log-degree / log-max.
- confidence = the stored confidence (0.5 at first; raised by confirmations, lowered by
  CONTRADICTS links when they are written, see remd.write.ingest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from remd.config import ImportanceConfig
from remd.models import Judged

if TYPE_CHECKING:
    from remd.parts import Parts

DAY = 86400.0
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


# -- the components (pure functions of arrays) -------------------------------------------------
def recency(days_since_access: Floats, lam: float) -> Floats:
    """exp(-λ·days); accesses "in the future" of ``now`` count as now."""
    return np.exp(-lam * np.maximum(np.asarray(days_since_access, np.float64), 0.0))


def access_freq(window_counts: Floats | Ints) -> Floats:
    """log1p(count) / log1p(max count) in [0, 1]; all zeros when nobody was accessed."""
    counts = np.maximum(np.asarray(window_counts, np.float64), 0.0)
    top = counts.max(initial=0.0)
    if top <= 0:
        return np.zeros_like(counts)
    out: Floats = np.log1p(counts) / np.log1p(top)
    return out


def centrality(degree: Floats | Ints, baseline: str = "median") -> Floats:
    """Degree relative to the namespace, in [0, 1] (see the module docstring)."""
    logd = np.log1p(np.maximum(np.asarray(degree, np.float64), 0.0))
    if logd.size == 0:
        return logd
    base = float(np.median(logd)) if baseline == "median" else 0.0
    top = float(logd.max())
    if top <= base:  # every node is typical: nobody is a hub
        return np.zeros_like(logd)
    return np.clip((logd - base) / (top - base), 0.0, 1.0)


@dataclass(frozen=True, kw_only=True)
class Scores:
    """Importance and its components, one entry per node (same order as the inputs)."""

    recency: Floats
    access_freq: Floats
    centrality: Floats
    confidence: Floats
    importance: Floats


def score(
    *,
    days_since_access: Floats,
    window_accesses: Floats | Ints,
    degree: Floats | Ints,
    confidence: Floats,
    config: ImportanceConfig,
) -> Scores:
    """The importance of every node of one namespace, from its inputs. Pure."""
    rec = recency(days_since_access, config.recency_lambda)
    acc = access_freq(window_accesses)
    cen = centrality(degree, config.centrality_baseline)
    conf = np.clip(np.asarray(confidence, np.float64), 0.0, 1.0)
    total = (config.recency_weight * rec + config.access_weight * acc
             + config.centrality_weight * cen + config.confidence_weight * conf)
    return Scores(recency=rec, access_freq=acc, centrality=cen, confidence=conf,
                  importance=np.clip(total, 0.0, 1.0))


# -- reading the inputs and storing the result --------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class NamespaceScores:
    """Scores of the live memories of a namespace at ``now``."""

    now: float
    rids: Ints
    ids: tuple[str, ...]
    kinds: tuple[str, ...]
    created_at: Floats
    scores: Scores
    exact: npt.NDArray[np.bool_]  # values kept exact (Judged.EXACT): REM never flags them

    def __len__(self) -> int:
        return len(self.ids)


def compute_importance(engine: Parts, ns: str, now: float) -> NamespaceScores:
    """Read the live memories of the namespace and score them at ``now`` (nothing is written)."""
    cfg = engine.config.importance
    store = engine.store
    with store.snapshot():
        rows = store.query(
            "SELECT rid, id, kind, created_at, last_access, confidence, judged FROM nodes "
            "WHERE namespace = ? AND status = 'live' ORDER BY rid", (ns,))
        counts = dict(store.query(
            "SELECT rid, count(*) FROM access_log WHERE namespace = ? AND at > ? AND at <= ? "
            "GROUP BY rid", (ns, now - cfg.access_window_days * DAY, now)))
        edges = store.query(
            "SELECT src, dst FROM edges WHERE namespace = ? AND live = 1 AND src != dst", (ns,))
    n = len(rows)
    index = {r[1]: i for i, r in enumerate(rows)}
    # Degree counts only edges between two live memories: an edge to a deprecated, superseded
    # or missing node no longer holds the graph together.
    degree = np.zeros(n, np.int64)
    ends = [(index[s], index[d]) for s, d in edges if s in index and d in index]
    if ends:
        pairs = np.asarray(ends, np.int64)
        degree = np.bincount(pairs.ravel(), minlength=n).astype(np.int64)
    last = np.fromiter((r[4] for r in rows), np.float64, n)
    scores = score(
        days_since_access=(now - last) / DAY,
        window_accesses=np.fromiter((counts.get(r[0], 0) for r in rows), np.int64, n),
        degree=degree,
        confidence=np.fromiter((r[5] for r in rows), np.float64, n),
        config=cfg,
    )
    return NamespaceScores(
        now=now, rids=np.fromiter((r[0] for r in rows), np.int64, n),
        ids=tuple(r[1] for r in rows), kinds=tuple(r[2] for r in rows),
        created_at=np.fromiter((r[3] for r in rows), np.float64, n), scores=scores,
        exact=np.fromiter((r[6] == Judged.EXACT for r in rows), np.bool_, n))


def store_importance(engine: Parts, ns: str, result: NamespaceScores) -> int:
    """Write computed importances in one transaction; returns how many rows changed.

    Only rows still live are touched, so a memory deprecated or forgotten since the scores were
    read keeps its value.
    """
    values = result.scores.importance
    params = [(float(v), ns, int(rid), float(v))
              for v, rid in zip(values, result.rids, strict=True)]
    with engine.store.transaction(ns) as conn:
        before = conn.total_changes()
        conn.executemany(
            "UPDATE nodes SET importance = ? WHERE namespace = ? AND rid = ? "
            "AND status = 'live' AND importance IS NOT ?", params)
        return int(conn.total_changes() - before)


def refresh_importance(engine: Parts, ns: str, now: float | None = None) -> NamespaceScores:
    """Recompute and store the importance of every live memory of the namespace at ``now``
    (default: the engine's clock). Raises StoreError if the file can't be written."""
    at = engine.clock() if now is None else now
    result = compute_importance(engine, ns, at)
    store_importance(engine, ns, result)
    return result


def low_confidence(confidence: Floats | Sequence[float], config: ImportanceConfig) -> npt.NDArray[
        np.bool_]:
    """Memories whose confidence alone flags them, whatever their other scores."""
    return np.asarray(confidence, np.float64) < config.low_confidence
