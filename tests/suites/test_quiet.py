"""A quiet library: used from a plain script that configures no logging, remd prints nothing,
leaves os.environ alone and writes nothing outside its database's directory.

Run in a fresh interpreter: the test process itself has configured logging and structlog."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from benchmarks.pg_local import PgServer, bindir
from tests.llm_server import refused_base_url

SCRIPT = """
import os, sys
before = dict(os.environ)
from remd import Config, Memory

work, down_url = sys.argv[1], sys.argv[2]
with Memory(work + "/agent.db") as mem:
    ids = [mem.save(text).id for text in [
        "I water the basil on Sundays", "The basil sits on the kitchen window",
        "I water the tomatoes on Sundays too", "My job is baker", "My job has changed to chef"]]
    mem.forget(ids[0])
    mem.inject("what do I water on Sundays?", 200)
    mem.run_rem()
# Warnings too: stdlib's last-resort handler would print them on stderr.
down = Config.model_validate({"embed": {"provider": "openai", "base_url": down_url}})
with Memory(work + "/down.db", config=down) as mem:
    mem.save("saved while the embedder is down")
    mem.inject("embedder", 200)
if dict(os.environ) != before:
    sys.exit(f"os.environ changed: {sorted(set(os.environ.items()) ^ set(before.items()))}")
"""


def test_the_library_prints_nothing_and_writes_nothing_outside_its_directory(
        tmp_path: Path) -> None:
    work, home, cache = tmp_path / "work", tmp_path / "home", tmp_path / "cache"
    for d in (work, home, cache):
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMD_", "TIKTOKEN_"))}
    # onnxruntime >= 1.29 would write a telemetry device id under $XDG_CACHE_HOME/Microsoft at
    # import: pyproject pins it below that, and this test runs with no opt-out set.
    env.pop("ORT_DISABLE_TELEMETRY", None)
    env |= {"HOME": str(home), "XDG_CACHE_HOME": str(cache)}
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(work), refused_base_url()],
                            capture_output=True, text=True, env=env, timeout=300)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert list(home.iterdir()) == [] and list(cache.iterdir()) == []
    assert {p.name for p in work.iterdir()} <= {
        f"{db}{suffix}" for db in ("agent.db", "down.db") for suffix in ("", "-wal", "-shm")}


PG_DOWN = """
import json, logging, subprocess, sys
if sys.argv[3] == "configured":  # the host's choice: warnings on stderr
    logging.basicConfig(level=logging.WARNING)
from remd import Config, Memory, StoreError

url, stop = sys.argv[1], json.loads(sys.argv[2])
# (a library's Memory reads no REMD_* variable: the short wait for a connection is the config's)
config = Config.model_validate({"store": {"pool_wait_ms": 300}})
with Memory(url, embedder=None, config=config) as mem:
    mem.save("saved while the server was up")
    mem.inject("server", 100)  # connections in the pool
    subprocess.run(stop, check=True, capture_output=True)
    for _ in range(2):
        try:
            mem.save("saved while the server is down")
        except StoreError:
            pass
        else:
            sys.exit("a save succeeded with the server down")
"""


@pytest.mark.skipif(bindir() is None, reason="no PostgreSQL server programs")
@pytest.mark.parametrize("host", ["quiet", "configured"])
@pytest.mark.slow
def test_the_postgresql_pool_is_quiet_unless_the_host_configures_logging(
        host: str) -> None:
    """With the server stopped under an open store, psycopg_pool's reconnection attempts go to
    its logger ("psycopg.pool"), which stdlib's last-resort handler would print on stderr of a
    host that configured nothing; remd says it could not connect through its own logger."""
    root = Path(tempfile.mkdtemp(prefix="remd-pgquiet-"))  # the postgres user must enter it
    server = PgServer(root, bindir())  # type: ignore[arg-type]
    try:
        stop = [str(server.bin / "pg_ctl"), "-D", str(server.root / "data"), "-m", "fast",
                "-w", "stop"]
        if os.geteuid() == 0:
            stop = ["runuser", "-u", "postgres", "--", *stop]
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")}
        result = subprocess.run(
            [sys.executable, "-c", PG_DOWN, server.url(), json.dumps(stop), host],
            capture_output=True, text=True, env=env, timeout=300)
    finally:
        if server.running():  # the script stopped it, unless it failed first
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    if host == "quiet":
        assert result.stderr == ""
    else:
        assert "error connecting in 'remd'" in result.stderr  # psycopg.pool's own
        assert "pgstore.unreachable" in result.stderr  # remd's event
