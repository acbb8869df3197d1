"""SIGKILL at random moments: nothing acknowledged is lost, the file stays consistent.

Each soak (the soak tier, ``pytest -m soak``: the kills and rounds the issues set) has a
small default-tier twin that runs the same code with one round or a few kills."""

from __future__ import annotations

import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from remd import Memory
from remd.store import is_url
from tests.crash_rem import MODES, Baseline, CrashLoop, EchoLLM, Zygote, build_db, check
from tests.service.test_daemon import Served
from tests.sleep.test_rem import NOW

pytestmark = pytest.mark.backends

ROOT = Path(__file__).resolve().parents[2]


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
    """SQLite's integrity check of the file; on PostgreSQL (whose own storage is the server's
    business), remd's cross-table invariants: every memory in the term index, no tag row of a
    memory that is gone."""
    if is_url(str(path)):
        import psycopg

        with psycopg.connect(str(path)) as pg:
            unindexed = pg.execute("SELECT count(*) FROM nodes n LEFT JOIN node_terms_len l "
                                   "ON l.rid = n.rid WHERE l.rid IS NULL").fetchone()
            stray = pg.execute("SELECT count(*) FROM node_terms_len l LEFT JOIN nodes n "
                               "ON n.rid = l.rid WHERE n.rid IS NULL").fetchone()
        return "ok" if unindexed == (0,) and stray == (0,) else f"{unindexed} {stray}"
    con = sqlite3.connect(path)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("mode", ["single", "bulk"])
@pytest.mark.soak
def test_sigkilled_writers_lose_nothing_acknowledged(db_path: Path, mode: str) -> None:
    _writers_killed(db_path, mode, rounds=4)


@pytest.mark.parametrize("mode", ["single", "bulk"])
def test_sigkilled_writers_of_one_round_lose_nothing_acknowledged(db_path: Path,
                                                                  mode: str) -> None:
    _writers_killed(db_path, mode, rounds=1)


def _writers_killed(db_path: Path, mode: str, rounds: int) -> None:
    """``rounds`` of two writer processes SIGKILLed at a random moment: every id a writer
    printed (acknowledged) is stored, and the file is intact after each round."""
    rng = random.Random(1234)
    with Memory(db_path, embedder=None):
        pass  # create the schema once, so the children race only on writes
    acknowledged: dict[str, set[str]] = {}
    for round_ in range(rounds):
        procs = {f"w{round_}{k}": _spawn(["tests.crash_writer", str(db_path), f"w{round_}{k}",
                                          *(["bulk"] if mode == "bulk" else [])])
                 for k in range(2)}
        for proc in procs.values():
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        # Let them write, then kill at a random moment (a bulk save of 50 takes ~0.7 s on a
        # loaded 2-core VM on PostgreSQL: its window is longer, so some are acknowledged).
        time.sleep(rng.uniform(0.2, 0.6) + (1.0 if mode == "bulk" else 0.0))
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
    assert is_url(str(db_path)) or os.path.getsize(db_path) > 0


# -- SIGKILL during a REM cycle ------------------------------------------------------------------
@pytest.mark.soak
def test_sigkill_during_rem_loses_nothing_and_rollback_restores_exactly(
        db_path: Path, tmp_path: Path) -> None:
    """24 kills of a REM run on a real file (tests/crash_rem.py has the loop and the checks):
    at random moments of an offline run (planning, between clusters, in a cluster's commit),
    inside a cluster's write transaction by construction (the child stops there and says so),
    and during calls to a slow OpenAI-compatible server (up to two in flight). Every kill
    is followed by :func:`tests.crash_rem.check`; every round ends with a run that completes
    over what the kills left, whose rollback is exact, then a rollback of every run, exact too.
    Last, a rollback whose freed rids are reused by a new memory leaves no stale vector bits."""
    tally = _rem_killed(db_path, tmp_path, 24)
    assert set(tally.by_mode) == set(MODES) and tally.kills_inside_a_write >= 5
    # The kills after a committed cluster wait until the server is answering the next call.
    assert tally.kills_during_llm_calls >= tally.by_mode["llm-after-cluster"] >= 5


def test_a_few_sigkills_during_rem_lose_nothing_and_rollback_restores_exactly(
        db_path: Path, tmp_path: Path) -> None:
    """The soak above with 2 kills asked for (3 made: at a random moment, inside a cluster's
    write transaction, during a model call; the soak has every mode, many times)."""
    tally = _rem_killed(db_path, tmp_path, 2)
    assert tally.kills_inside_a_write >= 1 and tally.by_mode["llm-random"] >= 1


def _rem_killed(db_path: Path, tmp_path: Path, kills: int) -> Any:
    build_db(db_path)
    server = EchoLLM(delay=0.1)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    with open(tmp_path / "zygote.log", "wb") as log:
        zygote = Zygote(db_path, NOW, log)
        try:
            loop = CrashLoop(db_path, zygote, server, random.Random(7), strict=True)
            tally = loop.run(kills)
            loop.rid_reuse()
        finally:
            zygote.close()
            server.shutdown()
    assert tally.kills >= kills and not tally.failures
    assert set(tally.by_mode) <= set(MODES)
    assert tally.synthesis_nodes_checked > 0  # kills landed after clusters had committed
    assert tally.interrupted_runs_marked >= tally.runs_completed_after_crashes
    assert tally.exact_rollbacks == 2 * tally.runs_completed_after_crashes > 0
    return tally


def _wait_for(served: Served, event: str, timeout: float = 90.0, **match: Any) -> dict[str, Any]:
    """Served.wait_for with an overall deadline: a daemon ticking every second never falls
    silent, so a per-event timeout alone would wait forever for an event that never comes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            item = served.events.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            break
        served.seen.append(item)
        if item.get("event") == event and all(item.get(k) == v for k, v in match.items()):
            return item
    served.proc.kill()
    served.proc.wait()
    last = [(e.get("event"), e.get("namespace"), e.get("reason") or e.get("status"))
            for e in served.seen[-15:]]
    raise AssertionError(f"no {event!r} {match} within {timeout:.0f} s; last events: {last}")


@pytest.mark.soak
def test_sigkilled_daemon_while_agents_write_loses_nothing(db_path: Path) -> None:
    """`remd serve`, synthesising through a slow OpenAI-compatible server, is SIGKILLed
    three times (ten on PostgreSQL) mid-cycle (just after its k-th cluster committed, with the
    next calls in flight) while two agent processes keep saving, one into the namespace being
    consolidated. Every acknowledged save survives (live, or folded into an existing
    synthesis), the REM invariants hold after each kill, each restart marks the killed run
    interrupted, and the last restart finishes the cycle and stops cleanly on SIGTERM."""
    # The PostgreSQL arm kills it ten times (the many-hosts issue's count), over more topics.
    _daemon_killed(db_path, *((10, 30) if is_url(str(db_path)) else (3, 12)))


@pytest.mark.soak  # 8-12 s; the default tier keeps the REM kills above
@pytest.mark.sqlite_only("the PostgreSQL arm kills the daemon ten times in the soak tier")
def test_a_daemon_sigkilled_once_while_agents_write_loses_nothing(db_path: Path) -> None:
    """The soak above with one kill over 6 topics."""
    _daemon_killed(db_path, 1, 6)


def _daemon_killed(db_path: Path, kills: int, topics: int) -> None:
    from tests.sleep.test_rem import fragments, old_lines

    with Memory(db_path, "work", clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(topics)))
        base = Baseline.of(m)
    server = EchoLLM(delay=0.1)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    env = {"REMD_TRIGGERS__MAX_LIVE_NODES": "10", "REMD_DAEMON__LOG_LEVEL": "debug",
           "REMD_LLM__BASE_URL": server.base_url, "REMD_LLM__API_KEY": "sk-test",
           "REMD_LLM__MODEL": "daemon"}
    writers = {ns: _spawn(["tests.crash_writer", str(db_path), ns]) for ns in ("work", "w2")}
    rng = random.Random(3)
    try:
        for proc in writers.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for _ in range(kills):
            served = Served(db_path, "--interval", "1", env=env)
            _wait_for(served, "rem.cluster_committed", namespace="work", done=rng.randint(1, 3))
            assert served.stop(signal.SIGKILL) == -signal.SIGKILL
            with Memory(db_path, "work", clock=lambda: NOW) as m:
                check(m, base)  # and: a run left running is the newest, its lease names it
                assert m.store.scalar("SELECT status FROM rem_runs WHERE namespace = 'work' "
                                      "ORDER BY rowid DESC LIMIT 1") == "running"
    finally:
        acknowledged: dict[str, set[str]] = {}
        for ns, proc in writers.items():
            out = _kill_and_read(proc)
            acknowledged[ns] = set(out.split("\n")[:-1])
    assert _integrity(db_path) == "ok"
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        check(m, base)
        rows = {i: (ns, s, d) for i, ns, s, d in m.store.query(
            "SELECT id, namespace, status, deprecated_by FROM nodes")}
    for ns, ids in acknowledged.items():
        assert ids, ns
        for i in ids:
            assert i in rows and rows[i][0] == ns, f"acknowledged {i} lost"
            # live, folded into a synthesis, or updated by a newer save (kept in history)
            assert rows[i][1] in ("live", "superseded") or rows[i][2] in rows
    served = Served(db_path, "--interval", "3600", env=env)
    try:
        finished = _wait_for(served, "cycle.finished", namespace="work")
        assert finished["status"] == "completed"
    finally:
        assert served.stop(signal.SIGTERM) == 0
        server.shutdown()
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        check(m, base)
        assert m.stats().synthesis >= 5
        assert m.store.scalar("SELECT count(*) FROM rem_runs WHERE namespace = 'work' "
                              "AND status = 'interrupted'") == kills
        assert m.store.scalar("SELECT count(*) FROM rem_runs WHERE namespace = 'work' "
                              "AND status = 'completed' AND synthesiser = 'llm'") >= 1
