"""Answer kinds: a question that asks for an amount, a time or a person wants a memory that
gives one.

"How much is my rent?" is answered by "520 euros a month starting in March", not by "we rent a
little room above the music shop", however many words the second shares with it; "what time is
standup?" by a memory with a time in it; "who's my doctor?" by one that names someone. Of the
best :data:`READ` candidates (their texts read once), those that give the kind of value the
question asks for score ``1 + weight`` times more. Turns of a transcript are left as they are
(each carries its session's date, and what a turn says is the conversation's, not a value).
Bounded by :data:`READ`, never the namespace.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import MutableMapping
from typing import Any

from remd.store.seam import Connection
from remd.text.updates import read

__all__ = ["READ", "asked_kinds", "prefer_answers"]

READ = 16  # best candidates whose texts are read

_AMOUNT = re.compile(r"\b(?:how (?:much|many|often|long|far|old)|what(?:'s| is)? (?:the )?(?:dose|"
                     r"price|cost|rate|salary|rent|fee)|what (?:do|does|did) \w+ (?:charge|cost|"
                     r"pay|earn))\b", re.IGNORECASE)
_TIME = re.compile(r"\b(?:what time|when(?:'s| is| are| do| does| did)?|what day|which days?|"
                   r"what night|which night|how early|how late)\b", re.IGNORECASE)
_WHO = re.compile(r"\b(?:who(?:'s| is| are| does| do)?|whom|whose)\b", re.IGNORECASE)
_WHERE = re.compile(r"\bwhere(?:'s| is| are| do| does| did)?\b", re.IGNORECASE)


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of value a question asks for (:attr:`remd.text.reading.Reading.kinds`):
    an amount ("number", "money"), a time ("time", "date"), a person or place ("name")."""
    kinds: set[str] = set()
    if _AMOUNT.search(question):
        kinds |= {"number", "money"}
    if _TIME.search(question):
        kinds |= {"time", "date"}
    if _WHO.search(question) or _WHERE.search(question):
        kinds.add("name")
    return frozenset(kinds)


def prefer_answers(conn: Connection, namespace: str, cands: MutableMapping[int, Any],
                   question: str, weight: float) -> int:
    """Score the best candidates that give the kind of value ``question`` asks for ``1 +
    weight`` times more (see the module docstring); returns how many."""
    kinds = asked_kinds(question)
    if weight <= 0 or not kinds or not cands:
        return 0
    best = heapq.nlargest(READ, cands.values(), key=lambda c: (c.base, -c.rid))
    rids = [c.rid for c in best]
    marks = ",".join("?" * len(rids))
    texts: Any = conn.execute(f"SELECT rid, content FROM nodes WHERE namespace = ? AND rid IN "
                              f"({marks})", (namespace, *rids)).fetchall()
    boosted = 0
    for rid, content in texts:
        reading = read(str(content))
        if reading.chat or not reading.kinds & kinds:
            continue
        c = cands[int(rid)]
        c.base *= 1.0 + weight
        c.answer = 1.0 + weight
        boosted += 1
    return boosted
