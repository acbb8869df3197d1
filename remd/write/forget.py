"""Forgetting a memory: a soft delete through the graph writer (engine level: a store and a
namespace, no facade)."""

from __future__ import annotations

from remd.index.noderows import rid_of
from remd.store.seam import Store
from remd.write.graph import GraphWriter


def forget(store: Store, namespace: str, node_id: str) -> None:
    """Soft-delete: the node stays in the file (status forgotten) but is never injected.
    Raises NotFound, InvalidInput."""
    rid = rid_of(store, namespace, node_id)
    with store.transaction(namespace) as conn:
        GraphWriter(conn, namespace).forget(rid)
