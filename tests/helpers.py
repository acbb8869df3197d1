"""Small helpers several test modules share."""

from __future__ import annotations

import numpy.typing as npt

from remd import vectors
from remd.memory import Memory


def knn(mem: Memory, namespace: str, query: npt.ArrayLike, k: int, *,
        rerank: int = 8) -> list[tuple[int, float]]:
    """remd.vectors.knn over the namespace's bit index, as inject and nearest run it."""
    with mem.engine.caches.use(namespace) as view, mem.store.snapshot() as conn:
        return vectors.knn(view.bits, conn, query, k, rerank=rerank)
