"""Packing: which scored candidates go into a pack, in what order, and where the pack stops.

Three steps, each over the candidates inject scored (:mod:`remd.query.inject`):

1. :func:`greedy` fills the budget: best score first, minus a diversity penalty (the share of
   an item's tags already carried by chosen items, times ``diversity_penalty``). An item that
   does not fit is skipped, never truncated.
2. :func:`relevance_floor` trims that pack to what the query's own candidates show to matter,
   unless the caller asked for ``fill``. Three rules, each configurable (``[inject]``):

   - **unrelated** (``floor_similarity``): when no candidate's text is at least this similar
     to the query (cosine of the packaged embedder), none of the best lexical hits holds half
     of the query's words, and no live fact of the key the question asks for exists, the
     question is about nothing stored: the pack is empty.
   - **spread** (``floor_spread``): an item must score at least the weakest score of the
     filled pack plus this share of the way to the best. A pack whose scores are flat keeps
     most of its items; one with a clear head keeps the head.
   - **gap** (``floor_gap``): going down the scores, the pack stops before the first score
     that falls below this share of the one above it (a knee in the score curve).

3. :func:`fit` counts the joined text exactly and drops the weakest items until it fits.

Each step is bounded by the pack's size (``pool`` candidates at most), never the namespace's.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from remd.config import InjectConfig
from remd.text.tokens import TokenCounter

_WEAK_BAND = 0.03  # cosine: as like the query as the best one


class Scored(Protocol):
    rid: int
    tokens: int
    base: float
    speaker: float  # the speaker multiplier in base (a prior: the floor leaves it out)
    outdated_by: int | None  # a newer candidate probably updates it (remd.query.newest)
    vector: float  # its cosine to the query (0: not a vector hit)
    fact: float  # the multiplier for being a live fact of the key the question asks for
    subject: float  # among the live memories of the attribute the question asks about


S = TypeVar("S", bound=Scored)
Picked = list[tuple[S, float, float]]  # (candidate, final score, diversity penalty)


@dataclass(frozen=True)
class Stop:
    """Why a pack holds what it holds: ``reason`` is one word, ``detail`` a sentence."""

    reason: str  # "budget", "candidates", "floor", "gap", "unrelated", "empty"
    detail: str


def greedy(cands: Sequence[S], tags_of: Callable[[list[int]], dict[int, frozenset[int]]],
           budget: int, sep_tokens: int, cfg: InjectConfig) -> tuple[Picked[S], bool]:
    """Lazy greedy: (candidate, final score, diversity penalty) in pack order, and whether a
    candidate that scored was left out for want of room.

    The penalty of an item only grows as items are chosen, so a popped item whose refreshed
    score still beats the next stored one is the true best (the CELF trick).
    """
    ranked = sorted((c for c in cands if c.base > 0), key=lambda c: (-c.base, c.rid))
    too_big = any(c.tokens > budget for c in ranked)
    ranked = [c for c in ranked if c.tokens <= budget]
    # The penalty takes at most diversity_penalty off a score, so items far down the ranking
    # are never chosen: consider what could fill the budget three times over.
    pool: list[S] = []
    room = 3 * budget
    for c in ranked[: cfg.pool]:
        if room <= 0 and len(pool) >= 32:
            break
        pool.append(c)
        room -= c.tokens
    left_out = too_big or len(pool) < len(ranked)
    tags = tags_of([c.rid for c in pool])
    penalty_w = cfg.diversity_penalty
    chosen_tags: set[int] = set()
    heap = [(-c.base, c.rid, 0, c) for c in pool]
    heapq.heapify(heap)
    out: Picked[S] = []
    used = 0
    stamp = 0  # chosen-count when an entry's score was last refreshed
    # The same note saved on five days ("Worked from home today, mostly emails.") is one
    # item of a pack, not five: an item with the token count and the tags of one chosen
    # already is taken for a copy (the texts are read after packing; remd.query.inject drops an
    # exact copy that gets past this).
    seen: set[tuple[int, frozenset[int]]] = set()
    while heap:
        neg, rid, at, c = heapq.heappop(heap)
        if tags[rid] and (c.tokens, tags[rid]) in seen:
            continue
        cost = c.tokens + (sep_tokens if out else 0)
        if used + cost > budget:
            left_out = True
            continue  # skipped, never truncated
        if at != stamp:
            mine = tags[rid]
            overlap = len(mine & chosen_tags) / len(mine) if mine else 0.0
            score = c.base * (1.0 - penalty_w * overlap)
            heapq.heappush(heap, (-score, rid, stamp, c))
            continue
        score = -neg
        out.append((c, score, c.base - score))
        used += cost
        chosen_tags |= tags[rid]
        seen.add((c.tokens, tags[rid]))
        stamp += 1
    return out, left_out


def relevance_floor(picked: Picked[S], cfg: InjectConfig, unrelated: str | None = None
                    ) -> tuple[Picked[S], Stop | None]:
    """The items of a filled pack that clear the floor (pack order kept), and why the rest
    went (None: nothing was cut).

    ``unrelated`` says why the query is about nothing stored (:func:`remd.query.cues.unrelated`);
    then the pack is empty.
    """
    if not picked:
        return picked, None
    if unrelated is not None:
        return [], Stop("unrelated", unrelated)
    newer = {c.rid for c, _, _ in picked}
    outdated = [p for p in picked if p[0].outdated_by in newer]
    if outdated and len(outdated) < len(picked):
        kept, cut = relevance_floor([p for p in picked if p[0].outdated_by not in newer], cfg)
        return kept, cut or Stop("outdated", f"{len(outdated)} item(s) left out: a newer "
                                              "memory in the pack probably updates each")
    best_cos = max(c.vector for c, _, _ in picked)
    if cfg.floor_weak > 0 and best_cos < cfg.floor_weak and len(picked) > 1:
        # The best item, and another only if it is about as like the query (two answers), and
        # every live fact of the key the question asks for and memory of its attribute.
        kept = picked[:1] + [p for p in picked[1:] if p[0].vector >= best_cos - _WEAK_BAND][:1]
        kept += [p for p in picked if (p[0].fact > 1.0 or p[0].subject > 0) and p not in kept]
        kept.sort(key=picked.index)
        return kept, Stop("weak", f"no memory is much like the query (the best cosine of "
                                  f"the filled pack {best_cos:.2f} < floor_weak "
                                  f"{cfg.floor_weak:g}): "
                                  + ("only the best item kept" if len(kept) == 1 else
                                     "the best item kept, and what else answers it"))
    # The speaker prior orders the pack but makes nothing relevant: the floor reads the
    # scores without it (a question naming Caroline lifts every turn she said).
    # These "floor scores" are what remd.query.pack.explain shows of each kept item.
    bases = sorted((c.base / c.speaker for c, _, _ in picked), reverse=True)
    best, edge = bases[0], bases[-1]
    floor = edge + cfg.floor_spread * (best - edge)
    gap: tuple[float, float] | None = None
    for above, below in zip(bases, bases[1:], strict=False):
        if below < floor:
            break
        if below < cfg.floor_gap * above:
            floor, gap = (above + below) / 2, (above, below)
            break
    kept = [p for p in picked if p[0].base / p[0].speaker >= floor]
    if len(kept) == len(picked):
        return kept, None
    # Every number names an item: a kept one the explanation shows, or one left out.
    under = [b for b in bases if b < floor]
    if gap is not None:
        return kept, Stop("gap", f"{len(under)} item(s) left out: the floor scores fall from "
                                 f"{gap[0]:.4f} to {gap[1]:.4f} (below floor_gap "
                                 f"{cfg.floor_gap:g} of the one above), so the floor is "
                                 f"{floor:.4f}")
    return kept, Stop("floor", f"{len(under)} item(s) under the floor {floor:.4f} left out, the "
                               f"best of them at {under[0]:.4f} (floor_spread "
                               f"{cfg.floor_spread:g} of the way from the weakest item of the "
                               f"filled pack, {edge:.4f}, to its best, {best:.4f})")


def distinct(picked: Picked[S], contents: dict[int, str]) -> Picked[S]:
    """The picked items without exact copies of an earlier one's text (case and spacing
    aside)."""
    seen: set[str] = set()
    out: Picked[S] = []
    for p in picked:
        key = " ".join(contents.get(p[0].rid, "").casefold().split())
        if key in seen:
            continue
        seen.add(key)
        out.append(p)
    return out


def fit(picked: Picked[S], contents: dict[int, str], budget: int, counter: TokenCounter,
        separator: str, exact: bool) -> tuple[Picked[S], int]:
    """Count the joined text exactly; drop the weakest items until it fits the budget.

    The packer adds item counts plus separator counts; BPE over the joined text usually
    gives the same or fewer tokens, but that is not guaranteed, so the exact count decides.
    With the items' saved counts in this encoding (``exact``), the count of the join is their
    sum corrected at each seam (:meth:`remd.text.tokens.TokenCounter.count_joined`), not a second
    pass of the tokenizer over the whole pack.
    """
    picked = [p for p in picked if p[0].rid in contents]
    while picked:
        texts = [contents[c.rid] for c, _, _ in picked]
        used = (counter.count_joined(texts, [c.tokens for c, _, _ in picked], separator)
                if exact else counter.count(separator.join(texts)))
        if used <= budget:
            return picked, used
        weakest = min(range(len(picked)), key=lambda i: picked[i][1])
        del picked[weakest]
    return [], 0
