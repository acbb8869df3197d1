"""dates: the periods a query names, and the inject boost for memories saved then."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remd import Config, Memory
from remd.config import InjectConfig
from remd.text.dates import DAY, query_period
from tests.conftest import Clock


def ts(year: int, month: int, day: int = 1) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("query", [
    "What did Caroline do on 8 May, 2023?",
    "What did Caroline do on 8th of May 2023?",
    "What did Caroline do on May 8th, 2023?",
    "what happened on may 8 2023",
])
def test_a_named_day_is_that_day(query: str) -> None:
    period = query_period(query)
    assert period is not None
    assert period.ranges == ((ts(2023, 5, 8), ts(2023, 5, 9)),)
    assert period.covers(ts(2023, 5, 8) + 3600, pad=0)
    assert not period.covers(ts(2023, 5, 9) + 3600, pad=0)
    assert period.covers(ts(2023, 5, 9) + 3600, pad=DAY)  # saved the day after


def test_a_named_month_and_december_rolls_into_the_next_year() -> None:
    period = query_period("Where did they travel in December 2022?")
    assert period is not None and period.ranges == ((ts(2022, 12), ts(2023, 1)),)
    period = query_period("in October of 2023")
    assert period is not None and period.ranges == ((ts(2023, 10), ts(2023, 11)),)


def test_a_day_wins_over_the_month_and_year_in_the_same_query() -> None:
    period = query_period("Was it 3 June 2021 or some time in 2021?")
    assert period is not None and period.ranges == ((ts(2021, 6, 3), ts(2021, 6, 4)),)


@pytest.mark.parametrize(("query", "months"), [
    ("What did Melanie paint in June?", {6}),
    ("plans for early-August or late September", {8, 9}),
    ("what happened last December", {12}),
    ("by the end of May", {5}),
    ("I may go there in April", {4}),
])
def test_a_month_after_a_time_word_counts(query: str, months: set[int]) -> None:
    period = query_period(query)
    assert period is not None and period.months == frozenset(months)


def test_a_bare_month_is_that_month_of_any_year() -> None:
    period = query_period("What did Melanie paint in June?")
    assert period is not None and period.months == frozenset({6}) and not period.ranges
    assert period.covers(ts(2019, 6, 30), pad=0) and period.covers(ts(2024, 6, 1), pad=0)
    assert not period.covers(ts(2024, 7, 1), pad=0)


def test_a_year_alone_is_the_whole_year() -> None:
    period = query_period("Which books did she read in 2022?")
    assert period is not None and period.ranges == ((ts(2022, 1), ts(2023, 1)),)


@pytest.mark.parametrize("query", [
    "What are my food preferences?",
    "may I ask what you march for?",  # "may"/"march" are verbs here
    "May I ask about my allergies?",  # capitalised at the start: still a verb
    "What did June say about the party?",  # a name
    "I ran 2 km in 31 minutes",
    "",
])
def test_no_date_is_none(query: str) -> None:
    assert query_period(query) is None


def test_an_impossible_day_falls_back_to_its_month_not_an_error() -> None:
    for query in ("on 31 February, 2023", "on 0 February, 2023"):
        period = query_period(query)
        assert period is not None and period.ranges == ((ts(2023, 2), ts(2023, 3)),)


def test_covers_a_clock_outside_the_calendar_is_false_not_an_error() -> None:
    period = query_period("in June")
    assert period is not None
    assert not period.covers(1e300, pad=0)
    assert not period.covers(-1e300, pad=0)


# -- inject: memories saved on the named date score higher -----------------------------------
TURNS = [
    "Caroline: I went to the LGBTQ support group and it was so powerful.",
    "Caroline: The support group meets every week at the community centre.",
    "Caroline: At the support group we talked about adoption agencies.",
]


def dated_corpus(db: Path, clock: Clock, weight: float) -> tuple[Memory, list[str]]:
    mem = Memory(db, config=Config(inject=InjectConfig(date_weight=weight)))
    mem.engine.clock = clock  # the fixture opened it with the real clock
    ids = []
    for when, text in zip((ts(2023, 3, 2), ts(2023, 5, 8), ts(2023, 9, 20)), TURNS, strict=True):
        clock.now = when + 10 * 3600
        ids.append(mem.save(text).id)
    clock.now = ts(2023, 10, 1)
    return mem, ids


def test_inject_ranks_the_memory_saved_on_the_named_day_first(tmp_path: Path,
                                                               clock: Clock) -> None:
    mem, ids = dated_corpus(tmp_path / "a.db", clock, weight=2.0)
    with mem:
        pack = mem.inject("What did Caroline do at the support group on 8 May, 2023?", 10_000,
                          fill=True)
        assert pack.items[0].id == ids[1]
        assert pack.items[0].parts.date == 3.0
        assert all(item.parts.date == 1.0 for item in pack.items[1:])
        assert {item.id for item in pack.items} == set(ids)  # a boost, never a filter
        undated = mem.inject("What did Caroline do at the support group?", 10_000, fill=True)
        assert all(item.parts.date == 1.0 for item in undated.items)


def test_date_weight_zero_turns_the_boost_off(tmp_path: Path, clock: Clock) -> None:
    mem, ids = dated_corpus(tmp_path / "b.db", clock, weight=0.0)
    with mem:
        pack = mem.inject("What did Caroline do at the support group on 8 May, 2023?", 10_000,
                          fill=True)
        assert all(item.parts.date == 1.0 for item in pack.items)
        assert {item.id for item in pack.items} == set(ids)


def test_explain_shows_the_date_factor(tmp_path: Path, clock: Clock) -> None:
    from remd.query.pack import explain

    mem, _ = dated_corpus(tmp_path / "c.db", clock, weight=2.0)
    with mem:
        lines = list(explain(mem.inject("support group on May 8th, 2023", 10_000)))
        assert any(line.startswith("1. ") and "x date 3 " in line for line in lines)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "on 8 May, 2023", "in October 2023", "in June", "in 2022", "during march and in July",
    "on May 1st, 2022 or 3 June 2022", "since last december"]), min_size=1, max_size=2),
    st.lists(st.floats(min_value=-2e10, max_value=2e10, allow_nan=False), min_size=1,
             max_size=40),
    st.floats(min_value=0, max_value=10 * DAY))
def test_covers_many_agrees_with_covers(phrases: list[str], times: list[float],
                                        pad: float) -> None:
    period = query_period("what happened " + " ".join(phrases))
    assert period is not None
    at = np.array(times, np.float64)
    assert period.covers_many(at, pad).tolist() == [period.covers(t, pad) for t in times]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "on 8 May, 2023", "in October 2023", "in June", "in 2022", "during march and in July",
    "on May 1st, 2022 or 3 June 2022", "since last december"]), min_size=1, max_size=2),
    st.integers(min_value=1_600_000_000, max_value=1_750_000_000),
    st.integers(min_value=0, max_value=400), st.integers(min_value=0, max_value=86_399),
    st.floats(min_value=0, max_value=10 * DAY))
def test_a_span_overlaps_when_a_moment_of_it_is_covered(phrases: list[str], start: int,
                                                       days: int, extra: int,
                                                       pad: float) -> None:
    """A synthesis's span [valid_from, created_at] meets the period iff some moment of it is
    covered (checked a day apart, and at both ends: every range is at least a day long)."""
    period = query_period("what happened " + " ".join(phrases))
    assert period is not None
    end = start + days * DAY + extra
    moments = [float(start + k * DAY) for k in range(days + 1)] + [float(end)]
    want = any(period.covers(t, pad) for t in moments)
    got = period.overlaps_many(np.array([float(start)]), np.array([end]), pad)
    assert got.tolist() == [want]
    point = period.overlaps_many(np.array([float(start)]), np.array([float(start)]), pad)
    assert point.tolist() == [period.covers(float(start), pad)]


def test_queries_are_read_with_the_grammar_memories_are_read_with() -> None:
    """One date grammar (remd.text.words): an ISO day, an abbreviated month and a list in a query
    name the days a synthesis writes them in."""
    period = query_period("what happened on 2024-05-01?")
    assert period is not None and period.ranges == ((ts(2024, 5, 1), ts(2024, 5, 2)),)
    period = query_period("anything in Mar 2023?")
    assert period is not None and period.ranges == ((ts(2023, 3), ts(2023, 4)),)
    period = query_period("the outages on 12 Jan, 3 Feb and 14 Mar 2025")
    assert period is not None and len(period.ranges) == 3
    assert period.ranges[0] == (ts(2025, 1, 12), ts(2025, 1, 13))
