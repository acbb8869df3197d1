"""The offline synthesiser's dense mode: budgeted extraction of the most informative sentences."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remd.errors import InvalidInput
from remd.sleep.distil import distil, tokens
from remd.sleep.synthesis import Fragment, OfflineSynthesiser, split_header


def _texts(frags):
    return [f.content for f in frags], [f.created_at for f in frags]


def at(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


CHAT = [
    Fragment(id="a", importance=0.1, created_at=at("2023-05-08"), content=(
        "[1:56 pm on 8 May, 2023] Caroline: Hey Mel! Good to see you! How have you been? "
        "I went to a LGBTQ support group yesterday and it was so powerful.")),
    Fragment(id="b", importance=0.1, created_at=at("2023-05-08"), content=(
        "[1:56 pm on 8 May, 2023] Melanie: Wow, that's cool, Caroline! That's awesome! "
        "I'm off to go swimming with the kids.")),
    Fragment(id="c", importance=0.1, created_at=at("2023-06-09"), content=(
        "[7:55 pm on 9 June, 2023] Caroline: Thanks, Melanie! Thanks so much! "
        "The adoption agency in Portland called back about the 2 kids.")),
]


def test_greetings_go_and_what_was_said_stays() -> None:
    text = distil(*_texts(CHAT), 0.8)
    assert text.startswith("2023-05-08 to 2023-06-09: ")
    assert "LGBTQ support group yesterday" in text and "swimming with the kids" in text
    assert "adoption agency in Portland called back about the 2 kids" in text
    for filler in ("Good to see you", "That's awesome", "Thanks so much", "How have you been"):
        assert filler not in text
    # Each kept sentence under its own speaker, in the order the turns were saved; a session's
    # stamp is written once for its turns.
    assert text.index("Caroline: I went") < text.index("Melanie: I'm off") < text.index(
        "Caroline: The adoption")
    assert text.count("[1:56 pm on 8 May, 2023]") == 1
    assert tokens(text) <= 0.8 * sum(tokens(f.content) for f in CHAT)


def test_the_budget_takes_the_most_informative_first() -> None:
    tight = distil(*_texts(CHAT), 0.05)  # the floor: the few sentences that say the most
    assert "Portland" in tight  # names and numbers weigh double
    assert len(tight) < len(distil(*_texts(CHAT), 0.9))


def test_headers_are_split_only_where_there_is_one() -> None:
    assert split_header("[1:56 pm on 8 May, 2023] Melanie: Wow.") == (
        "[1:56 pm on 8 May, 2023]", "Melanie:", "Wow.")
    assert split_header("Melanie: hi there") == ("", "Melanie:", "hi there")
    assert split_header("[2024-03-01] deploy done") == ("[2024-03-01]", "", "deploy done")
    assert split_header("Note to self: the wiki password hint is amber-100.") == (
        "", "", "Note to self: the wiki password hint is amber-100.")


def test_density_one_is_the_lossless_synthesiser_and_bad_densities_are_refused() -> None:
    assert OfflineSynthesiser().model == "extractive-v1"
    dense = OfflineSynthesiser(0.4)
    assert dense.model == "extractive-dense-0.4" and dense.prompt_version == "offline-2"
    answer = dense.synthesise(CHAT)
    assert answer.synthesis == distil(*_texts(CHAT), 0.4)
    # The lists still carry every name, number and date of the members.
    assert {"Caroline", "Melanie", "Portland", "2"} <= set(answer.key_entities)
    for bad in (0.0, -1.0, 1.5, float("nan")):
        with pytest.raises(InvalidInput):
            OfflineSynthesiser(bad)


WORDS = ["budget", "Falcon", "deploy", "wow", "thanks", "42", "Oslo", "server", "great", "the"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=2, max_size=9), min_size=1,
                max_size=10),
       st.floats(min_value=0.05, max_value=0.95))
def test_distil_is_bounded_deterministic_and_never_empty(sentences: list[list[str]],
                                                         density: float) -> None:
    fragments = [Fragment(id=f"f{i}", content=" ".join(w) + ".", importance=0.2,
                          created_at=at("2024-01-01") + i * 86400.0)
                 for i, w in enumerate(sentences)]
    text = distil(*_texts(fragments), density)
    assert text == distil(*_texts(fragments), density)
    body = text.partition(": ")[2]
    assert body.strip()
    budget = max(32, density * sum(tokens(f.content) for f in fragments))
    longest = max(tokens(f.content) for f in fragments)
    assert tokens(text) <= budget + longest + 8  # the single best sentence may overrun


def test_the_configured_density_reaches_the_rem_cycle(tmp_path: Path) -> None:
    from remd import Config, Memory
    from tests.sleep.test_rem import NOW, fragments, old_lines

    config = Config.model_validate({"rem": {"offline_density": 0.4}})
    with Memory(tmp_path / "d.db", config=config, clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(3)))
        run = m.run_rem(now=NOW)
        assert run.synthesised >= 1
        row = m.store.one("SELECT model FROM rem_runs WHERE run_id = ?",
                          (run.run_id,))
        assert row == ("extractive-dense-0.4",)
