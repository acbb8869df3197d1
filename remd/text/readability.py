"""Readability: does a synthesis read as a person would write it?

A REM synthesis must keep its members' details (:mod:`remd.text.details`) *and* read well:
"iT says VPN issue", "40 mg day", "Ride — it my bike to work", "also online" are what a
careless fusion writes. :func:`problems` lists what is wrong with a text written from some
members' texts (empty: it reads well):

- **broken casing**: a word cased as no member writes it, inside a sentence ("iT");
- **a pronoun standing for a phrase**: "it" right before a determiner or possessive ("it my
  bike", "it the office"): a subject cut out of the middle of a sentence;
- **a dropped rate**: a member's "40 mg a day" written as "40 mg day" (its unit kept, the
  "a"/"per" before its period lost);
- **an orphan**: a clause of one word, or one that ends on a preposition or conjunction
  ("also online", "booked for").

The offline and the LLM synthesisers are both held to it (:mod:`remd.sleep.consolidate`).
Pure functions; never raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from remd.text import words as tx

__all__ = ["problems"]

_PRONOUN_CUT = re.compile(r"\bit (?:my|our|your|his|her|their|the|a|an|this|that)\b",
                          re.IGNORECASE)
_RATE = re.compile(r"\b(\d+(?:[.,]\d+)?\s?[a-z%]+)\s+(a|an|per|each|every)\s+([a-z]+)\b",
                   re.IGNORECASE)
_ENDS_BADLY = tx.word_set("for to at in on with of and or but also from by the a an")
_CASE_FLIP = re.compile(r"\b[a-z]+[A-Z][A-Za-z]*\b")
_LOWER_START = re.compile(r"[.!?]\s+([a-z][a-z']*)\b")


def problems(text: str, members: Sequence[str]) -> list[str]:
    """What keeps ``text`` (written from ``members``) from reading as a person would write
    it; empty when nothing does."""
    out: list[str] = []
    source = " ".join(members)
    for m in _CASE_FLIP.finditer(text):
        if m.group(0) not in source:
            out.append(f"broken casing '{m.group(0)}'")
    for m in _LOWER_START.finditer(text):
        if not re.search(rf"(?:^|[.!?;:,]\s+){re.escape(m.group(1))}\b", source):
            out.append(f"a sentence that starts in lower case ('{m.group(1)}')")
    for m in _PRONOUN_CUT.finditer(text):
        if m.group(0).lower() not in source.lower():
            out.append(f"a cut subject ('{m.group(0)}')")
    low = " ".join(text.lower().split())
    for m in _RATE.finditer(source):
        amount, _, period = m.group(1).lower(), m.group(2).lower(), m.group(3).lower()
        if amount in low and f"{amount} {period}" in low and not re.search(
                rf"{re.escape(amount)}\s+(?:a|an|per|each|every)\s+{re.escape(period)}", low):
            out.append(f"a dropped rate ('{amount} {period}')")
    for clause in re.split(r"[;.!?\u2014]\s*", text):
        words = tx.words(clause)
        if not words:
            continue
        lone = len(words) == 1 or (words[0].lower() == "also" and len(words) == 2)
        if lone and not any(c.isdigit() for c in clause) and clause.strip()[:1].islower():
            out.append(f"an orphan word ('{clause.strip()}')")
        elif words[-1].lower() in _ENDS_BADLY:
            out.append(f"a clause that stops short ('{clause.strip()[-30:]}')")
    return list(dict.fromkeys(out))
