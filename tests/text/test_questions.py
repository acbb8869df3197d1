"""What a question asks (remd.text.questions): a date, the past, the words a statement shares."""

from __future__ import annotations

import pytest

from remd.text.questions import asked_words, asks_history, asks_when


@pytest.mark.parametrize(("question", "when", "history"), [
    ("when did I get the covid booster?", True, True),
    ("What day is the pub quiz?", True, False),
    ("how long ago did we sign the wills?", True, True),
    ("which year did I move to Leeds?", True, True),
    ("where do I play badminton?", False, False),
    ("what did I use to drive?", False, True),
    ("who was my dentist before?", False, True),
    ("what was my first car?", False, True),
    ("Who\u2019s my GP these days?", False, False),
    ("what's my usual coffee order?", False, False),
])
def test_when_and_history(question: str, when: bool, history: bool) -> None:
    assert asks_when(question) is when
    assert asks_history(question) is history


def test_asked_words_include_names_and_stems() -> None:
    q = "where do I play badminton?"
    assert asked_words(q, "Badminton I play 8:30 pm at Sus Road court") == {"badminton", "play"}
    assert asked_words(q, "Played at the Balewadi courts, badminton again") == {"badminton",
                                                                                 "play"}
    assert asked_words(q, "Ana lives in Porto") == frozenset()
    assert asked_words("who teaches me the cello?", "My cello lessons are with Mme Vidal") == {
        "cello"}
