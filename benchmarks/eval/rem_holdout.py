"""REM on a hold-out nobody tuned for: recurring events and settled problems.

    python -m benchmarks.eval.rem_holdout

The notes are ``benchmarks/eval/data/rem_holdout.json``, written by a helper who never saw
remd's rules (its kinds of event, its wordings and date forms are its own): ``recurring``
items (one thing that keeps happening, 6-10 notes each, some adding a detail) and ``settled``
items (a problem or plan said a few times, then ended in the helper's own words). All are
imported with their own timestamps into one namespace, and one REM run (offline synthesiser)
happens a year after. Measured on a copy before and after the run: live memories; the share
of the recurring notes' dates still written in live text (any format); whether the question
about each recurring thing gets a first item naming it at 300 tokens; for each settled
question at 100 tokens, whether the pack holds the current phrase and the stale one; and
every synthesis checked by :mod:`benchmarks.eval.stale_syntheses`.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.eval import datafiles
from benchmarks.eval.report import machine_line, table
from benchmarks.eval.stale_syntheses import check
from remd import Memory
from remd.text.words import find_dates

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()


def _live(m: Memory) -> list[str]:
    return [str(r[0]) for r in m.store.query(
        "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (m.namespace,))]


def _measure(m: Memory, data: dict[str, Any], dates: set[str]) -> dict[str, Any]:
    live = _live(m)
    written = {d.key for t in live for d in find_dates(t)}
    first = 0
    for item in data["recurring"]:
        pack = m.inject(item["question"], 300)
        words = [w for w in item["subject"].lower().split() if w not in ("the", "my", "our")]
        first += bool(pack.items) and all(w in pack.items[0].content.lower() for w in words)
    current = stale = 0
    for item in data["settled"]:
        text = m.inject(item["question"], 100).text.lower()
        current += item["current"].lower() in text
        stale += item["stale"].lower() in text
    return {"live": len(live), "dates": len(written & dates) / max(len(dates), 1),
            "first": first, "current": current, "stale": stale}


def main() -> int:
    data = datafiles.read("rem_holdout")
    notes = [n for kind in ("recurring", "settled") for item in data[kind] for n in item["notes"]]
    lines = [json.dumps({"content": n["text"], "created_at": n["at"]}) for n in notes]
    dates = {d.key for item in data["recurring"] for n in item["notes"]
             for d in find_dates(n["text"]) if d.day_date is not None}
    tmp = Path(tempfile.mkdtemp(prefix="remd-rem-holdout-"))
    db, before = tmp / "after.db", tmp / "before.db"
    with Memory(db, clock=lambda: NOW) as m:
        m.import_lines(lines)
    shutil.copy(db, before)  # an inject is a use: "before" is asked of a copy
    with Memory(before, clock=lambda: NOW) as m:
        was = _measure(m, data, dates)
    with Memory(db, clock=lambda: NOW) as m:
        run = m.run_rem(now=NOW)
        now = _measure(m, data, dates)
        syntheses, bad = check(m)
    n_rec, n_set = len(data["recurring"]), len(data["settled"])
    print(f"## REM on the hold-out ({len(notes)} notes: {n_rec} recurring things, {n_set} "
          f"settled problems or plans)\n\n{machine_line()}\n")
    print(table(["measure", "before REM", "after one run"], [
        ["live memories", was["live"], f"{now['live']} ({was['live'] / max(now['live'], 1):.1f}x "
                                       f"fewer)"],
        ["recurring notes' dates in live text", f"{was['dates']:.0%}", f"{now['dates']:.0%}"],
        [f"recurring: first item names the thing @300 (of {n_rec})", was["first"],
         now["first"]],
        [f"settled: current phrase in the pack @100 (of {n_set})", was["current"],
         now["current"]],
        [f"settled: stale phrase in the pack @100 (of {n_set})", was["stale"], now["stale"]],
        ["syntheses / stating an ended fact as current", "", f"{syntheses} / {len(bad)}"],
    ]) + "\n")
    print(f"Run: {run.clusters} clusters, {run.synthesised} synthesised, skipped "
          f"{run.skipped_by}.\n")
    for text in bad:
        print(f"- stale: {text}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
