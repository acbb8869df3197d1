"""One topic, newer first (remd.query.newest._newer_first): two of the best candidates that say
much the same about the question rank newer first and both stay; a question about the past,
a question naming whose it is, and a transcript's turns keep their order. On a real file, with
the real vectors; the candidates' scores are set by hand so that the older would lead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remd import Memory
from remd.query import newest
from remd.query.candidates import Candidate

DAY = 86_400.0


def _ranked(m: Memory, texts: list[str], query: str) -> list[str]:
    """The texts' order after the rule, the first (older) one scoring a little higher."""
    with m.store.snapshot() as conn:
        rows = {str(c): int(r) for r, c in conn.execute(
            "SELECT rid, content FROM nodes WHERE namespace = ?", (m.namespace,))}
        cands = {}
        for i, text in enumerate(texts):
            c = Candidate(rows[text], vector=0.6 - 0.01 * i, created_at=1e9 + i * DAY)
            c.base = 1.0 - 0.05 * i
            cands[c.rid] = c
        newest._newer_first(conn, m.namespace, cands, list(cands.values()), query)
    by_rid = {rows[t]: t for t in texts}
    return [by_rid[c.rid] for c in sorted(cands.values(), key=lambda c: -c.base)]


OLD = "The kids' swimming lessons are at the leisure centre pool on Saturdays"
NEW = "The kids' swimming lessons are at the Arches pool on Saturdays"


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "n.db") as m:
        for text in (OLD, NEW, "[5 May, 2024] Ana: we swim at the Arches pool",
                     "[6 May, 2024] Ben: we swim at the leisure centre pool",
                     "Ana's swimming lessons are at the Arches pool",
                     "Ana works at the Arches pool"):
            m.save(text)
        yield m


def test_one_topic_ranks_newer_first_and_keeps_both(mem: Memory) -> None:
    assert _ranked(mem, [OLD, NEW], "where are the kids' swimming lessons?") == [NEW, OLD]


def test_a_question_about_the_past_keeps_the_order(mem: Memory) -> None:
    for question in ("where did the kids use to have swimming lessons?",
                     "where were the kids' swimming lessons before?"):
        assert _ranked(mem, [OLD, NEW], question) == [OLD, NEW]


def test_transcript_turns_keep_their_order(mem: Memory) -> None:
    turns = ["[5 May, 2024] Ana: we swim at the Arches pool",
             "[6 May, 2024] Ben: we swim at the leisure centre pool"]
    assert _ranked(mem, turns, "where do they swim?") == turns


def test_a_named_question_needs_the_pair_to_share_what_it_asks(mem: Memory) -> None:
    # Both name Ana and are much alike, but only one speaks of her lessons: another attribute
    # of hers stays behind, however new.
    pair = ["Ana's swimming lessons are at the Arches pool", "Ana works at the Arches pool"]
    vecs = mem.engine.embedder.embed(pair)  # type: ignore[union-attr]
    assert float(vecs[0] @ vecs[1]) >= newest.TOPIC_ALIKE
    assert _ranked(mem, pair, "where are Ana's swimming lessons?") == pair
    assert _ranked(mem, pair, "where do the swimming lessons happen?") == pair[::-1]
