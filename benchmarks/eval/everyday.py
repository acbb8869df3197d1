"""Everyday updates: a fact the user changes in passing, asked for later, before and after REM.

One runner for the three sets of the first rounds, each a data file in ``benchmarks/eval/data/``
(format: ``benchmarks/eval/data/README.md``):

- ``everyday`` (42 updates, 39 unrelated memories, 13 controls; developed on): one person's
  life and work over a month, updates with a cue word, a hint or no cue;
- ``everyday_check`` (23, 28, 8): a second voice, kept to check that changes made for the main
  set generalise (nobody tunes on it);
- ``everyday_holdout`` (21, 26, 8): a third voice, written by someone else, never read while
  developing.

Each update is an old statement, a new one that replaces it, a question, a phrase only the new
one holds (``current``) and one only the old one holds (``stale``); each control is one or two
texts that all stay true, a question and the phrases that must all be in its pack.

Protocol (``run``), in a fresh file with a hand-moved clock starting at 1_700_000_000:

1. The old statements, the unrelated memories and the first text of each control are saved in
   a shuffled order (the set's seed), a few hours apart (the set's ``first_hours``).
2. Then the updates' new statements, the controls' later texts and the set's late unrelated
   memories are saved one at a time (shuffled), a few hours to a day apart (``later_hours``; a
   share of the gaps may be drawn from ``long_gap``), as an agent saves them while the user
   talks.
3. A day later every question is asked. Per update: ``first`` = the first item of
   ``inject(question, 40)`` contains the ``current`` phrase; ``stale`` = the text of
   ``inject(question, 200)`` (default relevance floor) contains the ``stale`` phrase;
   ``tokens`` = that pack's ``tokens_used``. Per control: every one of its ``answers`` is in
   ``inject(question, 200).text``. All matches are case-insensitive substrings. Also
   recorded: whether any live memory still holds the new value (REM must not lose it).
4. The clock moves 40 days on, one REM cycle runs (``mem.run_rem(now=...)``, the default
   offline synthesiser), and a day later everything is asked again.

``python -m benchmarks.eval.everyday [SET ...]`` runs sets by name (default: ``everyday``) or
by file and prints their tables.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.eval import datafiles
from benchmarks.eval.report import mean, table
from remd import Memory

SETS = ("everyday", "everyday_check", "everyday_holdout")
START = 1_700_000_000.0
HOUR, DAY = 3600.0, 86_400.0
FIRST_BUDGET, BUDGET = 40, 200
REM_AFTER_DAYS = 40
PHASES = ("before REM", "after REM")


@dataclass(frozen=True)
class Update:
    old: str  # true at first
    new: str  # said later, replaces it
    question: str
    current: str  # a phrase only ``new`` contains (case-insensitive)
    stale: str  # a phrase only ``old`` contains
    cue: str = ""  # "explicit" (a cue word), "subtle" (a hint), "none" (just a different value)


@dataclass(frozen=True)
class Control:
    texts: tuple[str, ...]  # saved at different times; all stay true
    question: str
    answers: tuple[str, ...]  # every one must be in the 200-token pack
    kind: str


@dataclass(frozen=True)
class Schedule:
    seed: int
    first_hours: tuple[float, float]  # gap between the first saves
    later_hours: tuple[float, float]  # gap between the later saves
    long_share: float = 0.0  # this share of the later gaps is drawn from long_hours instead
    long_hours: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class EverydaySet:
    name: str
    about: str
    report: str  # "cues" (per cue, live tokens) or "questions" (per question, tokens)
    heading: str
    speaker: str
    schedule: Schedule
    updates: tuple[Update, ...]
    unrelated: tuple[str, ...]
    late_unrelated: tuple[str, ...]  # saved between the new statements
    controls: tuple[Control, ...]
    source: str  # the data file, as printed


def load(name: str | Path) -> EverydaySet:
    """A set by name (``benchmarks/eval/data/<name>.json``) or by file."""
    path = Path(name) if str(name).endswith(".json") else datafiles.path(str(name))
    raw: dict[str, Any] = datafiles.read_path(path)
    sch = raw["schedule"]
    long = sch.get("long_gap", {"share": 0.0, "hours": (0.0, 0.0)})
    try:
        source = path.resolve().relative_to(datafiles.REPO).as_posix()
    except ValueError:
        source = str(path)
    return EverydaySet(
        name=raw["name"], about=raw.get("about", ""), report=raw.get("report", "questions"),
        heading=raw.get("heading", f"Everyday updates ({raw['name']})"),
        speaker=raw.get("speaker", ""),
        schedule=Schedule(sch["seed"], tuple(sch["first_hours"]), tuple(sch["later_hours"]),
                          long["share"], tuple(long["hours"])),
        updates=tuple(Update(u["old"], u["new"], u["question"], u["current"], u["stale"],
                             u.get("cue", "")) for u in raw["updates"]),
        unrelated=tuple(raw["unrelated"]), late_unrelated=tuple(raw.get("late_unrelated", ())),
        controls=tuple(Control(tuple(c["texts"]), c["question"], tuple(c["answers"]), c["kind"])
                       for c in raw["controls"]),
        source=source)


def problems(s: EverydaySet) -> list[str]:
    """What is wrong with a set's data (empty when the phrases do what they claim): each
    update's ``current`` is only in its new text and ``stale`` only in its old one, among
    every text saved; each control's answers are in its own texts."""
    texts = ([u.old for u in s.updates] + [u.new for u in s.updates] + list(s.unrelated)
             + list(s.late_unrelated) + [t for c in s.controls for t in c.texts])
    low = [t.lower() for t in texts]
    out = []
    for u in s.updates:
        for phrase, home in ((u.current, u.new), (u.stale, u.old)):
            holders = [t for t, lt in zip(texts, low, strict=True) if phrase.lower() in lt]
            if holders != [home]:
                out.append(f"{phrase!r} is in {holders}, should be only in {home!r}")
    for c in s.controls:
        joined = " ".join(c.texts).lower()
        out += [f"control answer {a!r} not in its texts" for a in c.answers
                if a.lower() not in joined]
    return out


@dataclass
class UpdateRow:
    question: str
    cue: str
    current: str
    stale: str
    first: dict[str, bool] = field(default_factory=dict)  # phase -> current first @40
    stale_in: dict[str, bool] = field(default_factory=dict)  # phase -> stale in @200 pack
    tokens: dict[str, int] = field(default_factory=dict)  # phase -> tokens of @200 pack
    top: dict[str, str] = field(default_factory=dict)  # phase -> first item @40
    current_live: dict[str, bool] = field(default_factory=dict)  # phase -> a live memory has it


@dataclass
class ControlRow:
    question: str
    kind: str
    present: dict[str, bool] = field(default_factory=dict)  # phase -> all answers @200
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class RemStats:
    flagged: int
    clusters: int
    synthesised: int
    skipped: int
    live_before: int
    live_after: int
    status: str


@dataclass
class Result:
    name: str
    updates: list[UpdateRow]
    controls: list[ControlRow]
    rem: RemStats
    saved: int  # memories saved
    live_tokens: dict[str, int]  # phase -> o200k tokens of the live memories

    def first_count(self, phase: str) -> int:
        return sum(r.first[phase] for r in self.updates)

    def stale_count(self, phase: str) -> int:
        return sum(r.stale_in[phase] for r in self.updates)

    def current_live_count(self, phase: str) -> int:
        return sum(r.current_live[phase] for r in self.updates)

    def control_count(self, phase: str) -> int:
        return sum(r.present[phase] for r in self.controls)

    def mean_tokens(self, phase: str) -> float:
        return mean([r.tokens[phase] for r in self.updates]
                    + [r.tokens[phase] for r in self.controls])


def schedule(s: EverydaySet) -> list[tuple[float, str]]:
    """(time, text) of every save: the first stretch, then the updates' stretch."""
    sch = s.schedule
    rng = random.Random(sch.seed)
    first = [u.old for u in s.updates] + list(s.unrelated) + [c.texts[0] for c in s.controls]
    rng.shuffle(first)
    second = ([u.new for u in s.updates] + [t for c in s.controls for t in c.texts[1:]]
              + list(s.late_unrelated))
    rng.shuffle(second)
    out, t = [], START
    for text in first:
        t += rng.uniform(*sch.first_hours) * HOUR
        out.append((t, text))
    for text in second:
        if sch.long_share and rng.random() < sch.long_share:
            t += rng.uniform(*sch.long_hours) * HOUR
        else:
            t += rng.uniform(*sch.later_hours) * HOUR
        out.append((t, text))
    return out


def _live_tokens(mem: Memory) -> int:
    return int(mem.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                                "AND status = 'live'", (mem.namespace,)))


def _ask(mem: Memory, s: EverydaySet, phase: str, urows: list[UpdateRow],
         crows: list[ControlRow]) -> None:
    live = [r[0].lower() for r in mem.store.query(
        "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (mem.namespace,))]
    for u, row in zip(s.updates, urows, strict=True):
        first = mem.inject(u.question, FIRST_BUDGET)
        top = first.items[0].content if first.items else ""
        pack = mem.inject(u.question, BUDGET)
        row.first[phase] = u.current.lower() in top.lower()
        row.stale_in[phase] = u.stale.lower() in pack.text.lower()
        row.tokens[phase] = pack.tokens_used
        row.top[phase] = top
        row.current_live[phase] = any(u.current.lower() in t for t in live)
    for c, crow in zip(s.controls, crows, strict=True):
        pack = mem.inject(c.question, BUDGET)
        missing = tuple(a for a in c.answers if a.lower() not in pack.text.lower())
        crow.present[phase] = not missing
        crow.missing[phase] = missing
        crow.tokens[phase] = pack.tokens_used


def run(s: EverydaySet | str = "everyday", workdir: Path | None = None) -> Result:
    """Save, ask, run REM 40 days later, ask again (see the module docstring)."""
    s = s if isinstance(s, EverydaySet) else load(s)
    bad = problems(s)
    if bad:
        raise ValueError(f"{s.name} data: " + "; ".join(bad))
    workdir = workdir or Path(tempfile.mkdtemp(prefix=f"remd-{s.name}-"))
    urows = [UpdateRow(u.question, u.cue, u.current, u.stale) for u in s.updates]
    crows = [ControlRow(c.question, c.kind) for c in s.controls]
    saves = schedule(s)
    now = [START]
    live_tokens: dict[str, int] = {}
    with Memory(workdir / f"{s.name}.db", clock=lambda: now[0]) as mem:
        for at, text in saves:
            now[0] = at
            mem.save(text)
        now[0] += DAY
        live_tokens[PHASES[0]] = _live_tokens(mem)
        _ask(mem, s, PHASES[0], urows, crows)
        now[0] += REM_AFTER_DAYS * DAY
        rem = mem.run_rem(now=now[0])
        now[0] += DAY
        live_tokens[PHASES[1]] = _live_tokens(mem)
        _ask(mem, s, PHASES[1], urows, crows)
    stats = RemStats(rem.flagged, rem.clusters, rem.synthesised, rem.skipped,
                     rem.live_before, rem.live_after, str(rem.status))
    return Result(s.name, urows, crows, stats, len(saves), live_tokens)


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100.0 * k / n:.0f}%)" if n else "0/0"


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


def section(s: EverydaySet | str = "everyday", result: Result | None = None) -> Result:
    """Run a set (unless its result is given) and print its tables."""
    s = s if isinstance(s, EverydaySet) else load(s)
    res = result or run(s)
    if s.report == "cues":
        _report_cues(s, res)
    else:
        _report_questions(s, res)
    return res


def _report_cues(s: EverydaySet, res: Result) -> None:
    n, nc = len(res.updates), len(res.controls)
    cues = {c: sum(u.cue == c for u in s.updates) for c in ("explicit", "subtle", "none")}
    print(f"## {s.heading}\n")
    print(f"{n} facts a user changes in passing ({cues['explicit']} with a cue word, "
          f"{cues['subtle']} with a hint, {cues['none']} with none), "
          f"{len(s.unrelated) + len(s.late_unrelated)} unrelated memories and {nc} controls "
          f"that must all stay ({res.saved} saves over four weeks; "
          f"{s.source}). Asked a day after the last save, then again after "
          f"one REM cycle {REM_AFTER_DAYS} days later. First = the new value is in the first "
          f"item of a {FIRST_BUDGET}-token pack; stale = the old value is in the "
          f"{BUDGET}-token pack (default floor); controls = all their answers are in the "
          f"{BUDGET}-token pack.\n")
    rows = [[p, _pct(res.first_count(p), n), f"{res.stale_count(p)}/{n}",
             f"{res.control_count(p)}/{nc}", f"{res.mean_tokens(p):.1f}",
             f"{res.current_live_count(p)}/{n}", res.live_tokens[p]] for p in PHASES]
    print(table(["phase", f"current first @{FIRST_BUDGET}", f"stale in @{BUDGET} pack",
                 "controls present", f"mean tokens @{BUDGET}", "new value still live",
                 "live tokens"], rows) + "\n")
    by_cue = [[c] + [_pct(sum(r.first[p] for r in res.updates if r.cue == c), cues[c])
                     for p in PHASES]
              + [f"{sum(r.stale_in[p] for r in res.updates if r.cue == c)}/{cues[c]}"
                 for p in PHASES] for c in cues]
    print(table(["cue", "first (before)", "first (after)", "stale (before)", "stale (after)"],
                by_cue) + "\n")
    r = res.rem
    print(table(["REM run", "flagged", "clusters", "synthesised", "skipped", "live before",
                 "live after"],
                [["one cycle", r.flagged, r.clusters, r.synthesised, r.skipped, r.live_before,
                  r.live_after]]) + "\n")
    print(table(["question", "cue", "first before", "first after", "stale before",
                 "stale after", "new live after", "first item before"],
                [[u.question, u.cue, _yn(u.first[PHASES[0]]), _yn(u.first[PHASES[1]]),
                  _yn(u.stale_in[PHASES[0]]), _yn(u.stale_in[PHASES[1]]),
                  _yn(u.current_live[PHASES[1]]), u.top[PHASES[0]][:60]] for u in res.updates],
                align=["l", "l", "r", "r", "r", "r", "r", "l"]) + "\n")
    print(table(["control", "kind", "present before", "present after", "missing"],
                [[c.question, c.kind, _yn(c.present[PHASES[0]]), _yn(c.present[PHASES[1]]),
                  ", ".join(sorted(set(c.missing[PHASES[0]]) | set(c.missing[PHASES[1]])))
                  or "-"] for c in res.controls],
                align=["l", "l", "r", "r", "l"]) + "\n")


def _report_questions(s: EverydaySet, res: Result) -> None:
    b, a = PHASES
    n, nc = len(res.updates), len(res.controls)
    print(f"## {s.heading}\n")
    print(f"{s.speaker}: {n} facts that change later (cue words, subtle, or no cue), "
          f"{len(s.unrelated)} unrelated memories, {nc} controls that must all stay "
          f"({s.source}). Current first = the new value is in the first item of a "
          f"{FIRST_BUDGET}-token pack; stale in = the old value is in a {BUDGET}-token pack "
          f"(default floor); controls present = every answer in the {BUDGET}-token pack. After "
          f"REM = {REM_AFTER_DAYS} days later, one REM cycle, asked a day after.\n")
    print(table(["measure", "before REM", "after REM"], [
        [f"current first @{FIRST_BUDGET}", f"{res.first_count(b)}/{n}",
         f"{res.first_count(a)}/{n}"],
        [f"stale in @{BUDGET}", f"{res.stale_count(b)}/{n}", f"{res.stale_count(a)}/{n}"],
        ["controls present", f"{res.control_count(b)}/{nc}", f"{res.control_count(a)}/{nc}"],
        [f"mean tokens @{BUDGET} (all questions)", f"{res.mean_tokens(b):.1f}",
         f"{res.mean_tokens(a):.1f}"],
    ]) + "\n")
    print(table(["REM run", "value"], [[k, v] for k, v in asdict(res.rem).items()]) + "\n")
    print(table(["question", "first", "stale", "tokens", "first (REM)", "stale (REM)",
                 "tokens (REM)", "first item (before REM)"],
                [[u.question, _yn(u.first[b]), _yn(u.stale_in[b]), u.tokens[b],
                  _yn(u.first[a]), _yn(u.stale_in[a]), u.tokens[a], u.top[b][:56]]
                 for u in res.updates],
                ["l", "l", "l", "r", "l", "l", "r", "l"]) + "\n")
    print(table(["control", "kind", "present", "tokens", "present (REM)", "tokens (REM)",
                 "missing"],
                [[c.question, c.kind, _yn(c.present[b]), c.tokens[b], _yn(c.present[a]),
                  c.tokens[a], ", ".join(c.missing[b]) + (" / REM: " + ", ".join(c.missing[a])
                                                          if c.missing[a] else "")]
                 for c in res.controls],
                ["l", "l", "l", "r", "l", "r", "l"]) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="*", default=["everyday"],
                    help=f"set names ({', '.join(SETS)}) or data files")
    for name in ap.parse_args(argv).sets:
        section(name)


if __name__ == "__main__":
    main()
