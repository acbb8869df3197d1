"""Online backup of a 100k-memory file while N writer processes save into it.

    python benchmarks/bench_backup.py [--size 100000] [--writers 0 4 8]
        [--methods snapshot steps vacuum] [--workdir DIR] [--give-up 60]

The file is bench_inject.py's (its builder, cached in --workdir as ``inject-N.db``); each run
works on a fresh copy of it. Writers are processes of this script (``--writer``) saving one
memory at a time in their own namespace (``embedder=None``: the write path and its locks, not
the model), logging each save or error. Methods:

- ``snapshot``: remd.store.sqlite.backup.backup_file, what ``remd backup`` runs (the backup API,
1024 pages a
  step, inside one read transaction on the source);
- ``steps``: the backup API alone (same steps and pauses, no held read transaction): a commit
  by a writer between two steps restarts the copy; given up after --give-up seconds;
- ``vacuum``: ``VACUUM INTO`` (one statement, one snapshot, every table rebuilt).

Prints a markdown table: seconds, MB written, saves by the writers during the copy (and per
second, before and during), writer errors, steps and restarts of the copy, the -wal's size
after it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_inject import build  # noqa: E402
from remd import Config, Memory, RemdError  # noqa: E402
from remd.config import StoreConfig  # noqa: E402
from remd.store.sqlite.backup import backup_file  # noqa: E402
from remd.store.sqlite.store import connect  # noqa: E402

PAGES_PER_STEP = 1024
PAUSE = 0.002


def writer(db: str, namespace: str, stop: str, log: str) -> None:
    """Save until ``stop`` exists; one line per save ("s") or error ("E ...") in ``log``."""
    with Memory(db, namespace, embedder=None) as mem, open(log, "w") as out:
        out.write("ready\n")
        out.flush()
        i = 0
        while not os.path.exists(stop):
            try:
                mem.save(f"{namespace} writes note {i} about the backup of topic {i % 11}")
                out.write("s\n")
            except RemdError as exc:
                out.write(f"E {type(exc).__name__}: {exc}\n")
            out.flush()
            i += 1


def counts(logs: list[Path]) -> tuple[int, int]:
    """(saves, errors) the writers have logged so far."""
    saves = errors = 0
    for log in logs:
        for line in log.read_text().split("\n")[:-1]:
            saves += line == "s"
            errors += line.startswith("E")
    return saves, errors


def steps_only(src_path: str, dest: str, give_up: float) -> tuple[int, int, bool]:
    """The backup API without a held read transaction: (steps, restarts, finished)."""
    src = connect(src_path, StoreConfig(), create=False)
    dst = apsw.Connection(dest)
    steps = restarts = 0
    remaining = None
    deadline = time.monotonic() + give_up
    try:
        with dst.backup("main", src, "main") as copy:
            while not copy.done:
                if time.monotonic() > deadline:
                    return steps, restarts, False
                copy.step(PAGES_PER_STEP)
                steps += 1
                if remaining is not None and copy.remaining > remaining:
                    restarts += 1
                remaining = copy.remaining
                time.sleep(PAUSE)
    finally:
        dst.close()
        src.close()
    return steps, restarts, True


def vacuum_into(src_path: str, dest: str) -> None:
    src = connect(src_path, StoreConfig(), create=False)
    try:
        src.execute("VACUUM INTO ?", (dest,))
    finally:
        src.close()


def run(base: Path, work: Path, method: str, n_writers: int, give_up: float) -> dict[str, object]:
    db = work / "live.db"
    for leftover in work.iterdir():
        leftover.unlink()
    shutil.copyfile(base, db)
    with Memory(db, embedder=None):
        pass  # WAL and -wal/-shm in place before the writers race
    stop, dest = work / "stop", work / "copy.db"
    logs = [work / f"writer{i}.log" for i in range(n_writers)]
    procs = [subprocess.Popen([sys.executable, __file__, "--writer", str(db), f"w{i}",
                               str(stop), str(logs[i])]) for i in range(n_writers)]
    try:
        while not all(log.exists() and log.read_text() for log in logs):
            time.sleep(0.05)
        time.sleep(1.0)
        warm, _ = counts(logs)
        time.sleep(2.0)
        before_rate = (counts(logs)[0] - warm) / 2.0
        saves0, _ = counts(logs)
        t0 = time.perf_counter()
        steps = restarts = 0
        finished = True
        if method == "snapshot":
            report = backup_file(db, dest)
            steps, restarts = report.steps, report.restarts
        elif method == "steps":
            steps, restarts, finished = steps_only(str(db), str(dest), give_up)
        else:
            vacuum_into(str(db), str(dest))
        seconds = time.perf_counter() - t0
        saves1, _ = counts(logs)
        wal = (work / "live.db-wal").stat().st_size
    finally:
        stop.touch()
        for proc in procs:
            proc.wait(timeout=120)
    errors = counts(logs)[1]  # any, from start to stop
    return {"method": method, "writers": n_writers, "seconds": seconds,
            "mb": dest.stat().st_size / 1e6 if finished else float("nan"),
            "saves": saves1 - saves0, "before": before_rate,
            "during": (saves1 - saves0) / seconds, "errors": errors,
            "steps": steps, "restarts": restarts, "finished": finished, "wal_mb": wal / 1e6}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--writer", nargs=4, metavar=("DB", "NS", "STOP", "LOG"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--writers", type=int, nargs="+", default=[0, 4, 8])
    ap.add_argument("--methods", nargs="+", choices=["snapshot", "steps", "vacuum"],
                    default=["snapshot", "steps", "vacuum"])
    ap.add_argument("--workdir", type=Path, default=None, help="keep the built file here")
    ap.add_argument("--give-up", type=float, default=60.0,
                    help="seconds after which a restarting 'steps' copy is abandoned")
    args = ap.parse_args(argv)
    if args.writer:
        writer(*args.writer)
        return 0
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="remd-bench-backup-"))
    workdir.mkdir(parents=True, exist_ok=True)
    base = workdir / f"inject-{args.size}.db"
    if not base.exists():
        print(f"building {args.size} memories: {build(base, args.size, Config()):.0f} s",
              file=sys.stderr)
    with Memory(base, embedder=None):
        pass  # checkpointed and closed: one file to copy
    work = workdir / "run"
    work.mkdir(exist_ok=True)
    print(f"{args.size:,} memories, {base.stat().st_size / 1e6:.0f} MB; {platform.node()}, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}\n")
    print("| method | writers | seconds | MB | saves during | saves/s before | saves/s during "
          "| writer errors | steps | restarts | -wal after (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n_writers in args.writers:
        for method in args.methods:
            r = run(base, work, method, n_writers, args.give_up)
            done = "" if r["finished"] else " (gave up)"
            print(f"| {r['method']}{done} | {r['writers']} | {r['seconds']:.2f} | {r['mb']:.0f} "
                  f"| {r['saves']} | {r['before']:.0f} | {r['during']:.0f} | {r['errors']} "
                  f"| {r['steps']} | {r['restarts']} | {r['wal_mb']:.1f} |", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
