"""REM on recurring events and on notes a later one settles (remd/sleep/merge.py,
remd/sleep/remplan.py, remd/text/wording.py): one dated sentence per topic, told as a person
tells it, and nothing that stopped being true written as current. Real SQLite, MiniLM and
o200k; the offline synthesiser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from remd import Memory
from remd.text.words import find_dates
from remd.wire import iso

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TOLD = ["We looked at the greenhouse heater again: it tripped on {d}.",
        "FYI the greenhouse heater tripped on {d}.",
        "{d}: greenhouse heater tripped.",
        "Logged on {d} that the greenhouse heater tripped.",
        "The greenhouse heater tripped on {d}, same as before.",
        "On {d} the greenhouse heater tripped yet again."]
OTHER = ["The cellar pump jammed on {d}.", "Noticed that the cellar pump jammed on {d}.",
         "{d} - cellar pump jammed.", "The cellar pump jammed once more on {d}."]


def _lines(start: datetime) -> tuple[list[str], set[str]]:
    lines, days = [], set()
    for k in range(12):
        for told, topic in ((TOLD[k % len(TOLD)], "heater"), (OTHER[k % len(OTHER)], "pump")):
            day = (start + timedelta(days=23 * k + (5 if topic == "pump" else 0))).date()
            written = day.isoformat() if k % 2 else f"{day.day} {day:%b %Y}"
            lines.append(json.dumps({"content": told.format(d=written),
                                     "created_at": iso(start.timestamp() + 23 * k * 86400)}))
            days.add(day.isoformat())
    return lines, days


def test_recurring_events_fold_into_one_dated_sentence_per_topic(db_path: Path) -> None:
    lines, days = _lines(NOW - timedelta(days=700))
    with Memory(db_path, clock=lambda: NOW.timestamp()) as m:
        m.import_lines(lines)
        run = m.run_rem(now=NOW.timestamp())
        live = [str(r[0]) for r in m.store.query(
            "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (m.namespace,))]
        assert run.synthesised >= 2 and len(live) <= len(lines) // 3, live
        for text in live:  # one topic each, subject first, no wording left
            assert ("heater" in text) != ("pump" in text), text
            assert not text.startswith(("FYI", "Logged", "We looked", "Noticed")), text
            assert "again" not in text and "same as before" not in text, text
        heater = [t for t in live if "heater" in t]
        assert any(t.startswith("The greenhouse heater tripped on ") for t in heater), heater
        assert {d.key for t in live for d in find_dates(t)} >= days  # every day kept
        pack = m.inject("When did the greenhouse heater trip?", token_budget=300)
        assert pack.items and "heater" in pack.items[0].content


def test_a_note_and_the_later_one_that_settles_it_are_never_one_synthesis(db_path: Path
                                                                           ) -> None:
    start = NOW - timedelta(days=400)
    said = [(0, "The spare room radiator is cold at the top."),
            (3, "The spare room radiator is still cold at the top."),
            (9, "Bled the spare room radiator, it is warm now."),
            (12, "The spare room radiator is warm now after bleeding."),
            (20, "Dinner with Sam is planned for Friday at Luigi's."),
            (22, "Booked Luigi's for dinner with Sam on Friday."),
            (25, "Dinner with Sam at Luigi's on Friday is cancelled.")]
    # (Without the rule the first four fold into "The spare room — radiator is cold at the
    # top; Bled the spare room radiator, it is warm.", and the dinner into a plan.)
    lines = [json.dumps({"content": t, "created_at": iso((start + timedelta(days=d)).timestamp())})
             for d, t in said]
    with Memory(db_path, clock=lambda: NOW.timestamp()) as m:
        m.import_lines(lines)
        m.run_rem(now=NOW.timestamp())
        rows = m.store.query("SELECT content FROM nodes WHERE namespace = ? AND status = 'live' "
                             "AND kind = 'synthesis'", (m.namespace,))
        for (text,) in rows:
            assert not ("cold" in text and "warm" in text), text
            assert not ("planned" in text and "cancelled" not in text), text
        live = " ".join(str(r[0]) for r in m.store.query(
            "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (m.namespace,)))
        assert "warm now" in live and "cold at the top" in live  # nothing lost
        assert "is cancelled" in live
