"""Issue 19, the rows about what is stored: bad imports, repeated imports, repeated facts,
subtypes of unknown tags. Each refused call writes nothing; real SQLite files throughout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import Memory
from remd.cli.main import main
from remd.errors import InvalidInput, NotFound

pytestmark = pytest.mark.backends

NOW = 1_750_000_000.0  # 2025-06-15


def count(m: Memory) -> int:
    return int(m.store.scalar("SELECT count(*) FROM nodes WHERE namespace = ?",
                              (m.namespace,)))


def test_row3_deeply_nested_json_in_an_import_is_one_line_and_imports_nothing(
        tmp_path: Path) -> None:
    deep = "[" * 5000 + "]" * 5000
    line = '{"content": "x", "tags": ' + deep + "}"
    with Memory(tmp_path / "a.db", clock=lambda: NOW) as m:
        with pytest.raises(InvalidInput, match="line 1: JSON nested too deeply"):
            m.import_lines([line])
        assert count(m) == 0
    src = tmp_path / "deep.jsonl"
    src.write_text(line + "\n")
    r = CliRunner().invoke(main, ["--db", str(tmp_path / "a.db"), "import", str(src)])
    assert r.exit_code == 1
    assert r.stderr.strip().count("\n") == 0 and "line 1" in r.stderr
    assert "Traceback" not in r.output + r.stderr


def test_row8_importing_one_export_twice_into_another_namespace_is_idempotent(
        tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    with Memory(db, clock=lambda: NOW) as m:
        for text in ("My city is Mumbai", "I like tea", "Deploys happen on Fridays"):
            m.save(text)
        lines = list(m.export_lines())
    with Memory(db, namespace="other", clock=lambda: NOW) as other:
        first = other.import_lines(lines)
        second = other.import_lines(lines)
        assert (first.imported, first.skipped) == (3, 0)
        assert (second.imported, second.skipped) == (0, 3)
        assert count(other) == 3
        copies = {n.id for n in other.recent(10)}
    with Memory(db, clock=lambda: NOW) as m:
        originals = {n.id for n in m.recent(10)}
        assert count(m) == 3
    assert not copies & originals  # the copies have ids of their own, the same each time
    runner = CliRunner()
    src = tmp_path / "export.jsonl"
    src.write_text("\n".join(lines) + "\n")
    r = runner.invoke(main, ["--db", str(db), "--namespace", "third", "import", str(src)])
    assert r.exit_code == 0 and "imported 3" in r.stdout
    r = runner.invoke(main, ["--db", str(db), "--namespace", "third", "import", str(src)])
    assert r.exit_code == 0 and "imported 0, skipped 3 already present" in r.stdout


def test_row9_the_same_fact_in_the_same_words_is_no_new_memory(tmp_path: Path) -> None:
    clock = [NOW]
    with Memory(tmp_path / "c.db", clock=lambda: clock[0]) as m:
        first = m.save("My city is Mumbai")
        clock[0] += 3600
        again = m.save("my city is  Mumbai")  # case and spacing do not make it new
        assert again.id == first.id and count(m) == 1
        assert again.confidence > first.confidence
        assert again.last_access == clock[0]
        assert [n.id for n in m.history(first.id)] == [first.id]
        # Other words for the same value are a restatement: a new memory, as before.
        reworded = m.save("I live in Mumbai")
        assert reworded.id != first.id and count(m) == 2
        assert m.get(first.id).status.value == "superseded"


def test_the_same_words_of_a_note_that_is_no_fact_are_a_new_memory(tmp_path: Path) -> None:
    """Where the same-words rule holds, as docs/python-api.md says: for fact sentences only. A
    note said again on another day is another happening: a new memory, both live."""
    clock = [NOW]
    with Memory(tmp_path / "n.db", clock=lambda: clock[0]) as m:
        first = m.save("Took the dog to the vet for her jab")
        clock[0] += 86_400
        again = m.save("took the dog to the vet  for her jab")
        assert again.id != first.id and count(m) == 2
        assert {n.status.value for n in (m.get(first.id), m.get(again.id))} == {"live"}
        assert (again.created_at - first.created_at) == 86_400


def test_row10_a_subtype_of_an_unknown_tag_is_not_found_and_creates_nothing(
        tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with Memory(db, clock=lambda: NOW) as m:
        m.save("Peanuts make me sick", tags=["food"])
        tags_before = m.store.scalar("SELECT count(*) FROM tags")
        with pytest.raises(NotFound):
            m.add_subtype("nosuch", "food")
        assert m.store.scalar("SELECT count(*) FROM tags") == tags_before
        m.add_subtype("food", "health")  # a known child, a new category: allowed
        assert "health" in m.supertypes("food")
    r = CliRunner().invoke(main, ["--db", str(db), "tags", "subtype", "nosuch2", "food"])
    assert r.exit_code == 1 and "nosuch2" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(("created_at", "message"), [
    (12345, "must be an ISO 8601 string"),
    ("3000-01-01T00:00:00Z", "more than a day in the future"),
    ("yesterday", "is not ISO 8601"),
])
def test_row14_import_times_must_be_iso_and_not_in_the_future(
        tmp_path: Path, created_at: object, message: str) -> None:
    good = json.dumps({"content": "fine", "created_at": "2025-01-01T00:00:00Z"})
    bad = json.dumps({"content": "when?", "created_at": created_at})
    with Memory(tmp_path / "e.db", clock=lambda: NOW) as m:
        with pytest.raises(InvalidInput, match=f"line 2: created_at .*{message}"):
            m.import_lines([good, bad])
        assert count(m) == 0  # a bad line imports nothing
        tomorrow = json.dumps({"content": "clock skew", "created_at": "2025-06-15T20:00:00Z"})
        assert m.import_lines([tomorrow]).imported == 1  # within a day of now: believable


def test_row21_inject_on_a_file_it_cannot_write_still_returns_the_pack(tmp_path: Path) -> None:
    """A read-only file (here: SQLite's query_only on the connection inject leases, since
    root ignores file modes) refuses the pack's record, not the pack."""
    from remd.logs import capture_events

    with Memory(tmp_path / "f.db", clock=lambda: NOW) as m:
        m.save("I'm allergic to peanuts")
        packs = m.store.scalar("SELECT count(*) FROM packs")
        with m.store.connection() as conn, capture_events() as events:
            conn.execute("PRAGMA query_only = 1")
            try:
                pack = m.inject("what am I allergic to?", 50)
            finally:
                conn.execute("PRAGMA query_only = 0")
        assert pack.items and "peanuts" in pack.text and not pack.recorded
        assert m.store.scalar("SELECT count(*) FROM packs") == packs
        assert any(e["event"] == "inject.not_recorded" and e["log_level"] == "warning"
                   for e in events)
        assert m.inject("what am I allergic to?", 50).recorded
