"""SIGKILL at random moments: nothing acknowledged is lost, the file stays consistent."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remd import Memory

ROOT = Path(__file__).parent.parent


def _spawn(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _kill_and_read(proc: subprocess.Popen[str]) -> str:
    """SIGKILL ``proc`` and return all it wrote to stdout.

    Read through ``proc.stdout`` itself, never ``communicate()``: communicate reads the raw
    pipe and would drop what an earlier ``readline()`` had already buffered (the first ids).
    """
    proc.send_signal(signal.SIGKILL)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    if proc.stderr is not None:
        proc.stderr.read()
    return out


def _integrity(path: Path) -> str:
    con = sqlite3.connect(path)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("mode", ["single", "bulk"])
def test_sigkilled_writers_lose_nothing_acknowledged(db_path: Path, mode: str) -> None:
    rng = random.Random(1234)
    with Memory(db_path, embedder=None):
        pass  # create the schema once, so the children race only on writes
    acknowledged: dict[str, set[str]] = {}
    for round_ in range(4):
        procs = {f"w{round_}{k}": _spawn(["tests.crash_writer", str(db_path), f"w{round_}{k}",
                                          *(["bulk"] if mode == "bulk" else [])])
                 for k in range(2)}
        for proc in procs.values():
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.2, 0.6))  # let them write, then kill at a random moment
        for ns, proc in procs.items():
            out = _kill_and_read(proc)
            assert proc.returncode == -signal.SIGKILL
            # A torn last line was never acknowledged; every complete line was.
            lines = out.split("\n")[:-1]
            acknowledged[ns] = {i for line in lines for i in line.split()}
        assert _integrity(db_path) == "ok"
    total = 0
    for ns, ids in acknowledged.items():
        with Memory(db_path, ns, embedder=None) as m:
            stored = {r[0] for r in m.store.query(
                "SELECT id FROM nodes WHERE namespace = ?", (ns,))}
        assert ids <= stored, f"{len(ids - stored)} acknowledged memories lost in {ns}"
        total += len(ids)
    assert total > 0
    with Memory(db_path, "after", embedder=None) as m:  # still writable
        m.save("the file is fine after the kills")
    assert os.path.getsize(db_path) > 0


# -- SIGKILL during a REM cycle ------------------------------------------------------------------
def _rem_consistent(m: Memory, live_before: set[str]) -> int:
    """The checks a crash must never fail; returns how many synthesis nodes are committed."""
    q = m.store.query
    assert m.store.scalar("PRAGMA integrity_check") == "ok"
    with m.store.transaction() as conn:  # FTS5 checks its index against the nodes table
        conn.execute("INSERT INTO node_fts (node_fts, rank) VALUES ('integrity-check', 1)")
    status = {i: (s, d) for i, s, d in q("SELECT id, status, deprecated_by FROM nodes")}
    synth = {i for i, k, s in q("SELECT id, kind, status FROM nodes WHERE kind = 'synthesis'")
             if s == "live"}
    derived: dict[str, set[str]] = {}
    for src, dst in q("SELECT src, dst FROM edges WHERE type = 'DERIVED_FROM' AND live = 1"):
        derived.setdefault(src, set()).add(dst)
    committed = {r[0] for r in q("SELECT synthesis_id FROM rem_clusters "
                                 "WHERE status = 'committed'")}
    for node in live_before:  # still live, or deprecated by a committed synthesis that exists
        st, by = status[node]
        if st != "live":
            assert st == "deprecated" and by in synth, (node, st, by)
            assert node in derived.get(by, set()), f"{by} lacks DERIVED_FROM {node}"
    for s in synth:  # no synthesis without its members, its edges and its audit row
        assert s in committed, s
        members = derived.get(s, set())
        assert len(members) >= 2, s
        assert all(status[x] == ("deprecated", s) for x in members), s
    # Edges re-pointed by a committed cluster point at nodes that exist.
    for src, dst in q("SELECT src, dst FROM edges WHERE live = 1 AND rem_run IS NOT NULL"):
        assert src in status and dst in status
    return len(synth)


def _rem_dump(m: Memory) -> dict[str, object]:
    q = m.store.query
    return {
        "nodes": q("SELECT * FROM nodes ORDER BY rid"),
        "edges": q("SELECT * FROM edges ORDER BY eid"),
        "node_tags": q("SELECT * FROM node_tags ORDER BY tid, rid"),
        "tags": q("SELECT tid, name, df FROM tags ORDER BY tid"),
        "node_vec": q("SELECT rowid FROM node_vec ORDER BY rowid"),
        "node_vec_bit": q("SELECT rid, bits FROM node_vec_bit ORDER BY rid"),
    }


def _roll_everything_back(m: Memory) -> None:
    runs = m.store.query("SELECT run_id FROM rem_runs WHERE status != 'rolled_back' "
                         "ORDER BY started_at DESC, rowid DESC")
    for (run_id,) in runs:
        m.rollback(run_id)


@pytest.fixture
def rem_db(db_path: Path) -> Path:
    from remd.exchange import import_lines
    from tests.test_rem import NOW, fragments, old_lines

    with Memory(db_path, clock=lambda: NOW) as m:
        import_lines(m, old_lines(fragments(12)))  # 120 year-old fragments, 12 topics
        m.refresh_importance(NOW)  # each run refreshes at NOW first: compare after that
    return db_path


def test_sigkill_during_rem_loses_nothing_and_rollback_restores_exactly(
        rem_db: Path, llm_server: object) -> None:
    """22 kills: in planning, between clusters, inside a cluster's write (offline synthesiser)
    and during synthesis calls (a slow OpenAI-compatible server). After each: the checks of
    _rem_consistent; then every run, interrupted or finished, rolls back to the exact graph."""
    from tests.llm_server import LLMServer, slow
    from tests.test_rem import NOW

    server = llm_server
    assert isinstance(server, LLMServer)
    server.default = slow(0.15)
    rng = random.Random(7)
    with Memory(rem_db, clock=lambda: NOW) as m:
        before = _rem_dump(m)
        live_before = {r[0] for r in m.store.query("SELECT id FROM nodes WHERE status = 'live'")}
    # One full run, timed from "ready" to "done", so kills can be spread over the whole cycle.
    proc = _spawn(["tests.crash_rem", str(rem_db), str(NOW)])
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    out = proc.stdout.read()  # not communicate(): see _kill_and_read
    assert proc.wait(timeout=120) == 0 and "done rem_" in out
    span = time.perf_counter() - t0
    clusters = out.count("cluster ") - 1  # the first line is "cluster 0/N", before any
    with Memory(rem_db, clock=lambda: NOW) as m:
        assert _rem_consistent(m, live_before) == clusters >= 5
        _roll_everything_back(m)
        assert _rem_dump(m) == before
    kills = committed_seen = attempts = 0
    while kills < 22 and attempts < 40:
        attempts += 1
        llm = attempts % 3 == 0  # a third of the kills land in (slow) synthesis calls
        args = ["tests.crash_rem", str(rem_db), str(NOW), *([server.base_url] if llm else [])]
        proc = _spawn(args)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, span + (clusters * 0.15 / 2 if llm else 0.0)))
        _kill_and_read(proc)
        kills += proc.returncode == -signal.SIGKILL
        with Memory(rem_db, clock=lambda: NOW) as m:
            committed_seen += _rem_consistent(m, live_before)
            if attempts % 4 == 0:  # the next run completes over what the crash left
                run = m.run_rem(now=NOW)
                assert run.status.value == "completed"
                _rem_consistent(m, live_before)
            _roll_everything_back(m)
            assert _rem_dump(m) == before, f"rollback after kill {kills} is not exact"
    assert kills >= 20
    assert committed_seen > 0  # some kills landed after clusters had committed


def test_sigkilled_daemon_while_agents_write_loses_nothing(db_path: Path) -> None:
    """`remd serve` is SIGKILLed three times mid-cycle while two agent processes keep saving
    (one into the namespace being consolidated); every acknowledged save survives, the REM
    invariants hold, and a restarted daemon finishes the job and stops cleanly."""
    from remd.exchange import import_lines
    from tests.test_daemon import Served
    from tests.test_rem import NOW, fragments, old_lines

    with Memory(db_path, "work", clock=lambda: NOW) as m:
        import_lines(m, old_lines(fragments(12)))
        live_before = {r[0] for r in m.store.query("SELECT id FROM nodes WHERE status = 'live'")}
    writers = {ns: _spawn(["tests.crash_writer", str(db_path), ns]) for ns in ("work", "w2")}
    for proc in writers.values():
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    env = {"REMD_TRIGGERS__MAX_LIVE_NODES": "10", "REMD_DAEMON__LOG_LEVEL": "debug"}
    rng = random.Random(3)
    try:
        for _ in range(3):
            served = Served(db_path, "--interval", "1", env=env)
            served.wait_for("rem.started", namespace="work")
            time.sleep(rng.uniform(0.05, 0.6))
            assert served.stop(signal.SIGKILL) == -signal.SIGKILL
    finally:
        acknowledged: dict[str, set[str]] = {}
        for ns, proc in writers.items():
            out = _kill_and_read(proc)
            acknowledged[ns] = set(out.split("\n")[:-1])
    assert _integrity(db_path) == "ok"
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        _rem_consistent(m, live_before)
        rows = {i: (ns, s, d) for i, ns, s, d in m.store.query(
            "SELECT id, namespace, status, deprecated_by FROM nodes")}
    for ns, ids in acknowledged.items():
        assert ids, ns
        for i in ids:
            assert i in rows and rows[i][0] == ns, f"acknowledged {i} lost"
            assert rows[i][1] == "live" or rows[i][2] in rows
    served = Served(db_path, "--interval", "3600", env=env)
    finished = served.wait_for("cycle.finished", namespace="work")
    assert finished["status"] == "completed"
    assert served.stop(signal.SIGTERM) == 0
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        _rem_consistent(m, live_before)
        assert m.stats().synthesis >= 5
