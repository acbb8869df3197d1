"""Inject into one namespace alone, and the same namespace among 10,000 small ones.

    python benchmarks/bench_crowd.py [--size 100000] [--crowd 10000] [--queries 200]

Two files hold the same namespace ``default`` of ``--size`` memories, built as
benchmarks/bench_inject.py builds it; the second also holds ``--crowd`` namespaces of 3 short
memories each (their own tags, words and vectors). One process opens both. The timed questions
alternate between the files in blocks of 20, each a question not asked before; before each
timed question on the crowded file, two untimed injects go to random small namespaces, so the
engine's caches and the FTS5 index see the other tenants' traffic (the alone arm makes the same
two untimed injects into its own namespace). Prints p50/p95 per budget and arm, and the ratio.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_inject import (  # noqa: E402
    BLOCK,
    DAY,
    NOW,
    QueryEmbedder,
    build,
    pct,
    queries,
    vocabulary,
)
from remd import Config, Memory  # noqa: E402
from remd.index.vectors import write_vectors  # noqa: E402

SMALL = 3


def add_crowd(path: Path, count: int, config: Config) -> float:
    """``count`` namespaces of SMALL memories each, with their own tags, FTS rows, vectors and
    co-occurrence edges, written straight into the schema; returns seconds."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(5)
    words = vocabulary(20_000)
    with Memory(path, config=config, embedder=None) as mem:
        store, counter = mem.store, mem.counter
        rid = int(store.scalar("SELECT max(rid) FROM nodes") or 0)
        tid = int(store.scalar("SELECT max(tid) FROM tags") or 0)
        for lo in range(0, count, 1000):
            nodes, tags, node_tags, edges, vecs, rids, spaces = [], [], [], [], [], [], []
            for i in range(lo, min(count, lo + 1000)):
                ns = f"t{i:05d}"
                names = list(dict.fromkeys(rng.choice(words, size=8).tolist()))
                ids = {}
                for name in names:
                    tid += 1
                    ids[name] = tid
                    tags.append((tid, ns, name, 0, NOW - 30 * DAY))
                for _ in range(SMALL):
                    rid += 1
                    mine = list(rng.choice(names, size=4, replace=False))
                    text = " ".join(mine + rng.choice(words, size=6).tolist()).capitalize()
                    nodes.append((rid, f"s{rid:09d}", ns, "episodic", text, NOW - 30 * DAY,
                                  NOW - 30 * DAY, 0.5, counter.count(text)))
                    node_tags += [(ns, ids[n], rid, 1.0) for n in mine]
                    edges += [(ns, ids[a], ids[b], 1, 0.5) for a in mine for b in mine if a != b]
                    v = rng.standard_normal(384).astype(np.float32)
                    vecs.append(v / np.linalg.norm(v))
                    rids.append(rid)
                    spaces.append(ns)
            with store.transaction() as conn:
                conn.executemany("INSERT INTO tags (tid, namespace, name, df, created_at) "
                                 "VALUES (?, ?, ?, ?, ?)", tags)
                conn.executemany(
                    "INSERT INTO nodes (rid, id, namespace, kind, content, created_at, "
                    "last_access, importance, tokens, embedded) VALUES (?,?,?,?,?,?,?,?,?,1)",
                    nodes)
                conn.executemany("INSERT INTO node_fts (rowid, content) VALUES (?, ?)",
                                 [(r[0], r[4]) for r in nodes])
                conn.executemany("INSERT INTO node_tags (namespace, tid, rid, weight) "
                                 "VALUES (?, ?, ?, ?)", node_tags)
                conn.executemany("INSERT INTO tag_edges (namespace, src, dst, count, weight) "
                                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (src, dst) DO UPDATE SET "
                                 "count = count + 1", edges)
                conn.execute("UPDATE tags SET df = (SELECT count(*) FROM node_tags nt "
                             "WHERE nt.tid = tags.tid) WHERE tid > ?", (tid - len(tags),))
                for ns in sorted(set(spaces)):
                    mine_r = [r for r, s in zip(rids, spaces, strict=True) if s == ns]
                    mine_v = [v for v, s in zip(vecs, spaces, strict=True) if s == ns]
                    write_vectors(conn, ns, mine_r, np.stack(mine_v))
        with store.connection() as conn:
            conn.execute("ANALYZE")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--crowd", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=200, help="timed per budget and arm")
    ap.add_argument("--budgets", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args(argv)
    config = Config()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="remd-crowd-"))
    work.mkdir(parents=True, exist_ok=True)
    alone, crowded = work / f"alone-{args.size}.db", work / f"crowded-{args.size}.db"
    for path, crowd in ((alone, 0), (crowded, args.crowd)):
        if not path.exists():
            took = build(path, args.size, config)
            if crowd:
                took += add_crowd(path, crowd, config)
            print(f"built {path.name} in {took:.1f} s", file=sys.stderr)
    need = 1 + 200 + 2 * args.queries * len(args.budgets)
    planned = queries(args.size, need, alone)
    texts = list(planned)
    rng = np.random.default_rng(9)
    small = [f"t{i:05d}" for i in range(args.crowd)]
    emb = QueryEmbedder(planned, None)
    filler = "what about the harbour ferry and the garden?"
    planned[filler] = planned[texts[0]]
    rows = []
    with Memory(alone, config=config, embedder=emb, clock=lambda: NOW) as a, \
            Memory(crowded, config=config, embedder=emb, clock=lambda: NOW) as c:
        for mem in (a, c):  # load the indexes, warm the process
            for text in texts[1:101]:
                mem.inject(text, args.budgets[0])
        at = 201
        for budget in args.budgets:
            lat: tuple[list[float], list[float]] = ([], [])
            cell = texts[at:at + 2 * args.queries]
            at += 2 * args.queries
            for start in range(0, len(cell), BLOCK):
                arm = (start // BLOCK) % 2
                mem = (a, c)[arm]
                for text in cell[start:start + BLOCK]:
                    for _ in range(2):  # the other tenants' traffic (untimed)
                        if arm:
                            ns = small[int(rng.integers(len(small)))]
                            Memory.bound(c.engine, ns).inject(filler, 200)
                        else:
                            a.inject(filler, 200)
                    t = time.perf_counter()
                    mem.inject(text, budget)
                    lat[arm].append((time.perf_counter() - t) * 1000)
            rows.append((budget, lat))
        cached = len(c.engine.caches)
    print(f"\n{args.size:,} memories in `default`; crowded file: + {args.crowd:,} namespaces x "
          f"{SMALL}; {platform.machine()}, {platform.python_version()}; "
          f"{cached} namespace views cached in the crowded process\n")
    print("| budget | alone p50 | alone p95 | crowded p50 | crowded p95 | p50 ratio "
          "| p95 ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for budget, (alone_lat, crowd_lat) in rows:
        a50, a95 = pct(alone_lat, .5), pct(alone_lat, .95)
        c50, c95 = pct(crowd_lat, .5), pct(crowd_lat, .95)
        print(f"| {budget} | {a50:.1f} | {a95:.1f} | {c50:.1f} | {c95:.1f} | {c50 / a50:.2f}x "
              f"| {c95 / a95:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
