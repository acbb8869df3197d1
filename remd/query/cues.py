"""What a query says beyond its words, for inject: who it names, and whether it is about
anything stored at all.

- :func:`speaker_boost`: a memory written as a chat turn (``[date] Caroline: ...``) said by
  someone the query names counts more. "What did Caroline research?" is about what Caroline
  said; the turns of the person she talks to match its words as well.
- :func:`unrelated`: why a query is about nothing stored (the relevance floor's first rule,
  :mod:`remd.query.packer`), or None.

Both read a handful of rows at most; neither depends on the namespace's size.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any, Protocol

from remd.index.lexical import stems
from remd.store.seam import Connection
from remd.text import words as tx
from remd.text.lexicon import CATEGORIES, lemma

# How much of a memory is read for its speakers: a turn's header, and the first turns of a
# REM synthesis of chat turns (each keeps its "[stamp] Name:").
_TURN_CHARS = 120
_SYNTHESIS_CHARS = 600
SPEAKER_READS = 192  # best candidates whose speakers are read


class Boostable(Protocol):
    base: float
    speaker: float


def speaker_boost(conn: Connection, namespace: str, query: str,
                  cands: Mapping[int, Boostable], weight: float,
                  synthesis: Callable[[int], bool]) -> None:
    """Multiply the score of each candidate said by someone ``query`` names by ``1 +
    weight`` (recorded in its ``speaker``): the header's speaker, or for a synthesis of chat
    turns (``synthesis(rid)``) any speaker of its first turns (:func:`remd.text.words.speakers`).

    Only for queries that name someone, and only the best :data:`SPEAKER_READS` candidates
    (one read of their first characters): one far below them would not reach a pack even
    doubled.
    """
    if weight <= 0 or not cands:
        return
    named = {n.casefold() for name in tx.names(query) for n in (name, *name.split())}
    if not named:
        return
    best = heapq.nlargest(SPEAKER_READS, cands, key=lambda r: cands[r].base)
    turns = [r for r in best if not synthesis(r)]
    folded = [r for r in best if synthesis(r)]
    for rids, chars in ((turns, _TURN_CHARS), (folded, _SYNTHESIS_CHARS)):
        if not rids:
            continue
        marks = ",".join("?" * len(rids))
        for rid, head in conn.execute(
                f"SELECT rid, substr(content, 1, {chars}) FROM nodes "
                f"WHERE namespace = ? AND rid IN ({marks})", (namespace, *rids)):
            text = str(head)
            low = text.casefold()
            if any(n in low for n in named) and tx.speakers(text) & named:
                c = cands[int(rid)]
                c.speaker = 1.0 + weight
                c.base *= c.speaker


# Question words that name what is asked for, not what it is about ("what's my passport
# number?" is about a passport): a word of these alone never makes a question unanswerable.
_ASKED_FOR = frozenset(("name", "number", "time", "date", "day", "place", "type", "kind",
                        "size", "colour", "color", "year", "address", "code",
                        "user"))  # an agent's word for the speaker: "where does the user live?"


def never_said(conn: Connection, namespace: str, terms: dict[str, str], counts: Any,
               best_rid: int, tags: Set[str] = frozenset()) -> str | None:
    """Why a question asks about what no memory mentions, or None: one of its words worth
    searching (not what it asks for: "number", "name") is in no memory at all ("what's my
    passport number?" in a namespace that never says "passport"), and no memory is
    ``floor_weak`` alike (the caller checks). Not for a transcript's turns (``best_rid``, the
    nearest memory, is one), whose words a question rephrases freely. A word that is a tag of
    the namespace (``tags``: a category, "food") is known."""
    words = {stem: word for stem, word in terms.items()
             if word.lower() not in _ASKED_FOR and word.lower() not in tags
             and lemma(word) not in CATEGORIES}  # "food": a kind, said by its members
    if not words:
        return None
    row = conn.execute("SELECT content FROM nodes WHERE namespace = ? AND rid = ?",
                       (namespace, best_rid)).fetchone()
    if row is None or any(tx.split_header(str(row[0]))[:2]):
        return None
    unknown = [word for stem, word in words.items()
               if counts.count(conn, namespace, stem, _quoted(word), 1) == 0]
    if not unknown:
        return None
    return (f"no memory mentions {', '.join(repr(w) for w in unknown[:3])}, and none is much "
            "like the question")


def _quoted(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def unrelated(conn: Connection, namespace: str, floor_similarity: float, best: float,
              lexical: Sequence[tuple[int, float]], terms: set[str],
              query_tags: tuple[int, int]) -> str | None:
    """Why the query is about nothing stored, or None: no memory is ``floor_similarity``
    similar to it (``best``, the best cosine), the namespace has fewer than half of the
    query's tags (``query_tags``: known, asked), and none of the best lexical hits holds
    half of its searched words (``terms``, index stems).

    "What is my favourite football club?" shares one word (and tag) of three with "my
    favourite movie"; "food" is a tag of "I'm allergic to peanuts" (a short query's cosine is
    low), so it is not unrelated.
    """
    if floor_similarity <= 0 or best >= floor_similarity:
        return None
    known, asked = query_tags
    if asked and 2 * known >= asked:
        return None
    if terms and lexical:
        rids = [r for r, _ in lexical[:8]]
        marks = ",".join("?" * len(rids))
        for (content,) in conn.execute(
                f"SELECT content FROM nodes WHERE namespace = ? AND rid IN ({marks})",
                (namespace, *rids)):
            if 2 * len(terms & stems(conn, str(content))) >= len(terms):
                return None
    return (f"no memory is similar to the query (best cosine {best:.2f} < floor_similarity "
            f"{floor_similarity:g}) or holds half of its words or tags")
