"""[store] resident_mb: the database file's pages locked in memory
(remd/store/sqlite/resident.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remd import Config, Memory


def _locked_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmLck:"):
                return int(line.split()[1])
    return 0


def test_off_by_default(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as mem:
        assert mem.store.resident is None


def test_the_file_is_mapped_and_follows_its_growth(db_path: Path) -> None:
    config = Config.model_validate({"store": {"resident_mb": 64}})
    before = _locked_kb()
    with Memory(db_path, config=config, embedder=None) as mem:
        resident = mem.store.resident
        assert resident is not None
        first = resident.mapped
        assert first > 0
        for i in range(300):
            mem.save(f"Note {i}: the blue folder on the third shelf holds invoice {i * 7}")
        with mem.store.connection() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        resident.refresh(force=True)
        assert resident.mapped > first
        assert resident.mapped <= db_path.stat().st_size
        if not resident.refused:  # a process allowed to lock (root, or RLIMIT_MEMLOCK)
            assert resident.locked == resident.mapped
            assert _locked_kb() - before >= resident.locked // 1024
        assert mem.inject("where is invoice 70?", 200).items  # reads go on as before
    assert resident.mapped == resident.locked == 0
    assert _locked_kb() <= before


def test_the_limit_bounds_what_is_mapped(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as mem:
        for i in range(200):
            mem.save(f"Reading list item {i}: a long essay about rivers and bridges {i}")
    config = Config.model_validate({"store": {"resident_mb": 1}})
    with Memory(db_path, config=config, embedder=None) as mem:
        assert mem.store.resident is not None
        assert 0 < mem.store.resident.mapped <= 1 << 20


def test_compact_packs_the_file_and_keeps_every_memory(db_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from remd.cli.main import main

    with Memory(db_path, embedder=None) as mem:
        saved = [mem.save(f"Errand {i}: drop the {['coat', 'lamp', 'chair'][i % 3]} at the "
                          f"repair shop on Quay {i} before Friday").id for i in range(400)]
        for node_id in saved[::2]:
            mem.forget(node_id)
        live = mem.stats().live
    result = CliRunner().invoke(main, ["--db", str(db_path), "compact", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report) == {"bytes_before", "bytes_after", "seconds"}
    # (a small file has little to pack: the 1M benchmark file went 2.42 -> 1.85 GB)
    assert 0 < report["bytes_after"] <= 1.05 * report["bytes_before"]
    with Memory(db_path, embedder=None) as mem:
        assert mem.stats().live == live
        assert {n.id for n in mem.recent(1000)} == set(saved[1::2])
        assert mem.inject("what goes to the repair shop on Quay 7?", 300).items


def test_compact_reports_the_sizes_on_disk_and_says_why_a_file_grew(tmp_path: Path) -> None:
    """A small new file (270 kB) printed "0.2 MB -> 0.3 MB": the size after counted the WAL
    that ANALYZE wrote after the checkpoint, and the planner's statistics are new pages. The
    sizes are now the file and WAL as left on disk, in kB, and a larger file says why."""
    from click.testing import CliRunner

    from remd.cli.main import main

    db = tmp_path / "small.db"
    with Memory(db, embedder=None) as mem:
        mem.save_many([f"Note {i} about the garden shed roof and the gutters {i}"
                       for i in range(60)])
    on_disk = sum(p.stat().st_size for p in (db, tmp_path / "small.db-wal") if p.exists())
    result = CliRunner().invoke(main, ["--db", str(db), "compact"])
    assert result.exit_code == 0, result.output
    after = sum(p.stat().st_size for p in (db, tmp_path / "small.db-wal") if p.exists())
    before_text, after_text = result.output.split(" in ")[0].split(" -> ")
    assert before_text == f"{on_disk / 1e3:.0f} kB" and after_text == f"{after / 1e3:.0f} kB"
    assert after > on_disk and "planner's statistics" in result.output  # new stat tables
    again = CliRunner().invoke(main, ["--db", str(db), "compact"])  # they are there now
    assert again.exit_code == 0 and "larger" not in again.output


@pytest.mark.backends
def test_compact_on_postgresql_is_a_clear_error(mem: Memory, backend: str) -> None:
    from remd.errors import StoreError

    mem.save("The spare key is with the neighbour at number 12")
    if backend == "postgres":
        with pytest.raises(StoreError, match="SQLite file"):
            mem.compact()
    else:
        before, after = mem.compact()
        assert before > 0 and after > 0
    assert mem.recent(5)[0].content.startswith("The spare key")
