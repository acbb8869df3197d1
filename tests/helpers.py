"""Small helpers several test modules share."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy.typing as npt

from remd.index import vectors
from remd.memory import Memory
from remd.store.sqlite.store import Store


def knn(mem: Memory, namespace: str, query: npt.ArrayLike, k: int, *,
        rerank: int = 8) -> list[tuple[int, float]]:
    """remd.index.vectors.knn over the namespace's bit index, as inject and nearest run it."""
    with mem.engine.caches.use(namespace) as view, mem.store.snapshot() as conn:
        return vectors.knn(view.bits, conn, query, k, rerank=rerank)


class Hog:
    """A pooled connection held on another thread until :meth:`release` (or the block's end)."""

    def __init__(self, store: Store) -> None:
        self._held, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(store,))

    def _hold(self, store: Store) -> None:
        with store.connection():
            self._held.set()
            self._done.wait(30)

    def release(self) -> None:
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


@contextlib.contextmanager
def hogged(store: Store) -> Iterator[Hog]:
    """One of the store's pooled connections leased by another thread for the block."""
    hog = Hog(store)
    hog._thread.start()
    hog._held.wait(10)
    try:
        yield hog
    finally:
        hog.release()


class KeepAll:
    """The offline synthesiser with no token target: every sentence kept, so every cluster
    folds. The tests of the cycle's mechanics (edges, rollback, holds, leases, dates, tags)
    use it; the density tests use the merging default."""

    name, model, prompt_version = "offline", "extractive-v1", "offline-1"

    def synthesise(self, fragments: Any, causal_edges: Any = (),
                   target_tokens: int | None = None) -> Any:
        from remd.sleep.synthesis import OfflineSynthesiser

        return OfflineSynthesiser().synthesise(fragments, causal_edges)


