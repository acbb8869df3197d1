"""A namespace's counts, as a :class:`~remd.models.Stats` (engine level: a store and a
namespace, no facade)."""

from __future__ import annotations

import os

from remd.models import Stats
from remd.store.seam import Store

__all__ = ["stats"]


def stats(store: Store, ns: str) -> Stats:
    """Counts for namespace ``ns``, read in one snapshot, and the file's size on disk."""
    with store.snapshot():
        by_status = dict(store.query(
            "SELECT status, count(*) FROM nodes WHERE namespace = ? GROUP BY status", (ns,)))
        by_kind = dict(store.query(
            "SELECT kind, count(*) FROM nodes WHERE namespace = ? AND status = 'live' "
            "GROUP BY kind", (ns,)))
        tags = store.scalar("SELECT count(*) FROM tags WHERE namespace = ?", (ns,))
        tag_edges = store.scalar(
            "SELECT count(*) FROM tag_edges WHERE namespace = ?", (ns,))
        edges = store.scalar(
            "SELECT count(*) FROM edges WHERE namespace = ? AND live = 1", (ns,))
        pending = store.scalar(
            "SELECT count(*) FROM nodes WHERE namespace = ? AND embedded = 0", (ns,))
        packs = store.scalar("SELECT count(*) FROM packs WHERE namespace = ?", (ns,))
        runs = store.scalar("SELECT count(*) FROM rem_runs WHERE namespace = ?", (ns,))
        version = store.schema_version()
    path = store.path
    size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
    return Stats(
        namespace=ns, nodes=sum(by_status.values()), live=by_status.get("live", 0),
        deprecated=by_status.get("deprecated", 0),
        superseded=by_status.get("superseded", 0),
        forgotten=by_status.get("forgotten", 0), facts=by_kind.get("fact", 0),
        synthesis=by_kind.get("synthesis", 0), tags=tags, tag_edges=tag_edges,
        edges=edges, pending_embeddings=pending, packs=packs, rem_runs=runs,
        db_bytes=size, schema_version=version, by_kind=by_kind)
