"""Save throughput: single save, save_many at 1k and 10k, DB size per memory, time split.

    python benchmarks/bench_save.py [--sizes 1000 10000] [--singles 200]

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
import tempfile
import time
from pathlib import Path

from remd import Memory
from remd.config import EmbedConfig
from remd.embed import make_embedder

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


def split_profile(texts: list[str], path: Path) -> dict[str, float]:
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--singles", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="remd-bench-"))
    rows = []

    # Single saves, each its own transaction, embedding in the call.
    texts = corpus(args.singles, seed=1)
    with Memory(tmp / "single.db") as m:
        m.save("warm-up: load the embedder")
        t = time.perf_counter()
        for text in texts:
            m.save(text)
        dt = time.perf_counter() - t
    rows.append((f"save() x{len(texts)} (with embedding)", len(texts) / dt, "", ""))
    with Memory(tmp / "single-noembed.db", embedder=None) as m:
        t = time.perf_counter()
        for text in texts:
            m.save(text)
        dt = time.perf_counter() - t
    rows.append((f"save() x{len(texts)} (no embedder)", len(texts) / dt, "", ""))

    embedder = make_embedder(EmbedConfig())
    assert embedder is not None
    for n in args.sizes:
        texts = corpus(n)
        path = tmp / f"bulk{n}.db"
        with Memory(path) as m:
            t = time.perf_counter()
            m.save_many(texts, embed=False)
            durable = time.perf_counter() - t
            t = time.perf_counter()
            m.embed_pending()
            emb = time.perf_counter() - t
        size = os.path.getsize(path) + (os.path.getsize(str(path) + "-wal")
                                        if os.path.exists(str(path) + "-wal") else 0)
        rows.append((f"save_many {n:,}", n / durable, n / emb, size / n))

    split = split_profile(corpus(args.sizes[0], seed=3), tmp / "profile.db")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
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
