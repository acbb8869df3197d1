"""Inject at a million memories against ten thousand, and against brute force, in one process.

    python benchmarks/bench_million.py [--small DIR/inject-10000.db] [--large DIR/inject-1000000.db]
        [--queries 200] [--warmup 200] [--budget 1024] [--idle 120] [--reps 3] [--recall 200]

The files are the ones ``benchmarks/bench_inject.py --sizes 10000 1000000 --build-only`` builds
(inject records its packs in them: give copies if others read them). Three arms, one process:

- remd on the 10k file and on the 1M file, each bare (the synthetic query vector handed in)
  and "+embed" (the real MiniLM model run on a real question first, as bench_inject's
  "+embed" arm: the end-to-end time an agent sees);
- brute force: the same real embedding, then float32 cosine over every one of the 1M stored
  vectors (dequantised once, held in memory) and its top 32 (``np.argpartition``).

After ``--warmup`` untimed questions per file, timed questions rotate over the arms in blocks
of 20 (each timed question asked once in the process). Then, ``--reps`` times per file, the
process sleeps ``--idle`` seconds and the first question after it is timed (+embed), the
files taking turns. Last, the recall of inject's vector search (``vector_k`` best of the
Hamming pre-filter and cosine rerank) against the exact cosine top-k over the stored 1M
vectors, for ``--recall`` questions. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_inject import NOW, QueryEmbedder, bench_config, pct, queries  # noqa: E402
from remd import Memory  # noqa: E402
from remd.config import EmbedConfig  # noqa: E402
from remd.index import vectors  # noqa: E402
from remd.store.quantisation import from_int8  # noqa: E402
from remd.text.embed import make_embedder  # noqa: E402

BLOCK = 20
TOP = 32


def rss_mb(field: str = "VmRSS") -> float:
    """The process's resident (or, ``VmLck``, locked) memory in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def load_matrix(path: Path) -> npt.NDArray[np.float32]:
    """Every stored vector of the file as float32 rows, row i = rid i + 1 (the bench files
    number memories 1..n)."""
    with Memory(path, embedder=None) as mem:
        n = int(mem.store.scalar("SELECT max(rid) FROM node_vec_bit"))
        out = np.zeros((n, 384), np.float32)
        with mem.store.snapshot() as conn:
            batch: list[bytes] = []
            rids: list[int] = []
            for rid, vec in conn.execute("SELECT rid, vec FROM node_vec_bit ORDER BY rid"):
                rids.append(int(rid) - 1)
                batch.append(vec)
                if len(batch) == 100_000:
                    out[rids] = from_int8(batch)
                    batch, rids = [], []
            if batch:
                out[rids] = from_int8(batch)
    return out


def brute(matrix: npt.NDArray[np.float32], q: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """The TOP rids by exact cosine, best first."""
    sims = matrix @ q
    top = np.argpartition(-sims, TOP)[:TOP]
    out: npt.NDArray[np.int64] = top[np.argsort(-sims[top], kind="stable")] + 1
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", type=Path, default=Path("/work/bench1m/inject-10000.db"))
    ap.add_argument("--large", type=Path, default=Path("/work/bench1m/inject-1000000.db"))
    ap.add_argument("--queries", type=int, default=200, help="timed per arm")
    ap.add_argument("--warmup", type=int, default=200, help="untimed per file first")
    ap.add_argument("--budget", type=int, default=1024)
    ap.add_argument("--idle", type=float, default=120.0, help="seconds idle before a first "
                    "question (0: skip)")
    ap.add_argument("--reps", type=int, default=3, help="idle repetitions per file")
    ap.add_argument("--recall", type=int, default=200, help="questions for the 1M recall")
    ap.add_argument("--no-brute", action="store_true", help="skip the brute-force arm")
    ap.add_argument("--cells", type=int, default=0, metavar="N",
                    help="also an arm \"1M cells\": the 1M file opened again with "
                         "[inject] vector_cells_from=N (its own questions)")
    ap.add_argument("--set", dest="overrides", metavar="KEY=VALUE", nargs="+", default=[],
                    help="[inject] settings, e.g. vector_rerank=8, or SECTION.KEY=VALUE "
                         "(store.resident_mb=4096)")
    args = ap.parse_args(argv)
    config = bench_config(ap, args.overrides)
    real = make_embedder(EmbedConfig())
    load0 = os.getloadavg()
    print(f"inject at 1M vs 10k vs brute force — {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"budget {args.budget}, {args.queries} timed questions per arm, {args.warmup} "
          f"untimed first, load average {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}"
          + (f", inject {' '.join(args.overrides)}" if args.overrides else "") + "\n",
          flush=True)
    files = {"10k": args.small, "1M": args.large}
    per_file = args.warmup + 2 * args.queries + args.reps + args.recall
    planned: dict[str, dict[str, npt.NDArray[np.float32]]] = {}
    sizes: dict[str, int] = {}
    for label, path in files.items():
        with Memory(path, embedder=None) as mem:
            sizes[label] = int(mem.store.scalar("SELECT max(rid) FROM nodes"))
        planned[label] = queries(sizes[label], per_file * (2 if label == "1M" and args.cells
                                                           else 1), path)
    # The brute-force arm asks the 1M file's questions (its timed ones come after the
    # questions the remd arms use).
    brute_q = {f"brute {i}": v for i, v in enumerate(
        queries(sizes["1M"], args.queries, args.large).values())} if not args.no_brute else {}
    rss0 = rss_mb()
    t0 = time.perf_counter()
    matrix = load_matrix(args.large) if not args.no_brute else None
    matrix_s = time.perf_counter() - t0
    emb = QueryEmbedder({k: v for p in (*planned.values(), brute_q) for k, v in p.items()},
                        None)
    stats: dict[str, list[float]] = defaultdict(list)
    touched: dict[str, list[int]] = defaultdict(list)
    with contextlib.ExitStack() as stack:
        mems = {label: stack.enter_context(Memory(path, config=config, embedder=emb,
                                                  clock=lambda: NOW))
                for label, path in files.items()}
        texts = {label: list(p) for label, p in planned.items()}
        if args.cells:
            cells = config.model_copy(update={"inject": config.inject.model_copy(
                update={"vector_cells_from": args.cells})})
            mems["1M cells"] = stack.enter_context(Memory(args.large, config=cells,
                                                          embedder=emb, clock=lambda: NOW))
            texts["1M cells"] = texts["1M"][per_file:]
            texts["1M"] = texts["1M"][:per_file]
        rss1 = rss_mb()
        loads = {}
        for label, mem in mems.items():
            t = time.perf_counter()
            mem.inject(texts[label][0], args.budget)
            loads[label] = time.perf_counter() - t
            for text in texts[label][1:args.warmup]:
                mem.inject(text, args.budget)
        rss2 = rss_mb()
        arms = [(label, embed) for label in mems for embed in (False, True)]
        if matrix is not None:
            arms += [("brute", False), ("brute", True)]
        cursor = {label: args.warmup for label in mems}
        btexts = list(brute_q)
        bcur = 0
        for block in range(len(arms) * args.queries // BLOCK):
            label, embed = arms[block % len(arms)]
            emb.real = real if embed else None
            name = f"{label}{' +embed' if embed else ''}"
            for _ in range(BLOCK):
                if label == "brute":
                    text = btexts[bcur % len(btexts)]
                    bcur += 1
                    t = time.perf_counter()
                    q = emb.embed([text])[0]
                    brute(matrix, q)  # type: ignore[arg-type]
                    stats[name].append((time.perf_counter() - t) * 1000)
                    continue
                text = texts[label][cursor[label]]
                cursor[label] += 1
                t = time.perf_counter()
                pack = mems[label].inject(text, args.budget)
                stats[name].append((time.perf_counter() - t) * 1000)
                touched[name].append(pack.memories_touched)
        print("| arm | p50 ms | p95 ms | p99 ms | memories touched |")
        print("|---|---:|---:|---:|---:|")
        for name, lat in stats.items():
            tch = f"{np.mean(touched[name]):.0f}" if touched[name] else ""
            print(f"| {name} | {pct(lat, .5):.1f} | {pct(lat, .95):.1f} | {pct(lat, .99):.1f} "
                  f"| {tch} |")
        p95 = {name: pct(lat, .95) for name, lat in stats.items()}
        p50 = {name: pct(lat, .5) for name, lat in stats.items()}
        print()
        print(f"- 1M/10k p95 +embed: **{p95['1M +embed'] / p95['10k +embed']:.2f}** "
              f"(p50 {p50['1M +embed'] / p50['10k +embed']:.2f}); bare p95 "
              f"{p95['1M'] / p95['10k']:.2f}")
        if matrix is not None:
            print(f"- remd at 1M / brute force, p95 +embed: "
                  f"**{p95['1M +embed'] / p95['brute +embed']:.2f}x** (p50 "
                  f"{p50['1M +embed'] / p50['brute +embed']:.2f}x; bare "
                  f"{p95['1M'] / p95['brute']:.2f}x)")
        if args.cells:
            c95, c50 = p95["1M cells +embed"], p50["1M cells +embed"]
            print(f"- 1M cells / 10k p95 +embed: **{c95 / p95['10k +embed']:.2f}** (p50 "
                  f"{c50 / p50['10k +embed']:.2f}); bare p95 {p95['1M cells'] / p95['10k']:.2f}"
                  + (f"; / brute force p95 +embed **{c95 / p95['brute +embed']:.2f}x**"
                     if matrix is not None else ""))
        for label, path in files.items():
            size = path.stat().st_size
            wal = Path(f"{path}-wal")
            size += wal.stat().st_size if wal.exists() else 0
            with Memory(path, embedder=None) as mem:
                n = int(mem.store.scalar("SELECT count(*) FROM nodes"))
            print(f"- {label}: file {size / 1e9:.2f} GB ({size / n:,.0f} bytes per memory), "
                  f"first inject (loads the indexes) {loads[label] * 1000:.0f} ms")
        print(f"- RSS: {rss0:.0f} MB before the brute-force matrix, {rss1:.0f} MB with it "
              f"({matrix_s:.1f} s to load), {rss2:.0f} MB after the warm-up of both files, "
              f"of which locked ([store] resident_mb) {rss_mb('VmLck'):.0f} MB")
        for label, mem in mems.items():
            with mem.engine.caches.use(mem.namespace) as view:
                print(f"- {label}: the namespace's in-process state {view.nbytes() / 1e6:.1f} MB "
                      f"(bit index {view.bits.nbytes() / 1e6:.1f} MB)")
        print(flush=True)

        if args.idle > 0 and args.reps > 0:
            idle: dict[str, list[float]] = defaultdict(list)
            faults: dict[str, list[tuple[int, int]]] = defaultdict(list)
            emb.real = real
            for rep in range(args.reps):
                for label in (list(mems)[::-1] if rep % 2 == 0 else list(mems)):
                    time.sleep(args.idle)
                    text = texts[label][cursor[label]]
                    cursor[label] += 1
                    ru = resource.getrusage(resource.RUSAGE_SELF)
                    t = time.perf_counter()
                    mems[label].inject(text, args.budget)
                    idle[label].append((time.perf_counter() - t) * 1000)
                    after = resource.getrusage(resource.RUSAGE_SELF)
                    faults[label].append((after.ru_majflt - ru.ru_majflt,
                                          after.ru_minflt - ru.ru_minflt))
            print(f"First question (+embed) after {args.idle:.0f} s idle, {args.reps} times "
                  "per file:\n")
            print("| file | ms | max ms | max / warm 10k p95 +embed | page faults (major/minor) |")
            print("|---|---|---:|---:|---|")
            for label, got in idle.items():
                print(f"| {label} | {' / '.join(f'{v:.1f}' for v in got)} | {max(got):.1f} "
                      f"| {max(got) / p95['10k +embed']:.2f}x "
                      f"| {' / '.join(f'{a}/{b}' for a, b in faults[label])} |")
            print(flush=True)

        if matrix is not None and args.recall > 0:
            k = config.inject.vector_k
            for label in [m for m in mems if m.startswith("1M")]:
                mem = mems[label]
                kept: dict[int, list[float]] = {1: [], 5: [], TOP: []}
                for text in texts[label][cursor[label]:cursor[label] + args.recall]:
                    q = planned["1M"][text]
                    true = brute(matrix, q).tolist()
                    with mem.engine.caches.use(mem.namespace) as view, \
                            mem.store.snapshot() as conn:
                        found = [r for r, _ in vectors.knn(
                            view.bits, conn, q, k, rerank=config.inject.vector_rerank)[:k]]
                    for top in kept:
                        kept[top].append(len(set(true[:top]) & set(found[:top])) / top)
                print(f"Vector recall, {label}, against exact cosine over the stored vectors "
                      f"({args.recall} questions, vector_k {k}, vector_rerank "
                      f"{config.inject.vector_rerank}): "
                      + ", ".join(f"top-{t} {np.mean(v):.3f}" for t, v in kept.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
