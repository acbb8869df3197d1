"""Attribute frames, subject keys and the second pass of update detection: version chains,
candidates by subject, reading that generalises (real files, the real embedder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remd import Memory, NodeStatus
from remd.models import EdgeType
from remd.text.frames import frames, habit_slot, question_keys, subject_keys, update_keys, values
from remd.text.numbers import plain_numbers
from remd.text.reading import asked_person, read
from remd.text.updates import judge
from tests.conftest import Clock

DAY = 86_400.0


# -- pure text ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "frame"), [
    ("My line manager is Odette.", "boss"),
    ("These days I report to Vikram.", "boss"),
    ("We're living in Clapham now.", "home"),
    ("Rent's gone up to 1,400 a month.", "rent"),
    ("Switched the team to Trello for tickets.", "tickets"),
    ("Went pescatarian in January.", "diet"),
    ("Standup is at 9:45.", "schedule"),
])
def test_a_statement_is_read_for_its_attribute_whatever_its_words(text: str, frame: str) -> None:
    assert frame in frames(plain_numbers(text.lower()))


def test_a_frames_own_values_and_the_words_that_are_not() -> None:
    assert values("we listen on Spotify mostly", "music_service") == {"spotify"}
    assert values("the family music app is YouTube Music now", "music_service") == {
        "youtube music"}
    assert "home" not in frames("I work from home on Fridays")
    assert "home" not in frames("our tickets live in Jira")  # a ticket lives nowhere
    assert "school" not in frames("Noor does judo after school")


@pytest.mark.parametrize(("text", "digits"), [
    ("about four thousand units a day", "about 4000 units a day"),
    ("on roughly 31k before tax", "on roughly 31000 before tax"),
    ("she gets three quid a week", "she gets £3 a week"),
    ("a fiver every Friday", "£5 every friday"),
    ("twenty-five minutes", "25 minutes"),
])
def test_numbers_are_read_as_digits(text: str, digits: str) -> None:
    assert plain_numbers(text.lower()) == digits


def test_a_weekday_with_a_part_of_the_day_is_a_standing_habits_slot() -> None:
    assert habit_slot("tuesday nights I'm at the pottery studio") == "tuesday evening"
    assert habit_slot("Tuesday evenings = five-a-side") == "tuesday evening"
    assert habit_slot("I swim on Mondays") == "monday"
    assert habit_slot("went swimming on Monday") == ""
    habit = read("Sunday mornings are for the car boot sale.")
    assert habit.habit == "sunday morning" and not habit.one_off
    # a weekday is never a name, even in the plural or opening a sentence
    assert not read("Fridays are quiet, Tuesdays are chaos.").names


def test_subject_keys_and_the_ones_an_update_may_replace() -> None:
    keys = subject_keys("My boss is Ilse and we have two cats")
    assert "f:boss" in keys and "m:pet" in keys
    assert update_keys(keys) == tuple(k for k in keys if k != "m:pet")
    assert subject_keys("[8 May, 2023] Caroline: my boss is Ilse") == ()  # a chat turn
    assert question_keys("who's my manager these days?") == ("f:boss",)
    assert question_keys("what pets have we got?") == ("m:pet",)
    assert "f:price" not in question_keys("how much is the gym?")  # a thing's: not a key


def test_whom_a_question_asks_about() -> None:
    assert asked_person("where does my mother live now?") == "mother"
    assert asked_person("what does Noor do after school?") == "noor"
    assert asked_person("what car do I drive?") == "self"


@pytest.mark.parametrize(("old", "new"), [
    ("My manager is Odette, she's brilliant.", "I report to Vikram since the restructure."),
    ("The window cleaner charges £14 a visit.", "Window guy put his prices up, £17 now."),
    ("Saturday mornings I do the parkrun.", "saturday mornings are swimming lessons now"),
    ("Bowling is on Tuesday nights at the Strand.",
     "Bowling moved to Wednesday nights at the Strand."),
    ("I'm vegetarian.", "I eat fish and chicken again, the doctor insisted."),
])
def test_another_value_of_one_attribute_is_an_update(old: str, new: str) -> None:
    verdict = judge(read(old), read(new), 0.3, nearest=True)
    assert verdict is not None, (old, new)


@pytest.mark.parametrize(("old", "new"), [
    ("I play the cello in a quartet.", "Teaching myself the banjo from videos."),
    ("We have a spaniel called Rusty.", "Brought home a rescue cat, Rusty is not amused."),
    ("Renovation attempt 1: the grout cracked overnight.",
     "Renovation attempt 2: grout held but the tiles lifted."),
    ("My laptop is a ThinkPad T14.", "Updated the ThinkPad to Fedora 41 last night."),
    ("Noor is in Year 4 at Hillside.", "Zain is in Year 1 with Mrs Patel."),
    ("Should I switch to Neovim?", "I use VS Code for everything."),
])
def test_additions_labels_side_remarks_and_other_people_are_not(old: str, new: str) -> None:
    verdict = judge(read(old), read(new), 0.45, nearest=True)
    assert verdict is None or verdict.kind.value == "maybe" and "name" not in verdict.reason, (
        old, new, verdict)
    assert judge(read(old), read(new), 0.45) is None or "attempt" not in old


# -- through a real file -------------------------------------------------------------------------
def saved(m: Memory, clock: Clock, *texts: str) -> list[str]:
    out = []
    for text in texts:
        clock.advance(DAY)
        out.append(m.save(text).id)
    return out


FILLER = ("The printer on the second floor jams every morning.",
          "My sister collects vintage postcards from the seaside.",
          "Lunch was a decent bánh mì from the stall near the station.",
          "I keep forgetting to water the fern on the landing.")


@pytest.mark.backends
def test_attribute_said_in_other_words_is_found_by_subject(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "My manager is Odette, she guards our Fridays.")
        saved(m, clock, *FILLER)
        (new,) = saved(m, clock, "After the restructure I report to Vikram now.")
        assert m.get(old).status is NodeStatus.SUPERSEDED
        clock.advance(DAY)
        pack = m.inject("who's my boss?", 40)
        assert pack.items and pack.items[0].id == new


@pytest.mark.backends
def test_a_revert_supersedes_the_version_it_reverts(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (a,) = saved(m, clock, "We get The Guardian delivered every morning.")
        saved(m, clock, *FILLER[:2])
        (b,) = saved(m, clock, "Switched to The Times for the sport pages.")
        saved(m, clock, *FILLER[2:])
        (c,) = saved(m, clock, "Missed the crossword too much: The Guardian is back on order.")
        assert m.get(b).status is NodeStatus.SUPERSEDED
        assert m.get(c).status is NodeStatus.LIVE
        chain = [n.id for n in m.history(b)]
        assert chain.index(a) < chain.index(b) < chain.index(c)


@pytest.mark.backends
def test_an_update_takes_the_restatements_of_the_old_value_with_it(db_path: Path,
                                                                   clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        said = saved(m, clock, "I'm vegan, have been for years.",
                     *FILLER[:2], "Still vegan, the new café does a great oat flat white.")
        saved(m, clock, *FILLER[2:])
        (new,) = saved(m, clock, "I've gone vegetarian, cheese won in the end.")
        for old in (said[0], said[-1]):
            assert m.get(old).status is NodeStatus.SUPERSEDED, m.get(old).content
        clock.advance(DAY)
        pack = m.inject("am I vegan?", 200)
        assert pack.items[0].id == new and "vegan," not in pack.text.lower()


@pytest.mark.backends
def test_a_change_of_a_change_supersedes_the_middle_one(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (a,) = saved(m, clock, "Team demo is on Tuesday afternoons.")
        saved(m, clock, *FILLER[:2])
        (b,) = saved(m, clock, "Team demo moved to Wednesday afternoons.")
        saved(m, clock, *FILLER[2:])
        (c,) = saved(m, clock, "Team demo moved again, Friday afternoons from now on.")
        assert m.get(a).status is NodeStatus.SUPERSEDED
        assert m.get(b).status is NodeStatus.SUPERSEDED
        assert m.get(c).status is NodeStatus.LIVE


@pytest.mark.backends
def test_numbered_notes_are_labels_not_values(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        notes = saved(m, clock, "Bread attempt 1: dense, the starter was too young.",
                      "Bread attempt 2: better crumb, crust burnt.",
                      "Bread attempt 3: finally decent, 40 minutes at 220.")
        assert all(m.get(n).status is NodeStatus.LIVE for n in notes)
        assert not [e for n in notes for e in m.links(n) if e.type is EdgeType.SUPERSEDES]


@pytest.mark.backends
def test_restore_never_hides_the_live_newer_value(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "My city is Bangalore")
        (new,) = saved(m, clock, "My city has changed to Mumbai")
        assert m.get(old).status is NodeStatus.SUPERSEDED
        m.restore(old)
        clock.advance(DAY)
        ids = [i.id for i in m.inject("where do I live?", 100).items]
        assert ids[:2] == [new, old]  # both live, both answers, the newer first
        assert m.get(new).status is NodeStatus.LIVE and m.get(old).status is NodeStatus.LIVE


def test_keys_are_rebuilt_when_what_reads_them_changes(tmp_path: Path, clock: Clock) -> None:
    with Memory(tmp_path / "k.db", clock=clock) as m:
        (boss,) = saved(m, clock, "My manager is Odette.")
        m.store.query("DELETE FROM node_keys")  # as a file of an older version would be
        with m.store.transaction() as conn:
            conn.execute("DELETE FROM node_keys")
            conn.execute("UPDATE remd_meta SET value = '0' WHERE key = 'node_keys'")
    with Memory(tmp_path / "k.db", clock=clock) as m:
        rid = m.store.scalar("SELECT rid FROM nodes WHERE id = ?", (boss,))
        assert m.store.query("SELECT key FROM node_keys WHERE rid = ?", (rid,)) == [("f:boss",)]
