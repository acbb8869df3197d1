"""Save throughput: single save, save_many at 1k and 10k, DB size per memory, time split.

    python benchmarks/bench_save.py [--sizes 1000 10000] [--singles 200] [--db URL]

Prints a markdown table. The "durable" rate is memories committed (tags, facts, FTS, tokens)
per second; the embedding backlog is then processed separately at the embedder's batch speed.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.pg_local import schema_url  # noqa: E402
from remd import Memory  # noqa: E402
from remd.config import EmbedConfig  # noqa: E402
from remd.text.embed import make_embedder  # noqa: E402

WORDS = [
    "alpha", "project", "deploy", "billing", "invoice", "kayak", "fjord", "Lisbon", "Porto",
    "team", "meeting", "review", "budget", "design", "server", "database", "migration", "coffee",
    "chocolate", "peanut", "allergy", "doctor", "sister", "birthday", "guitar", "concert",
    "hiking", "trail", "camera", "photo", "garden", "tomato", "recipe", "Monday", "Friday",
    "April", "launch", "customer", "contract", "bug", "fix", "release", "latency", "cache",
]


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 24))]
        out.append(f"Note {i}: " + " ".join(words) + ".")
    return out


def split_profile(texts: list[str], path: Path | str) -> dict[str, float]:
    """Where save_many's time goes, from cProfile cumulative times."""
    with Memory(path, embedder=None) as m:
        prof = cProfile.Profile()
        prof.enable()
        m.save_many(texts, embed=False)
        prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[3] for k, v in stats.stats.items() if k[2] == "save_many")  # type: ignore[attr-defined]
    parts = {"tagging": "extract_tags", "facts+links": ("parse_facts", "parse_links"),
             "tokens": "count_many"}
    out: dict[str, float] = {}
    for label, names in parts.items():
        names = (names,) if isinstance(names, str) else names
        out[label] = sum(v[3] for k, v in stats.stats.items()  # type: ignore[attr-defined]
                         if k[2] in names)
    out["sql+other"] = total - sum(out.values())
    return {k: v / total for k, v in out.items()}


class Places:
    """Where each measurement's database is: a file in a temporary directory, or (``--db``) a
    fresh schema of that PostgreSQL database."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self.tmp = Path(tempfile.mkdtemp(prefix="remd-bench-"))

    def __call__(self, name: str) -> Path | str:
        if self.url is None:
            return self.tmp / f"{name}.db"
        return schema_url(self.url, f"save_{name.replace('-', '_')}", fresh=True)

    def size(self, where: Path | str) -> int:
        if isinstance(where, str):
            with Memory(where, embedder=None) as m:
                return int(m.store.scalar(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace s ON s.oid = c.relnamespace "
                    "WHERE s.nspname = current_schema() AND c.relkind = 'r'"))
        wal = Path(str(where) + "-wal")
        return os.path.getsize(where) + (os.path.getsize(wal) if wal.exists() else 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--singles", type=int, default=200)
    ap.add_argument("--db", default=None, metavar="URL",
                    help="a PostgreSQL database: each measurement in a fresh schema of it")
    args = ap.parse_args()
    place = Places(args.db)
    rows = []

    # Single saves, each its own transaction, embedding in the call.
    texts = corpus(args.singles, seed=1)
    with Memory(place("single")) as m:
        m.save("warm-up: load the embedder")
        t = time.perf_counter()
        for text in texts:
            m.save(text)
        dt = time.perf_counter() - t
    rows.append((f"save() x{len(texts)} (with embedding)", len(texts) / dt, "", ""))
    with Memory(place("single-noembed"), embedder=None) as m:
        t = time.perf_counter()
        for text in texts:
            m.save(text)
        dt = time.perf_counter() - t
    rows.append((f"save() x{len(texts)} (no embedder)", len(texts) / dt, "", ""))

    embedder = make_embedder(EmbedConfig())
    assert embedder is not None
    for n in args.sizes:
        texts = corpus(n)
        path = place(f"bulk{n}")
        with Memory(path) as m:
            t = time.perf_counter()
            m.save_many(texts, embed=False)
            durable = time.perf_counter() - t
            t = time.perf_counter()
            m.embed_pending()
            emb = time.perf_counter() - t
        size = place.size(path)
        rows.append((f"save_many {n:,}", n / durable, n / emb, size / n))

    split = split_profile(corpus(args.sizes[0], seed=3), place("profile"))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; store: "
          + ("PostgreSQL" if args.db else "SQLite"))
    print()
    print("| operation | durable memories/s | embedding backlog memories/s | DB bytes/memory |")
    print("|---|---:|---:|---:|")
    for name, rate, emb, size in rows:
        emb_s = f"{emb:,.0f}" if emb else "–"
        size_s = f"{size:,.0f}" if size else "–"
        print(f"| {name} | {rate:,.0f} | {emb_s} | {size_s} |")
    print()
    print("| where save_many's time goes (no embedding) | share |")
    print("|---|---:|")
    for k, v in split.items():
        print(f"| {k} | {v:.0%} |")


if __name__ == "__main__":
    main()
