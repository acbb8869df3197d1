"""The ``llm`` section of ``python -m benchmarks.eval``: remd beside a real model.

    python -m benchmarks.llm_local start            # a local model (see that module)
    python -m benchmarks.eval --only llm --llm-url http://127.0.0.1:8089/v1

Three parts, each on fresh SQLite files:

- **update judge**: ``data/llm_pairs.json``, 15 update and 15 non-update pairs, each in a
  namespace that also holds three unrelated memories of the person. The older statement is
  saved, the newer a day later; the offline detector and the model (``[updates] llm = true``)
  judge. Counted: updates recognised (the older superseded, or a CONTRADICTS edge that ranks
  the newer first), false supersessions (any older memory of a non-update namespace
  superseded, the unrelated ones too) and false CONTRADICTS, with the model's own answers.
- **tagging**: the same statements saved with ``[tags] llm = true``: how many got the model's
  tags, tags per memory, seconds per save.
- **REM**: ``data/llm_fragments.json``, sets of one fact restated three times, a year old, and
  one REM run with the model's synthesiser, then a second run on the unchanged memories.
  Counted: synthesised, skipped by reason, details kept (each set's detail words in some live
  memory), wrong-subject syntheses kept (the members speak as "I", the synthesis does not, or
  it names a person no member names), model calls of the second run.

Without ``--llm-url`` the section prints one line saying it was skipped.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.eval.report import machine_line, table
from remd import Memory
from remd.config import load_config
from remd.logs import capture_events
from remd.models import EdgeType, NodeStatus
from remd.text.details import missing
from remd.wire import iso

DATA = Path(__file__).resolve().parent / "data"
DAY = 86_400.0
START = 1_700_000_000.0
_FIRST = re.compile(r"\b(?:I|I'm|I've|me|my|we|our|us)\b", re.IGNORECASE)


class _Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _config(url: str, model: str, **sections: dict[str, Any]) -> Any:
    return load_config(env={}, overrides={
        "llm": {"base_url": url, "model": model, "max_retries": 1}, **sections})


def judge_part(url: str, model: str, work: Path) -> dict[str, Any]:
    data = json.loads((DATA / "llm_pairs.json").read_text())
    out: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    rows: list[list[object]] = []
    config = _config(url, model, updates={"llm": True})
    for i, pair in enumerate(data["pairs"]):
        clock = _Clock(START)
        background = data["background"][i % len(data["background"])]
        with Memory(work / f"judge{i}.db", config=config, clock=clock) as m, \
                capture_events() as events:
            older = [m.save(t).id for t in background]
            clock.now += DAY
            old = m.save(pair["old"]).id
            older.append(old)
            m.engine.drain()
            clock.now += DAY
            new = m.save(pair["new"]).id
            m.engine.drain()
            superseded = [o for o in older if m.get(o).status is NodeStatus.SUPERSEDED]
            contradicted = [o for o in older if o not in superseded and any(
                e.type is EdgeType.CONTRADICTS and e.src == new for e in m.links(o))]
        for e in events:
            if e["event"] == "update.llm_decided":
                answers[str(e["relation"])] += 1
            elif e["event"] in ("updates.llm_distrusted", "updates.llm_failed",
                                "update.llm_unsupported"):
                answers[str(e["event"])] += 1
        if pair["update"]:
            out["updates"] += 1
            out["recognised"] += old in superseded or old in contradicted
            out["superseded"] += old in superseded
        else:
            out["non_updates"] += 1
            out["false_superseded"] += len(superseded)
            out["false_contradicts"] += len(contradicted)
        rows.append(["update" if pair["update"] else "other", pair["old"], pair["new"],
                     len(superseded), len(contradicted)])
    return {"counts": dict(out), "answers": dict(answers), "rows": rows}


def tagging_part(url: str, model: str, work: Path) -> dict[str, Any]:
    data = json.loads((DATA / "llm_pairs.json").read_text())
    texts = [p["new"] for p in data["pairs"]][:12]
    config = _config(url, model, tags={"llm": True})
    seconds: list[float] = []
    tagged = tags = 0
    with Memory(work / "tags.db", config=config) as m, capture_events() as events:
        for text in texts:
            t0 = time.perf_counter()
            node = m.save(text)
            seconds.append(time.perf_counter() - t0)
            got = m.get(node.id).tags
            tags += len(got)
    failed = sum(1 for e in events if e["event"] == "tagging.llm_failed")
    tagged = len(texts) - failed
    return {"memories": len(texts), "model_tagged": tagged, "tags_per_memory":
            round(tags / len(texts), 1), "seconds_per_save": round(sum(seconds) / len(texts), 1),
            "first_save_s": round(seconds[0], 1)}


def _names(text: str) -> set[str]:
    return {w for w in re.findall(r"\b[A-Z][a-z]+\b", text)} - {"I", "On", "In", "The", "Our"}


def rem_part(url: str, model: str, work: Path) -> dict[str, Any]:
    sets = json.loads((DATA / "llm_fragments.json").read_text())["sets"]
    config = _config(url, model)
    now = START + 400 * DAY
    with Memory(work / "rem.db", config=config, clock=lambda: now) as m:
        lines = []
        for s, item in enumerate(sets):
            for j, text in enumerate(item["fragments"]):
                at = START - (10 * s + j) * DAY
                lines.append(json.dumps({"content": text, "created_at": iso(at)}))
        m.import_lines(lines)
        t0 = time.perf_counter()
        first = m.run_rem(now=now)
        first_s = time.perf_counter() - t0
        calls_before = m.engine.telemetry.snapshot().llm_calls
        t0 = time.perf_counter()
        second = m.run_rem(now=now + DAY)
        second_s = time.perf_counter() - t0
        calls_after = m.engine.telemetry.snapshot().llm_calls
        live = [str(r[0]) for r in m.store.query(
            "SELECT content FROM nodes WHERE status = 'live'")]
        syntheses = [(str(r[0]), str(r[1])) for r in m.store.query(
            "SELECT n.id, n.content FROM nodes n WHERE n.kind = 'synthesis' "
            "AND n.status = 'live'")]
        members: dict[str, list[str]] = {}
        for sid, content in m.store.query(
                "SELECT s.id, n.content FROM nodes n JOIN nodes s ON s.id = n.deprecated_by "
                "WHERE n.status = 'deprecated'"):
            members.setdefault(str(sid), []).append(str(content))
    details = kept = 0
    for item in sets:
        for word in item["details"]:
            details += 1
            # kept as written or by meaning ("85 quid" by "£85": remd.text.details)
            kept += any(word.lower() in text.lower() or not missing(word, text) for text in live)
    wrong = []
    for sid, text in syntheses:
        ms = members.get(sid, [])
        if (any(_FIRST.search(t) for t in ms) and not _FIRST.search(text)) or (
                _names(text) - set().union(*(_names(t) for t in ms))):
            wrong.append(text)
    return {"clusters": first.clusters, "synthesised": first.synthesised,
            "skipped_by": first.skipped_by, "details": details, "details_kept": kept,
            "wrong_subject_kept": len(wrong), "first_run_s": round(first_s),
            "second_run_calls": _calls(calls_after) - _calls(calls_before),
            "second_run_s": round(second_s), "second_skipped_by": second.skipped_by,
            "syntheses": [t for _, t in syntheses]}


def _calls(snapshot: Any) -> int:
    if isinstance(snapshot, dict):
        return sum(_calls(v) for v in snapshot.values())
    return int(snapshot) if isinstance(snapshot, int | float) else 0


def section(url: str | None, model: str = "local", parts: tuple[str, ...] = (
        "judge", "tagging", "rem")) -> dict[str, Any]:
    print("## LLM: remd beside a real model\n")
    if not url:
        print("skipped: no model given (--llm-url; `python -m benchmarks.llm_local start` "
              "serves one)\n")
        return {}
    print(f"model `{model}` at {url}; {machine_line()}\n")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "judge" in parts:
            t0 = time.perf_counter()
            j = judge_part(url, model, work)
            c = j["counts"]
            print(table(["update judge", "value"], [
                ["real updates recognised (superseded or ranked after the newer)",
                 f"{c.get('recognised', 0)} / {c.get('updates', 0)} "
                 f"({c.get('superseded', 0)} superseded)"],
                ["false supersessions (non-update namespaces, every older memory)",
                 c.get("false_superseded", 0)],
                ["false CONTRADICTS", c.get("false_contradicts", 0)],
                ["the model's answers", json.dumps(j["answers"])],
                ["seconds", f"{time.perf_counter() - t0:.0f}"]], ["l", "l"]) + "\n")
            print(table(["kind", "older", "newer", "superseded", "contradicted"], j["rows"],
                        ["l", "l", "l", "r", "r"]) + "\n")
            results["judge"] = j
        if "tagging" in parts:
            t = tagging_part(url, model, work)
            print(table(["tagging", "value"], [[k, v] for k, v in t.items()], ["l", "l"]) + "\n")
            results["tagging"] = t
        if "rem" in parts:
            r = rem_part(url, model, work)
            print(table(["REM with the model's synthesiser", "value"],
                        [[k, json.dumps(v) if isinstance(v, dict) else v]
                         for k, v in r.items() if k != "syntheses"], ["l", "l"]) + "\n")
            for text in r["syntheses"]:
                print(f"- {text}")
            print()
            results["rem"] = r
    return results
