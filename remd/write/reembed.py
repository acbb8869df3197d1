"""Moving a file to another embedder (``remd reembed``).

:func:`begin` records the new embedder and
puts every memory of the file in the embedding backlog (one transaction; a call that finds the
move already begun resumes it). :func:`finish` works the backlog off in the embedder's batches
(:func:`remd.write.backlog.embed_pending`), each batch its own transaction: a process killed
halfway loses at most the batch in flight, and the next call goes on from there. The daemon's
ticks work the same backlog, so a move begun with ``--background`` completes there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from remd.index import vectormodel
from remd.index.vectormodel import Model
from remd.write.backlog import embed_pending
from remd.write.graph import GraphWriter

if TYPE_CHECKING:
    from remd.parts import Parts
    from remd.store.seam import Store


@dataclass(frozen=True)
class Reembedded:
    """What a ``reembed`` call did: the file's embedder before and after (name and
    dimension: 0 until its first vector says), whether this call began the move, how many
    memories it embedded and how many still wait (the daemon's ticks take those on)."""

    before: Model | None
    after: Model
    began: bool
    embedded: int
    remaining: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"from": asdict(self.before) if self.before else None,
                "to": asdict(self.after), "began": self.began, "embedded": self.embedded,
                "remaining": self.remaining, "seconds": round(self.seconds, 3)}


def begin(store: Store, target: Model) -> tuple[Model | None, bool]:
    """Begin moving the file to ``target`` unless it is moving there (or there) already;
    returns the embedder recorded before and whether the move began now. In one
    transaction: the record names ``target``, every namespace's vectors go and its memories
    join the embedding backlog. Nothing else changes: the memories, their tags and words
    stay, and inject finds them by those until their new vectors are written."""
    have = vectormodel.recorded(store)
    if have is not None and have.matches(target):
        return have, False
    with store.transaction() as conn:
        vectormodel.record(conn, target)
        for (ns,) in conn.execute("SELECT DISTINCT namespace FROM nodes").fetchall():
            GraphWriter(conn, str(ns)).drop_vectors()
    return have, True


def pending(store: Store) -> int:
    """Memories of the file waiting for their vector (every namespace)."""
    return sum(int(r[1]) for r in store.query(
        "SELECT namespace, count(*) FROM nodes WHERE embedded = 0 GROUP BY namespace"))


def finish(engine: Parts, progress: Callable[[int], None] | None = None) -> int:
    """Embed the file's whole backlog with the engine's embedder; returns how many."""
    return embed_pending(engine, None, progress=progress)


def report(store: Store, before: Model | None, began: bool, embedded: int,
           started: float) -> Reembedded:
    after = vectormodel.recorded(store)
    assert after is not None, "begin records the target"
    return Reembedded(before, after, began, embedded, pending(store),
                      time.monotonic() - started)
