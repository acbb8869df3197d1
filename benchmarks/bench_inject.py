"""Inject latency at 1k, 10k, 100k (and 1M) memories: p50/p95/p99, with and without embedding.

    python benchmarks/bench_inject.py [--sizes 1000 10000 100000 1000000] [--queries 200]
        [--warmup N] [--set vector_k=0 ...] [--db URL [--versus-sqlite]] [--workdir DIR]

Each namespace is built with bulk SQL in remd's real schema (a save_many of 1M memories would
take ~10 minutes of tagging and embedding; inject only reads): Zipf-distributed words (content
and FTS5), 3-8 tags per memory drawn from its own words (so tag document frequencies are
Zipf-like too), co-occurrence tag edges weighted by the same rule as the write path, and
synthetic clustered unit vectors in ``node_vec_bit`` (the one table of vectors). Queries
are 3-5 words of a random memory plus a vector near
it. "with embedding" also runs the real MiniLM model on a real question (LoCoMo's when
../shared/data is there, else a built-in list; the vector it returns is replaced by the
synthetic one, so the same neighbours are found): that is the end-to-end time an agent sees.
Each run first loads the indexes and asks ``--warmup`` (default ``--queries``) untimed
questions (a warm process, as an agent's long-running one is); then, per budget, the bare and
"with embedding" questions alternate in blocks of 20, and every timed inject asks a question
not asked before in that process.
``--db URL`` measures a PostgreSQL database instead (schema inject_N); with
``--versus-sqlite`` also the SQLite file of the same memories, side by side in one process
(blocks rotate over the stores and arms), printing both and the ratio.
``--set KEY=VALUE`` changes ``[inject]`` settings (e.g. ``vector_k=0``: no vector seeds, so no
query embedding either). Prints markdown tables.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.pg_local import schema_url  # noqa: E402
from remd import Config, Memory  # noqa: E402
from remd.config import EmbedConfig  # noqa: E402
from remd.index.lexical import stem_counts  # noqa: E402
from remd.index.vectors import write_vectors  # noqa: E402
from remd.store import is_url  # noqa: E402
from remd.store.quantisation import from_int8  # noqa: E402
from remd.text.embed import DIM, Embedder, make_embedder  # noqa: E402

DAY = 86400.0
NOW = 1_780_000_000.0
SYLLABLES = ["ka", "lo", "mi", "ra", "te", "su", "no", "vi", "da", "re", "po", "ma", "lu", "ze",
             "ni", "ko", "sa", "tu", "be", "fi", "ga", "ho", "ju", "ke", "la", "mo", "na", "pe",
             "ri", "so", "ta", "ve", "wu", "ya", "zo"]
CLUSTERS = 512


def vocabulary(size: int) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    rng = np.random.default_rng(1)
    while len(out) < size:
        word = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def zipf_p(n: int, s: float = 1.07) -> npt.NDArray[np.float64]:
    p = (1.0 / (np.arange(n) + 2.7) ** s).astype(np.float64)
    out: npt.NDArray[np.float64] = p / p.sum()
    return out


class Corpus:
    """A deterministic synthetic namespace of n memories."""

    def __init__(self, n: int, seed: int = 7) -> None:
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.words = vocabulary(min(200_000, max(2_000, n // 5)))
        self.p = zipf_p(len(self.words))
        self.centroids = self._unit(self.rng.standard_normal((CLUSTERS, DIM)).astype(np.float32))

    @staticmethod
    def _unit(m: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
        return out

    def chunk(self, start: int, size: int) -> tuple[list[list[int]], npt.NDArray[np.float32]]:
        rng = np.random.default_rng((start + 1) * 7919)
        lengths = rng.integers(10, 22, size=size)
        flat = rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)
        docs, at = [], 0
        for ln in lengths:
            docs.append([int(w) for w in flat[at:at + ln]])
            at += ln
        cluster = rng.integers(0, CLUSTERS, size=size)
        noise = rng.standard_normal((size, DIM)).astype(np.float32) * 0.045
        return docs, self._unit(self.centroids[cluster] + noise)


def pg_size(url: str) -> int:
    """Bytes of the tables and indexes of the URL's schema."""
    with Memory(url, embedder=None) as mem:
        return int(mem.store.scalar(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = current_schema() "
            "AND c.relkind = 'r'"))


def build(path: Path | str, n: int, config: Config) -> float:
    """Write n memories straight into the schema; returns seconds."""
    t0 = time.perf_counter()
    corpus = Corpus(n)
    words = corpus.words
    with Memory(path, config=config, embedder=None) as mem:
        counter = mem.counter
        store = mem.store
        with store.transaction() as conn:
            conn.executemany(
                "INSERT INTO tags (tid, namespace, name, df, created_at) VALUES (?, ?, ?, 0, ?)",
                [(i + 1, "default", w, NOW - 800 * DAY) for i, w in enumerate(words)])
        df = np.zeros(len(words) + 1, np.int64)
        pair_keys: list[npt.NDArray[np.int64]] = []
        stride = len(words) + 1
        step = 20_000
        rng = np.random.default_rng(3)
        for start in range(0, n, step):
            size = min(step, n - start)
            docs, vecs = corpus.chunk(start, size)
            texts = [" ".join(words[w] for w in d).capitalize() + "." for d in docs]
            tokens = counter.count_many(texts)
            created = NOW - rng.uniform(0, 730 * DAY, size=size)
            importance = rng.uniform(0.2, 0.8, size=size)
            node_rows, tag_rows = [], []
            for i, d in enumerate(docs):
                rid = start + i + 1
                node_rows.append((rid, f"m{rid:09d}", "default", "episodic", texts[i],
                                  float(created[i]), float(created[i]), float(importance[i]),
                                  tokens[i]))
                tags = list(dict.fromkeys(d))[: int(rng.integers(3, 9))]
                tids = np.array(tags, np.int64) + 1
                df[tids] += 1
                tag_rows += [("default", int(t), rid, 1.0) for t in tids]
                a, b = np.meshgrid(tids, tids)
                mask = a != b
                pair_keys.append(a[mask] * stride + b[mask])
            with store.transaction() as conn:
                conn.executemany(
                    "INSERT INTO nodes (rid, id, namespace, kind, content, created_at, "
                    "last_access, importance, tokens, embedded) VALUES (?,?,?,?,?,?,?,?,?,1)",
                    node_rows)
                if is_url(str(path)):  # PostgreSQL's term index: each text's stems
                    terms, lengths = [], []
                    for r in node_rows:
                        stems = stem_counts(conn, r[4])
                        length = sum(stems.values())
                        terms += [("default", st, r[0], c, length) for st, c in stems.items()]
                        lengths.append((r[0], "default", sum(stems.values())))
                    conn.executemany("INSERT INTO node_terms (namespace, stem, rid, tf, len) "
                                     "VALUES (?, ?, ?, ?, ?)", terms)
                    conn.executemany("INSERT INTO node_terms_len (rid, namespace, len) "
                                     "VALUES (?, ?, ?)", lengths)
                else:
                    conn.executemany("INSERT INTO node_fts (rowid, content) VALUES (?, ?)",
                                     [(r[0], r[4]) for r in node_rows])
                conn.executemany("INSERT INTO node_tags (namespace, tid, rid, weight) "
                                 "VALUES (?, ?, ?, ?)", tag_rows)
                write_vectors(conn, "default", range(start + 1, start + size + 1), vecs)
        keys, counts = np.unique(np.concatenate(pair_keys), return_counts=True)
        weights = 1.0 - 0.5 * 0.9 ** (counts - 1.0)  # the write path's co-occurrence rule
        with store.transaction() as conn:
            conn.executemany("UPDATE tags SET df = ? WHERE tid = ?",
                             [(int(df[t]), t) for t in range(1, stride) if df[t]])
            for lo in range(0, len(keys), 500_000):
                conn.executemany(
                    "INSERT INTO tag_edges (namespace, src, dst, count, weight) "
                    "VALUES ('default', ?, ?, ?, ?)",
                    ((int(k // stride), int(k % stride), int(c), float(w)) for k, c, w in
                     zip(keys[lo:lo + 500_000], counts[lo:lo + 500_000],
                         weights[lo:lo + 500_000], strict=True)))
        if is_url(str(path)):  # rows written with their keys: the identities move past them
            with store.transaction() as conn:
                conn.execute("INSERT INTO fts_stats (namespace, docs, terms) SELECT 'default', "
                             "count(*), coalesce(sum(len), 0) FROM node_terms_len")
                for table, key in (("nodes", "rid"), ("tags", "tid")):
                    conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), "
                                 f"(SELECT max({key}) FROM {table}))")
        with store.connection() as conn:
            # PostgreSQL: VACUUM too, as autovacuum would after the inserts, so index-only
            # scans (bm25's postings) see an up-to-date visibility map.
            # SQLite: VACUUM rebuilds every table and index in key order (the rows were
            # written in rid order, so the indexes keyed by tag were filled at random, their
            # pages ~2/3 full).
            conn.execute("VACUUM ANALYZE" if is_url(str(path)) else "VACUUM")
            if not is_url(str(path)):
                conn.execute("ANALYZE")
    return time.perf_counter() - t0


# Questions an agent asks its memory, for timing the model on text of a real length when the
# LoCoMo questions (../shared/data, evaluation only) are not there.
AGENT_QUESTIONS = [
    "What are my food preferences?", "When is my sister's birthday?",
    "Which server hosts the staging database?", "What did we decide about the Falcon launch?",
    "Who is leading the Heron project now?", "What was the root cause of last week's outage?",
    "Where did I park the car at the airport?", "What does the user think about remote work?",
    "Which hotel did we book for the Lisbon trip?", "What is the wifi password at the office?",
    "How did the budget review with finance go?", "What medication am I allergic to?",
    "When did Caroline go to the LGBTQ support group?", "What books has Melanie read?",
    "Which library did we choose for the ingestion pipeline?", "What time is the dentist?",
]


def embedding_texts(count: int) -> list[str]:
    """Real English questions to run the model on: LoCoMo's if ../shared/data has them."""
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
    questions: list[str] = []
    if data.exists():
        questions = [str(q["question"]) for conv in json.loads(data.read_text())
                     for q in conv["qa"]]
    questions = questions or AGENT_QUESTIONS
    return [questions[i % len(questions)] for i in range(count)]


class QueryEmbedder:
    """Hands inject the planned synthetic vector of each query, after (optionally) running the
    real MiniLM model on a real question, so the model's time for text of a real length is
    paid (the synthetic queries are made-up words the tokenizer splits into ~1.5x as many
    pieces as real questions have)."""

    name = "bench"
    dim = DIM

    def __init__(self, planned: dict[str, npt.NDArray[np.float32]],
                 real: Embedder | None) -> None:
        self.planned = planned
        self.real = real
        self.texts = dict(zip(planned, embedding_texts(len(planned)), strict=True))

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.real is not None:
            self.real.embed([self.texts.get(t, t) for t in texts])
        return np.stack([self.planned[t] for t in texts])


def queries(n: int, count: int, path: Path | str) -> dict[str, npt.NDArray[np.float32]]:
    rng = np.random.default_rng(11)
    with Memory(path, embedder=None) as mem:
        rids = rng.integers(1, n + 1, size=count)
        out: dict[str, npt.NDArray[np.float32]] = {}
        for i, rid in enumerate(rids):
            content, vec = mem.store.one(
                "SELECT n.content, b.vec FROM nodes n JOIN node_vec_bit b ON b.rid = n.rid "
                "WHERE n.rid = ?", (int(rid),)) or ("", b"")
            words = str(content).rstrip(".").split()
            picked = rng.choice(words, size=min(len(words), int(rng.integers(3, 6))),
                                replace=False)
            text = f"what about {' '.join(picked)}? (q{i})"
            v = from_int8([vec])[0] + rng.standard_normal(DIM).astype(np.float32) * 0.03
            out[text] = (v / np.linalg.norm(v)).astype(np.float32)
    return out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


BLOCK = 20  # queries per block; the bare and +embed arms (and the stores) alternate blocks


Row = tuple[dict[str, float], dict[str, float]]  # (bare, +embed) of one budget


def measure(paths: Sequence[Path | str], planned: dict[str, npt.NDArray[np.float32]],
            budgets: Sequence[int], real: Embedder | None, config: Config, count: int,
            warmup: int) -> list[list[Row]]:
    """Per store (one, or several side by side), one warm-up pass of ``warmup`` queries (not
    timed), then per budget ``count`` bare and ``count`` +embed queries; blocks of ``BLOCK``
    rotate over the stores and arms, so all of them see the same state of the caches, of the
    page cache (at 1M the file is still warming for minutes: run one after the other, the
    second arm came out faster) and of this VM, whose speed drifts by minutes. Every timed
    inject asks a question no store in the process has seen. Returns, per store, (bare,
    +embed) rows per budget."""
    emb = QueryEmbedder(planned, None)
    texts = list(planned)
    stores = len(paths)
    with contextlib.ExitStack() as stack:
        mems = [stack.enter_context(Memory(p, config=config, embedder=emb, clock=lambda: NOW))
                for p in paths]
        loads = []
        for mem in mems:
            t0 = time.perf_counter()
            mem.inject(texts[0], 64)  # loads the in-process vector index
            loads.append(time.perf_counter() - t0)
            for text in texts[1:warmup]:
                mem.inject(text, budgets[0])
        rows: list[list[Row]] = [[] for _ in paths]
        per_cell = count * 2 * stores
        for i, budget in enumerate(budgets):
            cell = texts[warmup + per_cell * i:warmup + per_cell * (i + 1)]
            arms = [(defaultdict(list), defaultdict(list)) for _ in paths]
            size = min(BLOCK, count)  # so that every store and arm has its questions
            for start in range(0, len(cell), size):
                block = start // size
                which, arm = block % stores, (block // stores) % 2
                emb.real = real if arm else None
                for text in cell[start:start + size]:
                    t = time.perf_counter()
                    pack = mems[which].inject(text, budget)
                    got = arms[which][arm]
                    got["lat"].append((time.perf_counter() - t) * 1000)
                    got["touched"].append(pack.memories_touched)
                    got["tags"].append(pack.tags_activated)
                    got["items"].append(len(pack.items))
            for which, pair in enumerate(arms):
                bare, full = ({"budget": budget, "p50": pct(a["lat"], .5),
                               "p95": pct(a["lat"], .95), "p99": pct(a["lat"], .99),
                               "touched": statistics.mean(a["touched"]),
                               "tags": statistics.mean(a["tags"]),
                               "items": statistics.mean(a["items"]), "load": loads[which]}
                              for a in pair)
                rows[which].append((bare, full))
    return rows


def bench_config(ap: argparse.ArgumentParser, pairs: Sequence[str]) -> Config:
    """The benchmarks' config: ``query_cache=0``, so every "+embed" ask pays the model, and
    ``--set``'s KEY=VALUE ``pairs``: ``[inject]`` keys, or SECTION.KEY for another section
    (``store.resident_mb=4096``; a bad one is a usage error)."""
    if any("=" not in kv for kv in pairs):
        ap.error("--set takes KEY=VALUE pairs")
    sections: dict[str, dict[str, str]] = {"inject": {"query_cache": "0"}}
    for kv in pairs:
        key, value = kv.split("=", 1)
        section, _, name = key.rpartition(".")
        sections.setdefault(section or "inject", {})[name] = value
    try:
        return Config.model_validate(sections)
    except ValidationError as exc:
        ap.error(f"--set: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--budgets", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--queries", type=int, default=200, help="timed per cell and arm")
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed questions first (default: --queries)")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the databases here")
    ap.add_argument("--build-only", action="store_true", help="build the databases and stop")
    ap.add_argument("--db", default=None, metavar="URL",
                    help="a PostgreSQL database: each size in its schema inject_N (kept)")
    ap.add_argument("--versus-sqlite", action="store_true",
                    help="with --db: also measure the SQLite file of each size (in --workdir), "
                         "side by side in one process, blocks alternating; print both and "
                         "the ratio")
    ap.add_argument("--set", dest="overrides", metavar="KEY=VALUE", nargs="+", default=[],
                    help="[inject] settings for the timed runs, e.g. vector_k=0")
    args = ap.parse_args(argv)
    if args.versus_sqlite and not args.db:
        ap.error("--versus-sqlite compares --db's PostgreSQL with SQLite: give --db")
    config = bench_config(ap, args.overrides)
    real = make_embedder(EmbedConfig())
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-bench-inject-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"inject latency — {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.queries} queries per cell, "
          f"{args.warmup if args.warmup is not None else args.queries} untimed first"
          + (f", inject {' '.join(args.overrides)}" if args.overrides else "") + "\n")
    if args.versus_sqlite:
        print("| memories | budget | SQLite p50 | PostgreSQL p50 | SQLite p95 | PostgreSQL p95 "
              "| ratio p95 | SQLite p95 +embed | PostgreSQL p95 +embed | ratio p95 +embed |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| memories | budget | p50 ms | p95 ms | p99 ms | p50 ms +embed | p95 ms +embed "
              "| p99 ms +embed | memories touched | tags activated | items |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    notes = []
    for n in args.sizes:
        path: Path | str = workdir / f"inject-{n}.db"
        built = 0.0
        if args.db:  # PostgreSQL: schema inject_N of that database, built once and kept
            path = schema_url(args.db, f"inject_{n}")
            with Memory(path, embedder=None) as mem:
                missing = not mem.store.scalar("SELECT count(*) FROM nodes")
            if missing:
                built = build(path, n, config)
        if (not args.db or args.versus_sqlite) and not (workdir / f"inject-{n}.db").exists():
            built += build(workdir / f"inject-{n}.db", n, config)
        if args.build_only:
            print(f"built {path} in {built:.0f} s", file=sys.stderr)
            continue
        # Distinct queries for the warm-up, every cell and both arms, so no timed query was
        # asked before (the term-count and tag caches would answer a repeated one from memory).
        k = args.queries
        warm = max(1, args.warmup if args.warmup is not None else k)
        paths = [workdir / f"inject-{n}.db", path] if args.versus_sqlite else [path]
        planned = queries(n, warm + 2 * len(paths) * len(args.budgets) * k, path)
        measured = measure(paths, planned, args.budgets, real, config, k, warm)
        rows = measured[-1]
        if args.versus_sqlite:
            for (sb, sf), (pb, pf) in zip(measured[0], rows, strict=True):
                print(f"| {n:,} | {sb['budget']:.0f} | {sb['p50']:.1f} | {pb['p50']:.1f} | "
                      f"{sb['p95']:.1f} | {pb['p95']:.1f} | {pb['p95'] / sb['p95']:.2f}x | "
                      f"{sf['p95']:.1f} | {pf['p95']:.1f} | {pf['p95'] / sf['p95']:.2f}x |",
                      flush=True)
        else:
            for b, f in rows:
                print(f"| {n:,} | {b['budget']:.0f} | {b['p50']:.1f} | {b['p95']:.1f} | "
                      f"{b['p99']:.1f} | {f['p50']:.1f} | {f['p95']:.1f} | {f['p99']:.1f} | "
                      f"{b['touched']:.0f} | {b['tags']:.0f} | {b['items']:.1f} |", flush=True)
        size_mb = (pg_size(str(path)) if args.db else Path(path).stat().st_size) / 1e6
        notes.append(f"{n:,}: built in {built:.0f} s (0 = reused), file {size_mb:,.0f} MB, "
                     f"first inject (loads the vector index) {rows[0][0]['load'] * 1000:.0f} ms")
    print()
    for note in notes:
        print(f"- {note}")
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
