"""Many tenants on one daemon: N namespaces x 3 memories saved through the HTTP API, one inject
per namespace, then one daemon tick, while the server's fds, threads, RSS and log are watched.

    python benchmarks/bench_tenants.py [--namespaces 10000] [--concurrency 6] [--keep DIR]

The server is a real ``remd serve --http`` subprocess under ``ulimit -n 1024``, logging JSON
lines to a file. Phases:

1. saves: ``POST /v1/memories`` (3 short memories in each namespace ``ns{i}``) from a pool of
   ``--concurrency`` threads, each with its own kept-alive httpx client;
2. injects: one ``POST /v1/inject`` per namespace (token budget 200), same pool;
3. tick: the first server is stopped (SIGTERM, exit 0) and a second one is started on the same
   file; its start-up tick is the one measured (the ``seconds`` of its ``tick.evaluated``
   event, and the wall time from the start of the process to that event).

Every ~0.5 s the server's open fds, threads and RSS are sampled from /proc; the maxima cover
both servers. Any non-2xx answer or client exception is an error. The file size per memory is
(database + WAL) after a ``wal_checkpoint(TRUNCATE)`` once both servers are gone. Prints a
markdown table, the log bytes per event and the first errors. ``--keep DIR`` keeps the
database and the logs there (default: a temporary directory, removed).

``tests/suites/test_tenants.py`` runs :func:`run` at 1,000 namespaces and asserts the bounds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remd.config import StoreConfig  # noqa: E402
from remd.store.sqlite.store import connect  # noqa: E402

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
FD_LIMIT = 1024
MEMORIES_PER_NAMESPACE = 3
TOKEN_BUDGET = 200
SAMPLE_SECONDS = 0.5

# The bounds for 10,000 namespaces on a 2-core machine.
TARGETS: dict[str, float] = {
    "errors": 0, "max_fds": 256, "max_threads": 64, "max_rss_mb": 600,
    "log_bytes": 5 * 1024 * 1024, "bytes_per_memory": 4096, "tick_seconds": 10.0,
}

NAMES = ["Priya", "Lars", "Mei", "Tomas", "Amara", "Kenji", "Sofia", "Omar", "Lena", "Diego"]
PROJECTS = ["Falcon", "Heron", "Juniper", "Atlas", "Nimbus", "Orchid", "Quartz", "Tundra"]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Porto", "Kyoto", "Lima", "Tallinn", "Accra"]
THINGS = ["Postgres", "Kafka", "Redis", "the billing service", "the mobile app", "the CI runners"]
TEMPLATES = [
    "{who} leads project {p} from the {c} office.",
    "The {p} team moved {t} to a new cluster last week.",
    "{who} prefers tea over coffee and is allergic to peanuts.",
    "Budget for {p} was approved at {n} thousand euros.",
    "{who} will present the {p} roadmap in {c} on Friday.",
    "Outage: {t} for {p} was down for {n} minutes.",
]
QUESTIONS = [
    "Who leads project {p}?", "What happened to {t}?", "What does {who} like to drink?",
    "How much is the {p} budget?", "When is the {p} roadmap presentation?",
]


# -- what the tenants say ----------------------------------------------------------------------
def namespace(i: int) -> str:
    return f"ns{i}"


def memories(i: int) -> list[str]:
    """The short memories of namespace ``i`` (deterministic)."""
    rng = random.Random(i)
    v = {"who": rng.choice(NAMES), "p": rng.choice(PROJECTS), "c": rng.choice(CITIES),
         "t": rng.choice(THINGS), "n": rng.randint(5, 500)}
    return [t.format(**v) for t in rng.sample(TEMPLATES, MEMORIES_PER_NAMESPACE)]


def question(i: int) -> str:
    rng = random.Random(-i - 1)
    v = {"who": rng.choice(NAMES), "p": rng.choice(PROJECTS), "t": rng.choice(THINGS)}
    return rng.choice(QUESTIONS).format(**v)


# -- the server ----------------------------------------------------------------------------------
def limit_fds() -> None:
    """In the child before exec: the server gets ``ulimit -n 1024``, a common default."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


class Server:
    """A ``remd serve`` subprocess whose stdout (its JSON log) goes to ``log``."""

    def __init__(self, db: Path, log: Path, *args: str,
                 env: Mapping[str, str] | None = None) -> None:
        full_env = {**os.environ, **(env or {})}
        full_env.pop("REMD_CONFIG", None)
        self.log = log
        self.stderr = log.with_suffix(".stderr")
        self.started = time.perf_counter()
        with open(log, "wb") as out, open(self.stderr, "wb") as err:
            self.proc = subprocess.Popen([*REMD, "--db", str(db), "serve", *args],
                                         stdout=out, stderr=err, env=full_env,
                                         preexec_fn=limit_fds)
        self._offset = 0
        self._partial = b""
        self._cursor = 0  # events of ``seen`` that wait_for has looked at
        self.seen: list[dict[str, Any]] = []

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        """Parse the lines the server wrote since the last read into ``seen``."""
        with open(self.log, "rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = {"event": "<not json>", "line": line.decode("utf-8", "replace")}
            self.seen.append(event)

    def wait_for(self, name: str, timeout: float = 600.0,
                 where: Callable[[dict[str, Any]], bool] = lambda e: True) -> dict[str, Any]:
        """The next log event called ``name`` (for which ``where`` holds) after the last one
        returned. Raises RuntimeError when the server exits or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        while True:
            self._read()
            while self._cursor < len(self.seen):
                event = self.seen[self._cursor]
                self._cursor += 1
                if event.get("event") == name and where(event):
                    return event
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited ({self.proc.returncode}) before {name!r}: "
                                   + self.stderr.read_text(errors="replace")[-2000:])
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {name!r} event within {timeout} s")
            time.sleep(0.05)

    def stop(self, timeout: float = 120.0) -> int:
        """SIGTERM, then the exit code."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# -- watching it -------------------------------------------------------------------------------
@dataclass
class Peaks:
    fds: int = 0
    threads: int = 0
    rss_kb: int = 0
    anon_kb: int = 0  # RssAnon and RssFile (the mmap'd database, libraries) at the RSS peak
    file_kb: int = 0
    samples: int = 0

    def add(self, got: Sample) -> None:
        self.fds = max(self.fds, got.fds)
        self.threads = max(self.threads, got.threads)
        if got.rss_kb > self.rss_kb:
            self.rss_kb, self.anon_kb, self.file_kb = got.rss_kb, got.anon_kb, got.file_kb
        self.samples += 1

    def __str__(self) -> str:
        return (f"{self.fds} fds, {self.threads} threads, RSS {self.rss_kb / 1024:.0f} MB "
                f"(anon {self.anon_kb / 1024:.0f} + file {self.file_kb / 1024:.0f})")


@dataclass(frozen=True)
class Sample:
    fds: int
    threads: int
    rss_kb: int
    anon_kb: int
    file_kb: int


def sample(pid: int) -> Sample | None:
    """Open fds, threads and resident memory of ``pid``; None once it is gone."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)

    def kb(name: str) -> int:
        return int(fields.get(name, "0 kB").split()[0])

    return Sample(fds=fds, threads=int(fields["Threads"].strip()), rss_kb=kb("VmRSS"),
                  anon_kb=kb("RssAnon"), file_kb=kb("RssFile"))


class Sampler:
    """Samples the watched process every SAMPLE_SECONDS on a thread; keeps the maxima, over
    the whole run and per phase."""

    def __init__(self) -> None:
        self.peaks = Peaks()
        self.phases: dict[str, Peaks] = {}
        self.pid: int | None = None
        self.phase = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def watch(self, pid: int | None, phase: str = "") -> None:
        self.pid, self.phase = pid, phase

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            pid, phase = self.pid, self.phase
            got = sample(pid) if pid is not None else None
            if got is None:
                continue
            self.peaks.add(got)
            self.phases.setdefault(phase, Peaks()).add(got)


# -- the clients -----------------------------------------------------------------------------
@dataclass
class Calls:
    """Requests of one phase: how many, the failures, and each one's latency."""

    ok: int = 0
    errors: list[str] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, ms: float, error: str | None) -> None:
        with self.lock:
            self.ms.append(ms)
            if error is None:
                self.ok += 1
            else:
                self.errors.append(error)

    def percentile(self, q: float) -> float:
        if not self.ms:
            return float("nan")
        ordered = sorted(self.ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def post_all(base_url: str, path: str, bodies: list[dict[str, Any]], concurrency: int) -> Calls:
    """POST every body to ``path`` from ``concurrency`` threads, each with its own kept-alive
    client; non-2xx answers and exceptions are recorded as errors, never raised."""
    calls = Calls()
    local = threading.local()
    clients: list[httpx.Client] = []
    clients_lock = threading.Lock()

    def client() -> httpx.Client:
        c = getattr(local, "client", None)
        if c is None:
            c = local.client = httpx.Client(base_url=base_url, timeout=60.0)
            with clients_lock:
                clients.append(c)
        return c

    def one(body: dict[str, Any]) -> None:
        started = time.perf_counter()
        error = None
        try:
            r = client().post(path, json=body)
            if not r.is_success:
                error = f"{r.status_code} {r.text[:200]}"
        except Exception as exc:  # the bench counts every failure, whatever it is
            error = f"{type(exc).__name__}: {exc}"
        calls.record((time.perf_counter() - started) * 1000, error)

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(concurrency, thread_name_prefix="client") as pool:
            for _ in pool.map(one, bodies):
                pass
    finally:
        for c in clients:
            c.close()
    calls.seconds = time.perf_counter() - started
    return calls


# -- the run -----------------------------------------------------------------------------------
@dataclass
class Result:
    namespaces: int
    memories: int
    concurrency: int
    saves: Calls
    injects: Calls
    peaks: Peaks
    phases: dict[str, Peaks]
    log_bytes: int
    log_by_event: Counter[str]
    db_bytes: int
    stored: int  # memories found in the file at the end
    stored_namespaces: int
    tick: dict[str, Any]  # the second server's first tick.evaluated event
    tick_wall: float  # seconds from its process start to that event
    exit_codes: tuple[int, int]
    stderr: str

    @property
    def errors(self) -> int:
        return len(self.saves.errors) + len(self.injects.errors)

    @property
    def bytes_per_memory(self) -> float:
        return self.db_bytes / max(1, self.memories)

    @property
    def max_rss_mb(self) -> float:
        return self.peaks.rss_kb / 1024


def log_bytes_by_event(paths: list[Path]) -> Counter[str]:
    by_event: Counter[str] = Counter()
    for path in paths:
        with open(path, "rb") as f:
            for line in f:
                try:
                    name = str(json.loads(line).get("event"))
                except (json.JSONDecodeError, AttributeError):
                    name = "<not json>"
                by_event[name] += len(line)
    return by_event


def checkpointed_size(db: Path) -> int:
    """Database + WAL bytes once the WAL is copied back and truncated (no server running)."""
    conn = connect(db, StoreConfig(), create=False)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    wal = Path(f"{db}-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def count_stored(db: Path) -> tuple[int, int]:
    conn = connect(db, StoreConfig(), create=False)
    try:
        row = conn.execute("SELECT count(*), count(DISTINCT namespace) FROM nodes").fetchone()
    finally:
        conn.close()
    return int(row[0]), int(row[1])


def run(n: int, workdir: Path, *, concurrency: int = 6, env: Mapping[str, str] | None = None,
        progress: Callable[[str], None] = lambda msg: None) -> Result:
    """The whole benchmark in ``workdir`` (which must exist); see the module docstring.

    Raises RuntimeError if a server fails to start, to tick or to stop with exit 0.
    """
    db = workdir / "tenants.db"
    logs = [workdir / "serve-1.log", workdir / "serve-2.log"]
    codes: list[int] = []
    with Sampler() as sampler:
        first = Server(db, logs[0], "--http", "127.0.0.1:0", "--interval", "3600", env=env)
        sampler.watch(first.pid, "start")
        try:
            port = first.wait_for("http.listening", timeout=120)["port"]
            first.wait_for("tick.evaluated", timeout=120)  # the start-up tick, empty file
            base = f"http://127.0.0.1:{port}"
            progress(f"server 1 (pid {first.pid}) on {base}; saving {n * 3} memories")
            sampler.watch(first.pid, "saves")
            saves = post_all(base, "/v1/memories", [
                {"content": text, "namespace": namespace(i)}
                for i in range(n) for text in memories(i)], concurrency)
            progress(f"saved in {saves.seconds:.1f} s ({len(saves.errors)} errors); injecting")
            sampler.watch(first.pid, "injects")
            injects = post_all(base, "/v1/inject", [
                {"query": question(i), "token_budget": TOKEN_BUDGET, "namespace": namespace(i)}
                for i in range(n)], concurrency)
            progress(f"injected in {injects.seconds:.1f} s ({len(injects.errors)} errors)")
            codes.append(first.stop())
        finally:
            first.kill()
        if codes[0] != 0:
            raise RuntimeError(f"server 1 exited {codes[0]}")

        second = Server(db, logs[1], env=env)
        sampler.watch(second.pid, "tick")
        try:
            tick = second.wait_for("tick.evaluated", timeout=900)
            tick_wall = time.perf_counter() - second.started
            progress(f"server 2 ticked: {tick}")
            codes.append(second.stop())
        finally:
            second.kill()
            sampler.watch(None)
    if codes[1] != 0:
        raise RuntimeError(f"server 2 exited {codes[1]}")
    stored, stored_ns = count_stored(db)
    return Result(
        namespaces=n, memories=n * MEMORIES_PER_NAMESPACE, concurrency=concurrency,
        saves=saves, injects=injects, peaks=sampler.peaks, phases=sampler.phases,
        log_bytes=sum(p.stat().st_size for p in logs), log_by_event=log_bytes_by_event(logs),
        db_bytes=checkpointed_size(db), stored=stored, stored_namespaces=stored_ns,
        tick=tick, tick_wall=tick_wall, exit_codes=(codes[0], codes[1]),
        stderr="".join(p.with_suffix(".stderr").read_text(errors="replace") for p in logs))


# -- the report ------------------------------------------------------------------------------
def misses(result: Result) -> list[str]:
    """The targets this result misses, each as "name: value > target"."""
    got = {"errors": result.errors, "max_fds": result.peaks.fds,
           "max_threads": result.peaks.threads, "max_rss_mb": result.max_rss_mb,
           "log_bytes": result.log_bytes, "bytes_per_memory": result.bytes_per_memory,
           "tick_seconds": float(result.tick.get("seconds", float("inf")))}
    return [f"{k}: {got[k]:,.1f} > {v:,}" for k, v in TARGETS.items() if got[k] > v]


def table(result: Result) -> str:
    r = result
    head = ["N", "memories", "errors", "max fds", "max threads", "max RSS MB", "log bytes",
            "bytes/memory", "tick s (wall from start)", "saves/s", "inject p50 / p95 ms",
            "machine"]
    machine = f"{platform.platform(terse=True)}, {os.cpu_count()} CPUs"
    row = [f"{r.namespaces:,}", f"{r.memories:,}", str(r.errors), str(r.peaks.fds),
           str(r.peaks.threads), f"{r.max_rss_mb:.0f}", f"{r.log_bytes:,}",
           f"{r.bytes_per_memory:,.0f}", f"{r.tick.get('seconds')} ({r.tick_wall:.1f})",
           f"{r.memories / r.saves.seconds:.0f}",
           f"{r.injects.percentile(0.5):.1f} / {r.injects.percentile(0.95):.1f}", machine]
    target = ["", "", "0", "≤256", "≤64", "≤600", "≤5 MiB", "≤4,096", "≤10", "", "", ""]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
             "| " + " | ".join(row) + " |", "| " + " | ".join(target) + " |"]
    return "\n".join(lines)


def details(result: Result) -> str:
    r = result
    out = [f"tick event: {json.dumps(r.tick)}",
           f"stored: {r.stored:,} memories in {r.stored_namespaces:,} namespaces; "
           f"file {r.db_bytes:,} bytes; server exits {r.exit_codes}; "
           f"{r.peaks.samples} samples; client concurrency {r.concurrency}",
           f"saves: {r.saves.seconds:.1f} s, p50 {r.saves.percentile(0.5):.1f} ms, "
           f"p95 {r.saves.percentile(0.95):.1f} ms; injects: {r.injects.seconds:.1f} s "
           f"({len(r.injects.ms) / r.injects.seconds:.0f}/s)",
           "peaks by phase: " + "; ".join(f"{k}: {v}" for k, v in r.phases.items()),
           "log bytes by event: " + ", ".join(
               f"{k} {v:,}" for k, v in r.log_by_event.most_common(8))]
    first_errors = (r.saves.errors + r.injects.errors)[:5]
    if first_errors:
        out.append("first errors: " + " | ".join(first_errors))
    if r.stderr.strip():
        out.append("server stderr: " + r.stderr.strip()[-1000:])
    missed = misses(r)
    out.append("missed targets: " + ("; ".join(missed) if missed else "none"))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespaces", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=6)
    ap.add_argument("--keep", type=Path, default=None,
                    help="directory for the database and logs, kept afterwards")
    args = ap.parse_args()
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        workdir = args.keep
    else:
        workdir = Path(tempfile.mkdtemp(prefix="remd-tenants-"))
    try:
        result = run(args.namespaces, workdir, concurrency=args.concurrency,
                     progress=lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}",
                                                flush=True))
    finally:
        if args.keep is None:
            with contextlib.suppress(OSError):
                shutil.rmtree(workdir)
    print()
    print(table(result))
    print()
    print(details(result))


if __name__ == "__main__":
    main()
