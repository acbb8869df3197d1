"""A quiet library: used from a plain script that configures no logging, remd prints nothing,
leaves os.environ alone and writes nothing outside its database's directory.

Run in a fresh interpreter: the test process itself has configured logging and structlog."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
