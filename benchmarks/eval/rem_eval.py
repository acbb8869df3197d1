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
             ) -> tuple[dict[int, dict[str, float]], dict[int, dict[str, float]]]:
    """Per budget: evidence recall per QA, and for QA whose answer is written in their
    evidence turns, whether the pack's text still holds it (1.0 / 0.0)."""
    recall: dict[int, dict[str, float]] = {b: {} for b in budgets}
    answer: dict[int, dict[str, float]] = {b: {} for b in budgets}
    turns = {t.dia_id: t.content for t in conv.turns}
    for q in locomo.scored(conv.qa):
        literal = locomo.literal_answer(q, turns)
        for b in budgets:
            credited, *_ = subject.ask(conv, q.question, b)
            recall[b][q.qid] = evidence_recall(q.evidence, credited)[0]
            if literal is not None:
                answer[b][q.qid] = float(literal in subject.last_text.lower())
    return recall, answer


YEAR = 365 * 86400.0


def _live_tokens(mem: Any) -> int:
    """o200k tokens of the namespace's live memories (what inject can return)."""
    return int(mem.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                                "AND status = 'live'", (mem.namespace,)))


def run_rem(mem: Any, density: float | None = None) -> Any:
    """One REM cycle at the memory's clock, whatever the triggers say (the manual path,
    offline synthesiser at ``density``, default the config's)."""
    from remd.sleep.rem import sentence_embed
    from remd.sleep.synthesis import OfflineSynthesiser

    if density is None:
        density = mem.config.rem.offline_density
    return mem.run_rem(synthesiser=OfflineSynthesiser(
        density, count=mem.engine.counter.count, embed=sentence_embed(mem.engine)))


def section(args: argparse.Namespace, convs: Sequence[locomo.Conversation],
            embedder: baselines.CachedEmbedder) -> None:
    if not has_inject():
        print("## REM retention\n\nMemory.inject does not exist yet: skipped.\n")
        return
    budgets = tuple(args.budgets)
    densities = getattr(args, "densities", None) or [None]
    for density in densities:
        _section(args, convs, embedder, budgets, density)


def _section(args: argparse.Namespace, convs: Sequence[locomo.Conversation],
             embedder: baselines.CachedEmbedder, budgets: tuple[int, ...],
             density: float | None) -> None:
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-rem-"))
    config = Config()
    if density is None:
        density = config.rem.offline_density
    subject = RemdSubject(fresh_db(workdir, f"rem-{density:g}.db"), config, embedder,
                          dates=args.dates)
    rows = []
    recall: dict[str, dict[int, list[float]]] = {w: {b: [] for b in budgets}
                                                 for w in ("before", "after")}
    answer: dict[str, dict[int, list[float]]] = {w: {b: [] for b in budgets}
                                                 for w in ("before", "after")}
    live_b = live_a = tokens_b = tokens_a = 0
    mid = budgets[len(budgets) // 2]
    try:
        for conv in convs:
            t0 = time.perf_counter()
            mem = subject.ingest(conv)
            before = _ask_all(subject, conv, budgets)
            lb, tb = mem.stats().live, _live_tokens(mem)
            subject.now += YEAR
            t1 = time.perf_counter()
            run = run_rem(mem, density)
            rem_s = time.perf_counter() - t1
            la, ta = mem.stats().live, _live_tokens(mem)
            tokens_b, tokens_a = tokens_b + tb, tokens_a + ta
            after = _ask_all(subject, conv, budgets)
            live_b, live_a = live_b + lb, live_a + la
            for when, (rec, ans) in (("before", before), ("after", after)):
                for b in budgets:
                    recall[when][b].extend(rec[b].values())
                    answer[when][b].extend(ans[b].values())
            rows.append([conv.sample_id, lb, la, f"{lb / max(la, 1):.2f}x",
                         getattr(run, "clusters", "?"), getattr(run, "synthesised", "?"),
                         mean(list(before[0][mid].values())), mean(list(after[0][mid].values())),
                         f"{rem_s:.1f}"])
            print(f"  REM {conv.sample_id} (density {density:g}): live {lb} -> {la}, "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    finally:
        subject.close()

    def kept(values: dict[str, dict[int, list[float]]], b: int) -> str:
        was, now = mean(values["before"][b]), mean(values["after"][b])
        return f"{was:.3f} -> {now:.3f} ({now / max(was, 1e-9):.0%})"

    print(f"## REM retention (LoCoMo, offline synthesiser, density {density:g})\n")
    print(f"One forced REM cycle per conversation, a year after its last session; recall over "
          f"categories 1-4; a synthesis item credits the turns it was derived from. Per "
          f"conversation at budget {mid}:\n")
    print(table(["conversation", "live before", "live after", "reduction", "clusters",
                 "synthesised", f"recall@{mid} before", f"recall@{mid} after", "REM s"], rows)
          + "\n")
    n_literal = len(answer["before"][budgets[0]])
    total = [["evidence recall", live_b, live_a, f"{live_b / max(live_a, 1):.2f}x",
              tokens_b, tokens_a, *(kept(recall, b) for b in budgets)],
             [f"answer in the pack's text ({n_literal} QA)", "", "", "", "", "",
              *(kept(answer, b) for b in budgets)]]
    print(table(["", "live before", "live after", "reduction", "live tokens before",
                 "live tokens after", *(f"@{b} before -> after (kept)" for b in budgets)],
                total) + "\n")
