"""Answers before and after REM: the same reader, the same questions, with and without
consolidation.

    python -m benchmarks.eval.rem_answers --llm-url http://127.0.0.1:8089/v1 [--days 120]
        [--hairball 40] [--json benchmarks/results/rem_answers.json]

Two sets, each asked at budgets 100 and 200 (remd's default floor), its packs read by the local
reader (:mod:`benchmarks.eval.reader`, cached):

- **a simulated life** (:mod:`benchmarks.eval.life`): the same saves with REM every night and
  without; every answerable question; right = the answer names the current value (changed
  facts: :func:`grade_update`, so a stale answer is counted apart) or the answer phrase;
- **the hairball** (:mod:`benchmarks.bench_hairball`, one namespace of ``--hairball``
  services): before and after one REM run; each question needs three facts of one service,
  and a fact is right when the answer names its value (dates: day and month in any form).

Printed: answers right (and stale), the pack's tokens and items, per arm and budget; with
``--json`` the figures are written for docs/evaluation.md (benchmarks/eval/docs.py).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from benchmarks import bench_hairball as hb
from benchmarks.eval import life
from benchmarks.eval.answers import CACHE
from benchmarks.eval.reader import Reader, grade_date, grade_update, holds, summary
from benchmarks.eval.report import machine_line, table
from remd import Memory
from remd.wire import iso

BUDGETS = (100, 200)
ARMS = ("no REM", "REM")


def _today(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%A %d %B %Y")


def life_answers(reader: Reader, days: int) -> dict[str, Any]:
    res = life.run(days, read=BUDGETS)
    today = _today(life.START + (res.days + 1) * life.DAY)
    out: dict[str, Any] = {"days": res.days, "saves": res.saves, "arms": {}}
    for arm, key in zip(ARMS, ("no-rem", "rem"), strict=True):
        cells: dict[str, Any] = {}
        for b in BUDGETS:
            right = stale = n = tokens = items = 0
            for q, asked in zip(res.questions, res.arms[key].asked, strict=True):
                if q.kind == "never":
                    continue
                text, used, k = asked.read[b]
                reply = reader.answer(q.question, text, today).text
                grade = (grade_update(reply, q.answer, (), q.stale) if q.stale
                         else "right" if holds(reply, q.answer) else "wrong")
                n += 1
                right += grade == "right"
                stale += grade == "stale"
                tokens += used
                items += k
            cells[str(b)] = {"right": right, "stale": stale, "asked": n,
                             "found": sum(q.answer.lower() in a.read[b][0].lower()
                                          for q, a in zip(res.questions, res.arms[key].asked,
                                                          strict=True) if q.kind != "never"),
                             "tokens": round(tokens / max(n, 1), 1),
                             "items": round(items / max(n, 1), 1)}
        cells["live"] = res.arms[key].live
        cells["live_tokens"] = res.arms[key].live_tokens
        out["arms"][arm] = cells
    return out


def hairball_answers(reader: Reader, services: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    subjects = hb.make_subjects("hairball", services, rng, set())
    tmp = Path(tempfile.mkdtemp(prefix="remd-rem-answers-"))
    path, copy = tmp / "after.db", tmp / "before.db"
    with Memory(path, clock=lambda: hb.NOW) as m:
        m.import_lines([json.dumps({"content": t, "created_at": iso(at)})
                        for s in subjects for t, at in s.fragments])
    shutil.copy(path, copy)  # an inject is a use: "before" is asked of a copy
    with Memory(path, clock=lambda: hb.NOW) as m:
        run = m.run_rem(now=hb.NOW)
    today = _today(hb.NOW)
    out: dict[str, Any] = {"services": services, "synthesised": run.synthesised,
                           "live_before": run.live_before, "live_after": run.live_after,
                           "arms": {}}
    for arm, db in zip(ARMS, (copy, path), strict=True):
        cells: dict[str, Any] = {}
        with Memory(db, clock=lambda: hb.NOW) as m:
            for b in BUDGETS:
                facts = whole = tokens = items = 0
                for s in subjects:
                    pack = m.inject(s.question, b)
                    tokens += pack.tokens_used
                    items += len(pack.items)
                    reply = reader.answer(s.question, pack.text, today).text
                    got = sum(_fact(reply, s.values[a], a) for a in s.needs)
                    facts += got
                    whole += got == len(s.needs)
                cells[str(b)] = {"facts": facts, "needed": 3 * len(subjects), "whole": whole,
                                 "questions": len(subjects),
                                 "tokens": round(tokens / len(subjects), 1),
                                 "items": round(items / len(subjects), 1)}
        out["arms"][arm] = cells
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def _fact(reply: str, value: str, attr: str) -> bool:
    if attr in ("launch", "incident"):
        return grade_date(reply, date.fromisoformat(value)) == "right"
    return holds(reply, value)


def tables(result: dict[str, Any]) -> str:
    parts = []
    lf = result["life"]
    rows = []
    for b in BUDGETS:
        row: list[object] = [b]
        for arm in ARMS:
            c = lf["arms"][arm][str(b)]
            row += [f"{c['found']}/{c['asked']}", f"{c['right']}/{c['asked']}", c["stale"],
                    f"{c['tokens']:.1f}", f"{c['items']:.1f}"]
        rows.append(row)
    parts.append(f"A simulated life ({lf['days']} days, {lf['saves']} saves), nightly REM "
                 f"against none (found: the answer phrase is in the pack; right: the reader "
                 f"answers it):\n\n" + table(
                     ["budget", "found, no REM", "right", "stale", "pack tokens", "items",
                      "found, REM nightly", "right", "stale", "pack tokens", "items"], rows))
    hbr = result["hairball"]
    rows = []
    for b in BUDGETS:
        row = [b]
        for arm in ARMS:
            c = hbr["arms"][arm][str(b)]
            row += [f"{c['facts']}/{c['needed']}", f"{c['whole']}/{c['questions']}",
                    f"{c['tokens']:.1f}", f"{c['items']:.1f}"]
        rows.append(row)
    parts.append(f"Hairball ({hbr['services']} services, one REM run: {hbr['live_before']} -> "
                 f"{hbr['live_after']} live):\n\n" + table(
                     ["budget", "facts right, before", "questions whole", "pack tokens",
                      "items", "facts right, after", "questions whole", "pack tokens",
                      "items"], rows))
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.rem_answers",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm-url", required=True)
    ap.add_argument("--llm-model", default="local")
    ap.add_argument("--days", type=int, default=life.DAYS)
    ap.add_argument("--hairball", type=int, default=40, help="services in the hairball")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    reader = Reader(args.llm_url, args.llm_model, args.cache)
    result = {"machine": machine_line(), "life": life_answers(reader, args.days),
              "hairball": hairball_answers(reader, args.hairball)}
    print(f"## Answers before and after REM\n\n{machine_line()}\n")
    print(tables(result) + "\n")
    print(summary(reader))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
