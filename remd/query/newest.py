"""Newest first: inject's rule for the memories that a newer live one probably updates.

Update detection (:mod:`remd.write.supersede`) supersedes an older memory when it is sure. When it
is
not, both stay live and a CONTRADICTS edge joins them (so does a ``[[memory:id]] contradicts``
link); and two memories may say different things about one subject without anything joining
them yet. At inject, two rules rank the newer one first:

- **an edge**: when the older one of a contradicting pair is among the best :data:`CHECKED`
  candidates and the newer one is a candidate that scores at least :data:`ALIKE` of it;
- **the question**: among the best :data:`ASKED` candidates that score at least
  :data:`ALIKE` of the best, a pair that :func:`remd.text.updates.judge` finds to be an update,
  knowing that both answer the question (their texts and their vectors' cosine).

The newer one then scores at least as high as the older one, which ranks right after it and is
marked outdated: a pack that stops at the relevance floor leaves it out (:mod:`remd.query.packer`),
a filled pack keeps it after its newer version.

A third rule only orders: **one topic, newer first**. Where no rule read a change, two of the
best candidates that say much the same about the question (their vectors at least
:data:`TOPIC_ALIKE` alike) rank newer first and both stay in the pack, unless the question asks
about the past (:func:`remd.text.questions.asks_history`). A small reader answers from the first
line that fits, and the newer line is the likelier answer: measured on every everyday set,
"current value first" rose on each and nothing left any pack (docs/evaluation.md).

Three reads (edges, then texts and vectors of a handful of candidates, twice): bounded by the
pack, never the namespace.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol

from remd.index.vectors import stored
from remd.models import NodeKind
from remd.store.seam import Connection
from remd.text import words as tx
from remd.text.questions import asked_words, asks_history
from remd.text.updates import UNALIKE, judge, one_attribute, read

CHECKED = 48  # best candidates whose edges to newer memories are looked up
ASKED = 6  # best candidates compared with each other for the question
TOPIC_ALIKE = 0.5  # cosine: two statements of one topic (the newer ranks first, both kept)
TOPIC_BAND = 0.05  # ...when the newer is about as like the question (cosine, within this)
ALIKE = 0.5  # both must score at least this share of the better one (of the best: ASKED)
_AFTER = 0.999  # an outdated memory's score, as a share of its newer version's


Load = Callable[[list[int]], dict[int, Any]]  # rids -> loaded, scored candidates


class Dated(Protocol):
    rid: int
    base: float
    created_at: float
    outdated_by: int | None


def prefer_newest(conn: Connection, namespace: str, cands: MutableMapping[int, Any],
                  query: str = "", load: Load | None = None) -> int:
    """Rank each candidate that a newer candidate probably updates right after it (see the
    module docstring); returns how many were marked outdated. ``load`` makes candidates of
    live memories the caller had not reached (a newer version the question's words missed)."""
    if not cands:
        return 0
    best = heapq.nlargest(CHECKED, cands.values(), key=lambda c: (c.base, -c.rid))
    pairs = _contradicted(conn, namespace, cands, [c.rid for c in best], load)
    pairs += _asked(conn, namespace, cands, best[:ASKED], query)
    marked = 0
    for old, new in sorted(pairs, key=lambda p: -cands[p[0]].base):
        older, newer = cands[old], cands[new]
        if older.outdated_by is not None or newer.outdated_by is not None:
            continue
        newer.base = max(newer.base, older.base)
        older.base = newer.base * _AFTER
        older.outdated_by = new
        marked += 1
    _newer_first(conn, namespace, cands, best[:ASKED], query)
    return marked


def _newer_first(conn: Connection, ns: str, cands: MutableMapping[int, Any],
                 best: list[Any], query: str) -> None:
    """Among the best candidates, two statements of one topic (at least :data:`TOPIC_ALIKE`
    alike, both at least :data:`ALIKE` of the best score, the newer within :data:`TOPIC_BAND`
    of the older's cosine to the question) rank newer first, both kept: a small
    reader takes the first line that answers, and where a change was not read the newer line
    is the likelier answer. When the question names someone or something, both must name
    it and share another of its words (a statement of another attribute of the same person
    is as alike). A transcript's turns and syntheses keep their order."""
    live = [c for c in best if c.outdated_by is None and c.kind is not NodeKind.SYNTHESIS]
    if len(live) < 2 or not query or asks_history(query):
        return
    top = max(c.base for c in live)
    near = [c for c in live if c.base >= ALIKE * top]
    vecs = stored(conn, ns, [c.rid for c in near])
    pairs = [(a, b) for a in near for b in near
             if a.created_at < b.created_at and a.base >= b.base
             and b.vector >= a.vector - TOPIC_BAND and a.rid in vecs and b.rid in vecs
             and float(vecs[a.rid] @ vecs[b.rid]) >= TOPIC_ALIKE]
    if not pairs:
        return
    rids = sorted({c.rid for p in pairs for c in p})
    marks = ",".join("?" * len(rids))
    texts = {int(r): str(t) for r, t in conn.execute(
        f"SELECT rid, content FROM nodes WHERE namespace = ? AND rid IN ({marks})", (ns, *rids))}
    chat = {r for r, t in texts.items() if any(tx.split_header(t)[:2])}
    named = {n.casefold() for n in tx.names(query)}
    for a, b in sorted(pairs, key=lambda p: -p[0].base):
        if a.rid in chat or b.rid in chat or a.base < b.base:
            continue
        if named and not (named & read(texts[a.rid]).names & read(texts[b.rid]).names
                          and asked_words(query, texts[a.rid]) & asked_words(query, texts[b.rid])
                          - asked_words(query, " ".join(named))):
            continue  # the question names whose it is: both about it, and about what it asks
        b.base, a.base = a.base, a.base * _AFTER  # the newer in the older's place, just above


def _contradicted(conn: Connection, ns: str, cands: MutableMapping[int, Any],
                  rids: list[int], load: Load | None) -> list[tuple[int, int]]:
    """(older, newer) of the best candidates and the live memories that probably update them
    (a live CONTRADICTS edge): the newer one made a candidate if it was not one, whatever its
    own score, so the older never answers in its place."""
    marks = ",".join("?" * len(rids))
    rows: Any = conn.execute(
        "SELECT o.rid, n.rid FROM nodes o "
        "JOIN edges e ON e.namespace = o.namespace AND e.dst = o.id "
        "AND e.type = 'CONTRADICTS' AND e.live = 1 "
        "JOIN nodes n ON n.namespace = e.namespace AND n.id = e.src AND n.status = 'live' "
        f"WHERE o.namespace = ? AND o.rid IN ({marks})", (ns, *rids)).fetchall()
    missing = [int(new) for _, new in rows if int(new) not in cands]
    if missing and load is not None:
        for rid, c in load(missing).items():
            cands.setdefault(rid, c)
    out = []
    for old, new in rows:
        older, newer = cands[int(old)], cands.get(int(new))
        if newer is not None and newer.created_at > older.created_at:
            out.append((int(old), int(new)))
    return out


def _asked(conn: Connection, ns: str, cands: MutableMapping[int, Any],
           best: list[Any], query: str) -> list[tuple[int, int]]:
    if len(best) < 2:
        return []
    top = best[0].base
    near = [c for c in best if c.base >= ALIKE * top]
    # ...and the live memories of what the question asks about (its subject keys), however
    # unlike the question their words are: an older version among the best, a newer one here.
    near += [c for c in cands.values() if c.subject > 0 and c not in near]
    # A synthesis holds several statements: a newer one retires the clause it updates at write
    # time (remd.write.supersede), never the whole bundle here.
    near = [c for c in near if c.kind is not NodeKind.SYNTHESIS]
    if len(near) < 2:
        return []
    rids = [c.rid for c in near]
    vecs = stored(conn, ns, rids)

    def cosine(a: int, b: int) -> float:
        return float(vecs[a] @ vecs[b]) if a in vecs and b in vecs else 0.0

    # Pairs less than UNALIKE alike are about different things: their texts are not read.
    # Pairs less than UNALIKE alike are about different things, unless both are memories of
    # the attribute the question asks about (then their texts tell): no text is read for them.
    pairs = [(a, b, cos) for a in near for b in near if a.created_at < b.created_at
             for cos in (cosine(a.rid, b.rid),)
             if not 0.0 < cos < UNALIKE or (a.subject > 0 and b.subject > 0)]
    if not pairs:
        return []
    wanted = sorted({c.rid for a, b, _ in pairs for c in (a, b)})
    marks = ",".join("?" * len(wanted))
    texts = {int(r): str(t) for r, t in conn.execute(
        f"SELECT rid, content FROM nodes WHERE namespace = ? AND rid IN ({marks})",
        (ns, *wanted))}
    readings = {rid: read(text) for rid, text in texts.items()}
    if sum(1 for r in readings.values() if not r.chat) < 2:
        return []  # a transcript's turns: none is ever stale
    named = {n.casefold() for n in tx.names(query)}  # "the Stripe test key": about Stripe
    out = []
    for a, b, cos in pairs:
        if 0.0 < cos < UNALIKE and not (a.rid in readings and b.rid in readings
                                         and one_attribute(readings[a.rid], readings[b.rid])):
            continue
        if a.rid in readings and b.rid in readings:
            if named and (named & readings[a.rid].names) != (named & readings[b.rid].names):
                continue  # one of them is about what the question names, the other not
            if judge(readings[a.rid], readings[b.rid], cos, asked=True) is not None:
                out.append((a.rid, b.rid))
    return out
