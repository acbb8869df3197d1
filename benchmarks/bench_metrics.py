"""What metrics cost: inject p95 with the engine's counters on and off, and a /metrics scrape
with 10,000 namespaces.

    python benchmarks/bench_metrics.py [--size 100000] [--queries 2000] [--namespaces 10000]
        [--scrapes 50] [--workdir DIR]

(a) One engine over ``--size`` memories, built as benchmarks/bench_inject.py builds them (its
file ``inject-N.db`` in ``--workdir`` is reused when there). After a warm-up, blocks of 20
injects alternate between the arms: "on" is the engine as shipped (its
:class:`~remd.telemetry.Telemetry` counting every inject) with a scraper thread rendering
``/metrics`` once a second (Prometheus scrapes every 15 s by default: 15 times as often);
"off" swaps in counters that do nothing and stops the scraper. Every timed inject asks a
question not asked before, with a planned vector (no model run: the bare inject, where an
overhead shows most).

(b) A file of ``--namespaces`` namespaces (two memories each, saved with no embedder, so the
embedding backlog is as long as the file: the backlog gauge counts up to its cap). A scrape
is timed ``--scrapes`` times: rendered in process, and as ``GET /metrics`` from a real server
with the token; the namespaces gauge once as the daemon has it (held from its last tick) and
once without a tick (one query).

Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_inject import QueryEmbedder, build, pct, queries  # noqa: E402
from remd import Config, Memory  # noqa: E402
from remd.config import InjectConfig  # noqa: E402
from remd.engine import Engine  # noqa: E402
from remd.hosting import EngineHost  # noqa: E402
from remd.http.app import HttpServer, create_app  # noqa: E402
from remd.http.metrics import Metrics  # noqa: E402
from remd.sleep.triggers import evaluate_all  # noqa: E402
from remd.telemetry import Telemetry  # noqa: E402

NOW = 1_780_000_000.0
BLOCK = 20
BUDGET = 1024


class Off(Telemetry):
    """Counters that count nothing: the "metrics off" arm."""

    def injected(self, seconds: float) -> None:
        return None


def inject_overhead(path: Path, size: int, count: int, warmup: int) -> dict[str, list[float]]:
    config = Config(inject=InjectConfig(query_cache=0))
    planned = queries(size, warmup + 2 * count, path)
    texts = list(planned)
    arms: dict[str, list[float]] = {"off": [], "on": []}
    with Memory(path, config=config, embedder=QueryEmbedder(planned, None),
                clock=lambda: NOW) as mem:
        engine = mem.engine
        on, off = engine.telemetry, Off()
        metrics = Metrics(lambda: engine)
        scraping = threading.Event()
        done = threading.Event()

        def scraper() -> None:
            while not done.is_set():
                if scraping.is_set():
                    metrics.render()
                done.wait(1.0)

        thread = threading.Thread(target=scraper, daemon=True)
        thread.start()
        for text in texts[:warmup]:
            mem.inject(text, BUDGET)
        timed = texts[warmup:]
        for start in range(0, len(timed), BLOCK):
            arm = "on" if (start // BLOCK) % 2 else "off"
            engine.telemetry = on if arm == "on" else off
            if arm == "on":
                scraping.set()
            else:
                scraping.clear()
            for text in timed[start:start + BLOCK]:
                t = time.perf_counter()
                mem.inject(text, BUDGET)
                arms[arm].append((time.perf_counter() - t) * 1000)
        done.set()
        thread.join()
        engine.telemetry = on
    return arms


def many_namespaces(path: Path, namespaces: int) -> float:
    """Two memories in each of ``namespaces`` namespaces (no embedder); returns seconds."""
    t0 = time.perf_counter()
    with Memory(path, embedder=None, clock=lambda: NOW) as mem:
        for i in range(namespaces):
            Memory.bound(mem.engine, f"tenant-{i:05d}").save_many([
                f"Tenant {i} deploys on Tuesdays from the release branch",
                f"Tenant {i} pages the on-call engineer for failed deploys"])
    return time.perf_counter() - t0


def timed(fn: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append((time.perf_counter() - t) * 1000)
    return out


def scrape_times(path: Path, n: int) -> dict[str, list[float]]:
    token = "bench-metrics-token-0c4d"
    host = EngineHost(path, Config(), embedder=None)
    server = HttpServer(create_app(host, token=SecretStr(token)), "127.0.0.1", 0)
    server.start()
    engine: Engine = host.engine
    metrics = Metrics(lambda: engine)
    out: dict[str, list[float]] = {}
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}",
                          headers={"Authorization": f"Bearer {token}"}) as api:
            metrics.render()
            out["in process, no tick yet (namespaces by query)"] = timed(metrics.render, n)
            out["GET /metrics, no tick yet"] = timed(lambda: api.get("/metrics"), n)
            evaluate_all(engine)  # what the daemon's tick does: the namespaces are held
            body = api.get("/metrics").text
            assert "remd_namespaces" in body
            out["in process, after a tick"] = timed(metrics.render, n)
            out["GET /metrics, after a tick"] = timed(lambda: api.get("/metrics"), n)
            out["_bytes"] = [float(len(body))]
    finally:
        server.stop()
        host.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=2000, help="timed injects per arm")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--namespaces", type=int, default=10_000)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the databases here")
    args = ap.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-bench-metrics-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"metrics — {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}\n")

    path = workdir / f"inject-{args.size}.db"
    built = 0.0 if path.exists() else build(path, args.size, Config())
    arms = inject_overhead(path, args.size, args.queries, args.warmup)
    print(f"(a) inject at {args.size:,} memories, budget {BUDGET}, {args.queries} timed per "
          f"arm, blocks of {BLOCK} alternating (built in {built:.0f} s, 0 = reused)\n")
    print("| arm | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|")
    for arm in ("off", "on"):
        lat = arms[arm]
        print(f"| metrics {arm} | {pct(lat, .5):.2f} | {pct(lat, .95):.2f} | "
              f"{pct(lat, .99):.2f} |")
    ratio = pct(arms["on"], .95) / pct(arms["off"], .95)
    print(f"\np95 on / off: {ratio:.3f} ({(ratio - 1) * 100:+.1f}%)\n")

    ns_path = workdir / f"namespaces-{args.namespaces}.db"
    made = 0.0 if ns_path.exists() else many_namespaces(ns_path, args.namespaces)
    scrapes = scrape_times(ns_path, args.scrapes)
    size = scrapes.pop("_bytes")[0]
    print(f"(b) /metrics scrape, {args.namespaces:,} namespaces, {2 * args.namespaces:,} "
          f"memories, all in the embedding backlog (built in {made:.0f} s, 0 = reused); "
          f"{args.scrapes} scrapes, {size / 1000:.1f} kB each\n")
    print("| scrape | p50 ms | p95 ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, lat in scrapes.items():
        print(f"| {name} | {pct(lat, .5):.2f} | {pct(lat, .95):.2f} | {max(lat):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
