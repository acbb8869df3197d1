"""The web inspector's pages on a 100k-memory namespace, rendered by the system's Chromium.

    python benchmarks/bench_inspector.py [--size 100000] [--workdir DIR] [--repeat 5]
        [--screenshots docs/img]

Builds (or reuses, in ``--workdir``) bench_inject's synthetic namespace of ``--size`` memories
(``inject-N.db``), copies it, adds an update chain ("my city is Pune", then "my city has
changed to Berlin") and one REM run over 30 two-year-old fragments (only them: the run flags
memories older than 760 days; stopped once it has folded 3 clusters), then serves the copy with
a real HTTP server and opens every page of the inspector in headless Chromium (Playwright,
``executable_path`` = the system's binary; nothing downloaded).
A page's render time is from the navigation (a hash change; the first page: loading /ui) to its
content shown (``body[data-state=ready]``), the median of ``--repeat`` visits, each after a
visit to another page. Prints a markdown table; with ``--screenshots DIR`` also writes
``inspector-<page>.png`` there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic import SecretStr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_inject import NOW, build  # noqa: E402
from remd import Config, Memory  # noqa: E402
from remd.config import RemConfig  # noqa: E402
from remd.hosting import EngineHost  # noqa: E402
from remd.http.app import HttpServer, create_app  # noqa: E402
from remd.sleep.rem import ClusterOutcome  # noqa: E402
from remd.wire import iso  # noqa: E402

TOKEN = "bench-inspector"
DAY = 86400.0
FRAGMENTS = [f"{p} had timeouts again on 2024-0{m}-1{d}." for p in ("Falcon", "Heron", "Quartz")
             for m in range(1, 6) for d in range(1, 3)]


def prepare(src: Path, dst: Path) -> dict[str, str]:
    """A copy of ``src`` with an update chain and a REM run; the ids the pages open."""
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{dst}{suffix}").exists():
            Path(f"{dst}{suffix}").unlink()
    for suffix in ("", "-wal"):  # the file and what its WAL still holds (nothing has it open)
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    # bench_inject's memories are at most 730 days old and the fragments older: a run that
    # flags only memories older than 760 days takes the fragments, not all 100k.
    config = Config(rem=RemConfig(min_age_days=760))
    with Memory(dst, clock=lambda: NOW, config=config) as m:  # the real model embeds them
        pune = m.save("My city is Pune", tags=["home"])
        berlin = m.save("My city has changed to Berlin")
        m.import_lines([json.dumps({"content": t, "created_at": iso(NOW - (800 + i) * DAY)})
                        for i, t in enumerate(FRAGMENTS)])
        folded, seen = [0], [0]

        def count(outcome: ClusterOutcome) -> None:
            seen[0] += 1
            folded[0] += outcome.synthesis_id is not None

        t0 = time.perf_counter()
        run = m.run_rem(should_stop=lambda: folded[0] >= 3 or seen[0] >= 400, progress=count)
        print(f"REM run {run.run_id}: {run.status.value}, {run.synthesised} clusters folded, "
              f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
        tag = m.top_tags(1)[0][0]
    return {"pune": pune.id, "berlin": berlin.id, "run": str(run.run_id), "tag": tag}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the databases here")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--screenshots", type=Path, default=None, metavar="DIR")
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        ap.error("no system Chromium: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-bench-inspector-"))
    workdir.mkdir(parents=True, exist_ok=True)
    base_db = workdir / f"inject-{args.size}.db"
    if not base_db.exists():
        print(f"built {base_db} in {build(base_db, args.size, Config()):.0f} s", file=sys.stderr)
    db = workdir / f"inspector-{args.size}.db"
    ids = prepare(base_db, db)

    host = EngineHost(db, Config(), embedder=None)
    server = HttpServer(create_app(host, token=SecretStr(TOKEN)), "127.0.0.1", 0)
    server.start()
    pages = {
        "namespaces": "#/",
        "namespace": "#/ns/default",
        "memory": f"#/ns/default/m/{ids['pune']}",
        "tags": "#/ns/default/tags",
        "tag-graph": f"#/ns/default/tags/{ids['tag']}",
        "rem": "#/ns/default/rem",
        "run": f"#/ns/default/rem/{ids['run']}",
        "stats": "#/ns/default/stats",
    }
    errors: list[str] = []
    times: dict[str, list[float]] = {name: [] for name in pages}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 760})
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{server.port}/ui#token={TOKEN}&/")
            page.wait_for_selector("body[data-state=ready][data-page=namespaces]")
            first_load = (time.perf_counter() - t0) * 1000
            names = list(pages)
            for r in range(args.repeat):
                for i, name in enumerate(names):
                    other = names[(i + 1) % len(names)]
                    page.evaluate("h => { location.hash = h; }", pages[other])
                    page.wait_for_selector(f"body[data-state=ready][data-page={other}]")
                    t0 = time.perf_counter()
                    page.evaluate("h => { location.hash = h; }", pages[name])
                    page.wait_for_selector(f"body[data-state=ready][data-page={name}]")
                    times[name].append((time.perf_counter() - t0) * 1000)
                    if r == 0 and args.screenshots:
                        args.screenshots.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(args.screenshots / f"inspector-{name}.png"))
            t0 = time.perf_counter()
            page.evaluate("h => { location.hash = h; }", pages["namespace"])
            page.wait_for_selector("body[data-state=ready][data-page=namespace]")
            page.fill("#query", "where do I live now?")
            t0 = time.perf_counter()
            page.click("#search button[type=submit]")
            page.wait_for_selector("#results[data-state=ready]")
            search = (time.perf_counter() - t0) * 1000
            browser.close()
    finally:
        server.stop()
        host.close()
    print(f"inspector render — {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.size:,} memories, median of {args.repeat}\n")
    print("| page | render ms (median) | slowest ms |")
    print("|---|---:|---:|")
    for name, ms in times.items():
        print(f"| {name} | {statistics.median(ms):.0f} | {max(ms):.0f} |")
    print(f"| first load of /ui (namespaces) | {first_load:.0f} | |")
    print(f"| search (inject, explained) | {search:.0f} | |")
    if errors:
        print("\nconsole errors: " + "; ".join(errors))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
