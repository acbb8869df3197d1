"""What a question asks: a date, the past, or what is true now; and which of its words a
statement shares.

:func:`asks_when` picks the questions whose pack is dated by default (:mod:`remd.query.inject`);
:func:`asks_history` the questions about the past, for which an older statement is as good an
answer as a newer one (:mod:`remd.query.newest` keeps their order); :func:`asked_words` the
stems a statement shares with the question, names included (the stemmer of
:mod:`remd.text.reading`). Pure functions, from the question's words alone.
"""

from __future__ import annotations

import re
from functools import lru_cache

from remd.text import words as tx
from remd.text.reading import stem

__all__ = ["asked_words", "asks_history", "asks_when"]

# The question asks about the past, a span or a count of times: every statement may answer.
_HISTORY = re.compile(
    r"\b(?:used to|use to|before|previous(?:ly)?|originally|at first|first|ever|when did|"
    r"when was|when were|how long|since when|history|last time|back when|in the past|"
    r"former(?:ly)?|old|earlier|how many times|how often|did i|did we|was i|were we|had i)\b")
_WHEN = re.compile(
    r"\b(?:when|what (?:day|date|year|month)|which (?:day|date|year|month)|how long ago|"
    r"since when|how long since|how long have|how long has)\b")


def asks_when(question: str) -> bool:
    """Does ``question`` ask for a date ("when did I ...?", "what day is ...?")?"""
    return bool(_WHEN.search(question.lower().replace("\u2019", "'")))


def asks_history(question: str) -> bool:
    """Does ``question`` ask about the past ("what did I use to drive?", "when did I ...?")?"""
    return bool(_HISTORY.search(question.lower().replace("\u2019", "'")))


def asked_words(question: str, statement: str) -> frozenset[str]:
    """The content stems ``statement`` shares with ``question``, names included ("Badminton I
    play at Sus Road" and "where do I play badminton?" share "badminton" and "play")."""
    return _stems(question) & _stems(statement)


@lru_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    return frozenset(s for s in (stem(w) for w in tx.content_words(text.lower()))
                     if len(s) >= 3 and not any(c.isdigit() for c in s))
