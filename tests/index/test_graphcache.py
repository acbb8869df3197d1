"""The in-process caches of inject (tag graph, node mirror) against SQLite itself.

Writes come from a second connection, as another agent process's would: saves, bulk saves,
facts that supersede, forgets, feedback, tag renames and merges, REM runs and their rollbacks,
imports. After each, the reader injects (which brings its caches to its snapshot) and every
cached row is compared with a fresh SQL read in the same snapshot.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import remd.store.base as store_base
from remd import Config, Memory
from remd.index import graphcache
from remd.index.nodemirror import GONE, KINDS, STATUS
from remd.store import is_url
from tests.sleep.test_rem import NOW, fragments, old_lines

pytestmark = pytest.mark.backends


@pytest.fixture(autouse=True)
def _cache_small_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """These namespaces are small; the cache keeps rows only from CACHE_FROM memories on.
    Keep them here too, so every check below compares real cached rows with SQL's."""
    monkeypatch.setattr(graphcache, "CACHE_FROM", 0)


def test_a_small_namespace_keeps_no_rows_and_a_large_one_does(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graphcache, "CACHE_FROM", 30)
    with Memory(db_path, embedder=None) as m:
        m.save_many([sentence(random.Random(i)) for i in range(20)])
        first = m.inject("garden tomato harbour", 300)
        cache = m.engine.caches.view(m.namespace).graph
        assert not cache.keeping and not cache.edges and not cache.members
        m.save_many([sentence(random.Random(100 + i)) for i in range(20)])
        m.inject("garden tomato harbour", 300)
        assert cache.keeping and cache.edges and cache.members and cache.nbytes() > 0
        assert check_cache(m) > 0
        assert first.items


WORDS = ["garden", "tomato", "harbour", "ferry", "violin", "concert", "budget", "invoice",
         "marathon", "knee", "doctor", "sister", "birthday", "cake", "kayak", "river", "python",
         "deploy", "server", "outage", "coffee", "bakery"]


def check_cache(m: Memory) -> int:
    """Every cached row equals SQL's in one snapshot; returns how many entries were checked."""
    cache = m.engine.caches.view(m.namespace).graph
    checked = 0
    with m.store.snapshot() as conn:
        cache.sync(conn)
        for tid, rows in cache.edges.items():
            want = conn.execute("SELECT dst, weight FROM tag_edges WHERE src = ? "
                                "ORDER BY weight DESC, dst LIMIT ?", (tid, rows.limit)).fetchall()
            assert list(zip(rows.ids, rows.weights, strict=True)) == want, f"edges of {tid}"
            checked += 1
        for tid, rows in cache.members.items():
            want = conn.execute("SELECT rid, weight FROM node_tags WHERE tid = ? AND live = 1 "
                                "ORDER BY weight DESC, rid DESC LIMIT ?",
                                (tid, rows.limit)).fetchall()
            assert list(zip(rows.ids, rows.weights, strict=True)) == want, f"members of {tid}"
            checked += 1
        for tid, info in cache.info.items():
            row = conn.execute("SELECT name, df FROM tags WHERE tid = ?", (tid,)).fetchone()
            assert row is not None and info == (row[0], row[1]), f"tag {tid}"
            checked += 1
    return checked


def check_terms(m: Memory) -> int:
    """Every cached FTS5 posting count equals a fresh capped count in the same snapshot."""
    counts = m.engine.caches.terms
    with m.store.snapshot() as conn:
        counts.sync(conn, m.namespace)
        for (scope, stem, cap), n in counts.counts.items():
            if is_url(m.store.path):  # PostgreSQL's term index of the namespace, by stem
                assert scope == m.namespace
                row = conn.execute("SELECT count(*) FROM (SELECT 1 FROM node_terms "
                                   "WHERE namespace = ? AND stem = ? LIMIT ?) AS t",
                                   (scope, stem, cap + 1)).fetchone()
            else:  # the file's FTS5 index
                assert scope == ""
                row = conn.execute("SELECT count(*) FROM (SELECT 1 FROM node_fts "
                                   "WHERE node_fts MATCH ? LIMIT ?)",
                                   (counts.words[(scope, stem, cap)], cap + 1)).fetchone()
            assert n == row[0], f"postings of {stem!r}"
    return len(counts.counts)


def check_mirror(m: Memory) -> int:
    """The node mirror holds exactly the namespace's rows, with SQL's values."""
    mirror = m.engine.caches.view(m.namespace).mirror
    with m.store.snapshot() as conn:
        mirror.refresh(conn)
        rows = conn.execute(
            "SELECT rid, kind, status, created_at, importance, tokens, valid_until FROM nodes "
            "WHERE namespace = ? ORDER BY rid", (m.namespace,)).fetchall()
    n = mirror.n
    present = mirror.status[:n] != GONE
    assert mirror.rid[:n][present].tolist() == [r[0] for r in rows]
    assert np.all(np.diff(mirror.rid[:n]) > 0)
    got = list(zip(mirror.kind[:n][present].tolist(), mirror.status[:n][present].tolist(),
                   mirror.created[:n][present].tolist(),
                   mirror.importance[:n][present].tolist(),
                   mirror.tokens[:n][present].tolist(),
                   mirror.until[:n][present].tolist(), strict=True))
    want = [(KINDS[k], STATUS[s], c, i, t, float("inf") if u is None else u)
            for _, k, s, c, i, t, u in rows]
    assert got == want
    with m.store.snapshot() as conn:
        for rid, (pairs, tids) in mirror._tags.items():
            sql = conn.execute("SELECT tid, weight FROM node_tags WHERE rid = ? "
                               "ORDER BY weight DESC, tid", (rid,)).fetchall()
            assert list(pairs) == sql, f"tags of {rid}"
            assert tids == {tid for tid, _ in sql}
    return len(rows)


def same_pack(warm: Memory, query: str, budget: int) -> bool:
    """The warm reader's pack equals a cold reader's (a new connection, empty caches)."""
    with Memory(warm.store.path, config=warm.config, embedder=None, clock=warm.clock) as cold:
        want = [(i.id, round(i.score, 9), i.tokens) for i in cold.inject(query, budget).items]
    got = [(i.id, round(i.score, 9), i.tokens) for i in warm.inject(query, budget).items]
    assert got == want
    return True


def sentence(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(3, 7))).capitalize() + "."


@pytest.fixture
def pair(db_path: Path) -> Iterator[tuple[Memory, Memory]]:
    """A reader and a writer on the same file, each with its own connection."""
    config = Config()
    with Memory(db_path, config=config, embedder=None, clock=lambda: NOW) as reader, \
            Memory(db_path, config=config, embedder=None, clock=lambda: NOW) as writer:
        yield reader, writer


def write_something(rng: random.Random, writer: Memory, reader: Memory, runs: list[str]) -> str:
    op = rng.choice(["save", "save", "save_many", "fact", "forget", "feedback", "rename",
                     "merge", "rem", "rollback", "import"])
    if op == "save":
        writer.save(sentence(rng))
    elif op == "save_many":
        writer.save_many([sentence(rng) for _ in range(rng.randint(2, 12))])
    elif op == "fact":
        writer.save(f"My favourite city is {rng.choice(['Oslo', 'Lima', 'Porto', 'Hanoi'])}")
    elif op == "forget":
        recent = writer.recent(20)
        if recent:
            writer.forget(rng.choice(recent).id)
    elif op == "feedback":
        pack = reader.inject(sentence(rng), 200)
        writer.feedback(pack.pack_id, rng.random())
    elif op in ("rename", "merge"):
        names = [str(r[0]) for r in writer.store.query(
            "SELECT name FROM tags WHERE namespace = ? AND df > 0 ORDER BY tid", ("default",))]
        if len(names) >= 2:
            a, b = rng.sample(names, 2)
            if op == "rename":
                writer.rename_tag(a, f"{a}-{rng.randint(0, 9999)}")
            else:
                writer.merge_tags(a, b)
    elif op == "rem":
        run = writer.run_rem(now=NOW)
        if run.run_id and run.synthesised:
            runs.append(run.run_id)
    elif op == "rollback" and runs:
        writer.rollback(runs.pop())
    elif op == "import":
        writer.import_lines(old_lines(fragments(rng.randint(1, 2))), embed=False)
    return op


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.soak),
                                  pytest.param(3, marks=pytest.mark.soak)])
@pytest.mark.slow
def test_caches_match_sqlite_after_every_kind_of_write(pair: tuple[Memory, Memory],
                                                       seed: int) -> None:
    reader, writer = pair
    rng = random.Random(seed)
    writer.import_lines(old_lines(fragments(2)), embed=False)
    writer.save_many([sentence(rng) for _ in range(40)])
    runs: list[str] = []
    ops: set[str] = set()
    checked = 0
    for _ in range(45):
        ops.add(write_something(rng, writer, reader, runs))
        query, budget = sentence(rng), rng.choice([64, 256, 1024])
        reader.inject(query, budget)  # fills and uses the caches
        checked += check_cache(reader) + check_terms(reader)
        check_mirror(reader)
        assert same_pack(reader, query, budget)
    assert checked > 1000  # the comparisons were not vacuous
    assert {"save", "fact", "rem", "import"} <= ops


def test_a_new_memory_is_injected_at_once_though_its_tags_are_cached(
        pair: tuple[Memory, Memory]) -> None:
    reader, writer = pair
    rng = random.Random(4)
    writer.save_many([sentence(rng) for _ in range(30)])
    writer.save("The harbour ferry timetable changed on Monday.")
    reader.inject("harbour ferry timetable", 300)  # caches the tags' top members
    fresh = writer.save("The harbour ferry now leaves from pier nine.")
    pack = reader.inject("harbour ferry pier", 300)
    assert fresh.id in [i.id for i in pack.items]
    assert same_pack(reader, "harbour ferry pier", 300)
    writer.forget(fresh.id)
    assert all(i.id != fresh.id for i in reader.inject("harbour ferry pier", 300).items)
    assert same_pack(reader, "harbour ferry pier", 300)


def test_a_pruned_log_makes_readers_reload(pair: tuple[Memory, Memory],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    reader, writer = pair
    monkeypatch.setattr(store_base, "LOG_KEEP", 50)  # both stores read it at each commit
    monkeypatch.setattr(store_base, "LOG_STEP", 10)
    rng = random.Random(9)
    writer.save_many([sentence(rng) for _ in range(20)])
    reader.inject("garden tomato", 500)
    mirror = reader.engine.caches.view(reader.namespace).mirror
    loads = mirror.reloads
    for _ in range(80):  # far more log rows than are kept
        writer.save(sentence(rng))
    assert writer.store.scalar("SELECT count(*) FROM tag_log") < 100
    assert writer.store.scalar("SELECT count(*) FROM node_log") < 100
    reader.inject("garden tomato", 500)
    assert mirror.reloads == loads + 1
    assert check_cache(reader) > 0
    assert check_mirror(reader) == 100


def test_caching_off_reads_sqlite_every_time(db_path: Path) -> None:
    config = Config.model_validate({"inject": {"graph_cache_tags": 0}})
    with Memory(db_path, config=config, embedder=None) as m:
        m.save_many([sentence(random.Random(i)) for i in range(20)])
        first = m.inject("garden tomato harbour", 300)
        again = m.inject("garden tomato harbour", 300)
        cache = m.engine.caches.view(m.namespace).graph
        assert not cache.edges and not cache.members and not cache.info
        assert [i.id for i in first.items] == [i.id for i in again.items]
