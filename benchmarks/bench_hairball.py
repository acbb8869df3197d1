"""REM on a hairball: facts restated many times in other words, mixed with one-off facts.

    python benchmarks/bench_hairball.py [--namespaces 5] [--subjects 40] [--seed 7]
                                        [--budgets 128 256 512]

Each namespace holds ``subjects`` made-up services. A service has six facts: its owner, the
city it is hosted in, its stack, its monthly cost, its go-live date and its incidents. For each
service three of the six (chosen at random) are restated 5-10 times in varied wording (other
verbs, word order, date formats); the other three are stated once. A restated incident is a
recurring event: every restatement is another incident on another date. Two chatter fragments
per service carry no answer. Every fragment is imported with its real date (an incident is
reported 1-4 days after it happened), a year and more before ``NOW``, so REM flags them.

One question per service needs three of its facts ("Who owns X, where is it hosted, and when
did it last fail?"). Since REM moves facts into synthesis nodes, a fact counts as recalled when
its value (the owner's name, the city, the number, the date in any of the formats used, for
incidents the latest one) appears in the text of the pack ``inject`` returns ("strict": in an
item that also names the service, so a value shared with another service does not count).
Recall is the share of needed facts recalled, measured on an untouched copy and after one REM
run (offline synthesiser) at each budget. Also printed: live nodes and live tokens before and
after, the run's clusters, and the share of the fragments' distinct dates still in live text.
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from remd import Memory
from remd.wire import iso

DAY = 86400.0
NOW = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
FIRST_EVENT = date(2023, 1, 2)  # incidents fall between this and LAST_EVENT
LAST_EVENT = date(2024, 5, 20)
ATTRS = ("owner", "city", "stack", "cost", "launch", "incident")

SYLLABLES = ["ka", "lo", "mi", "ren", "to", "vex", "zor", "qua", "bel", "dru", "fen", "gal",
             "hos", "jin", "kor", "lum", "nav", "pex", "ris", "sul", "tam", "ul", "vor", "wyn"]
FIRST = ["Priya", "Lars", "Mei", "Tomas", "Aisha", "Diego", "Hana", "Omar", "Sofia", "Ivan",
         "Noor", "Kofi", "Elena", "Ravi", "Yuki", "Marta", "Jonas", "Leila", "Pavel", "Zara",
         "Bruno", "Ingrid", "Kwame", "Lucia", "Matteo", "Nadia", "Oskar", "Rosa", "Tariq", "Vera"]
LAST = ["Sharma", "Olsen", "Chen", "Novak", "Bello", "Ruiz", "Sato", "Haddad", "Rossi",
        "Petrov", "Khan", "Mensah", "Garcia", "Iyer", "Tanaka", "Silva", "Weber", "Nasser",
        "Lindqvist", "Okafor", "Moreau", "Kowalski", "Duarte", "Brennan", "Halvorsen", "Abebe"]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Krakow", "Austin", "Hanoi", "Porto",
          "Tallinn", "Accra", "Bogota", "Dublin", "Gdansk", "Leeds", "Quito", "Turin", "Riga",
          "Montreal", "Seville", "Bergen", "Cebu", "Durban", "Valparaiso"]
TECH = ["Postgres", "Kafka", "Redis", "Rust", "Kotlin", "Terraform", "Spark", "Elixir",
        "Svelte", "ClickHouse", "Flink", "Deno", "Cassandra", "Vue", "Zig", "Django",
        "Erlang", "Haskell", "Scala", "OCaml"]
SYMPTOMS = ["timeouts", "502 errors", "a memory leak", "a full disk", "connection resets",
            "slow queries", "a certificate expiry", "dropped messages", "a crash loop",
            "stale caches"]
CHATTER = [
    "{s} retro: the team wants fewer meetings and more pairing.",
    "Someone asked in chat whether {s} has docs; the answer is sort of.",
    "{s} standup ran long again today.",
    "The {s} dashboard could use a dark mode, says the design team.",
    "Half the {s} tickets in the backlog are duplicates.",
    "We should write an onboarding guide for new people joining {s}.",
]

# Paraphrases of each fact. {s} is the service, {v} the value; an incident also has {x}, a
# symptom. Wording, verbs and word order vary on purpose; nothing here is tuned to remd.
TEMPLATES: dict[str, list[str]] = {
    "owner": [
        "{s} is owned by {v}.",
        "{v} owns {s}.",
        "Ownership of {s} sits with {v}.",
        "If {s} breaks, page {v}; it is their service.",
        "Reminder: {s} belongs to the team of {v}.",
        "Talked to {v} about {s} today, they still run it.",
        "The person responsible for {s} is {v}.",
        "Questions about {s} go to {v}, who maintains it.",
        "{v} has been looking after {s} for a while now.",
        "Still {v} in charge of {s}, nobody took it over.",
    ],
    "city": [
        "{s} is hosted in {v}.",
        "{s} runs out of the {v} data centre.",
        "Our {v} region is where {s} lives.",
        "The servers behind {s} sit in {v}.",
        "We deploy {s} to {v}.",
        "{s} stays in {v}; the move was cancelled.",
        "The primary site for {s} is {v}.",
        "Latency to {s} is bad from Asia because it is hosted in {v}.",
        "Checked the infra sheet: {s} machines are in {v}.",
        "{v} hosts every production instance of {s}.",
    ],
    "stack": [
        "{s} is written in {v}.",
        "{s} is built on {v}.",
        "The {s} codebase is mostly {v}.",
        "{v} is what powers {s}.",
        "We picked {v} for {s} back when it started.",
        "{s} runs on {v} under the hood.",
        "Anyone touching {s} needs to know {v}.",
        "The core of {s} was rewritten in {v}.",
        "Hiring for {s} means hiring {v} people.",
        "Tech stack of {s}: {v}, plus the usual glue.",
    ],
    "cost": [
        "{s} costs {v} USD a month to run.",
        "Monthly cloud bill for {s}: {v} USD.",
        "Finance flagged {s}, it spends {v} USD per month.",
        "The infra spend of {s} is about {v} USD monthly.",
        "We pay {v} USD every month for {s}.",
        "Running {s} comes to {v} USD each month.",
        "{v} USD/month is the budget line for {s}.",
        "Cost review: {s} at {v} USD a month, unchanged.",
        "Each month {s} eats {v} USD of the infra budget.",
        "The invoice for {s} came in at {v} USD again this month.",
    ],
    "launch": [
        "{s} went live on {v}.",
        "{s} launched {v}.",
        "The first production release of {s} was on {v}.",
        "We shipped {s} to production on {v}.",
        "{s} has been in production since {v}.",
        "Go-live for {s} was {v}.",
        "On {v} {s} took its first real traffic.",
        "Launch day for {s}: {v}.",
        "Customers have been using {s} since it opened on {v}.",
        "{s} was released to everyone on {v}.",
    ],
    "incident": [
        "{s} had {x} on {v}.",
        "Saw {x} on {s} again on {v}.",
        "{s} went down on {v} because of {x}.",
        "Incident on {v}: {s} failed with {x}.",
        "On {v}, {s} broke, root cause {x}.",
        "{s} outage {v}, {x}.",
        "Paged at night on {v} because {s} had {x}.",
        "{v}: {s} degraded, the culprit was {x}.",
        "Another {s} failure on {v}, {x} this time.",
        "Postmortem written for the {s} incident of {v} ({x}).",
    ],
}
QUESTION_PART = {
    "owner": ("who owns {s}", "who owns it"),
    "city": ("where is {s} hosted", "where is it hosted"),
    "stack": ("what is {s} built with", "what is it built with"),
    "cost": ("how much does {s} cost per month", "how much does it cost per month"),
    "launch": ("when did {s} go live", "when did it go live"),
    "incident": ("when did {s} last fail", "when did it last fail"),
}


def date_forms(d: date) -> list[str]:
    """The ways the fragments write a date (all with the year, so none is ambiguous)."""
    return [d.isoformat(), f"{d.day} {d:%b} {d.year}", f"{d.day} {d:%B} {d.year}",
            f"{d:%B} {d.day}, {d.year}", f"{d:%b} {d.day}, {d.year}"]


def value_pattern(forms: list[str]) -> re.Pattern[str]:
    alts = "|".join(re.escape(f) for f in forms)
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])", re.I)


@dataclass
class Subject:
    namespace: str
    name: str
    values: dict[str, str]
    answer: dict[str, re.Pattern[str]]  # per attribute: the value as it may appear in text
    restated: set[str]
    question: str = ""
    needs: tuple[str, ...] = ()
    fragments: list[tuple[str, float]] = field(default_factory=list)  # (text, created_at)


def _ts(rng: random.Random, d: date) -> float:
    at = datetime(d.year, d.month, d.day, tzinfo=UTC)
    return at.timestamp() + rng.randint(8 * 3600, 19 * 3600)


def _random_day(rng: random.Random, lo: date, hi: date) -> date:
    return lo + timedelta(days=rng.randint(0, (hi - lo).days))


def make_subjects(namespace: str, n: int, rng: random.Random,
                  dates: set[date]) -> list[Subject]:
    names: set[str] = set()
    while len(names) < n:
        names.add("".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3)))).capitalize())
    out = []
    for s in sorted(names):
        restated = set(rng.sample(ATTRS, 3))
        n_incidents = rng.randint(5, 10) if "incident" in restated else 1
        incidents = sorted(rng.sample(range((LAST_EVENT - FIRST_EVENT).days + 1), n_incidents))
        incident_days = [FIRST_EVENT + timedelta(days=i) for i in incidents]
        launch = _random_day(rng, date(2021, 3, 1), date(2022, 11, 30))
        values = {"owner": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "city": rng.choice(CITIES),
                  "stack": rng.choice(TECH), "cost": str(rng.randint(1200, 98000)),
                  "launch": launch.isoformat(), "incident": incident_days[-1].isoformat()}
        answer = {a: value_pattern([values[a]]) for a in ("owner", "city", "stack", "cost")}
        answer["launch"] = value_pattern(date_forms(launch))
        answer["incident"] = value_pattern(date_forms(incident_days[-1]))
        subj = Subject(namespace, s, values, answer, restated)
        for attr in ATTRS:
            times = rng.randint(5, 10) if attr in restated else 1
            if attr == "incident":
                times = len(incident_days)
            wordings = rng.sample(TEMPLATES[attr], min(times, len(TEMPLATES[attr])))
            for k in range(times):
                template = wordings[k % len(wordings)]
                if attr == "incident":
                    day = incident_days[k]
                    text = template.format(s=s, v=rng.choice(date_forms(day)),
                                           x=rng.choice(SYMPTOMS))
                    at = _ts(rng, day + timedelta(days=rng.randint(1, 4)))
                    dates.add(day)
                elif attr == "launch":
                    text = template.format(s=s, v=rng.choice(date_forms(launch)))
                    at = _ts(rng, _random_day(rng, launch + timedelta(days=1), LAST_EVENT))
                    dates.add(launch)
                else:
                    text = template.format(s=s, v=values[attr])
                    at = _ts(rng, _random_day(rng, FIRST_EVENT, LAST_EVENT))
                subj.fragments.append((text, at))
        for template in rng.sample(CHATTER, 2):
            subj.fragments.append((template.format(s=s),
                                   _ts(rng, _random_day(rng, FIRST_EVENT, LAST_EVENT))))
        subj.needs = tuple(rng.sample(ATTRS, 3))
        parts = [QUESTION_PART[a][0 if i == 0 else 1].format(s=s)
                 for i, a in enumerate(subj.needs)]
        if rng.random() < 0.5:
            subj.question = f"{parts[0][0].upper()}{parts[0][1:]}, {parts[1]}, and {parts[2]}?"
        else:
            parts = [QUESTION_PART[a][1] for a in subj.needs]
            subj.question = f"About {s}: {parts[0]}, {parts[1]}, and {parts[2]}?"
        out.append(subj)
    return out


@dataclass
class Recall:
    needed: int = 0
    found: int = 0
    needed_restated: int = 0
    found_restated: int = 0
    found_strict: int = 0  # the value is in an item that also names the subject
    tokens: int = 0
    items: int = 0
    questions: int = 0


def measure(path: Path, subjects: list[Subject], budget: int, fill: bool = False) -> Recall:
    """Evidence recall of the questions at one budget, on the file at ``path`` (``fill``:
    packed to the budget instead of stopping at the relevance floor)."""
    r = Recall()
    with Memory(path, clock=lambda: NOW) as m:
        for subj in subjects:
            pack = m.inject(subj.question, token_budget=budget, namespace=subj.namespace,
                            fill=fill)
            text = pack.text
            name = re.compile(rf"\b{re.escape(subj.name)}\b", re.I)
            own = "\n".join(i.content for i in pack.items if name.search(i.content))
            r.questions += 1
            r.tokens += pack.tokens_used
            r.items += len(pack.items)
            for attr in subj.needs:
                hit = bool(subj.answer[attr].search(text))
                r.needed += 1
                r.found += hit
                r.found_strict += bool(subj.answer[attr].search(own))
                if attr in subj.restated:
                    r.needed_restated += 1
                    r.found_restated += hit
    return r


def live_stats(path: Path, namespaces: list[str]) -> tuple[int, int, str]:
    """Live nodes, their tokens, and their text joined, over ``namespaces``."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        nodes = tokens = 0
        texts = []
        for ns in namespaces:
            n, t = con.execute("SELECT count(*), coalesce(sum(tokens), 0) FROM nodes "
                               "WHERE namespace=? AND status='live'", (ns,)).fetchone()
            nodes, tokens = nodes + n, tokens + t
            texts.extend(c for (c,) in con.execute(
                "SELECT content FROM nodes WHERE namespace=? AND status='live'", (ns,)))
    finally:
        con.close()
    return nodes, tokens, "\n".join(texts)


def dates_kept(text: str, dates: set[date]) -> float:
    return sum(bool(value_pattern(date_forms(d)).search(text)) for d in dates) / max(len(dates), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--namespaces", type=int, default=5)
    ap.add_argument("--subjects", type=int, default=40, help="services per namespace")
    ap.add_argument("--budgets", type=int, nargs="+", default=[128, 256, 512],
                    help="inject token budgets")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--fill", action="store_true",
                    help="packs filled to the budget (default: the relevance floor)")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    namespaces = [f"hairball{i}" for i in range(args.namespaces)]
    dates: set[date] = set()
    by_ns = {ns: make_subjects(ns, args.subjects, rng, dates) for ns in namespaces}
    subjects = [s for ns in namespaces for s in by_ns[ns]]
    n_fragments = sum(len(s.fragments) for s in subjects)
    n_restated = sum(1 for s in subjects for a in s.needs if a in s.restated)

    tmp = Path(tempfile.mkdtemp(prefix="bench_hairball_"))
    path, copy = tmp / "after.db", tmp / "before.db"
    t0 = time.perf_counter()
    with Memory(path, clock=lambda: NOW) as m:
        for ns in namespaces:
            lines = [json.dumps({"content": text, "created_at": iso(at)})
                     for s in by_ns[ns] for text, at in s.fragments]
            Memory.bound(m.engine, ns).import_lines(lines)
    setup = time.perf_counter() - t0
    shutil.copy(path, copy)
    nodes_before, tokens_before, text_before = live_stats(copy, namespaces)

    t0 = time.perf_counter()
    runs = []
    with Memory(path, clock=lambda: NOW) as m:
        for ns in namespaces:
            runs.append(Memory.bound(m.engine, ns).run_rem(now=NOW))
    rem_seconds = time.perf_counter() - t0
    nodes_after, tokens_after, text_after = live_stats(path, namespaces)

    t0 = time.perf_counter()
    measured = [(b, measure(copy, subjects, b, args.fill),
                 measure(path, subjects, b, args.fill))
                for b in args.budgets]
    inject_seconds = time.perf_counter() - t0

    print(f"## Hairball benchmark ({n_fragments} fragments: {args.namespaces} namespaces x "
          f"{args.subjects} services, offline synthesiser)")
    print()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {datetime.now(UTC).date().isoformat()}; seed "
          f"{args.seed}; import + embed {setup:.0f} s, REM {rem_seconds:.0f} s, "
          f"injects {inject_seconds:.0f} s")
    print()
    print("| | live nodes | live tokens (o200k) | distinct fragment dates in live text |")
    print("|---|---:|---:|---:|")
    print(f"| before REM | {nodes_before} | {tokens_before} | "
          f"{dates_kept(text_before, dates):.1%} |")
    print(f"| after REM | {nodes_after} | {tokens_after} | "
          f"{dates_kept(text_after, dates):.1%} |")
    print()
    print("| flagged | clusters | synthesised | skipped | compression (nodes) | "
          "tokens after / before |")
    print("|---:|---:|---:|---:|---:|---:|")
    flagged = sum(r.flagged for r in runs)
    clusters = sum(r.clusters for r in runs)
    synthesised = sum(r.synthesised for r in runs)
    skipped = sum(r.skipped for r in runs)
    print(f"| {flagged} | {clusters} | {synthesised} | {skipped} | "
          f"{nodes_before / max(nodes_after, 1):.1f}x | "
          f"{tokens_after / max(tokens_before, 1):.1%} |")
    print()
    print(f"Evidence recall: share of the {len(subjects) * 3} facts the {len(subjects)} "
          "questions need (three per question) whose value appears in the pack's text; "
          f"{n_restated} of them are facts restated 5-10 times, the rest stated once. "
          "Strict: the value is in an item that also names the service. Tokens and items: "
          "mean per pack.")
    print()
    print("| budget | recall before | recall after | after - before | restated before | "
          "restated after | one-off before | one-off after | strict before | strict after | "
          "tokens before | tokens after | items before | items after |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for budget, b, a in measured:
        def share(found: int, needed: int) -> float:
            return found / max(needed, 1)
        print(f"| {budget} | {share(b.found, b.needed):.1%} | {share(a.found, a.needed):.1%} | "
              f"{100 * (share(a.found, a.needed) - share(b.found, b.needed)):+.1f} pts | "
              f"{share(b.found_restated, b.needed_restated):.1%} | "
              f"{share(a.found_restated, a.needed_restated):.1%} | "
              f"{share(b.found - b.found_restated, b.needed - b.needed_restated):.1%} | "
              f"{share(a.found - a.found_restated, a.needed - a.needed_restated):.1%} | "
              f"{share(b.found_strict, b.needed):.1%} | {share(a.found_strict, a.needed):.1%} | "
              f"{b.tokens / b.questions:.0f} | {a.tokens / a.questions:.0f} | "
              f"{b.items / b.questions:.1f} | {a.items / a.questions:.1f} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
