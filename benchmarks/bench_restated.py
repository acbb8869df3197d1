"""REM on old, redundant fragments: the density issue's case, as a benchmark.

    python benchmarks/bench_restated.py [--topics 30] [--per-topic 10] [--seed 11]
                                        [--budgets 120 400]

Each topic is one recurring event of one subject ("the payments service had timeouts"),
restated ``per_topic`` times over a year, each time with its own date, in varied wording and
date formats (ISO, "14 Mar 2025", "March 14, 2025"); some restatements add a detail about the
subject ("it uses Redis", "Priya Sharma was on call"). Everything is imported with its real
date, a year and more before ``NOW``, then one REM run (offline synthesiser) and a rollback.

Printed (markdown): live nodes and o200k tokens before and after; for each budget, the share of
topics whose subject is in the pack's first item for "What happened with <subject>?"; the share
of the fragments' dates still written in live text (in any format: "14 Mar 2025" and
"2025-03-14" are one date); and whether the daemon folds anything in the ticks after a rollback
(it must not: the rollback holds).
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
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from remd import Memory, load_config
from remd.service.daemon import Daemon
from remd.text.words import find_dates
from remd.wire import iso

DAY = 86400.0
NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
SUBJECTS = ["payments service", "search cluster", "billing API", "login page", "mail relay",
            "image resizer", "report builder", "webhook queue", "CDN edge", "chat backend",
            "inventory sync", "pricing engine", "audit log", "export job", "SSO gateway",
            "metrics pipeline", "ticket system", "mobile API", "cron runner", "VPN",
            "wiki", "build farm", "backup job", "DNS resolver", "feature flags",
            "recommendation model", "geo service", "notification hub", "file store", "ledger"]
EVENTS = ["had timeouts", "threw 502 errors", "ran out of disk", "lost its database connection",
          "leaked memory", "served stale data", "crashed on deploy", "hit its rate limit"]
DETAILS = ["it uses Redis", "it runs on Kubernetes", "it is written in Go",
           "Priya Sharma was on call", "Lars Olsen was on call", "the fix was a restart",
           "it is hosted in Frankfurt", "the alert fired late"]
WORDINGS = [
    "The {s} {e} again on {d}.",
    "Saw that the {s} {e} on {d}; {x}.",
    "{d}: {s} {e}.",
    "Heads up, the {s} {e} on {d}.",
    "Again the {s} {e} ({d}).",
    "On {d} the {s} {e} once more.",
    "Noted on {d} that the {s} {e}; {x}.",
    "The {s} {e} on {d}, same as before.",
]


def date_text(d: date, rng: random.Random) -> str:
    return rng.choice([d.isoformat(), f"{d.day} {d:%b} {d.year}", f"{d:%B} {d.day}, {d.year}"])


def make_topics(n: int, per_topic: int, seed: int) -> list[tuple[str, list[tuple[str, float]]]]:
    rng = random.Random(seed)
    start = datetime.fromtimestamp(NOW, UTC).date() - timedelta(days=760)
    topics = []
    for i in range(n):
        subject = SUBJECTS[i % len(SUBJECTS)]
        event, detail = rng.choice(EVENTS), rng.choice(DETAILS)
        days = sorted(rng.sample(range(365), per_topic))
        frags = []
        for k, offset in enumerate(days):
            d = start + timedelta(days=offset)
            text = rng.choice(WORDINGS).format(s=subject, e=event, d=date_text(d, rng), x=detail)
            text = text[0].upper() + text[1:]
            at = datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() + 3600 * (9 + k % 8)
            frags.append((text, at))
        topics.append((subject, frags))
    return topics


def live_text(m: Memory) -> tuple[int, int, str]:
    rows = m.store.query("SELECT tokens, content FROM nodes WHERE namespace = ? "
                         "AND status = 'live'", (m.namespace,))
    return len(rows), sum(int(r[0]) for r in rows), " ".join(str(r[1]) for r in rows)


def found(m: Memory, topics: list[tuple[str, list[tuple[str, float]]]], budget: int) -> float:
    hits = 0
    for subject, _ in topics:
        pack = m.inject(f"What happened with the {subject}?", token_budget=budget)
        hits += bool(pack.items) and subject.casefold() in pack.items[0].content.casefold()
    return hits / len(topics)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topics", type=int, default=30)
    ap.add_argument("--per-topic", type=int, default=10)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--budgets", type=int, nargs="+", default=[120, 400])
    args = ap.parse_args()
    if not 1 <= args.topics <= len(SUBJECTS) or not 2 <= args.per_topic <= 300:
        ap.error(f"--topics must be 1..{len(SUBJECTS)} and --per-topic 2..300")
    if any(b < 1 for b in args.budgets):
        ap.error("--budgets must be positive")
    topics = make_topics(args.topics, args.per_topic, args.seed)
    lines = [json.dumps({"content": t, "created_at": iso(at)})
             for _, frags in topics for t, at in frags]
    dates = {d.key for _, frags in topics for t, _ in frags for d in find_dates(t)}
    tmp = Path(tempfile.mkdtemp(prefix="remd-restated-"))
    db, untouched = tmp / "restated.db", tmp / "before.db"
    with Memory(db, clock=lambda: NOW) as m:
        m.import_lines(lines)
    shutil.copy(db, untouched)  # an inject is a use: "before" is asked of a copy
    with Memory(untouched, clock=lambda: NOW) as m:
        nodes_b, tokens_b, _ = live_text(m)
        found_b = {b: found(m, topics, b) for b in args.budgets}
    def live_set(m: Memory) -> set[tuple[str, str]]:
        return {(str(i), str(c)) for i, c in m.store.query(
            "SELECT id, content FROM nodes WHERE namespace = ? AND status = 'live'",
            (m.namespace,))}

    with Memory(db, clock=lambda: NOW) as m:
        was = live_set(m)
        t0 = time.perf_counter()
        run = m.run_rem(now=NOW)
        rem_s = time.perf_counter() - t0
        nodes_a, tokens_a, text = live_text(m)
        found_a = {b: found(m, topics, b) for b in args.budgets}
        kept = {d.key for d in find_dates(text)} & dates
        m.rollback(run.run_id or "", now=NOW + 60)
        exact = live_set(m) == was
    daemon = Daemon(db, load_config(env={}), clock=lambda: NOW + 120, env={})
    try:
        redo = [daemon.tick(NOW + 120 + s).runs for s in (0, 60, 3600, 86400)]
    finally:
        daemon.close()
    with Memory(db, clock=lambda: NOW) as m:
        after_rollback = m.store.scalar("SELECT count(*) FROM nodes WHERE kind = 'synthesis' "
                                        "AND status = 'live'")

    print(f"## Restated fragments ({len(lines)} fragments, {args.topics} topics, seed "
          f"{args.seed}, offline synthesiser)\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; {datetime.now(UTC).date().isoformat()}; "
          f"REM run {rem_s:.1f} s\n")
    print("| | live nodes | live tokens (o200k) | fragment dates in live text |")
    print("|---|---:|---:|---:|")
    print(f"| before REM | {nodes_b} | {tokens_b} | 100% |")
    print(f"| after REM | {nodes_a} | {tokens_a} ({tokens_a / tokens_b:.2f}x) | "
          f"{len(kept) / max(len(dates), 1):.0%} |\n")
    print(f"Clusters {run.clusters}, synthesised {run.synthesised}, skipped {run.skipped}.\n")
    print("| budget | topic first, before REM | after REM |")
    print("|---:|---:|---:|")
    for b in args.budgets:
        print(f"| {b} | {found_b[b]:.0%} | {found_a[b]:.0%} |")
    print(f"\nAfter `rollback`: the live memories are {'exactly' if exact else 'NOT'} those "
          f"before the run; daemon ticks at +0 s, +1 min, +1 h, +1 day started "
          f"{sum(len(r) for r in redo)} runs; live syntheses {after_rollback}.")


if __name__ == "__main__":
    main()
