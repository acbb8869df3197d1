"""Crash soak: SIGKILL a REM cycle at random moments, many times, and check nothing is lost.

    python benchmarks/crash_soak.py [--kills 60] [--topics 12] [--seed 7]

The longer sibling of tests/test_crash.py (same child, tests/crash_rem.py, and the same checks):
a database of year-old fragments (10 per topic) is consolidated by a child process that is
SIGKILLed at a random moment of its cycle — in planning, between clusters, inside a cluster's
write, or (one kill in three) during a call to a slow OpenAI-compatible server on 127.0.0.1.
After every kill: integrity_check and FTS5 integrity ok; every memory live before is still
live or deprecated by an existing, committed synthesis with its DERIVED_FROM edge; no
synthesis without its members, edges and audit row. Every fourth kill the next run is taken to
completion in-process. Then every run (interrupted or finished) is rolled back, newest first,
and the graph must equal the one before, byte for byte. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import logging
import platform
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import structlog

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remd import Memory  # noqa: E402
from remd.exchange import import_lines  # noqa: E402
from tests.llm_server import LLMServer, slow  # noqa: E402
from tests.test_crash import (  # noqa: E402
    _kill_and_read,
    _rem_consistent,
    _rem_dump,
    _roll_everything_back,
    _spawn,
)
from tests.test_rem import NOW, fragments, old_lines  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=60)
    ap.add_argument("--topics", type=int, default=12, help="10 fragments each (at most 30)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    # The parent's own REM and rollback events go to stderr, warnings only: stdout is the table.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    rng = random.Random(args.seed)
    server = LLMServer(default=slow(0.15))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    failures: list[str] = []
    stats = {"kills": 0, "finished before the kill": 0, "runs completed after a crash": 0,
             "runs rolled back": 0, "synthesis nodes found committed": 0,
             "memory checks": 0}
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "soak.db"
        with Memory(db, clock=lambda: NOW) as m:
            import_lines(m, old_lines(fragments(args.topics)))
            m.refresh_importance(NOW)
            before = _rem_dump(m)
            live = {r[0] for r in m.store.query("SELECT id FROM nodes WHERE status = 'live'")}
        proc = _spawn(["tests.crash_rem", str(db), str(NOW)])
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        t0 = time.perf_counter()
        out = proc.stdout.read()  # not communicate(): it would drop what readline buffered
        proc.wait(timeout=300)
        span = time.perf_counter() - t0
        clusters = out.count("cluster ") - 1
        with Memory(db, clock=lambda: NOW) as m:
            _roll_everything_back(m)
        attempt = 0
        while stats["kills"] < args.kills:
            attempt += 1
            llm = attempt % 3 == 0
            proc = _spawn(["tests.crash_rem", str(db), str(NOW),
                           *([server.base_url] if llm else [])])
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, span + (clusters * 0.15 / 2 if llm else 0.0)))
            _kill_and_read(proc)
            if proc.returncode == -signal.SIGKILL:
                stats["kills"] += 1
            else:
                stats["finished before the kill"] += 1
            try:
                with Memory(db, clock=lambda: NOW) as m:
                    stats["synthesis nodes found committed"] += _rem_consistent(m, live)
                    stats["memory checks"] += len(live)
                    if attempt % 4 == 0:
                        run = m.run_rem(now=NOW)
                        if run.status.value != "completed":
                            failures.append(f"attempt {attempt}: next run {run.status.value}")
                        _rem_consistent(m, live)
                        stats["runs completed after a crash"] += 1
                    stats["runs rolled back"] += int(m.store.scalar(
                        "SELECT count(*) FROM rem_runs WHERE status != 'rolled_back'"))
                    _roll_everything_back(m)
                    if _rem_dump(m) != before:
                        failures.append(f"attempt {attempt}: rollback not exact")
            except AssertionError as exc:
                failures.append(f"attempt {attempt}: {exc}")
            print(f"\r{stats['kills']}/{args.kills} kills, {len(failures)} failures",
                  end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    server.shutdown()
    print(f"crash soak — {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{__import__('os').cpu_count()} cores, Python {platform.python_version()}; "
          f"{len(live)} fragments, {clusters} clusters per full run, "
          f"{time.perf_counter() - t_start:.0f} s\n")
    print("| measure | value |\n|---|---:|")
    for key, value in stats.items():
        print(f"| {key} | {value:,} |")
    print(f"| failures | {len(failures)} |")
    for f in failures:
        print(f"- {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
