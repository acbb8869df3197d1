"""Details (remd/text/details.py): what a synthesis must keep, judged by meaning, not by
spelling: money in words or symbols, "&" or "and", a date in any common form. A dropped or
changed name, number or day is still missing."""

from __future__ import annotations

import pytest

from remd.text.details import missing


@pytest.mark.parametrize(("member", "synthesis"), [
    ("Paid 85 quid for the tiles.", "Paid £85 for the tiles."),
    ("Paid £85 for the tiles.", "Paid 85 pounds for the tiles."),
    ("The bike cost 40 bucks.", "The bike cost $40."),
    ("The course costs 1,200 euros.", "The course costs €1200."),
    ("Got the paint at B&Q.", "Got the paint at B and Q."),
    ("Got the paint at B and Q.", "Got the paint at B&Q."),
    ("The boiler was serviced on 3 February 2025.", "Boiler serviced 3 Feb 2025."),
    ("The boiler was serviced on 3 Feb 2025 and on 10 Feb 2025.",
     "The boiler was serviced on 3 and 10 Feb 2025."),
    ("The boiler was serviced on 3rd February.", "The boiler was serviced on 2025-02-03."),
    ("The boiler is due in March 2025.", "The boiler is due on 14 Mar 2025."),
    ("In February Maya moved to Leith.", "Maya moved to Leith in February 2023."),
])
def test_the_same_detail_written_otherwise_is_kept(member: str, synthesis: str) -> None:
    assert missing(member, synthesis) == frozenset()


@pytest.mark.parametrize(("member", "synthesis", "lost"), [
    ("Paid 85 quid for the tiles.", "Paid £58 for the tiles.", "£85"),
    ("Got the paint at B&Q with Anna.", "Got the paint at B and Q.", "anna"),
    ("The boiler was serviced on 3 Feb 2025.", "The boiler was serviced on 4 Feb 2025.",
     "2025-02-03"),
    ("The boiler was serviced on 3 Feb 2025.", "The boiler was serviced in Feb 2025.",
     "2025-02-03"),
    ("The boiler was serviced on 3 Feb 2025.", "The boiler was serviced on 3 Feb 2024.",
     "2025-02-03"),
    ("In February Maya moved to Leith.", "Maya moved to Leith in March 2023.", "*-02"),
])
def test_a_changed_or_dropped_detail_is_missing(member: str, synthesis: str, lost: str) -> None:
    assert lost in missing(member, synthesis)


def test_a_models_answer_is_read_back_unescaped() -> None:
    """The fragments reach the model as escaped XML; its "B&amp;Q" is B&Q."""
    from remd.sleep.synthesis import _parse

    answer = _parse('{"synthesis": "Tom fixed the fence with B&amp;Q panels.", '
                    '"key_entities": ["B&amp;Q"]}')
    assert answer.synthesis == "Tom fixed the fence with B&Q panels."
    assert answer.key_entities == ["B&Q"]
    assert missing("Tom fixed the fence with panels from B&Q.", answer.synthesis) == frozenset()
