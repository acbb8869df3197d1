"""benchmarks/pg_local.py, the throwaway PostgreSQL server of the benchmarks and the suite
(issue 38 row 17): ``stop`` keeps every save the server acknowledged. The server runs with
``synchronous_commit=off``, so a commit is acknowledged before its WAL is written; an
immediate stop (a crash, to PostgreSQL) lost the last ones, a fast stop writes them first."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.pg_local import bindir
from remd import Memory

SAVES = 60


def _pg_local(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "benchmarks.pg_local", *args],
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


@pytest.fixture
def root() -> Iterator[Path]:
    if os.environ.get("REMD_TEST_PG") == "0":
        pytest.skip("REMD_TEST_PG=0: the PostgreSQL arm is off")
    if bindir() is None:
        pytest.skip("no PostgreSQL server programs (pg_config --bindir) on this machine")
    path = Path(tempfile.mkdtemp(prefix="remd-pg-stop-"))  # /tmp: the postgres user reads it
    try:
        yield path
    finally:
        subprocess.run([sys.executable, "-m", "benchmarks.pg_local", "stop", str(path)],
                       capture_output=True, timeout=120, check=False)
        shutil.rmtree(path, ignore_errors=True)


def test_stop_keeps_every_acknowledged_save(root: Path) -> None:
    import psycopg

    url = _pg_local("start", str(root))
    # The WAL writer wakes every 10 s instead of 0.2 s: what a stop keeps is then what the stop
    # itself writes, not what the writer happened to write before it.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        conn.execute("SELECT pg_reload_conf()")
    with Memory(url, embedder=None) as m:
        saved = [m.save(f"Acknowledged note number {i}").id for i in range(SAVES)]
    _pg_local("stop", str(root))
    assert _pg_local("start", str(root)) == url
    with Memory(url, embedder=None) as m:
        kept = {str(r[0]) for r in m.store.query("SELECT id FROM nodes")}
    assert kept == set(saved), f"{len(set(saved) - kept)} of {SAVES} acknowledged saves lost"
