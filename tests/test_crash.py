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
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
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
