"""inject's in-process caches of one file, per namespace, within one memory budget.

Each namespace that inject or ``nearest`` has used has a :class:`View`: its tag-graph cache
(:mod:`remd.index.graphcache`), node mirror (:mod:`remd.index.nodemirror`) and bit index
(:mod:`remd.index.vectors`). All of them are exact by construction (they sync from the change logs
in the reader's own snapshot) and none is the source of truth, so dropping one costs only a
reload. The FTS5 term counts (:mod:`remd.index.lexical`) are counts over the whole index, so they
are
one object per file.

Bounds. Views are kept least recently used first; after each use the registry adds up what
the views hold (each reports its ``nbytes``) and drops the least recently used idle ones until
the total is within ``engine.cache_mb``. The budget is what one process may hold for one file
whatever the number of namespaces: 10,000 small namespaces take a few KB each, a namespace of
a million memories ~200 MB.

Concurrency. A view is used by one thread at a time (``use`` holds its lock for the block).
The caller takes the view *before* it opens its read snapshot, so the snapshots a view is
synced to only move forward.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator

from remd.index.graphcache import TagGraphCache
from remd.index.lexical import TermCounts
from remd.index.nodemirror import NodeMirror
from remd.index.vectors import BitIndex

_VIEW_BYTES = 2048  # what an empty view's objects take (Python objects, small arrays)
MB = 1 << 20


class View:
    """The cached state of one namespace."""

    def __init__(self, namespace: str, graph_capacity: int, cells: tuple[int, int] = (0, 0)
                 ) -> None:
        self.namespace = namespace
        self.graph = TagGraphCache(namespace, graph_capacity)
        self.mirror = NodeMirror(namespace)
        self.bits = BitIndex(namespace, cells=cells)
        self.sentences = BitIndex(namespace, "sentence_vec")
        self.lock = threading.Lock()
        self.users = 0
        self.size = _VIEW_BYTES

    def nbytes(self) -> int:
        return (_VIEW_BYTES + self.graph.nbytes() + self.mirror.nbytes() + self.bits.nbytes()
                + self.sentences.nbytes())


class Caches:
    """The views of one file in one process, least recently used first."""

    def __init__(self, budget_mb: float, graph_capacity: int,
                 cells: tuple[int, int] = (0, 0)) -> None:
        self.budget = int(budget_mb * MB)
        self.graph_capacity = graph_capacity
        self.cells = cells  # (vector_cells_from, vector_cells_probe): remd/index/bitcells.py
        self.terms = TermCounts()
        self._views: OrderedDict[str, View] = OrderedDict()
        self._lock = threading.Lock()
        self._total = 0
        self.evicted = 0  # views dropped for the budget (tests and stats look)

    @contextlib.contextmanager
    def use(self, namespace: str) -> Iterator[View]:
        """The namespace's view, held by this thread for the block."""
        view = self.view(namespace)
        with self._lock:
            self._views.move_to_end(namespace)
            view.users += 1
        try:
            with view.lock:
                try:
                    yield view
                finally:
                    size = view.nbytes()
        finally:
            with self._lock:
                view.users -= 1
                if self._views.get(namespace) is view:
                    self._total += size - view.size
                view.size = size
                self._trim()

    def view(self, namespace: str) -> View:
        """The namespace's view (made if missing), not held: to look at, never to work with
        while another thread may use it (tests, diagnostics)."""
        with self._lock:
            view = self._views.get(namespace)
            if view is None:
                view = self._views[namespace] = View(namespace, self.graph_capacity,
                                                            self.cells)
                self._total += view.size
            return view

    def _trim(self) -> None:
        """Drop idle views, least recently used first, until the total fits the budget (the
        most recently used one stays, whatever its size)."""
        if self._total + self.terms.nbytes() <= self.budget:
            return
        for namespace in list(self._views)[:-1]:
            if self._total + self.terms.nbytes() <= self.budget:
                return
            view = self._views[namespace]
            if view.users:
                continue
            del self._views[namespace]
            self._total -= view.size
            self.evicted += 1

    @property
    def total_bytes(self) -> int:
        with self._lock:
            return self._total + self.terms.nbytes()

    def __len__(self) -> int:
        return len(self._views)
