"""Consolidation that makes memory more useful: a synthesis is a bundle of dated clauses that
inject packs by the clause, a later update retires the clause it changes, two versions never
fold into one synthesis, syntheses read as a person would write them, nothing is packed for
what was never said, and a run says whether it cost recent questions their first item (real
files, the real embedder, the offline synthesiser)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from remd import Memory, NodeStatus
from remd.sleep.remruns import RemRun
from remd.text.clauses import parse, render, split
from remd.text.readability import problems
from tests.conftest import Clock

DAY = 86_400.0
YEAR = 365 * DAY

PODCAST = ["The garden podcast records on Wednesday evenings in the shed.",
           "For the garden podcast I'm using a Rode mic I borrowed from Ines.",
           "Ines co-hosts the garden podcast, she does the interviews.",
           "We publish the garden podcast every second Friday."]
FILLER = ["The kettle in the office makes a strange noise.",
          "Bought oat milk again, the shop was out of the usual.",
          "Rain all weekend, the balcony plants are happy.",
          "Left my umbrella on the tram, third one this year."]


def old(m: Memory, clock: Clock, texts: list[str]) -> list[str]:
    ids = []
    for text in texts:
        clock.advance(DAY)
        ids.append(m.save(text).id)
    return ids


@pytest.fixture
def podcast(db_path: Path) -> Iterator[tuple[Memory, Clock, RemRun]]:
    """The podcast's fragments and filler, a year old, and the REM run that folded them."""
    clock = Clock(1_700_000_000.0)
    with Memory(db_path, clock=clock) as m:
        old(m, clock, PODCAST + FILLER)
        clock.advance(YEAR)
        yield m, clock, m.run_rem(now=clock.now)


def test_split_and_render_a_fusion_and_a_merge() -> None:
    fused = split("The podcast — records on Wednesdays; Dana co-hosts it; we publish fortnightly.")
    assert fused.subject == "The podcast" and len(fused.clauses) == 3
    assert render(fused, [1]) == "The podcast \u2014 Dana co-hosts it."
    merged = split("12 Jan to 3 Mar 2025: Payments had timeouts on 12 Jan 2025. It runs on Go.")
    assert merged.subject == "12 Jan to 3 Mar 2025" and len(merged.clauses) == 2
    assert render(merged, [1]) == "12 Jan to 3 Mar 2025: It runs on Go."
    assert parse("not json") is None and parse(None) is None
    assert parse(fused.to_json()) == fused


@pytest.mark.parametrize(("text", "members", "what"), [
    ("IT says VPN issue; iT restarted it.", ["IT says VPN issue", "IT restarted it"], "casing"),
    ("Ride — it my bike to work.", ["I ride my bike to work"], "cut subject"),
    ("Sertraline — 40 mg day.", ["Sertraline, 40 mg a day"], "dropped rate"),
    ("Podcast — records on Wednesdays; also online.", ["records on Wednesdays", "online"],
     "orphan"),
    ("Onyx had timeouts. it runs on Go.", ["Onyx had timeouts", "Runs on Go"], "lower case"),
])
def test_a_synthesis_that_reads_badly_is_named(text: str, members: list[str], what: str) -> None:
    found = problems(text, members)
    assert found and any(what.split()[0] in p for p in found), found


def test_a_synthesis_that_reads_well_has_no_problem() -> None:
    members = ["The podcast records on Wednesdays.", "We take 40 mg a day of it, says Dr Ruiz."]
    assert problems("The podcast — records on Wednesdays; we take 40 mg a day of it, says Dr "
                    "Ruiz.", members) == []


@pytest.mark.backends
def test_a_synthesis_is_packed_by_the_clause_the_question_needs(
        podcast: tuple[Memory, Clock, RemRun]) -> None:
    m, _, run = podcast
    synth = m.store.query("SELECT id, content, clauses, tokens FROM nodes "
                          "WHERE kind = 'synthesis'")
    assert run.synthesised >= 1 and synth
    sid, content, raw, tokens = next(r for r in synth if "mic" in r[1].lower())
    clauses = parse(raw)
    assert clauses is not None and all(c.members and c.at for c in clauses.clauses)
    pack = m.inject("which mic do I use for the podcast?", 60)
    item = next(i for i in pack.items if i.id == sid)
    assert "Rode" in item.content and item.tokens < tokens and "of" in item.part
    assert item.tokens == m.engine.counter.count(item.content)
    assert pack.tokens_used == m.engine.counter.count(pack.text) <= 60


@pytest.mark.backends
def test_an_update_after_rem_retires_the_clause_it_changes(
        podcast: tuple[Memory, Clock, RemRun]) -> None:
    m, clock, run = podcast
    assert run.synthesised >= 1
    (sid, raw), = [(i, c) for i, t, c in m.store.query(
        "SELECT id, content, clauses FROM nodes WHERE kind = 'synthesis'") if "mic" in t]
    clock.advance(DAY)
    new = m.save("For the garden podcast I switched to a Shure SM7B, the Rode went back "
                 "to Ines.").id
    bundle = parse(m.store.scalar("SELECT clauses FROM nodes WHERE id = ?", (sid,)))
    assert bundle is not None
    retired = [c for c in bundle.clauses if not c.live]
    assert retired and all(c.by == new for c in retired)
    assert m.get(sid).status is NodeStatus.LIVE  # its other clauses still hold
    clock.advance(DAY)
    text = m.inject("which mic do I use for the podcast?", 200).text
    assert "Shure" in text and "borrowed" not in text


@pytest.mark.backends
def test_two_values_of_one_attribute_never_fold_into_one_synthesis(db_path: Path) -> None:
    clock = Clock(1_700_000_000.0)
    with Memory(db_path, clock=clock) as m:
        restore_me = old(m, clock, ["My manager is Odette Laurent.", *FILLER[:2],
                                    "I report to Vikram Nair since the reorg.", *FILLER[2:],
                                    "Odette Laurent still sends the team newsletter."])[0]
        m.restore(restore_me) if m.get(restore_me).status is NodeStatus.SUPERSEDED else None
        clock.advance(YEAR)
        m.run_rem(now=clock.now)
        for (content,) in m.store.query("SELECT content FROM nodes WHERE kind = 'synthesis'"):
            assert not ("Odette" in content and "Vikram" in content), content


def test_nothing_is_packed_for_what_was_never_said(tmp_path: Path) -> None:
    with Memory(tmp_path / "n.db") as m:
        for text in [*PODCAST, *FILLER, "My sister lives in Lyon.", "I drive a grey Skoda.",
                     "My city is Porto"]:
            m.save(text)
        # an agent's "the user" is the speaker; "live" is the attribute "my city" speaks of
        assert any("Porto" in i.content for i in m.inject("where does the user live?", 200).items)
        assert m.inject("what's my passport number?", 200).items == ()
        assert m.inject("how tall am I?", 200).stop == "unrelated"
        assert m.inject("what car do I drive?", 200).items  # said, in other words
        assert m.inject("what podcast do I make?", 200).items


def test_a_run_says_whether_recent_questions_kept_their_first_item(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000.0)
    with Memory(tmp_path / "u.db", clock=clock) as m:
        old(m, clock, PODCAST + FILLER)
        clock.advance(30 * DAY)
        for q in ("who co-hosts the garden podcast?", "when do we publish the podcast?",
                  "when do we publish the podcast?"):  # two questions, one first item
            assert m.inject(q, 200).items
        clock.advance(YEAR)
        run = m.run_rem(now=clock.now)
        assert run.synthesised >= 1
        assert run.usefulness is not None and run.usefulness["queries"] == 3
        assert run.usefulness["top_kept"] + run.usefulness["top_changed"] == 3
        assert json.loads(json.dumps(run.to_dict()))["usefulness"] == run.usefulness
        tops = m.engine.telemetry.snapshot().rem_tops
        assert tops["kept"] + tops["changed"] == 3
