"""Inject made faster answers the same: the packs of two truth sets, recorded before the speed
work, must come out identical (every item's text in order, and the pack's text).

The sets are ``benchmarks/eval/data/everyday_v3_dev.json`` (one person's updates, controls and
unrelated notes over weeks, each saved on its day) and ``personal.json`` (forty memories); each
question is asked at two budgets, with the real MiniLM embedder and a fixed clock. The record is
``tests/query/data/packs.json``; after a change that is meant to change packs, record it again
and say why in the commit:

    python -m tests.query.test_same_packs --record
"""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.eval import datafiles
from remd import Memory

RECORD = Path(__file__).resolve().parent / "data" / "packs.json"
DAY = 86_400.0
START = datetime(2025, 1, 6, tzinfo=UTC).timestamp()
NOW = START + 90 * DAY
BUDGETS = (100, 300)


def _everyday(m: Memory) -> list[str]:
    data = datafiles.read("everyday_v3_dev")
    notes = [*(s for item in data["updates"] + data["controls"] for s in item["steps"]),
             *data["unrelated"]]
    m.import_lines(json.dumps({"content": n["text"], "created_at": datetime.fromtimestamp(
        START + n["day"] * DAY, UTC).isoformat()}) for n in notes)
    return [item["question"] for item in data["updates"] + data["controls"]]


def _personal(m: Memory) -> list[str]:
    data = datafiles.read("personal")
    m.import_lines(json.dumps({"content": text, "created_at": datetime.fromtimestamp(
        START + i * DAY / 2, UTC).isoformat()}) for i, text in enumerate(data["memories"]))
    return [q["question"] if isinstance(q, dict) else str(q)
            for q in data["questions"] + data["unknown"]]


SETS = {"everyday_v3_dev": _everyday, "personal": _personal}


def packs(where: Path) -> dict[str, Any]:
    """Every question's pack at every budget: its items' texts and a digest of its text."""
    out: dict[str, Any] = {}
    for name, fill in SETS.items():
        with Memory(where / f"{name}.db", clock=lambda: NOW) as m:
            for question in fill(m):
                for budget in BUDGETS:
                    pack = m.inject(question, budget)
                    out[f"{name} | {question} | {budget}"] = {
                        "items": [i.content for i in pack.items],
                        "text": hashlib.sha256(pack.text.encode()).hexdigest()[:16]}
    return out


@pytest.mark.soak  # 190 packs of two real sets: ~7 s
def test_the_packs_are_the_recorded_ones(tmp_path: Path) -> None:
    want = json.loads(RECORD.read_text(encoding="utf-8"))
    got = packs(tmp_path)
    assert got.keys() == want.keys()
    changed = [k for k in want if got[k] != want[k]]
    assert changed == [], f"{len(changed)} of {len(want)} packs changed, first: {changed[0]}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.query.test_same_packs --record")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(packs(Path(tmp)), indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    print(f"recorded {RECORD}")
