"""Crash soak: SIGKILL a REM cycle at random moments, many times, and check nothing is lost.

    python benchmarks/crash_soak.py [--kills 100] [--topics 12] [--seed 7]

The longer sibling of tests/suites/test_crash.py: the same database (tests/crash_rem.py
``build_db``: 10 year-old fragments per topic, with edges to re-point), the same kill loop and
the same checks (``CrashLoop``, ``check``), only more kills, and failures are counted instead of
stopping the run. Kills rotate over four modes: a random moment of an offline run (planning,
between clusters, a cluster's commit); inside a cluster's write transaction by construction; a
random moment of a run synthesised by a slow OpenAI-compatible server on 127.0.0.1 (up to two
calls in flight); and just after a cluster of such a run was written, while the next answers are
awaited. Rounds of one to three kills each end with a run that must complete over the remains,
an exact rollback of that run, and an exact rollback of every run. Prints a markdown table;
exits 1 if anything failed."""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remd.logs import configure_logging  # noqa: E402
from tests.crash_rem import CrashLoop, EchoLLM, Tally, Zygote, build_db  # noqa: E402
from tests.sleep.test_rem import NOW  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--topics", type=int, default=12, help="10 fragments each (at most 30)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    # This process's own REM events go to stderr, errors only (a killed run found by the next one
    # is a warning, and expected here a few hundred times): stdout is the table.
    configure_logging("console", "error", stream=sys.stderr)
    server = EchoLLM(delay=0.1)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    started = time.perf_counter()

    def progress(t: Tally) -> None:
        print(f"\r{t.kills}/{args.kills} kills, {len(t.failures)} failures", end="",
              file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "soak.db"
        build_db(db, args.topics)
        with open(Path(tmp) / "zygote.log", "wb") as log:
            zygote = Zygote(db, NOW, log)
            try:
                loop = CrashLoop(db, zygote, server, random.Random(args.seed), strict=False)
                tally = loop.run(args.kills, progress)
                try:
                    loop.rid_reuse()
                except AssertionError as exc:
                    tally.failures.append(f"rid reuse: {exc}")
            finally:
                zygote.close()
                server.shutdown()
            if tally.failures:
                sys.stderr.write((Path(tmp) / "zygote.log").read_text(errors="replace"))
    print(file=sys.stderr)
    print(f"crash soak — {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}; "
          f"{len(loop.base.live)} memories ({10 * args.topics} year-old fragments), "
          f"{len(loop.base.edges)} edges, {time.perf_counter() - started:.0f} s\n")
    modes = {"random": "at a random moment of an offline run",
             "in-write": "inside a cluster's write transaction",
             "llm-random": "at a random moment of an LLM run",
             "llm-after-cluster": "just after a cluster of an LLM run committed"}
    llm_kills = sum(n for mode, n in tally.by_mode.items() if mode.startswith("llm"))
    rows = [
        ("kills (SIGKILL mid-cycle)", tally.kills),
        *((f"… {text}", tally.by_mode.get(mode, 0)) for mode, text in modes.items()),
        (f"… of these {llm_kills} LLM kills, with a synthesis call in flight",
         tally.kills_during_llm_calls),
        ("runs that finished before their kill", tally.finished_before_the_kill),
        ("killed runs marked interrupted by the next run", tally.interrupted_runs_marked),
        ("runs completed over a crash's remains", tally.runs_completed_after_crashes),
        ("runs rolled back", tally.runs_rolled_back),
        ("exact rollbacks (graph compared row by row)", tally.exact_rollbacks),
        ("synthesis nodes checked after kills", tally.synthesis_nodes_checked),
        ("memory checks (live-before memory × check)", tally.memory_checks),
        ("edge checks (edge × check)", tally.edge_checks),
        ("vector index probes (stale-bit checks)", tally.vectors_probed),
        ("failures", len(tally.failures)),
    ]
    print("| measure | value |\n|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value:,} |")
    for failure in tally.failures:
        print(f"- {failure}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
