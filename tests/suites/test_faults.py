"""File and disk faults, and fuzzed input at the storage level: clear errors, nothing lost."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remd import InvalidInput, Memory, NotFound, RemdError, StoreError


def _contents(m: Memory) -> list[tuple[object, ...]]:
    return m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")


def _integrity(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


@pytest.fixture
def immutable(db_path: Path) -> Iterator[Path]:
    """A database file the OS refuses to write (chattr +i works even for root)."""
    with Memory(db_path, embedder=None) as m:
        m.save("the boiler was serviced in March")
    if shutil.which("chattr") is None:
        pytest.skip("chattr not available")
    if subprocess.run(["chattr", "+i", str(db_path)], capture_output=True).returncode != 0:
        pytest.skip("filesystem does not support the immutable attribute")
    try:
        yield db_path
    finally:
        subprocess.run(["chattr", "-i", str(db_path)], check=True)


def test_read_only_file_reads_work_and_writes_fail_clearly(immutable: Path) -> None:
    with Memory(immutable, embedder=None) as m:
        assert [n.content for n in m.recent()] == ["the boiler was serviced in March"]
        with pytest.raises(StoreError, match="read-only"):
            m.save("this cannot be written")
        assert len(_contents(m)) == 1


def test_full_database_fails_cleanly_without_partial_writes(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        m.save("a memory written before the disk filled up")
        before = _contents(m)
        pages = m.store.scalar("PRAGMA page_count")
        # The pragma is per connection: hold one for the writes.
        with m.store.connection() as conn, pytest.raises(StoreError, match="full"):
            conn.execute(f"PRAGMA max_page_count = {int(pages) + 2}")
            m.save_many([f"bulk memory number {i} " + "padding words " * 40
                         for i in range(400)])
        assert _contents(m) == before
        assert m.stats().tags == m.store.scalar("SELECT count(*) FROM tags")
    assert _integrity(db_path) == "ok"
    with Memory(db_path, embedder=None) as m:  # the file is usable again afterwards
        m.save("after the disk was freed")
        assert len(_contents(m)) == 2


def test_corrupt_file_gives_a_clear_error(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        m.save_many([f"memory {i} about the garden shed" for i in range(300)])
    size = os.path.getsize(db_path)
    with open(db_path, "r+b") as fh:  # scribble over the b-tree pages, keep the header
        fh.seek(4096 * 2)
        fh.write(random.Random(0).randbytes(min(size - 8192, 4096 * 20)))
    # Opening checks the schema, which reads the scribbled pages: a one-line typed error
    # naming the file, never an apsw traceback (and nothing is written into it).
    with pytest.raises(StoreError, match=r"agent\.db' is corrupt"), \
            Memory(db_path, embedder=None) as m:
        m.recent(1000)
        m.store.query("SELECT * FROM nodes")
        m.save("write into a corrupt file")


def test_wal_and_shm_are_private(db_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with Memory(db_path, embedder=None) as m:
            m.save("secret-ish memory")
            for suffix in ("", "-wal", "-shm"):
                mode = stat.S_IMODE(os.stat(str(db_path) + suffix).st_mode)
                assert mode == 0o600, (suffix, oct(mode))
    finally:
        os.umask(old)


_odd_text = st.one_of(
    st.text(min_size=0, max_size=200),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50),
    st.sampled_from(["\x00", "\ud800", "'; DROP TABLE nodes; --", "\u202eRTL override",
                     "emoji 🧠💾🔥", "[[memory:]]", "[[memory:x]] supersedes", "   ",
                     "my  is ", "my city is ?", "SELECT * FROM nodes WHERE 1=1"]),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=_odd_text, tags=st.one_of(st.none(), st.lists(_odd_text, max_size=3)),
       ns=st.one_of(st.just("default"), st.text(max_size=70)))
def test_fuzzed_saves_work_or_raise_typed_errors(tmp_path_factory: pytest.TempPathFactory,
                                                  text: str, tags: list[str] | None,
                                                  ns: str) -> None:
    path = tmp_path_factory.mktemp("fz") / "f.db"
    try:
        m = Memory(path, ns, embedder=None)
    except InvalidInput:
        return
    with m:
        m.save("anchor memory that must survive")
        before = _contents(m)
        try:
            node = m.save(text, tags=tags)
        except InvalidInput:
            assert _contents(m) == before
        else:
            assert m.get(node.id).content == text.strip()
            assert len(_contents(m)) == len(before) + 1
        with contextlib.suppress(NotFound, InvalidInput):
            m.get(text)
        assert _contents(m)[0][1] == "anchor memory that must survive"
    assert _integrity(path) == "ok"


def test_one_megabyte_text_is_refused_with_a_typed_error(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        mem.save("x" * 1_000_000)
    assert mem.stats().nodes == 0


def test_every_error_is_a_remd_error() -> None:
    import remd.errors as errors

    for name in dir(errors):
        obj = getattr(errors, name)
        if (isinstance(obj, type) and issubclass(obj, Exception)
                and obj.__module__ == errors.__name__):
            assert issubclass(obj, RemdError)
