"""REM consolidation on a synthetic namespace of redundant fragments.

    python benchmarks/bench_rem.py [--topics 1000] [--per-topic 10] [--queries 300]

Builds one namespace of ``topics × per_topic`` fragments (10k by default), each topic a made-up
project with its lead, city, stack, budget and dates, written as varied and partly redundant
fragments (some state the same fact twice in other words), all imported with real dates a year
and more in the past. One fact per topic is planted in exactly one fragment (a wiki password
hint such as ``amber-4821``). Then one REM run with the offline synthesiser, and fact retention:
the share of planted facts that ``inject`` for that fact still returns (in any item) after the
run, next to the same measure on an untouched copy of the file, at a few inject budgets.
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from remd import Memory
from remd.wire import iso

DAY = 86400.0
NOW = datetime(2025, 6, 1, tzinfo=UTC).timestamp()

SYLLABLES = ["ka", "lo", "mi", "ren", "to", "vex", "zor", "qua", "bel", "dru", "fen", "gal",
             "hos", "jin", "kor", "lum", "nav", "pex", "ris", "sul", "tam", "ul", "vor", "wyn"]
FIRST = ["Priya", "Lars", "Mei", "Tomas", "Aisha", "Diego", "Hana", "Omar", "Sofia", "Ivan",
         "Noor", "Kofi", "Elena", "Ravi", "Yuki", "Marta", "Jonas", "Leila", "Pavel", "Zara"]
LAST = ["Sharma", "Olsen", "Chen", "Novak", "Bello", "Ruiz", "Sato", "Haddad", "Rossi",
        "Petrov", "Khan", "Mensah", "Garcia", "Iyer", "Tanaka", "Silva", "Weber", "Nasser"]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Osaka", "Lima", "Krakow", "Austin", "Hanoi", "Porto",
          "Tallinn", "Accra", "Bogota", "Dublin", "Gdansk", "Leeds", "Quito", "Turin", "Riga"]
TECH = ["Postgres", "Kafka", "Redis", "Rust", "Kotlin", "Terraform", "Spark", "Elixir",
        "Svelte", "ClickHouse", "Flink", "Go", "Deno", "Cassandra", "Vue", "Zig"]
TEMPLATES = [
    "Project {p} kicked off in {c} with {who} as the lead.",
    "{who} is leading {p} from the {c} office.",  # restates the line above
    "The {p} team chose {t} for the ingestion pipeline.",
    "For {p} we went with {t} because the old stack could not scale past {rps} requests/s.",
    "Budget for {p} approved: {n} thousand euros.",
    "{who2} signed off the {p} spending of {n}k EUR.",  # restates the budget
    "{p} launch moved to {d} after the security review by {who2}.",
    "{p} release slipped to {d}; load tests were failing.",  # restates the date
    "Outage: {p}'s {t} cluster went down in {c} on {d2}.",
    "Postmortem for {p} by {who}: the {t} nodes ran out of disk.",
    "{p} standup notes: {who2} will pair with {who} on the {t} migration.",
    "{p} retro: the team wants fewer meetings and more pairing.",
]
FACT = "Note to self: the {p} wiki password hint is {code}."


def make_topics(n: int, per_topic: int, seed: int) -> list[tuple[str, str, list[str]]]:
    """(project, planted code, fragments) per topic; the code is in exactly one fragment."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < n:
        names.add("".join(rng.choice(SYLLABLES) for _ in range(3)).capitalize())
    out = []
    for p in sorted(names):
        v = {"p": p, "who": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
             "who2": f"{rng.choice(FIRST)} {rng.choice(LAST)}", "c": rng.choice(CITIES),
             "t": rng.choice(TECH), "n": rng.randint(50, 990), "rps": rng.randint(1000, 90000),
             "d": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
             "d2": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"}
        code = f"{rng.choice(['amber', 'violet', 'teal', 'coral'])}-{rng.randint(1000, 9999)}"
        picked = rng.sample(TEMPLATES, min(per_topic - 1, len(TEMPLATES)))
        frags = [t.format(**v) for t in picked] + [FACT.format(p=p, code=code)]
        rng.shuffle(frags)
        out.append((p, code, frags))
    return out


def retention(path: Path, topics: list[tuple[str, str, list[str]]], sample: list[int],
              budget: int) -> tuple[float, float]:
    """Share of sampled planted facts an inject returns; mean inject time (ms)."""
    hits = 0
    start = time.perf_counter()
    with Memory(path, clock=lambda: NOW) as m:
        for i in sample:
            p, code, _ = topics[i]
            pack = m.inject(f"What is the {p} wiki password hint?", token_budget=budget)
            hits += any(code in item.content for item in pack.items)
    return hits / len(sample), (time.perf_counter() - start) * 1000 / len(sample)


def live_tokens(m: Memory) -> int:
    """o200k tokens of the namespace's live memories (what inject can return)."""
    return int(m.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                              "AND status = 'live'", (m.namespace,)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--per-topic", type=int, default=10)
    ap.add_argument("--queries", type=int, default=300, help="planted facts checked")
    ap.add_argument("--budgets", type=int, nargs="+", default=[150, 500, 1000],
                    help="inject token budgets")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    topics = make_topics(args.topics, args.per_topic, args.seed)
    lines = [json.dumps({"content": text, "created_at": iso(NOW - (380 + (7 * t + j) % 300)
                                                             * DAY)})
             for t, (_, _, frags) in enumerate(topics) for j, text in enumerate(frags)]
    tmp = Path(tempfile.mkdtemp(prefix="bench_rem_"))
    path, copy = tmp / "rem.db", tmp / "before.db"
    t0 = time.perf_counter()
    with Memory(path, clock=lambda: NOW) as m:
        m.import_lines(lines)
    setup = time.perf_counter() - t0
    shutil.copy(path, copy)
    sample = random.Random(args.seed).sample(range(len(topics)), min(args.queries, len(topics)))

    with Memory(path, clock=lambda: NOW) as m:
        tokens_before = live_tokens(m)
        run = m.run_rem(now=NOW)
        tokens_after = live_tokens(m)
    measured = [(b, *retention(copy, topics, sample, b), *retention(path, topics, sample, b))
                for b in args.budgets]

    t = run.timings
    print(f"## REM benchmark ({len(lines)} fragments, {args.topics} topics, offline synthesiser)")
    print()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {datetime.now(UTC).date().isoformat()}; "
          f"setup (import + embed) {setup:.0f} s")
    print()
    print("| flagged | clusters | synthesised | skipped | live before | live after | "
          "compression |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    ratio = run.live_before / max(run.live_after, 1)
    print(f"| {run.flagged} | {run.clusters} | {run.synthesised} | {run.skipped} | "
          f"{run.live_before} | {run.live_after} | {ratio:.1f}x |")
    print()
    print("| live tokens before (o200k) | live tokens after | after / before |")
    print("|---:|---:|---:|")
    print(f"| {tokens_before} | {tokens_after} | {tokens_after / max(tokens_before, 1):.2f} |")
    print()
    print("| phase | seconds |")
    print("|---|---:|")
    for phase in ("importance", "flag", "cluster", "synthesise_and_write", "embed", "total"):
        print(f"| {phase} | {t.get(phase, 0.0):.2f} |")
    print()
    print(f"Fact retention: share of {len(sample)} planted facts (one per sampled topic) that "
          "`inject` returns in some item, on an untouched copy and after the run.")
    print()
    print("| inject budget | before REM | after REM | after / before | ms/inject before | "
          "ms/inject after |")
    print("|---:|---:|---:|---:|---:|---:|")
    for budget, before, ms_before, after, ms_after in measured:
        print(f"| {budget} | {before:.1%} | {after:.1%} | "
              f"{after / before if before else 0:.1%} | {ms_before:.1f} | {ms_after:.1f} |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
