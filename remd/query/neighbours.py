"""A namespace's nearest memories to a text by embedding (engine level: an engine and a
namespace, no facade)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remd.checks import check_text
from remd.index import vectors as _vectors
from remd.index.noderows import NODE_COLUMNS, from_rows
from remd.models import Node

if TYPE_CHECKING:
    from remd.parts import Parts

__all__ = ["nearest"]


def nearest(engine: Parts, namespace: str, text: str, k: int = 8, *, live_only: bool = True,
            exact: bool = False) -> list[tuple[Node, float]]:
    """The k memories of ``namespace`` closest to ``text`` by cosine distance (smallest first).

    By default the search is inject's (:mod:`remd.index.vectors`): a Hamming pre-filter over the
    namespace's in-process bit index (built on the process's first search), then the exact
    cosine of the best ``k * vector_rerank`` candidates; a true neighbour can in rare cases
    rank outside the candidates. ``exact=True`` scans every stored vector of the namespace
    with sqlite-vec instead. No embedder (or ``k <= 0``): no memories.
    Raises InvalidInput for a bad text, EmbedError.
    """
    embedder = engine.embedder
    if embedder is None or k <= 0:
        return []
    store = engine.store
    query = check_text(text, engine.config.store.max_content_chars)
    vec = engine.query_vector(query)
    assert vec is not None  # the embedder exists (checked above)
    rerank = engine.config.inject.vector_rerank
    status = "AND status = 'live'" if live_only else ""
    want = k * 2 if live_only else k
    while True:
        # Memories that are no longer live sit among the vectors too: ask for more until
        # k live ones are found or the namespace has no more vectors.
        if exact:
            hits = _vectors.exact_scan(store, namespace, vec, want)
            more = len(hits) == want
        else:
            with engine.caches.use(namespace) as view, store.snapshot() as conn:
                found = _vectors.knn(view.bits, conn, vec, want, rerank=rerank)
            hits = [(rid, 1.0 - sim) for rid, sim in found]
            more = len(found) == want * rerank
        if not hits:
            return []
        dist = {rid: d for rid, d in hits}
        marks = ",".join("?" * len(dist))
        rows = store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? AND rid IN ({marks}) "
            f"{status}", (namespace, *dist))
        if len(rows) >= k or not more:
            break
        want *= 4
    nodes = from_rows(store, rows)
    rid_of = {r[1]: r[0] for r in rows}
    ranked = sorted(((n, float(dist[rid_of[n.id]])) for n in nodes), key=lambda p: p[1])
    return ranked[:k]
