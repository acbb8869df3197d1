"""Clauses: a synthesis in a pack is its subject and the clauses the question needs.

A synthesis stores its clauses, each with the members it came from and their day
(:mod:`remd.text.clauses`). For the synthesis candidates among the best :data:`CONSIDERED` of
a query, each live clause is scored by

- the hits on its members: a vector or lexical hit on a fragment a REM run folded counts for
  its synthesis (:mod:`remd.query.standins`) and says which clause answers;
- the question's words in it (the full-text index's stems).

The clauses within :data:`SHARE` of the best, at most ``clause_max``, are written after the
subject in the synthesis's order; a clause a later update retired is never written. With no
clause answering (a synthesis reached by its tags alone), its first clauses are. The
candidate's token count becomes the written text's, so a folded fragment's question costs
about what the fragment cost. Bounded by :data:`CONSIDERED` syntheses.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, MutableMapping
from typing import Any

from remd.index import lexical
from remd.models import NodeKind
from remd.query.standins import Origins
from remd.store.seam import Connection
from remd.text.clauses import Clauses, few_days, parse, render
from remd.text.words import find_dates

__all__ = ["CONSIDERED", "SHARE", "fit_syntheses"]

CONSIDERED = 48  # best candidates whose syntheses are written by their clauses
SHARE = 0.5  # a clause within this share of the best clause's score is written too
ROOM = 0.5  # of a pack's budget, what a synthesis's clauses may take (its best clause always)
_FALLBACK = 2  # clauses written when none answers the question
_HIT_DAYS = 8  # members whose days a cut list of days may keep, best hit first


def fit_syntheses(conn: Connection, namespace: str, cands: MutableMapping[int, Any],
                  terms: dict[str, str], origins: Origins, count: Callable[[str], int],
                  most: int, budget: int | None = None) -> int:
    """Write the best synthesis candidates by their clauses (see the module docstring);
    returns how many were. One still longer than ``budget`` has its long lists of days cut
    to the days of the members the question hit and the latest (:func:`few_days`)."""
    best = heapq.nlargest(CONSIDERED, (c for c in cands.values()
                                       if c.kind is NodeKind.SYNTHESIS),
                          key=lambda c: (c.base, -c.rid))
    if not best:
        return 0
    marks = ",".join("?" * len(best))
    rows: Any = conn.execute(f"SELECT rid, clauses FROM nodes WHERE namespace = ? AND rid IN "
                             f"({marks}) AND clauses IS NOT NULL",
                             (namespace, *(c.rid for c in best))).fetchall()
    asked = set(terms)
    written = 0
    for rid, raw in rows:
        clauses = parse(raw)
        if clauses is None or not clauses.clauses:
            continue
        ranked = _choose(conn, clauses, asked, origins.get(int(rid), {}), max(1, most))
        total = len(clauses.live())
        c = cands[int(rid)]
        chosen = ranked
        c.text = render(clauses, _said_of(clauses, chosen))
        c.tokens = count(c.text)
        if budget is not None and c.tokens > budget * ROOM:
            # In a small pack a synthesis leaves room for others, as the fragments it folded
            # did: its best clauses in half the budget; and in the budget, its long lists of
            # days cut to the days of the members the question hit (and the latest).
            while c.tokens > budget * ROOM and len(chosen) > 1:
                chosen = chosen[:-1]
                c.text = render(clauses, _said_of(clauses, chosen))
                c.tokens = count(c.text)
            if c.tokens > budget:
                days = _days(conn, namespace, origins.get(int(rid), {}))
                c.text, c.tokens = _cut(clauses, chosen, days, budget, count)
        c.part = f"{len(chosen)} of {total} clauses" + (
            f" ({len(clauses.clauses) - total} retired)" if total < len(clauses.clauses) else "")
        written += 1
    return written


_PRONOUNS = frozenset(("it", "its", "they", "their", "them", "he", "his", "she", "her", "this",
                       "that", "these", "those"))


def _said_of(clauses: Clauses, chosen: list[int]) -> list[int]:
    """The chosen clauses, with the first sentence of a merge when one of them only says
    "it" ("It uses Redis." is about what the first sentence names)."""
    if clauses.joiner == "; " or 0 in chosen or not clauses.clauses:
        return chosen
    for i in chosen:
        first = clauses.clauses[i].text.split()[:1]
        if first and first[0].casefold() in _PRONOUNS:
            return [0, *chosen]
    return chosen


def _cut(clauses: Clauses, chosen: list[int], days: list[str], limit: float,
         count: Callable[[str], int]) -> tuple[str, int]:
    """The chosen clauses with their lists of days cut (:func:`few_days`) to the most hit
    members' days that fit ``limit`` tokens (else the latest day only); and its count."""
    whole = render(clauses, _said_of(clauses, chosen))
    text, n = whole, count(whole)
    for k in (len(days), 4, 2, 1, 0):
        if n <= limit:
            break
        text = few_days(whole, set(days[:k]))
        n = count(text)
    return text, n


def _days(conn: Connection, namespace: str, hits: dict[int, float]) -> list[str]:
    """The days (ISO) the best hit members write, best hit first."""
    top = heapq.nlargest(_HIT_DAYS, hits, key=lambda r: hits[r])
    if not top:
        return []
    rows: Any = conn.execute(f"SELECT rid, content FROM nodes WHERE namespace = ? AND rid IN "
                             f"({','.join('?' * len(top))})", (namespace, *top)).fetchall()
    content = {int(r): str(t) for r, t in rows}
    return list(dict.fromkeys(d.key for r in top for d in find_dates(content.get(r, ""))
                              if d.day_date is not None))


def _choose(conn: Connection, clauses: Clauses, asked: set[str], hits: dict[int, float],
            most: int) -> list[int]:
    """Indices of the clauses to write: those that answer (member hits, the question's words),
    within :data:`SHARE` of the best, at most ``most``, best first (:func:`render` writes
    them in the synthesis's order)."""
    top_hit = max(hits.values(), default=0.0)
    scores: dict[int, float] = {}
    for i, clause in enumerate(clauses.clauses):
        if not clause.live:
            continue
        hit = max((hits.get(r, 0.0) for r in clause.rids), default=0.0)
        words = lexical.stems(conn, clause.text) if asked else set()
        scores[i] = (hit / top_hit if top_hit > 0 else 0.0) + (
            len(words & asked) / len(asked) if asked else 0.0)
    if not scores:
        return []
    best = max(scores.values())
    if best <= 0:
        return sorted(scores)[:_FALLBACK]
    ranked = sorted((i for i, s in scores.items() if s >= SHARE * best and s > 0),
                    key=lambda i: -scores[i])
    return ranked[:most]
