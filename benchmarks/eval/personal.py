"""Personal memories: the right memory first at a tight budget, and no filler.

Forty first-person memories a user might tell an agent over a few weeks (family, work, food,
plans, gadgets), two of which change a fact ("I moved to Hyderabad", "My manager is now
Karthik Rao"), then sixteen questions that one or two memories answer and three about nothing
stored. Per question: is the answer's memory first in a pack of 40 tokens, how many tokens a
pack of 200 uses with the default relevance floor (and with ``fill=True``), and whether a
superseded value shows up anywhere in it. The issue's hold-out set is a different one; these
memories and questions were written for this benchmark, not taken from it. The data is
``benchmarks/eval/data/personal.json``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.eval import datafiles
from benchmarks.eval.report import mean, table
from remd import Memory

_DATA = datafiles.read("personal")  # benchmarks/eval/data/personal.json
MEMORIES: tuple[str, ...] = tuple(_DATA["memories"])
# (question, a phrase of the memory that answers it)
QUESTIONS: tuple[tuple[str, str], ...] = tuple((q["question"], q["answer"])
                                               for q in _DATA["questions"])
UNKNOWN: tuple[str, ...] = tuple(_DATA["unknown"])  # questions about nothing stored
STALE: tuple[str, ...] = tuple(_DATA["stale"])  # the superseded memories
FIRST_BUDGET, BUDGET = 40, 200


@dataclass
class Row:
    question: str
    first_ok: bool
    tokens: int
    tokens_fill: int
    stale: bool
    first: str


def run(workdir: Path | None = None) -> tuple[list[Row], list[Row]]:
    """(answerable rows, unknown rows), in a fresh file with a day between memories."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-personal-"))
    now = [1_700_000_000.0]
    rows: list[Row] = []
    unknown: list[Row] = []
    with Memory(workdir / "personal.db", clock=lambda: now[0]) as mem:
        for text in MEMORIES:
            now[0] += 86_400.0
            mem.save(text)
        now[0] += 86_400.0
        for question, answer in QUESTIONS:
            first = mem.inject(question, FIRST_BUDGET)
            top = first.items[0].content if first.items else ""
            pack = mem.inject(question, BUDGET)
            full = mem.inject(question, BUDGET, fill=True)
            rows.append(Row(question, answer.lower() in top.lower(), pack.tokens_used,
                            full.tokens_used, any(s in pack.text for s in STALE), top))
        for question in UNKNOWN:
            pack = mem.inject(question, BUDGET)
            full = mem.inject(question, BUDGET, fill=True)
            top = pack.items[0].content if pack.items else ""
            unknown.append(Row(question, not pack.items, pack.tokens_used, full.tokens_used,
                               any(s in pack.text for s in STALE), top))
    return rows, unknown


def section() -> None:
    rows, unknown = run()
    print("## Personal memories\n")
    print(f"{len(MEMORIES)} first-person memories (two facts changed later), {len(QUESTIONS)} "
          f"questions one or two of them answer, {len(UNKNOWN)} about nothing stored "
          f"(benchmarks/eval/personal.py). First = the answer's memory is the first item of a "
          f"{FIRST_BUDGET}-token pack; tokens = o200k tokens of a {BUDGET}-token pack with the "
          f"default relevance floor (fill: packed to the budget); stale = a superseded value "
          f"is in the pack.\n")
    print(table(["question", "first", "tokens", "tokens (fill)", "stale", "first item"],
                [[r.question, "yes" if r.first_ok else "no", r.tokens, r.tokens_fill,
                  "yes" if r.stale else "no", r.first[:48]] for r in rows + unknown]) + "\n")
    print(table(["measure", "value"], [
        ["right memory first at 40 tokens", f"{sum(r.first_ok for r in rows)}/{len(rows)}"],
        ["mean tokens at 200 (floor)", f"{mean([r.tokens for r in rows]):.1f}"],
        ["mean tokens at 200 (fill)", f"{mean([r.tokens_fill for r in rows]):.1f}"],
        ["tokens for a question about nothing stored (max)",
         str(max(r.tokens for r in unknown))],
        ["packs with a stale value", str(sum(r.stale for r in rows + unknown))],
    ]) + "\n")
