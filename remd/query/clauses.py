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
from remd.text.clauses import Clauses, parse, render

__all__ = ["CONSIDERED", "SHARE", "fit_syntheses"]

CONSIDERED = 48  # best candidates whose syntheses are written by their clauses
SHARE = 0.5  # a clause within this share of the best clause's score is written too
_FALLBACK = 2  # clauses written when none answers the question


def fit_syntheses(conn: Connection, namespace: str, cands: MutableMapping[int, Any],
                  terms: dict[str, str], origins: Origins, count: Callable[[str], int],
                  most: int) -> int:
    """Write the best synthesis candidates by their clauses (see the module docstring);
    returns how many were."""
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
        chosen = _choose(conn, clauses, asked, origins.get(int(rid), {}), max(1, most))
        total = len(clauses.live())
        c = cands[int(rid)]
        c.text = render(clauses, chosen)
        c.tokens = count(c.text)
        c.part = f"{len(chosen)} of {total} clauses" + (
            f" ({len(clauses.clauses) - total} retired)" if total < len(clauses.clauses) else "")
        written += 1
    return written


def _choose(conn: Connection, clauses: Clauses, asked: set[str], hits: dict[int, float],
            most: int) -> list[int]:
    """Indices of the clauses to write: those that answer (member hits, the question's words),
    best first within :data:`SHARE`, at most ``most``, in the synthesis's order."""
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
    return sorted(ranked[:most])
