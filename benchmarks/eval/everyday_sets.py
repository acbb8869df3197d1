"""Everyday sets from files: version chains said in everyday words, and controls that must stay.

``python -m benchmarks.eval.everyday_sets FILE [FILE ...] [--json OUT] [--check]`` runs each
set of ``benchmarks/eval/data/everyday_v*_*.json`` (format: ``benchmarks/eval/data/README.md``; the
first rounds' ``everyday*.json`` are another format, run by ``everyday.py``) in a fresh file with
a moved clock:

1. every text is saved at its day (days 0-75), in time order; one REM run (the default offline
   synthesiser) at day :data:`REM_MID`, so the older values may sit inside a synthesis when
   the newer ones are said;
2. on day :data:`ASK_DAY` every question is asked: per update, ``first`` = the first item of a
   40-token pack holds the ``current`` phrase; ``stale`` = a 200-token pack with the default
   relevance floor holds one of the ``stale`` phrases; per control, every answer is in the
   200-token pack; the pack's tokens;
3. a second REM run at day :data:`REM_END`, and the same questions a day later.

Besides the packs it counts the decisions update detection wrote: a SUPERSEDES or
CONTRADICTS edge between two memories that are not steps of one update (or a synthesis holding
one) is false; the additive controls' false edges are counted apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.eval import datafiles
from benchmarks.eval.report import machine_line, mean, table
from remd import Memory

DATA = datafiles.DATA
PATTERN = "everyday_v*_*.json"  # the sets of this format (the fourth round's)
START = datetime(2025, 3, 3, tzinfo=UTC).timestamp()
DAY = 86_400.0
REM_MID, ASK_DAY, REM_END = 45.0, 77.0, 117.0
FIRST_BUDGET, BUDGET = 40, 200
PHASES = ("day 77", "day 118 (after REM)")


@dataclass(frozen=True)
class Step:
    day: float
    text: str


@dataclass(frozen=True)
class Item:
    kind: str
    steps: tuple[Step, ...]
    question: str
    current: str = ""  # updates
    stale: tuple[str, ...] = ()  # updates
    answers: tuple[str, ...] = ()  # controls
    voice: int = 0
    accept: tuple[str, ...] = ()  # updates: other forms of the current value an answer may use
    answer_date: str = ""  # a "date" control: the day asked for (YYYY-MM-DD)


@dataclass(frozen=True)
class EverydaySet:
    name: str
    about: str
    updates: tuple[Item, ...]
    controls: tuple[Item, ...]
    unrelated: tuple[Step, ...]


def files() -> list[Path]:
    """The data files of this format, sorted by name."""
    return sorted(DATA.glob(PATTERN))


def _steps(raw: list[dict[str, Any]]) -> tuple[Step, ...]:
    return tuple(Step(float(s["day"]), str(s["text"])) for s in raw)


def load(path: Path | str) -> EverydaySet:
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    ups = tuple(Item(kind=u["kind"], steps=_steps(u["steps"]), question=u["question"],
                     current=u["current"], stale=tuple(u["stale"]), voice=u.get("voice", 0),
                     accept=tuple(u.get("accept", ())))
                for u in raw["updates"])
    ctl = tuple(Item(kind=c["kind"], steps=_steps(c["steps"]), question=c["question"],
                     answers=tuple(c["answers"]), voice=c.get("voice", 0),
                     answer_date=c.get("answer_date", ""))
                for c in raw["controls"])
    return EverydaySet(raw["name"], raw.get("about", ""), ups, ctl, _steps(raw["unrelated"]))


def problems(s: EverydaySet) -> list[str]:
    """What is wrong with a set's data (empty when its phrases do what they claim)."""
    out: list[str] = []
    owner: list[tuple[str, int]] = []  # (text lowered, item index; -1 unrelated)
    items = [*s.updates, *s.controls]
    for i, it in enumerate(items):
        owner += [(st.text.lower(), i) for st in it.steps]
        days = [st.day for st in it.steps]
        if days != sorted(days) or len(set(days)) != len(days):
            out.append(f"{it.question!r}: steps not in time order")
    owner += [(u.text.lower(), -1) for u in s.unrelated]
    texts = [t for t, _ in owner]
    if len(set(texts)) != len(texts):
        out.append("a text is saved twice")
    for i, u in enumerate(s.updates):
        last = u.steps[-1].text.lower()
        cur = u.current.lower()
        computed = u.kind == "delta" and not any(cur in t for t, _ in owner)
        if cur not in last and not computed:  # a delta's result may be said nowhere
            out.append(f"{u.question!r}: current {u.current!r} not in the last step")
        others = [t for t, o in owner if o != i and cur in t]
        if others:
            out.append(f"{u.question!r}: current {u.current!r} also in {others[:2]}")
        for st in u.stale:
            low = st.lower()
            if low in last:
                out.append(f"{u.question!r}: stale {st!r} in the last step")
            if not any(low in x.text.lower() for x in u.steps[:-1]):
                out.append(f"{u.question!r}: stale {st!r} in no earlier step")
            if any(o != i and low in t for t, o in owner):
                out.append(f"{u.question!r}: stale {st!r} in another item's text")
        if len(u.steps) < 2:
            out.append(f"{u.question!r}: an update needs two steps")
    for c in s.controls:
        joined = " ".join(x.text for x in c.steps).lower()
        out += [f"{c.question!r}: answer {a!r} not in its steps" for a in c.answers
                if a.lower() not in joined]
    return out


@dataclass
class Asked:
    question: str
    kind: str
    ok: dict[str, bool] = field(default_factory=dict)  # update: current first; control: all in
    stale: dict[str, bool] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    top: dict[str, str] = field(default_factory=dict)


@dataclass
class Result:
    name: str
    updates: list[Asked]
    controls: list[Asked]
    false_supersedes: int = 0
    false_contradicts: int = 0
    additive_pairs: int = 0
    additive_false_supersedes: int = 0
    additive_false_contradicts: int = 0
    true_supersedes: int = 0
    false_pairs: list[tuple[str, str, str]] = field(default_factory=list)
    rem: list[dict[str, int]] = field(default_factory=list)

    def first(self, phase: str) -> int:
        return sum(a.ok[phase] for a in self.updates)

    def stale_in(self, phase: str) -> int:
        return sum(a.stale[phase] for a in self.updates)

    def kept(self, phase: str) -> int:
        return sum(a.ok[phase] for a in self.controls)

    def mean_tokens(self, phase: str) -> float:
        return mean([a.tokens[phase] for a in [*self.updates, *self.controls]])


def _ask(mem: Memory, s: EverydaySet, phase: str, res: Result) -> None:
    for it, row in zip(s.updates, res.updates, strict=True):
        top_pack = mem.inject(it.question, FIRST_BUDGET)
        top = top_pack.items[0].content if top_pack.items else ""
        pack = mem.inject(it.question, BUDGET)
        row.ok[phase] = it.current.lower() in top.lower()
        row.stale[phase] = any(x.lower() in pack.text.lower() for x in it.stale)
        row.tokens[phase] = pack.tokens_used
        row.top[phase] = top[:90]
    for it, row in zip(s.controls, res.controls, strict=True):
        pack = mem.inject(it.question, BUDGET)
        row.ok[phase] = all(a.lower() in pack.text.lower() for a in it.answers)
        row.tokens[phase] = pack.tokens_used
        row.top[phase] = pack.items[0].content[:90] if pack.items else ""


def _rem(mem: Memory, at: float) -> dict[str, int]:
    r = mem.run_rem(now=at)
    return {"flagged": r.flagged, "clusters": r.clusters, "synthesised": r.synthesised,
            "skipped": r.skipped, "live_before": r.live_before, "live_after": r.live_after}


def _decisions(mem: Memory, s: EverydaySet, ids: dict[str, int], res: Result) -> None:
    """Classify every SUPERSEDES/CONTRADICTS edge update detection wrote."""
    ns = mem.namespace
    origin = dict(ids)  # node id -> item index (updates first, then controls; -1 unrelated)
    for sid, mid in mem.store.query(
            "SELECT src, dst FROM edges WHERE namespace = ? AND type = 'DERIVED_FROM'", (ns,)):
        if mid in origin:
            origin.setdefault(sid, origin[mid])
    n_up = len(s.updates)
    additive = {n_up + j for j, c in enumerate(s.controls) if c.kind == "additive"}
    res.additive_pairs = sum(len(s.controls[j - n_up].steps) - 1 for j in additive)
    seen: set[tuple[str, str, str]] = set()
    for src, dst, kind in mem.store.query(
            "SELECT src, dst, type FROM edges WHERE namespace = ? AND type IN "
            "('SUPERSEDES', 'CONTRADICTS') AND (retired_by IS NULL OR retired_by != 'llm')",
            (ns,)):
        if (src, dst, kind) in seen:
            continue
        seen.add((src, dst, kind))
        a, b = origin.get(src), origin.get(dst)
        true = a is not None and a == b and 0 <= a < n_up
        if true:
            res.true_supersedes += kind == "SUPERSEDES"
            continue
        if kind == "SUPERSEDES":
            res.false_supersedes += 1
        else:
            res.false_contradicts += 1
        if a in additive or b in additive:
            if kind == "SUPERSEDES":
                res.additive_false_supersedes += 1
            else:
                res.additive_false_contradicts += 1
        texts = dict(mem.store.query(
            "SELECT id, content FROM nodes WHERE namespace = ? AND id IN (?, ?)",
            (ns, src, dst)))
        res.false_pairs.append((kind, texts.get(dst, dst)[:70], texts.get(src, src)[:70]))


def saves(s: EverydaySet) -> list[tuple[float, str, int]]:
    """(day, text, owner) of every text in time order: owner is the item's index (updates,
    then controls) or -1 for an unrelated one."""
    out: list[tuple[float, str, int]] = []
    for i, it in enumerate([*s.updates, *s.controls]):
        out += [(st.day, st.text, i) for st in it.steps]
    out += [(u.day, u.text, -1) for u in s.unrelated]
    return sorted(out, key=lambda x: x[0])


def build(mem: Memory, s: EverydaySet, now: list[float], rem: list[dict[str, int]] | None = None,
          *, rem_mid: bool = True) -> dict[str, int]:
    """Save every text at its day (``now[0]`` is the Memory's clock), with one REM run at day
    :data:`REM_MID` (unless not ``rem_mid``); node id -> owner (see :func:`saves`)."""
    ids: dict[str, int] = {}
    rem_done = not rem_mid
    for day, text, owner in saves(s):
        if not rem_done and day >= REM_MID:
            made = _rem(mem, START + REM_MID * DAY)
            if rem is not None:
                rem.append(made)
            rem_done = True
        now[0] = START + day * DAY
        ids[mem.save(text).id] = owner
    if not rem_done:
        made = _rem(mem, START + REM_MID * DAY)
        if rem is not None:
            rem.append(made)
    return ids


def run(s: EverydaySet, workdir: Path | None = None) -> Result:
    bad = problems(s)
    if bad:
        raise ValueError(f"{s.name}: " + "; ".join(bad))
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-everyday-"))
    res = Result(s.name, [Asked(u.question, u.kind) for u in s.updates],
                 [Asked(c.question, c.kind) for c in s.controls])
    now = [START]
    with Memory(workdir / f"{s.name}.db", clock=lambda: now[0]) as mem:
        ids = build(mem, s, now, res.rem)
        now[0] = START + ASK_DAY * DAY
        _ask(mem, s, PHASES[0], res)
        res.rem.append(_rem(mem, START + REM_END * DAY))
        now[0] = START + (REM_END + 1) * DAY
        _ask(mem, s, PHASES[1], res)
        _decisions(mem, s, ids, res)
    return res


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "-"


def rows(res: Result) -> list[list[object]]:
    n, nc = len(res.updates), len(res.controls)
    return [[f"{res.name} {p}", _pct(res.first(p), n), _pct(res.stale_in(p), n),
             f"{res.kept(p)}/{nc}", f"{res.mean_tokens(p):.0f}"] for p in PHASES]


def report(results: list[Result], detail: bool = False) -> str:
    out = [table(["set, phase", f"current first @{FIRST_BUDGET}", f"stale @{BUDGET}",
                  "controls kept", f"mean tokens @{BUDGET}"],
                 [r for res in results for r in rows(res)])]
    out.append(table(["set", "true SUPERSEDES", "false SUPERSEDES", "false CONTRADICTS",
                      "additive pairs", "additive false S / C"],
                     [[r.name, r.true_supersedes, r.false_supersedes, r.false_contradicts,
                       r.additive_pairs,
                       f"{r.additive_false_supersedes} / {r.additive_false_contradicts}"]
                      for r in results]))
    if detail:
        for res in results:
            kinds = Counter(a.kind for a in res.updates)
            out.append(table(["kind", "n", *(f"first {p}" for p in PHASES),
                              *(f"stale {p}" for p in PHASES)],
                             [[k, n, *(sum(a.ok[p] for a in res.updates if a.kind == k)
                                       for p in PHASES),
                               *(sum(a.stale[p] for a in res.updates if a.kind == k)
                                 for p in PHASES)] for k, n in sorted(kinds.items())]))
            out.append(table(["update", "kind", "first", "stale", "first item (day 77)"],
                             [[a.question, a.kind,
                               "/".join("y" if a.ok[p] else "n" for p in PHASES),
                               "/".join("y" if a.stale[p] else "n" for p in PHASES),
                               a.top[PHASES[0]]] for a in res.updates],
                             align=["l", "l", "l", "l", "l"]))
            out.append(table(["control", "kind", "kept", "tokens"],
                             [[a.question, a.kind,
                               "/".join("y" if a.ok[p] else "n" for p in PHASES),
                               a.tokens[PHASES[0]]] for a in res.controls],
                             align=["l", "l", "l", "r"]))
            if res.false_pairs:
                out.append(table(["false", "older", "newer"], res.false_pairs,
                                 align=["l", "l", "l"]))
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="only check the data")
    ap.add_argument("--detail", action="store_true", help="per item rows")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args(argv)
    sets = [load(f) for f in args.files or files()]
    if args.check:
        bad = {s.name: problems(s) for s in sets}
        for name, probs in bad.items():
            print(f"{name}: {len(probs)} problems")
            for p in probs:
                print(f"  - {p}")
        return 1 if any(bad.values()) else 0
    print(f"Everyday sets — {machine_line()}\n")
    results = [run(s) for s in sets]
    print(report(results, args.detail))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
