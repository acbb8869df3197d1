"""Relative dates resolved against when a memory was said, and packs that carry time."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import InvalidInput, Memory
from remd.cli.main import main
from remd.text.relative import annotate, resolve
from tests.conftest import Clock

WED = datetime(2025, 3, 5, 15, tzinfo=UTC).timestamp()  # a Wednesday


@pytest.mark.parametrize(("text", "first", "last"), [
    ("Went to the dentist yesterday.", date(2025, 3, 4), date(2025, 3, 4)),
    ("the day before yesterday it rained", date(2025, 3, 3), date(2025, 3, 3)),
    ("Tonight is pizza night", date(2025, 3, 5), date(2025, 3, 5)),
    ("tomorrow morning I fly out", date(2025, 3, 6), date(2025, 3, 6)),
    ("last Friday was payday", date(2025, 2, 28), date(2025, 2, 28)),
    ("Had a migraine on Monday", date(2025, 3, 3), date(2025, 3, 3)),
    ("Dinner with Sam on Friday, I'll book a table", date(2025, 3, 7), date(2025, 3, 7)),
    ("Booked the vet for Thursday", date(2025, 3, 6), date(2025, 3, 6)),
    ("next Monday the new rota starts", date(2025, 3, 10), date(2025, 3, 10)),
    ("next month we move to Porto", date(2025, 4, 1), date(2025, 4, 30)),
    ("this weekend we're hiking", date(2025, 3, 8), date(2025, 3, 9)),
    ("last year I ran a marathon", date(2024, 1, 1), date(2024, 12, 31)),
    ("three days ago the boiler died", date(2025, 3, 2), date(2025, 3, 2)),
    ("I start in 2 weeks", date(2025, 3, 19), date(2025, 3, 19)),
])
def test_relative_dates_resolve_against_the_save(text: str, first: date, last: date) -> None:
    found = resolve(text, WED)
    assert [(r.first, r.last) for r in found] == [(first, last)]
    assert text[found[0].start:found[0].end] == found[0].surface


def test_weekday_habits_and_plain_dates_are_not_relative() -> None:
    assert resolve("Fridays are pizza night", WED) == []
    assert resolve("My birthday is on 2 October", WED) == []
    assert annotate("nothing relative here", WED) == "nothing relative here"


def test_annotate_writes_the_day_after_each_expression() -> None:
    assert annotate("Went to the dentist yesterday, then the gym.", WED) == (
        "Went to the dentist yesterday (4 Mar 2025), then the gym.")
    assert "next month (Apr 2025)" in annotate("next month we move", WED)


def test_bad_times_resolve_to_nothing() -> None:
    assert resolve("yesterday", float("nan")) == []
    assert resolve("yesterday", 1e300) == []
    assert resolve("", WED) == []


def test_dated_pack_writes_dates_and_counts_them(tmp_path: Path) -> None:
    clock = Clock(WED)
    with Memory(tmp_path / "d.db", clock=clock) as mem:
        saved = mem.save("Went to the dentist yesterday, Dr. Okafor found a small cavity.")
        clock.advance(40 * 86400)
        plain = mem.inject("when did I go to the dentist?", 100, dated=False)
        dated = mem.inject("when did I go to the dentist?", 100, dated=True)
        # By default a question that asks when gets the dated pack, and no other question does.
        assert mem.inject("when did I go to the dentist?", 100).text == dated.text
        assert mem.inject("who is my dentist?", 100, fill=True).items[0].content == saved.content
        assert plain.items[0].content == saved.content
        assert plain.items[0].date == dated.items[0].date == "2025-03-05"
        item = dated.items[0]
        assert item.content.startswith("[2025-03-05] Went to the dentist yesterday (4 Mar 2025)")
        assert item.tokens == mem.engine.counter.count(item.content)
        assert dated.tokens_used == mem.engine.counter.count(dated.text) <= 100
        assert dated.to_dict()["items"][0]["date"] == "2025-03-05"
        # The date counts in the budget: a budget that holds the text alone holds no dated item.
        tight = mem.inject("when did I go to the dentist?", saved.tokens, dated=True, fill=True)
        assert tight.items == ()
        with pytest.raises(InvalidInput, match="dated"):
            mem.inject("dentist", 100, dated="yes")  # type: ignore[arg-type]


def test_cli_inject_dated(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    runner = CliRunner()
    saved = runner.invoke(main, ["--db", db, "save", "Had my first piano lesson today"])
    assert saved.exit_code == 0
    out = runner.invoke(main, ["--db", db, "inject", "piano lesson", "--budget", "60",
                               "--dated", "--json"])
    assert out.exit_code == 0, out.output
    item = __import__("json").loads(out.stdout)["items"][0]
    day = item["date"]
    assert item["content"].startswith(f"[{day}] Had my first piano lesson today (")
    asked = runner.invoke(main, ["--db", db, "inject", "when was my first piano lesson?",
                                 "--budget", "60", "--json"])
    assert __import__("json").loads(asked.stdout)["items"][0]["content"].startswith(f"[{day}]")
    undated = runner.invoke(main, ["--db", db, "inject", "when was my first piano lesson?",
                                   "--budget", "60", "--undated", "--json"])
    assert __import__("json").loads(undated.stdout)["items"][0]["content"] == (
        "Had my first piano lesson today")


def test_by_default_a_turn_keeps_its_own_stamp(tmp_path: Path) -> None:
    clock = Clock(WED)
    turn = "[5 March, 2025] Caroline: I went to the support group yesterday"
    with Memory(tmp_path / "t.db", clock=clock) as mem:
        mem.save(turn)
        asked = mem.inject("when did Caroline go to the support group?", 100)
        told = mem.inject("when did Caroline go to the support group?", 100, dated=True)
        assert [i.content for i in asked.items] == [turn]  # its stamp dates it already
        assert told.items[0].content.startswith(turn + " (4 Mar 2025)")
