"""A simulated life: one person's 120 days with an agent, then questions about them.

Noor, a data analyst in Rotterdam, tells her agent about her days from 5 February to 3 June
2024, and the agent saves what she says, about 1,000 memories at the hours she says them. The
material is hand-written (``benchmarks/eval/data/life.json``): fifteen stable facts said two to
five times in different words over the months; twenty-five everyday facts that change once
(three of them twice) mid-way, some with a cue word ("switched", "cancelled", "took over"),
some with none (just a different value said later); about forty one-off events with dates,
places and people; twelve topics told over weeks where each telling adds a detail; side remarks
that look like facts but are not ("my legs are jelly", "I basically live at the office"); two
details of one party (guest count, theme) told apart; and plenty of low-information daily notes
and chit-chat, some sharing words with the facts (work, coffee, gym, tram). A fixed seed
spreads the restatements, daily notes and chit-chat over the days; the events and topic
tellings are on their own dates.

Two arms see the same saves: ``rem`` runs one REM cycle (offline synthesiser) every night at
03:00, ``no-rem`` never does. A day after the last save both are asked the same questions:
the current value of every changed fact, the stable facts, event and topic details, both party
details, and eight things never mentioned. Measured per arm: found = the answer phrase is in
the text of ``inject(q, 100)`` (default relevance floor), and at 300; stale = an earlier value
of a changed fact is in that pack; tokens of the packs for never-mentioned questions (mean,
max) and of the answerable ones (mean); live memories and their tokens at the end.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.eval import datafiles
from benchmarks.eval.report import mean, table
from remd import Memory

SEED = 20240205
START = datetime(2024, 2, 5, tzinfo=UTC).timestamp()  # day 0, a Monday
DAYS = 120
QUICK_DAYS = 60
BUDGETS = (100, 300)
DAY = 86_400.0
REM_HOUR = 3.0


@dataclass(frozen=True)
class Stable:
    """A fact that holds all along, said in different words on different days."""

    question: str
    answer: str  # in every saying
    sayings: tuple[str, ...]


@dataclass(frozen=True)
class State:
    """One value of a changing fact, from ``day``; its first saying is said that day."""

    day: int
    phrase: str  # in every saying of this value, and in no other memory
    sayings: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    question: str
    states: tuple[State, ...]


# -- the material: benchmarks/eval/data/life.json ---------------------------------------------
_DATA = datafiles.read("life")
STABLE = tuple(Stable(f["question"], f["answer"], tuple(f["sayings"])) for f in _DATA["stable"])
# everyday facts that change
CHANGES = tuple(Change(c["question"], tuple(State(st["day"], st["phrase"], tuple(st["sayings"]))
                                            for st in c["states"])) for c in _DATA["changes"])


def _dht(items: list[dict[str, Any]]) -> tuple[tuple[int, float, str], ...]:
    return tuple((e["day"], e["hour"], e["text"]) for e in items)


# one-off events: (day, hour, text)
EVENTS = _dht(_DATA["events"])
# topics told over weeks: name -> ((day, hour, text), ...)
TOPICS = {name: _dht(tellings) for name, tellings in _DATA["topics"].items()}
# side remarks that look like facts but are not: (day, hour, text)
SIDE_REMARKS = _dht(_DATA["side_remarks"])
# daily notes: slot -> texts (am 7-10h, work 10-18h on weekdays, pm 18-23h, weekend 9-22h)
DAILY = {slot: tuple(texts) for slot, texts in _DATA["daily"].items()}
# (first day, last day, slot, text): notes that only fit part of the 120 days
WINDOWED = tuple((w["first"], w["last"], w["slot"], w["text"]) for w in _DATA["windowed"])
# (weekday 0=Monday, slot, text)
WEEKDAY_NOTES = tuple((w["weekday"], w["slot"], w["text"]) for w in _DATA["weekday_notes"])
# (slot, template, slot values)
TEMPLATES = tuple((t["slot"], t["template"], tuple(tuple(v) for v in t["values"]))
                  for t in _DATA["templates"])
CHAT: tuple[str, ...] = tuple(_DATA["chat"])
WEEKDAY_CHAT = tuple((w["weekday"], w["text"]) for w in _DATA["weekday_chat"])
# details asked about: (kind, question, answer phrase)
DETAILS = tuple((d["kind"], d["question"], d["answer"]) for d in _DATA["details"])
NEVER: tuple[str, ...] = tuple(_DATA["never"])


# -- the life, scheduled ---------------------------------------------------------------------
@dataclass(frozen=True)
class Save:
    at: float
    day: int
    kind: str  # stable, change, event, topic, side, note, chat
    text: str


@dataclass(frozen=True)
class Question:
    kind: str  # changed, stable, event, topic, detail, never
    question: str
    answer: str = ""
    stale: tuple[str, ...] = ()


def _at(day: int, hour: float) -> float:
    return START + day * DAY + hour * 3600.0


def _spread(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    """``n`` days in [lo, hi], distinct when there is room, sorted."""
    if hi < lo:
        return []
    span = list(range(lo, hi + 1))
    return sorted(rng.sample(span, n) if n <= len(span) else rng.choices(span, k=n))


def life(days: int = DAYS, seed: int = SEED) -> tuple[list[Save], list[Question]]:
    """The saves of the first ``days`` days in time order, and the questions they answer.

    Stable sayings and change restatements are spread by ``seed``; a changed fact whose change
    falls after ``days`` is asked as a plain fact with its first value."""
    rng = random.Random(seed)
    last = DAYS - 1
    planned: list[tuple[int, float, str, str]] = []
    questions: list[Question] = []
    for fact in STABLE:
        first = rng.randrange(0, 15)
        days_ = [first, *_spread(rng, len(fact.sayings) - 1, first + 8, last)]
        planned += [(d, rng.uniform(8, 22.5), "stable", s) for d, s in zip(days_, fact.sayings,
                                                                   strict=True)]
        if first < days:
            questions.append(Question("stable", fact.question, fact.answer))
    for change in CHANGES:
        seen: list[str] = []
        for k, state in enumerate(change.states):
            end = change.states[k + 1].day - 2 if k + 1 < len(change.states) else last
            rest = _spread(rng, len(state.sayings) - 1, state.day + 2, end)
            hours = [rng.uniform(8, 22.5) for _ in state.sayings]
            planned += [(d, h, "change", s)
                        for d, h, s in zip([state.day, *rest], hours, state.sayings,
                                               strict=True)]
            if state.day < days:
                seen.append(state.phrase)
        if seen:
            questions.append(Question("changed" if len(seen) > 1 else "stable",
                                      change.question, seen[-1], tuple(seen[:-1])))
    planned += [(d, h, "event", t) for d, h, t in EVENTS]
    planned += [(d, h, "topic", t) for tellings in TOPICS.values() for d, h, t in tellings]
    planned += [(d, h, "side", t) for d, h, t in SIDE_REMARKS]
    planned += _notes(rng)
    by_text = {t: d for d, _h, _k, t in planned}
    for kind, question, answer in DETAILS:  # asked once what answers them has been said
        said = [d for t, d in by_text.items() if answer.lower() in t.lower()]
        if said and min(said) < days:
            questions.append(Question(kind, question, answer))
    questions += [Question("never", q) for q in NEVER]
    planned.sort(key=lambda p: (p[0], p[1]))
    saves: list[Save] = []
    prev = 0.0
    for day, hour, kind, text in planned:
        if day >= days:
            continue
        at = max(_at(day, hour), prev + 30.0)
        saves.append(Save(at, day, kind, text))
        prev = at
    return saves, questions


def update_pairs(days: int = DAYS, seed: int = SEED) -> tuple[list[str], set[tuple[str, str]]]:
    """The texts of :func:`life`'s saves in save order, and its update pairs: each saying of a
    changed fact's value with each saying of a later value of it (what
    ``benchmarks.eval.update_pairs --sets life`` fits and scores)."""
    saves, _ = life(days, seed)
    said = {s.text for s in saves}
    pairs = {(old, new) for change in CHANGES for k, state in enumerate(change.states)
             for later in change.states[k + 1:] for old in state.sayings
             for new in later.sayings if old in said and new in said}
    return [s.text for s in saves], pairs


_HOURS = {"am": (7.0, 9.8), "work": (10.0, 17.8), "pm": (18.0, 23.3), "weekend": (9.5, 22.0)}


def _notes(rng: random.Random) -> list[tuple[int, float, str, str]]:
    """Daily notes (2-6 on most days) and chit-chat (0-4 a day), a note not repeated within
    a fortnight."""
    out: list[tuple[int, float, str, str]] = []
    used: dict[str, int] = {}
    for day in range(DAYS):
        weekday = day % 7
        weekend = weekday >= 5
        slots = ("am", "weekend", "pm") if weekend else ("am", "work", "pm")
        pool = [(s, t) for s in slots for t in DAILY[s]]
        pool += [(s, t) for lo, hi, s, t in WINDOWED if lo <= day <= hi and s in slots]
        pool += [(s, t) for w, s, t in WEEKDAY_NOTES if w == weekday and s in slots]
        fresh = [(s, t) for s, t in pool if day - used.get(t, -99) >= 14]
        n = rng.choices((1, 2, 3, 4, 5, 6), (1, 3, 5, 5, 4, 3) if not weekend
                        else (1, 3, 4, 4, 2, 1))[0]
        picks = rng.sample(fresh, min(n, len(fresh)))
        if rng.random() < 0.35:  # a templated note now and then
            slot, template, values = rng.choice(TEMPLATES)
            slot = "weekend" if weekend and slot == "work" else slot
            fill = {"ab"[i]: rng.choice(v) for i, v in enumerate(values)}
            picks.append((slot, template.format(**fill)))
        for slot, text in picks:
            used[text] = day
            out.append((day, rng.uniform(*_HOURS[slot]), "note", text))
        chats = [t for w, t in WEEKDAY_CHAT if w == weekday and rng.random() < 0.5]
        chats += rng.sample(CHAT, rng.choices((0, 1, 2, 3, 4), (2, 4, 4, 2, 1))[0])
        out += [(day, rng.uniform(8.0, 23.5), "chat", t) for t in chats]
    return out


def problems() -> list[str]:
    """Checks on the material: every saying holds its phrase, an earlier value's phrase is in
    no memory but that value's sayings, and every detail's answer is said somewhere."""
    saves, _ = life()
    texts = [s.text for s in saves]
    out = []
    for fact in STABLE:
        out += [f"stable {fact.answer!r} not in {s!r}" for s in fact.sayings
                if fact.answer.lower() not in s.lower()]
    for change in CHANGES:
        for state in change.states:
            own = set(state.sayings)
            out += [f"change {state.phrase!r} not in {s!r}" for s in state.sayings
                    if state.phrase.lower() not in s.lower()]
            if state is not change.states[-1]:
                out += [f"stale {state.phrase!r} also in {t!r}" for t in texts
                        if state.phrase.lower() in t.lower() and t not in own]
    for _kind, question, answer in DETAILS:
        if not any(answer.lower() in t.lower() for t in texts):
            out.append(f"no memory says {answer!r} ({question})")
    return out


# -- the two arms ----------------------------------------------------------------------------
@dataclass
class Asked:
    found: dict[int, bool] = field(default_factory=dict)  # budget -> answer phrase in pack
    stale: dict[int, bool] = field(default_factory=dict)  # budget -> an earlier value in it
    tokens: dict[int, int] = field(default_factory=dict)
    first: str = ""
    # budget -> the pack's text, tokens and items (``read``: for a reader)
    read: dict[int, tuple[str, int, int]] = field(default_factory=dict)


@dataclass
class Arm:
    name: str
    asked: list[Asked]
    live: int
    live_tokens: int
    rem_runs: int = 0
    flagged: int = 0
    clusters: int = 0
    synthesised: int = 0
    seconds: float = 0.0
    rem_seconds: float = 0.0


@dataclass
class Result:
    days: int
    saves: int
    questions: list[Question]
    arms: dict[str, Arm]

    def rate(self, arm: str, what: str, budget: int, kinds: tuple[str, ...] | None = None
             ) -> tuple[int, int]:
        """(hits, asked) of ``found`` or ``stale`` at ``budget`` over the questions it applies
        to: found over the answerable ones, stale over the changed facts."""
        hits = n = 0
        for q, a in zip(self.questions, self.arms[arm].asked, strict=True):
            if q.kind == "never" or (what == "stale" and not q.stale):
                continue
            if kinds is not None and q.kind not in kinds:
                continue
            n += 1
            hits += getattr(a, what)[budget]
        return hits, n

    def tokens(self, arm: str, never: bool, budget: int) -> list[int]:
        return [a.tokens[budget]
                for q, a in zip(self.questions, self.arms[arm].asked, strict=True)
                if (q.kind == "never") == never]


def _live_tokens(mem: Memory) -> int:
    return int(mem.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                                "AND status = 'live'", (mem.namespace,)))


def _arm(name: str, saves: list[Save], questions: list[Question], days: int, rem: bool,
         workdir: Path, read: tuple[int, ...] = ()) -> Arm:
    now = [START]
    t0 = time.perf_counter()
    arm = Arm(name, [], 0, 0)
    with Memory(workdir / f"life-{name}.db", clock=lambda: now[0]) as mem:
        i = 0
        for day in range(days):
            while i < len(saves) and saves[i].day == day:
                now[0] = saves[i].at
                mem.save(saves[i].text)
                i += 1
            if rem:
                now[0] = max(now[0], _at(day + 1, REM_HOUR))
                t1 = time.perf_counter()
                run = mem.run_rem(now=now[0])
                arm.rem_seconds += time.perf_counter() - t1
                arm.rem_runs += 1
                arm.flagged += run.flagged
                arm.clusters += run.clusters
                arm.synthesised += run.synthesised
        now[0] = saves[-1].at + DAY
        for q in questions:
            asked = Asked()
            for budget in BUDGETS:
                pack = mem.inject(q.question, budget)
                low = pack.text.lower()
                asked.found[budget] = bool(q.answer) and q.answer.lower() in low
                asked.stale[budget] = any(s.lower() in low for s in q.stale)
                asked.tokens[budget] = pack.tokens_used
                if budget == BUDGETS[0]:
                    asked.first = pack.items[0].content if pack.items else ""
            arm.asked.append(asked)
        for q, asked in zip(questions, arm.asked, strict=True):  # after: the same uses above
            for budget in read:
                pack = mem.inject(q.question, budget)
                asked.read[budget] = (pack.text, pack.tokens_used, len(pack.items))
        arm.live = mem.stats().live
        arm.live_tokens = _live_tokens(mem)
    arm.seconds = time.perf_counter() - t0
    return arm


def run(days: int | None = None, *, quick: bool = False, workdir: Path | None = None,
        read: tuple[int, ...] = ()) -> Result:
    """Both arms over the first ``days`` days (all 120, or 60 with ``quick``); with ``read``,
    each question's pack text at those budgets too, asked after everything else (for a
    reader: benchmarks/eval/rem_answers.py)."""
    days = days or (QUICK_DAYS if quick else DAYS)
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-life-"))
    saves, questions = life(days)
    arms = {name: _arm(name, saves, questions, days, rem, workdir, read)
            for name, rem in (("no-rem", False), ("rem", True))}
    return Result(days, len(saves), questions, arms)


def _yn(a: bool, b: bool) -> str:
    return f"{'Y' if a else '-'} / {'Y' if b else '-'}"


def section(*, quick: bool = False, days: int | None = None) -> None:
    res = run(days, quick=quick)
    no, yes = res.arms["no-rem"], res.arms["rem"]
    lo, hi = BUDGETS
    print(f"## A simulated life ({res.days} days)\n")
    print(f"One person's {res.days} days with an agent (benchmarks/eval/life.py): {res.saves} "
          f"saves at the hours she says them (facts restated, changed, events, topics told over "
          f"weeks, daily notes, chit-chat). Two arms on the same saves: REM every night at 03:00 "
          f"(offline synthesiser) and no REM. Asked a day after the last save: "
          f"{sum(q.kind != 'never' for q in res.questions)} answerable questions and "
          f"{sum(q.kind == 'never' for q in res.questions)} about things never mentioned. "
          f"found = the answer phrase is in the pack's text (default floor); stale = an earlier "
          f"value of a changed fact is in it.\n")

    def rate(arm: str, what: str, b: int, kinds: tuple[str, ...] | None = None) -> str:
        h, n = res.rate(arm, what, b, kinds)
        return f"{h}/{n}"

    rows: list[list[object]] = [
        [f"found @{b}", rate("no-rem", "found", b), rate("rem", "found", b)] for b in BUDGETS]
    for kinds in (("changed",), ("stable",), ("event",), ("topic", "detail")):
        rows.append([f"found @{lo}: {'+'.join(kinds)}", rate("no-rem", "found", lo, kinds),
                     rate("rem", "found", lo, kinds)])
    rows += [[f"stale @{b} (changed facts)", rate("no-rem", "stale", b), rate("rem", "stale", b)]
             for b in BUDGETS]
    for b in BUDGETS:
        n0, n1 = res.tokens("no-rem", True, b), res.tokens("rem", True, b)
        rows.append([f"never-mentioned tokens @{b} (mean / max)",
                     f"{mean(n0):.1f} / {max(n0)}", f"{mean(n1):.1f} / {max(n1)}"])
    for b in BUDGETS:
        rows.append([f"answerable pack tokens @{b} (mean)",
                     f"{mean(res.tokens('no-rem', False, b)):.1f}",
                     f"{mean(res.tokens('rem', False, b)):.1f}"])
    rows += [
        ["live memories at the end", no.live, f"{yes.live} ({yes.live / max(no.live, 1):.2f}x)"],
        ["live tokens at the end", no.live_tokens,
         f"{yes.live_tokens} ({yes.live_tokens / max(no.live_tokens, 1):.2f}x)"],
        ["REM runs / flagged / clusters / synthesised", "",
         f"{yes.rem_runs} / {yes.flagged} / {yes.clusters} / {yes.synthesised}"],
        ["seconds (REM part)", f"{no.seconds:.1f}", f"{yes.seconds:.1f} ({yes.rem_seconds:.1f})"],
    ]
    print(table(["measure", "no REM", "REM nightly"], rows) + "\n")
    qrows: list[list[object]] = []
    for q, a0, a1 in zip(res.questions, no.asked, yes.asked, strict=True):
        stale = [_yn(a0.stale[b], a1.stale[b]) if q.stale else "" for b in BUDGETS]
        if q.kind == "never":
            qrows.append([q.kind, q.question, "", "", "", "", "",
                          f"{a0.tokens[lo]} / {a1.tokens[lo]}"])
            continue
        qrows.append([q.kind, q.question, q.answer + (f" (was {', '.join(q.stale)})"
                                                      if q.stale else ""),
                      _yn(a0.found[lo], a1.found[lo]), _yn(a0.found[hi], a1.found[hi]),
                      *stale, f"{a0.tokens[lo]} / {a1.tokens[lo]}"])
    print(table(["kind", "question", "answer", f"found @{lo}", f"found @{hi}", f"stale @{lo}",
                 f"stale @{hi}", f"tokens @{lo}"], qrows,
                align=["l", "l", "l", "r", "r", "r", "r", "r"]) + "\n")
    print("(each cell: no REM / REM nightly; Y = yes, - = no)\n")


if __name__ == "__main__":
    import sys

    section(quick="--quick" in sys.argv[1:])
