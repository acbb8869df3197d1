"""What inject returns: a pack of memories within a token budget, and why each is in it.

``Pack.text`` is exactly what ``tokens_used`` counts (the items joined by the separator);
``to_dict`` is the CLI's and HTTP API's JSON object. :func:`explain` renders the score parts and
activation path of each item for people.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from remd.models import NodeKind


@dataclass(frozen=True, kw_only=True)
class ScoreParts:
    """Why an item scored what it did."""

    relevance: float  # fused evidence (weighted reciprocal ranks), 1.0 = top of every source
    graph: float  # tag-graph activation that reached the memory (0: not reached)
    vector: float  # cosine similarity to the query (0: not among the vector neighbours)
    lexical: float  # -bm25 of its FTS5 match (0: no lexical hit)
    recency: float  # multiplier applied
    importance: float  # multiplier applied
    diversity: float  # penalty subtracted (share of its tags already in the pack)
    context: float = 0.0  # score added for being saved next to a strong candidate
    date: float = 1.0  # multiplier for being saved in the period the query names
    fact: float = 1.0  # multiplier for being the live fact the question asks for
    speaker: float = 1.0  # multiplier for being said (chat header) by someone the query names
    subject: float = 0.0  # among the live memories of the attribute the question asks about


@dataclass(frozen=True, kw_only=True)
class PackItem:
    """One memory of a pack: its saved text verbatim, its exact token count and its story."""

    id: str
    content: str
    tokens: int
    score: float
    tags: tuple[str, ...]
    kind: NodeKind
    created_at: float
    parts: ScoreParts
    path: tuple[str, ...] = ()  # seed tag -> ... -> tag that activated it (empty: not via tags)
    sources: tuple[str, ...] = ()  # which of graph / vector / lexical found it
    outdated_by: str | None = None  # a newer memory in the pack probably updates it
    date: str = ""  # ISO day it was said; "FIRST/LAST" for a synthesis (remd.query.render)
    part: str = ""  # of a synthesis written by its clauses: "2 of 6 clauses" (remd.query.clauses)


@dataclass(frozen=True, kw_only=True)
class Seed:
    tag: str
    weight: float
    origin: str  # "query" (extracted from the query) or "vector" (tags of a near memory)


@dataclass(frozen=True, kw_only=True)
class Pack:
    """What inject returns. ``text`` is exactly what ``tokens_used`` counts."""

    pack_id: str
    namespace: str
    query: str
    budget: int
    tokens_used: int
    items: tuple[PackItem, ...]
    separator: str = "\n"
    seeds: tuple[Seed, ...] = ()
    tags_activated: int = 0
    memories_touched: int = 0
    fill: bool = False  # packed to the budget (True) or stopped at the relevance floor
    stop: str = ""  # why the pack holds what it holds: remd.query.packer.Stop.reason
    stop_detail: str = ""
    recorded: bool = True  # False: the file is read-only, so no pack row (feedback: NotFound)

    @property
    def text(self) -> str:
        return self.separator.join(item.content for item in self.items)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's ``--json`` object (exactly these keys: scripts rely on them; ``date``
        was added in the fourth round)."""
        return {
            "pack_id": self.pack_id, "budget": self.budget, "tokens_used": self.tokens_used,
            "items": [{"id": i.id, "content": i.content, "tokens": i.tokens,
                       "score": round(i.score, 6), "tags": list(i.tags), "date": i.date}
                      for i in self.items],
        }


def floor_score(item: PackItem) -> float:
    """What the relevance floor compared (:func:`remd.query.packer.relevance_floor`): the score
    before the diversity penalty, without the speaker prior."""
    return (item.score + item.parts.diversity) / item.parts.speaker


def explain(pack: Pack) -> Iterable[str]:
    """Human-readable lines: one block per item with its score parts and activation path."""
    yield (f"pack {pack.pack_id}: {len(pack.items)} item(s), {pack.tokens_used}/{pack.budget} "
           f"tokens; {pack.tags_activated} tags activated, {pack.memories_touched} memories "
           f"touched")
    floored = pack.stop in ("floor", "gap") and bool(pack.items)
    if pack.stop:
        yield f"stopped ({pack.stop}{', fill' if pack.fill else ''}): {pack.stop_detail}"
    if floored:  # the floor compares these, so each kept item shows its own
        weakest = min(pack.items, key=floor_score)
        yield (f"floor score = (score + diversity) / speaker; the weakest kept: {weakest.id} "
               f"at {floor_score(weakest):.4f}")
    if pack.seeds:
        yield "seeds: " + ", ".join(f"{s.tag} ({s.origin} {s.weight:.2f})" for s in pack.seeds)
    for rank, item in enumerate(pack.items, 1):
        p = item.parts
        yield (f"{rank}. {item.id} score {item.score:.4f} = relevance {p.relevance:.4f} "
               f"x recency {p.recency:.3f} x importance {p.importance:.3f} x date {p.date:g} "
               f"+ context {p.context:.4f} - diversity {p.diversity:.4f}"
               + (f" (fact x{p.fact:g})" if p.fact != 1.0 else "")
               + (f" (speaker x{p.speaker:g})" if p.speaker != 1.0 else "")
               + (f"; floor score {floor_score(item):.4f}" if floored else ""))
        yield (f"   via {'+'.join(item.sources) or '-'}: graph {p.graph:.3f}, vector "
               f"{p.vector:.3f}, lexical {p.lexical:.3f}"
               + (f", subject {p.subject:g}" if p.subject else "") + "; path "
               f"{' -> '.join(item.path) if item.path else '-'}; {item.tokens} tokens")
        if item.part:
            yield (f"   a synthesis, written as its subject and {item.part} (those that "
                   "answer the query)")
        if item.outdated_by:
            yield (f"   probably updated by {item.outdated_by} (newer; see `remd get`): "
                   "ranked after it, left out of a pack that stops at the relevance floor")
        flat = " ".join(item.content.split())
        yield "   " + (flat if len(flat) <= 100 else flat[:99] + "…")
