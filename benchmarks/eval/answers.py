"""Answers as the measure: a reader (a small chat model) answers each question from a pack, and
we count the answers that are right, stale or unknown.

    python -m benchmarks.eval --only answers --llm-url URL        # through the eval runner
    python -m benchmarks.eval.answers --llm-url URL [--sets NAME ...] [--locomo N] [--detail]

Arms, each given the same budget (:data:`BUDGET` tokens, o200k): ``remd`` (inject with the
default relevance floor), ``remd-dated`` (the same, each item dated), ``remd-fill`` (packed to
the budget), ``bm25`` (the best BM25 matches of everything ever said, packed greedily),
``recent`` (the newest things said), ``history`` (everything said, each line dated, oldest
first, cut to the reader's window: the newest lines that fit :data:`WINDOW` tokens) and
``none`` (no notes). Each remd arm asks on its own copy of the database, so one arm's packs
(access counts, recency) never move another's.

Sets: the everyday sets of ``benchmarks/eval/data/everyday_v*_*.json`` (built as
``everyday_sets.py`` builds them: saved day by day, one REM run at day 45, asked on day 77) and
a fixed sample of LoCoMo questions (:data:`LOCOMO_PER_CATEGORY` of each category 1-4 per
conversation, remd at 1,024 tokens against BM25 and the history, graded by token F1).
Grading: :mod:`benchmarks.eval.reader`.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

from benchmarks.eval import baselines, everyday_sets
from benchmarks.eval.reader import (
    Reader,
    grade_all,
    grade_date,
    grade_update,
    summary,
    token_f1,
)
from benchmarks.eval.report import machine_line, mean, table
from remd import Config, Memory
from remd.text.tokens import TokenCounter

ARMS = ("remd", "remd-dated", "remd-fill", "bm25", "recent", "history", "none")
REMD_ARMS = {"remd": {}, "remd-dated": {"dated": True}, "remd-fill": {"fill": True}}
BUDGET = 200
LOCOMO_BUDGET = 1024
WINDOW = 3000  # tokens of history the reader's 4,096-token context holds beside the prompt
LOCOMO_PER_CATEGORY = 2
CACHE = Path(tempfile.gettempdir()) / "remd-eval-cache" / "answers.jsonl"


@dataclass(frozen=True)
class Said:
    at: float
    text: str


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%a %d %b %Y")


class Notes:
    """What each arm gives the reader, over one history of things said (and the remd files
    built from it: one per remd arm)."""

    def __init__(self, said: Sequence[Said], mems: dict[str, Memory], budget: int) -> None:
        self.said = list(said)
        self.mems = mems
        self.budget = budget
        self.counter = TokenCounter(Config().store.encoding)
        self.separator = Config().inject.separator
        texts = [s.text for s in self.said]
        self.table = baselines.TokenTable(texts, self.counter, self.separator)
        self.bm25 = baselines.BM25Ranker(texts) if texts else None
        self.tokens: dict[str, list[int]] = defaultdict(list)

    def _packed(self, ranking: Sequence[int]) -> str:
        picked = baselines.pack(ranking, self.table, self.budget)
        return self.separator.join(self.said[i].text for i in picked.indices)

    def notes(self, arm: str, question: str) -> str:
        if arm in REMD_ARMS:
            pack = self.mems[arm].inject(question, self.budget, **REMD_ARMS[arm])
            text = str(pack.text)
        elif arm == "bm25":
            text = self._packed(self.bm25.rank(question)) if self.bm25 else ""
        elif arm == "recent":
            text = self._packed(baselines.recency_rank([s.at for s in self.said]))
        elif arm == "history":
            lines, used = [], 0
            for s in reversed(self.said):
                line = f"[{_day(s.at)}] {s.text}"
                cost = self.counter.count(line + "\n")
                if used + cost > WINDOW:
                    break
                lines.append(line)
                used += cost
            text = "\n".join(reversed(lines))
        else:
            text = ""
        self.tokens[arm].append(self.counter.count(text))
        return text


def remd_copies(path: Path, arms: Sequence[str], clock: Callable[[], float],
                ) -> dict[str, Memory]:
    """A Memory per remd arm, each on its own copy of the (closed) file at ``path``."""
    out: dict[str, Memory] = {}
    for arm in arms:
        if arm not in REMD_ARMS:
            continue
        copy = path.with_name(f"{path.stem}-{arm}.db")
        shutil.copyfile(path, copy)
        out[arm] = Memory(copy, clock=clock)
    return out


# -- the everyday sets ----------------------------------------------------------------------------
@dataclass
class Graded:
    question: str
    kind: str
    group: str  # update, additive, category, date, habit, other
    grades: dict[str, str] = field(default_factory=dict)  # arm -> grade
    answers: dict[str, str] = field(default_factory=dict)  # arm -> the reader's answer


def _group(kind: str, is_update: bool) -> str:
    if is_update:
        return "update"
    return kind if kind in ("additive", "category", "date", "habit") else "other"


def everyday(s: everyday_sets.EverydaySet, reader: Reader, arms: Sequence[str],
             workdir: Path, budget: int = BUDGET) -> tuple[list[Graded], Notes]:
    """Build the set's memory, then ask every question of every arm on day 77."""
    now = [everyday_sets.START]
    path = workdir / f"{s.name}.db"
    with Memory(path, clock=lambda: now[0]) as mem:
        everyday_sets.build(mem, s, now)
    now[0] = everyday_sets.START + everyday_sets.ASK_DAY * everyday_sets.DAY
    said = [Said(everyday_sets.START + day * everyday_sets.DAY, text)
            for day, text, _ in everyday_sets.saves(s)]
    mems = remd_copies(path, arms, lambda: now[0])
    notes = Notes(said, mems, budget)
    today = _day(now[0])
    rows: list[Graded] = []
    try:
        for it in s.updates:
            row = Graded(it.question, it.kind, "update")
            for arm in arms:
                answer = reader.answer(it.question, notes.notes(arm, it.question), today).text
                row.answers[arm] = answer
                row.grades[arm] = grade_update(answer, it.current, it.accept, it.stale)
            rows.append(row)
        for it in s.controls:
            row = Graded(it.question, it.kind, _group(it.kind, False))
            for arm in arms:
                answer = reader.answer(it.question, notes.notes(arm, it.question), today).text
                row.answers[arm] = answer
                row.grades[arm] = (grade_date(answer, date.fromisoformat(it.answer_date))
                                   if it.answer_date else grade_all(answer, it.answers))
            rows.append(row)
    finally:
        for m in mems.values():
            m.close()
    return rows, notes


def _count(rows: Sequence[Graded], group: str, arm: str, grade: str) -> int:
    return sum(1 for r in rows if r.group == group and r.grades.get(arm) == grade)


def everyday_table(name: str, rows: Sequence[Graded], notes: Notes, arms: Sequence[str]) -> str:
    n_up = sum(r.group == "update" for r in rows)
    groups = [g for g in ("additive", "category", "date", "habit", "other")
              if any(r.group == g for r in rows)]
    sizes = {g: sum(r.group == g for r in rows) for g in groups}
    header = ["arm", "mean tokens", f"updates right (of {n_up})", "stale", "unknown",
              *(f"{g} right (of {sizes[g]})" for g in groups)]
    out = []
    for arm in arms:
        cells: list[object] = [arm, f"{mean(notes.tokens[arm]):.0f}",
                               _count(rows, "update", arm, "right"),
                               _count(rows, "update", arm, "stale"),
                               _count(rows, "update", arm, "unknown")]
        for g in groups:
            half = _count(rows, g, arm, "half")
            right = _count(rows, g, arm, "right")
            cells.append(f"{right}" + (f" (+{half} half)" if half else ""))
        out.append(cells)
    return f"{name}\n\n" + table(header, out, ["l"] + ["r"] * (len(header) - 1))


def detail_table(rows: Sequence[Graded], arm: str) -> str:
    return table(["question", "kind", "grade", f"{arm}'s answer"],
                 [[r.question[:60], r.kind, r.grades[arm], r.answers[arm][:70]] for r in rows],
                 ["l", "l", "l", "l"])


# -- LoCoMo -------------------------------------------------------------------------------------
def locomo_sample(convs: Sequence[object], per_category: int) -> list[tuple[object, object]]:
    """(conversation, question) pairs: the first ``per_category`` questions of each category
    1-4 with a gold answer, in each conversation (a fixed sample)."""
    out = []
    for conv in convs:
        seen: Counter[int] = Counter()
        for qa in conv.qa:  # type: ignore[attr-defined]
            if qa.category in (1, 2, 3, 4) and qa.answer and seen[qa.category] < per_category:
                seen[qa.category] += 1
                out.append((conv, qa))
    return out


def locomo(convs: Sequence[object], reader: Reader, workdir: Path, per_category: int,
           arms: Sequence[str] = ("remd", "bm25", "history"),
           ) -> dict[str, dict[int, list[float]]]:
    """arm -> category -> token F1 of each sampled question."""
    from remd.text.embed import MiniLMEmbedder

    f1: dict[str, dict[int, list[float]]] = {a: defaultdict(list) for a in arms}
    embedder = MiniLMEmbedder()
    sample = locomo_sample(convs, per_category)
    for conv in convs:
        qs = [qa for c, qa in sample if c is conv]
        if not qs:
            continue
        turns = conv.turns  # type: ignore[attr-defined]
        now = [0.0]
        clock: Callable[[], float] = lambda box=now: box[0]  # noqa: E731
        path = workdir / f"locomo-{conv.index}.db"  # type: ignore[attr-defined]
        with Memory(path, clock=clock, embedder=embedder) as mem:
            for t in turns:
                now[0] = t.at
                mem.save(t.content)
        now[0] = max(t.at for t in turns) + 86_400
        said = [Said(t.at, t.content) for t in turns]
        mems = remd_copies(path, [a for a in arms if a in REMD_ARMS], clock)
        notes = Notes(said, mems, LOCOMO_BUDGET)
        try:
            for qa in qs:
                for arm in arms:
                    answer = reader.answer(qa.question, notes.notes(arm, qa.question),
                                           _day(now[0])).text
                    f1[arm][qa.category].append(token_f1(answer, qa.answer))
        finally:
            for m in mems.values():
                m.close()
    return f1


def locomo_table(f1: dict[str, dict[int, list[float]]]) -> str:
    cats = sorted({c for by in f1.values() for c in by})
    rows = [[arm, *(f"{mean(by[c]):.3f}" for c in cats),
             f"{mean([v for c in cats for v in by[c]]):.3f}",
             sum(len(by[c]) for c in cats)] for arm, by in f1.items()]
    return table(["arm", *(f"F1 cat {c}" for c in cats), "F1 all", "questions"], rows)


# -- running ------------------------------------------------------------------------------------
def section(url: str | None, model: str, *, sets: Sequence[str] | None = None,
            locomo_convs: Sequence[object] = (), arms: Sequence[str] = ARMS,
            cache: Path = CACHE, detail: bool = False, budget: int = BUDGET,
            per_category: int = LOCOMO_PER_CATEGORY) -> None:
    print("## Answers from the pack\n")
    if not url:
        print("(skipped: no --llm-url; python -m benchmarks.llm_local start serves one)\n")
        return
    reader = Reader(url, model, cache)
    files = [f for f in everyday_sets.files() if sets is None or f.stem in sets]
    workdir = Path(tempfile.mkdtemp(prefix="remd-answers-"))
    print(f"Reader: {model} at {url}, greedy, at most {reader.max_tokens} tokens an answer; "
          f"every arm {budget} tokens (history: the newest {WINDOW} tokens).\n")
    for f in files:
        s = everyday_sets.load(f)
        rows, notes = everyday(s, reader, arms, workdir, budget)
        print(everyday_table(f"### {s.name}", rows, notes, arms) + "\n")
        if detail:
            print(detail_table(rows, "remd") + "\n")
    if locomo_convs:
        f1 = locomo(locomo_convs, reader, workdir, per_category)
        print(f"### LoCoMo sample ({per_category} questions of each category per "
              f"conversation, {LOCOMO_BUDGET} tokens)\n")
        print(locomo_table(f1) + "\n")
    print(summary(reader) + "\n")
    shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.answers", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm-url", required=True)
    ap.add_argument("--llm-model", default="local")
    ap.add_argument("--sets", nargs="*", default=None, help="everyday set names (file stems)")
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--budget", type=int, default=BUDGET)
    ap.add_argument("--locomo", type=int, default=0, metavar="N",
                    help="also a LoCoMo sample from the first N conversations")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3]
                    / "shared" / "data")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--detail", action="store_true", help="remd's answer to every question")
    args = ap.parse_args(argv)
    convs: Sequence[object] = ()
    if args.locomo:
        from benchmarks.eval import locomo as lm

        convs = lm.load(args.data)[: args.locomo]
    print(f"remd answers — {machine_line()}\n")
    section(args.llm_url, args.llm_model, sets=args.sets, locomo_convs=convs,
            arms=args.arms, cache=args.cache, detail=args.detail, budget=args.budget)
    return 0


if __name__ == "__main__":
    sys.exit(main())
