"""Budgeted extractive distillation: the offline synthesiser's dense mode.

A REM synthesis stands in the pack for the fragments it folded; if it is as long as they are
together, folding saves nodes but no tokens, and a 256-token pack that held five turns holds one
synthesis. An LLM synthesiser distils; offline, :func:`distil` extracts: it keeps the sentences
that carry the most information per token until the synthesis reaches ``density`` of the
members' length.

Information is coverage of *concepts*: the tags the write path would give a sentence (lemmatised
content words, entities; remd.text.tagging), plus its names, numbers and dates (weighted double). A
sentence is worth the concepts it adds that the synthesis does not already carry, so a second
"That painting is amazing!" adds nothing, and greetings and thanks ("Thanks, Caroline!") add
only a name the speaker line already shows. Greedy by gain per token (the standard budgeted
maximum-coverage approximation), then put back in the order the fragments were saved, each under
its own header ("[1:56 pm on 8 May, 2023] Melanie:" style prefixes are kept with it).

What is dropped is still there: the fragments are soft-deprecated, never deleted, their words
and vectors still find the synthesis (inject's stand-ins), and ``remd history`` / rollback
show them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from remd.text import words as tx
from remd.text.tagging import extract_tags

_MIN_BUDGET = 32  # tokens: the smallest synthesis worth writing
_NAME_WEIGHT = 2.0  # names, numbers and dates count double
_OVERHEAD = 3.0  # tokens charged per sentence: "Hey Mel!" must not win on its rate alone
_MIN_GAIN = 2.0  # a turn's best sentence must say this much to be kept for its own sake
# Words of talk, not of content: what conversation turns wrap around what they say.
_SOCIAL_WORDS = """
hey hi hello bye goodbye thanks thank thx wow awesome great cool amazing glad sorry yeah yes
yep no nope okay ok sure lol haha congrats congratulations good nice fun totally definitely
really super wonderful fantastic incredible lovely sweet happy appreciate welcome true
absolutely exactly agree oh ah aww omg hug hugs cheer cheers care
"""
_SOCIAL = frozenset(_SOCIAL_WORDS.split())


@dataclass
class _Unit:
    fragment: int
    order: int
    text: str
    concepts: dict[str, float]
    cost: float


def tokens(text: str) -> float:
    """A cheap token estimate (about four characters per token of English)."""
    return max(1.0, len(text) / 4)


def concepts(text: str) -> dict[str, float]:
    """What a sentence says, as weighted concepts (see the module docstring)."""
    out = {tag: 1.0 for tag, _ in extract_tags(text, max_tags=12, min_tags=0)
           if "-" not in tag and tag not in _SOCIAL}
    for name in [*tx.names(text), *tx.numbers(text)]:
        words = [w for w in name.casefold().split()
                 if w not in _SOCIAL and w not in tx.STOP_WORDS]
        if words:  # "Hey Mel" is Mel; "How", "That's" and "I'm" are no one
            out[" ".join(words)] = _NAME_WEIGHT
    for d in tx.find_dates(text):
        out[d.surface.casefold()] = _NAME_WEIGHT
    return out


def _new(concept: str, covered: set[str]) -> bool:
    """Not said yet; a short form of a name already shown ("Mel" for "Melanie") is not new."""
    if concept in covered:
        return False
    return not (len(concept) >= 3 and concept.isalpha()
                and any(c.startswith(concept) for c in covered))


def distil(contents: Sequence[str], created_at: Sequence[float], density: float) -> str:
    """The synthesis text of fragments (oldest first; their texts and POSIX save times) in at
    most ``density`` of their length (``_MIN_BUDGET`` tokens at least; the single best sentence
    always)."""
    heads: list[tuple[str, str]] = []
    units: list[_Unit] = []
    covered: set[str] = set()
    for fi, content in enumerate(contents):
        stamp, speaker, body = tx.split_header(content)
        heads.append((stamp, speaker))
        covered |= set(concepts(f"{stamp} {speaker}"))  # shown with any sentence of it anyway
        for si, text in enumerate(tx.sentences(body)):
            units.append(_Unit(fi, si, text, concepts(text), tokens(text) + _OVERHEAD))
    first, last = (datetime.fromtimestamp(t, UTC).date().isoformat()
                   for t in (created_at[0], created_at[-1]))
    span = f"{first} to {last}:" if first != last else f"{first}:"
    budget = max(_MIN_BUDGET, math.ceil(density * sum(tokens(c) for c in contents)))
    used = tokens(span)
    shown: set[int] = set()
    stamps: set[str] = set()
    chosen: list[_Unit] = []
    def fits(unit: _Unit) -> float | None:
        cost = unit.cost
        if unit.fragment not in shown:
            stamp, speaker = heads[unit.fragment]
            cost += tokens(speaker) + (0.0 if stamp in stamps else tokens(stamp))
        return cost if not chosen or used + cost <= budget else None

    def take(unit: _Unit, cost: float) -> None:
        nonlocal used
        chosen.append(unit)
        units.remove(unit)
        covered.update(unit.concepts)
        shown.add(unit.fragment)
        stamps.add(heads[unit.fragment][0])
        used += cost

    # First each fragment's own best sentence (what that turn said), most informative
    # fragments first; then whatever adds most per token.
    firsts: dict[int, tuple[float, _Unit]] = {}
    for unit in units:
        gain = sum(w for c, w in unit.concepts.items() if _new(c, covered))
        if gain >= _MIN_GAIN and gain > firsts.get(unit.fragment, (0.0, unit))[0]:
            firsts[unit.fragment] = (gain, unit)
    for _gain, unit in sorted(firsts.values(), key=lambda g: (-g[0], g[1].fragment)):
        cost = fits(unit)
        if cost is not None and any(_new(c, covered) for c in unit.concepts):
            take(unit, cost)
    while True:
        best, best_rate, best_cost = None, 0.0, 0.0
        for unit in units:
            gain = sum(w for c, w in unit.concepts.items() if _new(c, covered))
            if gain <= 0:
                continue
            cost = unit.cost
            if unit.fragment not in shown:
                stamp, speaker = heads[unit.fragment]
                cost += tokens(speaker) + (0.0 if stamp in stamps else tokens(stamp))
            if chosen and used + cost > budget:
                continue
            if gain / cost > best_rate:
                best, best_rate, best_cost = unit, gain / cost, cost
        if best is None:
            break
        take(best, best_cost)
    if not chosen:  # nothing says anything new (all greetings): the first sentence stands in
        chosen = units[:1]
    if not chosen:  # no sentence at all (headers only): the fragments as they are
        return " ".join([span, *(c.strip() for c in contents)])
    parts = [span]
    last_stamp = ""
    for fi in sorted({u.fragment for u in chosen}):
        stamp, speaker = heads[fi]
        sentences = [u.text for u in sorted(chosen, key=lambda u: u.order) if u.fragment == fi]
        body = " ".join(t if t[-1] in ".!?" else t + "." for t in sentences)
        # A stamp shared with the fragment before (turns of one session) is written once.
        head = " ".join(p for p in (stamp if stamp != last_stamp else "", speaker) if p)
        parts.append(f"{head} {body}".strip())
        last_stamp = stamp or last_stamp
    return " ".join(parts)
