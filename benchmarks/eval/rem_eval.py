"""REM retention: LoCoMo recall and live memories before and after one forced REM cycle.

Each conversation is ingested as in the recall section and every scored question is asked at
every budget (a day after the last session). Then a year passes: one REM cycle runs at that
time with the offline synthesiser (the memories are now old and their accesses outside the
30-day window, so the default importance flags what it would flag in a real deployment; a
cycle run the day after flags almost nothing, as it should), and the questions are asked
again, a year later. After
REM an evidence turn counts as found when the pack holds its memory or a synthesis derived from
it (DERIVED_FROM, followed transitively).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.eval import baselines, locomo
from benchmarks.eval.locomo_run import RemdSubject, evidence_recall, fresh_db, has_inject
from benchmarks.eval.report import mean, table
from remd import Config


def _ask_all(subject: RemdSubject, conv: locomo.Conversation, budgets: Sequence[int]
             ) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {b: {} for b in budgets}
    for q in locomo.scored(conv.qa):
        for b in budgets:
            credited, _, _, _ = subject.ask(conv, q.question, b)
            out[b][q.qid] = evidence_recall(q.evidence, credited)[0]
    return out


YEAR = 365 * 86400.0


def run_rem(mem: Any) -> Any:
    """One REM cycle at the memory's clock, whatever the triggers say (the manual path,
    offline synthesiser)."""
    from remd.rem import run_rem as rem_cycle
    from remd.synthesis import OfflineSynthesiser

    return rem_cycle(mem, synthesiser=OfflineSynthesiser())


def section(args: argparse.Namespace, convs: Sequence[locomo.Conversation],
            embedder: baselines.CachedEmbedder) -> None:
    if not has_inject():
        print("## REM retention\n\nMemory.inject does not exist yet: skipped.\n")
        return
    budgets = tuple(args.budgets)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-rem-"))
    subject = RemdSubject(fresh_db(workdir, "rem.db"), Config(), embedder, dates=args.dates)
    rows = []
    before_all: dict[int, list[float]] = {b: [] for b in budgets}
    after_all: dict[int, list[float]] = {b: [] for b in budgets}
    live_b = live_a = 0
    try:
        for conv in convs:
            t0 = time.perf_counter()
            mem = subject.ingest(conv)
            before = _ask_all(subject, conv, budgets)
            lb = mem.stats().live
            subject.now += YEAR
            t1 = time.perf_counter()
            run = run_rem(mem)
            rem_s = time.perf_counter() - t1
            la = mem.stats().live
            after = _ask_all(subject, conv, budgets)
            live_b, live_a = live_b + lb, live_a + la
            for b in budgets:
                before_all[b].extend(before[b].values())
                after_all[b].extend(after[b].values())
            mid = budgets[len(budgets) // 2]
            rows.append([conv.sample_id, lb, la, f"{lb / max(la, 1):.2f}x",
                         getattr(run, "clusters", "?"), getattr(run, "synthesised", "?"),
                         mean(list(before[mid].values())), mean(list(after[mid].values())),
                         f"{rem_s:.1f}"])
            print(f"  REM {conv.sample_id}: live {lb} -> {la}, "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    finally:
        subject.close()
    mid = budgets[len(budgets) // 2]
    print("## REM retention (LoCoMo, offline synthesiser)\n")
    print(f"One forced REM cycle per conversation, a year after its last session; recall over "
          f"categories 1-4; a synthesis item credits the turns it was derived from. Per "
          f"conversation at budget {mid}:\n")
    print(table(["conversation", "live before", "live after", "reduction", "clusters",
                 "synthesised", f"recall@{mid} before", f"recall@{mid} after", "REM s"], rows)
          + "\n")
    total = [["all", live_b, live_a, f"{live_b / max(live_a, 1):.2f}x",
              *(f"{mean(before_all[b]):.3f} -> {mean(after_all[b]):.3f} "
                f"({mean(after_all[b]) / max(mean(before_all[b]), 1e-9):.0%})" for b in budgets)]]
    print(table(["", "live before", "live after", "reduction",
                 *(f"recall@{b} before -> after (kept)" for b in budgets)], total) + "\n")
