"""The embedding backlog: memories committed without a vector yet.

A save is durable before its vector exists: bulk saves commit first and embed afterwards, and
a save made while the embedder was down keeps ``embedded = 0``. :func:`embed_pending` works
the backlog off in the embedder's batches, for one namespace or (the daemon, each tick) for
the whole file; inject finds a memory through its tags and words meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from remd.index import vectormodel
from remd.index.vectors import BitIndex
from remd.logs import get_logger
from remd.store import rows_in
from remd.text.embed import EmbedError
from remd.text.words import sentence_pieces
from remd.write.graph import GraphWriter, mark_embedded
from remd.write.supersede import Fresh, judge_pending

if TYPE_CHECKING:
    from remd.parts import Parts

log = get_logger("remd.backlog")

Progress = Callable[[int], None]
_ROW = "rid, namespace, content, id, created_at, judged"


def _refreshed_bits(engine: Parts, namespace: str) -> BitIndex:
    """The namespace's bit index brought to the committed state, in its own snapshot and with
    its view held (as inject does), before a write transaction judges new memories with it:
    the index never sees rows of a transaction that might roll back."""
    with engine.caches.use(namespace) as view, engine.store.snapshot() as conn:
        view.bits.refresh(conn)
        return view.bits


def embed_pending(engine: Parts, namespace: str | None, *, rids: Sequence[int] | None = None,
                  limit: int | None = None, progress: Progress | None = None) -> int:
    """Compute and store vectors for memories that have none yet; returns how many.

    ``namespace`` None: every namespace of the file, oldest first. ``rids``: only these.
    Embedder failures are logged and leave the memories in the backlog (never raised: the
    memories themselves are already safe).
    """
    embedder = engine.embedder
    if embedder is None:
        return 0
    store = engine.store
    done = offset = 0
    batch = engine.config.embed.batch_size
    while limit is None or done < limit:
        want = batch if limit is None else min(batch, limit - done)
        if rids is not None:
            assert namespace is not None, "rids are a namespace's"
            todo = list(rids[offset:offset + want])
            offset += want
            if not todo:
                break
            with store.snapshot() as conn:
                rows = list(rows_in(conn, f"SELECT {_ROW} FROM nodes "
                                          "WHERE namespace = ? AND rid IN ({marks}) "
                                          "AND embedded = 0", todo, (namespace,)))
        elif namespace is None:
            rows = store.query(f"SELECT {_ROW} FROM nodes WHERE embedded = 0 "
                               "ORDER BY rid LIMIT ?", (want,))
        else:
            rows = store.query(
                f"SELECT {_ROW} FROM nodes WHERE namespace = ? AND embedded = 0 "
                "ORDER BY rid LIMIT ?", (namespace, want))
        if not rows:
            if rids is not None:
                continue  # these were embedded meanwhile; the next ones may not be
            break
        pieces = [sentence_pieces(str(r[2]), engine.config.embed.sentences) for r in rows]
        try:
            vectors = embedder.embed([r[2] for r in rows] + [p for ps in pieces for p in ps])
        except EmbedError as exc:
            log.warning("embed.failed", error=str(exc), pending=len(rows))
            break
        fresh: dict[str, list[Fresh]] = {}
        for (rid, ns, content, node_id, created, judged), vec in zip(
                rows, vectors[:len(rows)], strict=True):
            if not judged:
                fresh.setdefault(ns, []).append(Fresh(rid=rid, id=node_id, content=content,
                                                      created_at=created, vector=vec))
        bits = {ns: _refreshed_bits(engine, ns) for ns in fresh}
        model = vectormodel.Model(vectormodel.of(embedder).name, int(vectors.shape[1]))
        try:
            with store.transaction({str(r[1]) for r in rows}) as conn:  # each one's lock
                vectormodel.check_write(conn, model)  # the file's one embedder
                at = len(rows)
                for (rid, ns, *_), vec, mine in zip(rows, vectors[:len(rows)], pieces,
                                                    strict=True):
                    GraphWriter(conn, ns).write_vector(
                        rid, vec, vectors[at:at + len(mine)] if mine else None)
                    at += len(mine)
                mark_embedded(conn, [(r[1], r[0]) for r in rows])
                for ns, items in fresh.items():
                    judge_pending(conn, ns, items, engine.clock(), bits=bits[ns])
        except EmbedError as exc:  # the file moved to another embedder meanwhile
            log.warning("embed.refused", error=str(exc), pending=len(rows))
            break
        done += len(rows)
        if progress:
            progress(len(rows))
    return done
