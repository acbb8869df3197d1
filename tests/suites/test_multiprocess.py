"""Many processes, one file: `remd serve` consolidating while 8 agent processes save, inject
and give feedback through their own Memory. Zero errors anywhere, every saved memory still
there (live, superseded or folded into a synthesis), and an intact file. The soak tier runs 8
agents for 4 REM runs; the default tier the same code with 2 agents and 2 runs."""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from remd import Memory
from tests.service.test_daemon import Served

AGENTS = 8
OPS = 5000  # per agent at most: the agents stop once REM has run CYCLES times (or at the deadline)
CYCLES = 4
# A hard bound on each agent, whatever happens; only a loaded machine reaches it (the soak
# tests run side by side in the suite: 18 processes on 2 cores).
DEADLINE_SECONDS = 150
# tests/agent_proc.py runs as a module from the repository's root: run by its path, its folder
# (tests/) would come first on sys.path, and tests/http would hide the standard library's http.
ROOT = Path(__file__).resolve().parents[2]


class Agents:
    """AGENTS processes of tests/agent_proc.py on ``db``, agent i in ``namespaces[i % n]``,
    working until :meth:`finish` (or OPS, or the deadline)."""

    def __init__(self, db: Path | str, namespaces: tuple[str, ...], where: Path,
                 count: int = AGENTS) -> None:
        self.outs = [where / f"agent{i}.json" for i in range(count)]
        self.stop_file = where / "stop"
        self.procs = [subprocess.Popen(
            [sys.executable, "-m", "tests.agent_proc", str(db),
             namespaces[i % len(namespaces)], str(i), str(OPS), str(DEADLINE_SECONDS),
             str(self.stop_file), str(self.outs[i])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**os.environ, "OMP_NUM_THREADS": "1"}) for i in range(count)]

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def work_until(self, daemons: list[Served], runs: int, timeout: float = 240) -> None:
        """Let the agents work until ``daemons`` have finished ``runs`` REM runs between them
        (a cycle that found nothing to fold records no run), the agents stop (OPS, their
        deadline) or ``timeout``; the daemons' events are kept in their ``seen``."""
        done, deadline = 0, time.monotonic() + timeout
        while done < runs and self.running() and time.monotonic() < deadline:
            for d in daemons:
                try:
                    event = d.events.get(timeout=1 / len(daemons))
                except queue.Empty:
                    continue
                d.seen.append(event)
                done += event.get("event") == "cycle.finished" and bool(event.get("run_id"))

    def finish(self) -> list[dict[str, Any]]:
        """Tell them to stop; each must exit 0. Their results (saved ids, counts, errors)."""
        self.stop_file.touch()
        for proc in self.procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        return [json.loads(out.read_text()) for out in self.outs]


@pytest.mark.soak
def test_daemon_and_eight_agents_share_one_file(db_path: Path, tmp_path: Path) -> None:
    _share_one_file(db_path, tmp_path, AGENTS, CYCLES)


def test_daemon_and_two_agents_share_one_file(db_path: Path, tmp_path: Path) -> None:
    _share_one_file(db_path, tmp_path, 2, 2)


def _share_one_file(db_path: Path, tmp_path: Path, count: int, cycles: int) -> None:
    with Memory(db_path, embedder=None) as m:  # the schema, before anyone races to create it
        m.store.schema_version()
    served = Served(db_path, "--interval", "0.5", "--http", "127.0.0.1:0", env={
        "REMD_TRIGGERS__MAX_LIVE_NODES": "12",  # fires again and again as agents save
        "REMD_REM__MIN_AGE_DAYS": "0",  # fresh memories may be consolidated
        "REMD_REM__TAU": "0.95",  # nearly every memory is flagged
        "REMD_DAEMON__LOG_LEVEL": "info",
    })
    port = served.wait_for("http.listening")["port"]
    served.wait_for("daemon.ready")

    agents = Agents(db_path, ("beta", "alpha"), tmp_path, count)
    # The agents keep saving and injecting until the daemon has consolidated ``cycles`` times
    # under them (or they reach OPS).
    agents.work_until([served], cycles)
    results = agents.finish()

    # The scheduler is still alive after the storm: one more trigger evaluation, then a clean
    # stop.
    while not served.events.empty():
        served.seen.append(served.events.get())
    served.wait_for("tick.evaluated", timeout=120)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as api:
        assert api.get("/healthz").json()["status"] == "ok"
    assert served.stop(signal.SIGTERM) == 0

    # Zero errors in any process.
    assert [r["errors"] for r in results] == [[]] * count
    # (http.no_token: this loopback server has no token on purpose, and says so at start)
    bad = [e for e in served.seen if (e.get("level") in ("warning", "error", "critical")
                                      and e.get("event") != "http.no_token")
           or e.get("event") in ("rem.failed", "tick.failed", "triggers.failed")]
    assert bad == [], bad[:3]
    assert sum(r["packs"] for r in results) > 0 and sum(r["feedback"] for r in results) > 0

    # Every saved memory is present: live, superseded by a newer fact, or deprecated into a
    # synthesis node that exists (following chains, since syntheses get consolidated too).
    saved = [i for r in results for i in r["saved"]]
    assert len(saved) >= count * 6
    con = sqlite3.connect(db_path)
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT id, status, deprecated_by, namespace, kind FROM nodes")}
    # An id comes back twice only for a fact saved again in the same words while live (the
    # same memory, no copy: tests/suites/test_contract_store.py row 9).
    repeated = {i for i in saved if saved.count(i) > 1}
    assert all(rows[i][3] == "fact" for i in repeated), repeated
    for node_id in saved:
        status, by, _, _ = rows[node_id]
        seen = {node_id}
        while status == "deprecated":
            assert by in rows, f"{node_id} deprecated into a missing node {by}"
            assert by not in seen
            seen.add(by)
            status, by, _, _ = rows[by]
        assert status in ("live", "superseded"), (node_id, status)

    # REM ran repeatedly, in both namespaces, and every run ended cleanly: completed, or (the
    # one in flight when SIGTERM came: the daemon then stops between clusters) interrupted.
    runs = con.execute("SELECT namespace, status, synthesised FROM rem_runs "
                       "ORDER BY started_at, rowid").fetchall()
    assert {s for _, s, _ in runs[:-1]} <= {"completed"}, runs
    assert runs[-1][1] in ("completed", "interrupted"), runs
    assert len(runs) >= cycles and {ns for ns, _, _ in runs} == {"alpha", "beta"}
    assert sum(n for _, _, n in runs) > 0
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    with Memory(db_path, embedder=None) as m:  # again through apsw, with vec0 loaded
        assert m.store.query("PRAGMA integrity_check") == [("ok",)]
        with m.store.transaction() as conn:  # the FTS index agrees with the nodes table
            conn.execute("INSERT INTO node_fts (node_fts, rank) VALUES ('integrity-check', 1)")
