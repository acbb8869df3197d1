from __future__ import annotations

import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import apsw
import pytest

from remd import Memory, SchemaVersionError, StoreError
from remd.config import StoreConfig
from remd.errors import DatabaseLocked, ReadOnlyStore
from remd.store.backends import open_store
from remd.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, schema_sql
from remd.store.sqlite.store import Store, connect
from remd.store.sqlite.walfiles import check_writable
from tests.suites.test_contract_readers import as_user

pytestmark = pytest.mark.backends


@pytest.mark.sqlite_only("file modes, WAL, sqlite-vec")
def test_new_file_is_private_wal_with_vec_loaded(db_path: Path) -> None:
    store = Store(db_path, StoreConfig())
    with store.transaction() as conn:
        conn.execute("INSERT INTO remd_meta (key, value) VALUES ('probe', 'x')")
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o600
    for suffix in ("-wal", "-shm"):
        assert stat.S_IMODE(os.stat(str(db_path) + suffix).st_mode) == 0o600
    assert store.scalar("PRAGMA journal_mode") == "wal"
    assert store.scalar("PRAGMA foreign_keys") == 1
    assert store.scalar("SELECT vec_version()").startswith("v0.1")
    names = [r[0] for r in store.query("SELECT name FROM remd_migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]
    assert store.schema_version() == SCHEMA_VERSION
    store.close()


@pytest.mark.sqlite_only("schema.sql and sqlite_master")
def test_schema_applied_from_schema_sql(db_path: Path) -> None:
    text = schema_sql()
    store = Store(db_path, StoreConfig())
    tables = {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type='table'")}
    for table in ("nodes", "tags", "node_tags", "tag_edges", "tag_parents", "edges",
                  "node_vec_bit", "node_fts", "access_log", "packs", "pack_items", "feedback",
                  "rem_runs", "rem_clusters", "remd_migrations", "remd_meta", "tag_log",
                  "node_log"):
        assert table in tables
        assert table in text
    assert "node_vec" not in tables  # vectors are stored once (migration 0008)
    store.close()


def old_file(path: Path, upto: str) -> None:
    """A file as remd left it when ``upto`` was its newest migration: each migration's own
    SQL, recorded by name, as that version's store applied them."""
    conn = connect(path, StoreConfig())
    with conn:
        for name, step in MIGRATIONS:
            step(conn)
            conn.execute("INSERT INTO remd_migrations (name, applied_at) VALUES (?, ?)",
                         (name, "2026-01-01T00:00:00"))
            if name == upto:
                break
    conn.close()


def shape(path: Path) -> dict[tuple[str, str], Any]:
    """The schema as SQLite sees it: every table's columns, every index's columns and
    condition, every trigger's text (white space folded)."""
    conn = connect(path, StoreConfig())
    out: dict[tuple[str, str], Any] = {}
    for kind, name, sql in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
        if kind == "table":
            out[kind, name] = conn.execute(f"PRAGMA table_xinfo('{name}')").fetchall()
        elif kind == "index":
            out[kind, name] = (conn.execute(f"PRAGMA index_xinfo('{name}')").fetchall(),
                               " ".join((sql or "").split()))
        else:
            out[kind, name] = " ".join(sql.split())
    conn.close()
    return out


def test_a_new_file_has_the_schema_of_one_migrated_from_version_1(tmp_path: Path) -> None:
    fresh, old = tmp_path / "fresh.db", tmp_path / "old.db"
    Store(fresh, StoreConfig()).close()
    old_file(old, "0001_initial")
    store = Store(old, StoreConfig())
    assert store.applied() == [name for name, _ in MIGRATIONS]
    store.close()
    want, got = shape(fresh), shape(old)
    assert set(want) == set(got)
    assert {k: v for k, v in got.items() if want[k] != v} == {}


@pytest.mark.sqlite_only("SQLite migrations")
def test_0016_keys_node_tags_by_memory_and_keeps_every_row(db_path: Path) -> None:
    """A file at 0015 (node_tags keyed (tid, rid), a covering index by rid) opens with every
    memory-tag row, its weight and live flag, keyed (rid, tid) with no second index by rid;
    the live-flag triggers still follow the memory's status."""
    old_file(db_path, "0015_synthesis_clauses")
    conn = connect(db_path, StoreConfig())
    with conn:
        conn.execute("INSERT INTO tags (tid, namespace, name, df, created_at) VALUES "
                     "(1, 'default', 'garden', 2, 0), (2, 'default', 'shed', 1, 0)")
        for rid, status in ((1, "live"), (2, "superseded")):
            conn.execute("INSERT INTO nodes (rid, id, namespace, kind, content, status, "
                         "created_at, last_access, tokens) VALUES (?, ?, 'default', "
                         "'episodic', 'The shed key is under the pot', ?, 0, 0, 8)",
                         (rid, f"m{rid}", status))
        conn.execute("INSERT INTO node_tags (namespace, tid, rid, weight) VALUES "
                     "('default', 1, 1, 0.75), ('default', 2, 1, 1.0), ('default', 1, 2, 0.5)")
    before = sorted(conn.execute("SELECT rid, tid, weight, live, namespace FROM node_tags"))
    conn.close()
    store = Store(db_path, StoreConfig())
    with store.snapshot() as c:
        after = sorted(c.execute("SELECT rid, tid, weight, live, namespace FROM node_tags"))
        pk = [r[2] for r in c.execute("PRAGMA index_xinfo('sqlite_autoindex_node_tags_1')")][:2]
        indexes = {r[1] for r in c.execute("PRAGMA index_list('node_tags')")}
    assert after == before == [(1, 1, 0.75, 1, "default"), (1, 2, 1.0, 1, "default"),
                               (2, 1, 0.5, 0, "default")]
    assert pk == ["rid", "tid"]
    assert indexes == {"sqlite_autoindex_node_tags_1", "node_tags_live_top"}
    with store.transaction() as c:
        c.execute("UPDATE nodes SET status = 'forgotten' WHERE rid = 1")
    assert store.scalar("SELECT sum(live) FROM node_tags") == 0
    store.close()


@pytest.mark.sqlite_only("SQLite migrations")
def test_migrations_are_applied_by_name(db_path: Path) -> None:
    """remd_migrations is read: a file that records every migration but one gets that one."""
    old_file(db_path, MIGRATIONS[-1][0])
    conn = connect(db_path, StoreConfig())
    with conn:  # undo 0008 by hand: node_vec back, the index gone, the record gone
        conn.execute("DROP INDEX nodes_ns_saved")
        conn.execute("CREATE VIRTUAL TABLE node_vec USING vec0 (namespace TEXT PARTITION KEY, "
                     "embedding FLOAT[384] distance_metric=cosine)")
        conn.execute("DELETE FROM remd_migrations WHERE name = '0008_vectors_once'")
    conn.close()
    store = Store(db_path, StoreConfig())
    assert store.applied()[-1] == "0008_vectors_once"
    assert store.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'node_vec'") == 0
    assert store.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'nodes_ns_saved'") == 1
    store.close()


@pytest.mark.sqlite_only("SQLite migrations")
def test_a_file_at_0009_gets_sentence_vectors_through_the_backlog(db_path: Path) -> None:
    long = "We went camping last weekend. The kids loved the campfire. Work was hectic."
    with Memory(db_path) as m:
        m.save(long)
        m.save("One sentence only")
    conn = connect(db_path, StoreConfig())
    with conn:  # as a 0009 file was: no sentence table
        conn.execute("DROP TABLE sentence_vec")
        conn.execute("DELETE FROM remd_migrations WHERE name = '0010_sentence_vectors'")
    conn.close()
    with Memory(db_path) as m:
        assert m.store.applied()[-1] == "0010_sentence_vectors"
        pending = m.store.query("SELECT content FROM nodes WHERE embedded = 0")
        assert [r[0] for r in pending] == [long]  # back in the backlog; its vector stays
        assert m.store.scalar("SELECT count(*) FROM node_vec_bit") == 2
        assert m.embed_pending() == 1
        assert m.store.scalar("SELECT count(*) FROM sentence_vec") == 3
        assert m.inject("camping", 50, fill=True).items[0].content == long


@pytest.mark.sqlite_only("SQLite migrations")
def test_a_file_at_0008_gets_rem_holds_and_its_runs_keep_their_rows(db_path: Path) -> None:
    from remd.sleep.remruns import get_run
    from tests.sleep.test_rem import NOW, fragments, old_lines

    old_file(db_path, "0008_vectors_once")
    conn = connect(db_path, StoreConfig())
    with conn:
        conn.execute("INSERT INTO rem_runs (run_id, namespace, status, started_at, flagged, "
                     "synthesiser, model, prompt_version) VALUES ('rem_old', 'default', "
                     "'completed', 1.0, 7, 'offline', 'offline', 'offline-1')")
    conn.close()
    with Memory(db_path, clock=lambda: NOW) as m:
        assert "0009_rem_holds" in m.store.applied()
        old = get_run(m.engine, "default", "rem_old")
        assert (old.flagged, old.held, old.status.value) == (7, 0, "completed")
        m.import_lines(old_lines(fragments(1)))
        run = m.run_rem(now=NOW)
        held = m.rollback(run.run_id or "").held
        # (a cluster the run left alone is held too: the dry run counts both)
        assert 0 < held <= run.flagged and m.run_rem(now=NOW, dry_run=True).held >= held


@pytest.mark.sqlite_only("SQLite migrations")
def test_a_file_at_0010_gets_namespace_on_every_memory_table(db_path: Path) -> None:
    """Migration 0011 copies each row's namespace from what it belongs to (memory, tag, pack,
    run), in two namespaces; the memories then work as before, and new rows carry it."""
    old_file(db_path, "0010_sentence_vectors")
    conn = connect(db_path, StoreConfig())
    with conn:
        for k, ns in enumerate(("alpha", "beta")):
            a, b, rid = 10 * k + 1, 10 * k + 2, k + 1
            conn.execute("INSERT INTO nodes (rid, id, namespace, kind, content, created_at, "
                         "last_access, tokens) VALUES (?, ?, ?, 'episodic', ?, 0, 0, 5)",
                         (rid, f"n{rid}", ns, f"Notes about the {ns} garden"))
            conn.execute("INSERT INTO node_fts (rowid, content) VALUES (?, ?)",
                         (rid, f"Notes about the {ns} garden"))
            conn.executemany("INSERT INTO tags (tid, namespace, name, df, created_at) "
                             "VALUES (?, ?, ?, 1, 0)", [(a, ns, "garden"), (b, ns, ns)])
            conn.executemany("INSERT INTO node_tags (tid, rid, weight) VALUES (?, ?, 1.0)",
                             [(a, rid), (b, rid)])
            conn.executemany("INSERT INTO tag_edges (src, dst, count, weight) "
                             "VALUES (?, ?, 1, 0.5)", [(a, b), (b, a)])
            conn.execute("INSERT INTO tag_parents (child, parent) VALUES (?, ?)", (b, a))
            conn.execute("INSERT INTO packs (pack_id, namespace, query, budget, tokens_used, "
                         "created_at) VALUES (?, ?, 'garden', 100, 5, 0)", (f"p{k}", ns))
            conn.execute("INSERT INTO pack_items (pack_id, rank, rid, score, tokens, "
                         "importance, path) VALUES (?, 0, ?, 1.0, 5, 0.5, '[]')", (f"p{k}", rid))
            conn.execute("INSERT INTO feedback (pack_id, accepted, at) VALUES (?, 1.0, 0)",
                         (f"p{k}",))
            conn.execute("INSERT INTO rem_runs (run_id, namespace, status, started_at, "
                         "synthesiser, model, prompt_version) VALUES (?, ?, 'completed', 1.0, "
                         "'offline', 'offline', 'offline-1')", (f"r{k}", ns))
            conn.execute("INSERT INTO rem_clusters (run_id, cluster_no, status, members) "
                         "VALUES (?, 0, 'skipped', '[]')", (f"r{k}",))
    conn.close()
    with Memory(db_path, namespace="beta") as m:
        assert "0011_namespace_everywhere" in m.store.applied()
        q = m.store.query
        for table, key in (("node_tags", "rid"), ("tag_edges", "src"), ("tag_parents", "child"),
                           ("pack_items", "pack_id"), ("feedback", "pack_id"),
                           ("rem_clusters", "run_id")):
            got = q(f"SELECT {key}, namespace FROM {table} ORDER BY {key}")
            assert {str(ns) for _, ns in got} == {"alpha", "beta"}, table
            assert not q(f"SELECT 1 FROM {table} WHERE namespace = ''"), table
        assert q("SELECT namespace, count(*) FROM node_tags GROUP BY namespace") == [
            ("alpha", 2), ("beta", 2)]
        assert m.inject("garden", 100, fill=True).items[0].id == "n2"
        saved = m.save("The beta garden gets a new fence", tags=["garden"])
        assert "garden" in saved.tags
        assert q("SELECT DISTINCT namespace FROM node_tags WHERE rid > 2") == [("beta",)]
        assert m.merge_tags("beta", "garden") == "garden"
        assert m.forget(saved.id).status.value == "forgotten"
        assert q("SELECT DISTINCT nt.live FROM node_tags nt JOIN nodes n ON n.rid = nt.rid "
                 "WHERE n.id = ?", (saved.id,)) == [(0,)]  # the live mirror follows
        assert q("SELECT count(*) FROM tag_edges WHERE namespace = 'alpha'") == [(2,)]


def test_newer_database_is_refused(db_path: Path) -> None:
    store = open_store(db_path, StoreConfig())
    with store.transaction() as conn:
        # A migration this code does not know: the file was written by a newer remd.
        conn.execute("INSERT INTO remd_migrations (name, applied_at) VALUES (?, ?)",
                     (f"{SCHEMA_VERSION + 1:04d}_from_the_future", "2030-01-01T00:00:00"))
    store.close()
    with pytest.raises(SchemaVersionError, match="newer than this remd"):
        open_store(db_path, StoreConfig())


def test_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_bytes(b"this is not sqlite at all" * 100)
    before = bogus.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        Memory(bogus)
    assert bogus.read_bytes() == before


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE things (x)")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="not a remd one"):
        Store(other, StoreConfig())
    con = sqlite3.connect(other)
    assert con.execute("SELECT name FROM sqlite_master").fetchall() == [("things",)]


class _LateStore(Store):
    """A Store whose first version read is taken just before another agent migrates the
    file: the interleaving that made two agents opening a new file together fail."""

    reads = 0

    def _recorded(self, conn: apsw.Connection) -> list[str]:
        names = super()._recorded(conn)
        _LateStore.reads += 1
        if _LateStore.reads == 1:
            Store(self.path, self.config).close()  # the other agent wins the race
        return names


@pytest.mark.sqlite_only("the SQLite store's migration race")
def test_an_agent_that_loses_the_race_to_migrate_a_new_file_opens_it(db_path: Path) -> None:
    store = _LateStore(db_path, StoreConfig())
    assert _LateStore.reads >= 2  # it read a stale 0, then decided again under the lock
    assert store.schema_version() == SCHEMA_VERSION
    names = [r[0] for r in store.query("SELECT name FROM remd_migrations ORDER BY name")]
    assert names == [name for name, _ in MIGRATIONS]  # applied once, by the winner
    store.close()


def test_agents_opening_a_new_file_together_all_succeed(tmp_path: Path) -> None:
    for round_no in range(6):
        path = tmp_path / f"new-{round_no}.db"
        start = threading.Barrier(6)

        def open_it(_: int, path: Path = path, start: threading.Barrier = start) -> int:
            start.wait()
            store = Store(path, StoreConfig())
            try:
                return store.schema_version()
            finally:
                store.close()

        with ThreadPoolExecutor(6) as pool:
            assert list(pool.map(open_it, range(6))) == [SCHEMA_VERSION] * 6


def test_transaction_rolls_back_on_error(db_path: Path) -> None:
    store = open_store(db_path, StoreConfig())
    with pytest.raises(RuntimeError), store.transaction() as conn:
        conn.execute("INSERT INTO remd_meta (key, value) VALUES ('a', '1')")
        raise RuntimeError("boom")
    assert store.scalar("SELECT count(*) FROM remd_meta WHERE key = 'a'") == 0


def test_nested_transaction_is_a_savepoint(db_path: Path) -> None:
    store = open_store(db_path, StoreConfig())
    with store.transaction() as conn:
        conn.execute("INSERT INTO remd_meta (key, value) VALUES ('outer', '1')")
        with pytest.raises(ValueError), store.transaction() as inner:
            inner.execute("INSERT INTO remd_meta (key, value) VALUES ('inner', '1')")
            raise ValueError
    keys = {r[0] for r in store.query("SELECT key FROM remd_meta")}
    assert "outer" in keys and "inner" not in keys


@pytest.mark.sqlite_only("SQLite's write lock")
def test_locked_database_gives_typed_error_and_changes_nothing(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        m.save("the staging server is called kestrel")
    holder = apsw.Connection(str(db_path))
    holder.execute("BEGIN IMMEDIATE")
    try:
        cfg = StoreConfig(busy_timeout_ms=50, lock_retries=1)
        from remd import Config

        with Memory(db_path, config=Config(store=cfg), embedder=None) as m2:
            with pytest.raises(DatabaseLocked, match="locked"):
                m2.save("this write must wait")
            assert [n.content for n in m2.recent(10)] == ["the staging server is called kestrel"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.sqlite_only("the file read by stdlib sqlite3")
def test_integrity_check_with_stdlib_sqlite(db_path: Path) -> None:
    with Memory(db_path) as m:
        m.save_many([f"note {i} about the harbour project" for i in range(20)])
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _fill(store: Store, rows: int, size: int = 3000) -> None:
    for i in range(rows):
        with store.transaction() as conn:
            conn.execute("INSERT INTO remd_meta (key, value) VALUES (?, ?)", (f"k{i}", "x" * size))


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("remd-checkpoint:")]


@pytest.mark.sqlite_only("the WAL")
def test_wal_is_checkpointed_on_a_background_thread(db_path: Path) -> None:
    store = Store(db_path, StoreConfig(checkpoint_pages=16))
    assert store.checkpointer is not None
    _fill(store, 300)
    deadline = time.monotonic() + 30
    while store.checkpointer.runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.checkpointer.runs >= 1
    assert [t.name for t in _checkpoint_threads()] == [f"remd-checkpoint:{db_path}"]
    # Everything committed is in the file, read by another library's connection, in another
    # process: two copies of SQLite in one process must not open one WAL database (SQLite's
    # "how to corrupt", 2.2.1): closing, the stdlib's takes itself for the last connection
    # and truncates the WAL index under apsw's. In this process it crashed the checkpoint
    # thread with SIGBUS now and then (2 of 13 full-suite runs on 2026-11-25).
    read = ("import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
            "\"SELECT count(*) FROM remd_meta WHERE key LIKE 'k%'\").fetchone()[0])")
    other = subprocess.run([sys.executable, "-c", read, str(db_path)], capture_output=True,
                           text=True, check=True, timeout=60)
    assert other.stdout.strip() == "300"
    store.close()
    assert not _checkpoint_threads()


@pytest.mark.parametrize("pages", [0, 100_000])
@pytest.mark.sqlite_only("the WAL")
def test_commits_no_longer_checkpoint_themselves(db_path: Path, pages: int) -> None:
    """SQLite's own checkpoint (pages=0) keeps the WAL near 1000 pages; with the hook a commit
    never copies pages itself, so below the hook's threshold the WAL keeps growing."""
    store = Store(db_path, StoreConfig(checkpoint_pages=pages))
    page = store.scalar("PRAGMA page_size")
    _fill(store, 2500)  # ~2500 pages of WAL
    wal_pages = os.path.getsize(f"{db_path}-wal") // page
    if pages == 0:
        assert store.checkpointer is None
        assert wal_pages < 1300
    else:
        assert store.checkpointer is not None and store.checkpointer.runs == 0
        assert not _checkpoint_threads()  # started by the first commit past the threshold
        assert wal_pages > 2000
    assert store.scalar("SELECT count(*) FROM remd_meta WHERE key LIKE 'k%'") == 2500
    store.close()


# -- a file deleted or replaced under an open store ----------------------------------------
def _remove(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


@pytest.mark.sqlite_only("the file at the path")
def test_a_deleted_file_refuses_every_write_and_read_naming_it(db_path: Path) -> None:
    """Writes would go to the unlinked file and be lost at close: each is refused, rolled
    back, with the path in the message; reads fail the same way (the choice: a read would
    answer from a file nobody can open again), and no new empty file appears."""
    named = f"{re.escape(str(db_path))}.*deleted"
    with Memory(db_path, embedder=None) as m:
        m.save("saved while the file was there")
        _remove(db_path)
        for n in range(3):
            with pytest.raises(StoreError, match=named) as refused:
                m.save(f"save number {n} after the file was deleted")
            assert type(refused.value) is StoreError
        with pytest.raises(StoreError, match=named):
            m.recent()
        with pytest.raises(StoreError, match="deleted"), m.store.transaction() as conn:
            conn.execute("INSERT INTO remd_meta (key, value) VALUES ('k', 'v')")
    assert not [p.name for p in db_path.parent.glob(db_path.name + "*")]


@pytest.mark.sqlite_only("the file at the path")
def test_a_replaced_file_refuses_writes_and_the_new_file_keeps_only_its_own(
        db_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with Memory(other, embedder=None) as o:
        kept = o.save("the memory of the file renamed over the path").id
    with Memory(db_path, embedder=None) as m:
        m.save("the memory of the file that was replaced")
        os.replace(other, db_path)
        with pytest.raises(StoreError, match=f"{re.escape(str(db_path))}.*replaced"):
            m.save("a save after the file was replaced")
        with pytest.raises(StoreError, match="replaced"):
            m.recent()
    with Memory(db_path, embedder=None) as again:  # the file now at the path, untouched
        assert [n.id for n in again.recent()] == [kept]


@pytest.mark.sqlite_only("the file at the path")
def test_a_file_moved_away_keeps_every_acknowledged_memory(db_path: Path,
                                                           tmp_path: Path) -> None:
    """Moved away while open (the -wal left at the old path): saves after it are refused, and
    at close the store copies its WAL into the moved file, which SQLite's close would not."""
    moved = tmp_path / "moved.db"
    with Memory(db_path, embedder=None) as m:
        acked = [m.save(f"memory number {n} saved before the move").id for n in range(5)]
        os.rename(db_path, moved)
        with pytest.raises(StoreError, match="moved away"):
            m.save("a save after the move")
    assert os.path.getsize(f"{db_path}-wal") == 0  # copied into the moved file
    _remove(db_path)  # the -wal and -shm left at the old path
    with Memory(moved, embedder=None) as m:
        assert sorted(n.id for n in m.recent(10)) == sorted(acked)


# -- would a write be accepted (what /readyz asks) -------------------------------------------
def _chattr(flag: str, *paths: Path) -> None:
    if subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode:
        pytest.skip("chattr refused here")


@pytest.mark.sqlite_only("file attributes")
def test_check_writable_names_the_file_that_blocks_a_write(db_path: Path) -> None:
    store = Store(db_path, StoreConfig())
    store.check_writable()  # a new file: writable
    store.close()  # the -wal and -shm are kept
    shm = Path(f"{db_path}-shm")
    _chattr("+i", shm)
    try:
        with pytest.raises(ReadOnlyStore, match="agent.db-shm is marked immutable"):
            store.check_writable()
    finally:
        _chattr("-i", shm)
    for side in ("-wal", "-shm"):  # no process has it open: SQLite would make them anew ...
        Path(f"{db_path}{side}").unlink()
    _chattr("+i", db_path.parent)  # ... in a directory that cannot take them
    try:
        with pytest.raises(ReadOnlyStore, match="agent.db-wal is missing and its directory"):
            check_writable(str(db_path))
    finally:
        _chattr("-i", db_path.parent)
    check_writable(str(db_path))


def test_check_writable_names_a_file_this_user_may_not_write(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the check as another user")
    where = Path(tempfile.mkdtemp(prefix="remd-writable-"))
    try:
        where.chmod(0o755)
        db = where / "agent.db"
        Store(db, StoreConfig()).close()
        for path in where.iterdir():
            path.chmod(0o644)

        def check() -> str:
            try:
                check_writable(str(db))
            except ReadOnlyStore as exc:
                return str(exc)
            return "writable"

        said = as_user("nobody", check)
        assert "cannot be written by this user (mode 0644, owned by user root)" in said
    finally:
        shutil.rmtree(where)
