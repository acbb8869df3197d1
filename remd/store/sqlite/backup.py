"""Online backup of a remd SQLite file: a consistent copy taken while agents and the daemon
keep writing it, and the check of such a copy.

The copy is SQLite's backup API (apsw's ``Connection.backup``), a bounded number of pages per
step with a short pause between steps, run inside ONE read transaction on the source:

- The backup API on its own takes a fresh read lock at each step, and a commit by any other
  connection between two steps restarts the copy from the first page. Under a steady stream of
  saves a large file then never finishes (benchmarks/bench_backup.py counts the restarts).
- Inside one read transaction the source is a snapshot: in WAL mode a reader blocks no writer,
  so the agents and the daemon go on committing to the WAL while every step copies the file as
  it was when the transaction began, and nothing restarts. The cost: the checkpointer cannot
  recycle the WAL past that snapshot until the copy ends, so the -wal grows by what is written
  meanwhile (``journal_size_limit`` trims it afterwards).
- ``VACUUM INTO`` reads one snapshot too, but rebuilds every table and index (more CPU), and is
  one statement that cannot pause for the writers' I/O; the page copy also keeps the file's
  pages as they are (free pages included), so its size is the source's.

The copy is written to a temporary file beside DEST, switched to rollback-journal mode (one
self-contained file: it reads without -wal and -shm, on a read-only mount too; remd puts it
back in WAL mode when it opens it), flushed to disk and then renamed into place, so DEST is
either absent or a whole copy. An existing DEST is refused unless ``force``; and, ``force`` or
not, a DEST that is (or resolves to, by symbolic or hard link) the source or its -wal, -shm or
-journal, the -wal, -shm or -journal of any other SQLite database, or a SQLite database some
process has open (a lock on it or its -shm) is refused: replacing it would lose what was
written to that database.

PostgreSQL is not copied here: the server makes its own consistent dump (``pg_dump``, see
docs/deployment.md), so a backup from or to a URL raises BackupUnsupported.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import apsw
import sqlite_vec

from remd.config import StoreConfig
from remd.errors import BackupError, BackupUnsupported, DestinationExists
from remd.logs import get_logger
from remd.store.reads import int_scalar
from remd.store.sqlite.dialect import SqliteConnection
from remd.store.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from remd.store.sqlite.store import connect
from remd.store.sqlite.walfiles import holders, is_sqlite
from remd.store.where import is_url, shown

log = get_logger("remd.store.sqlite.backup")

PAGES_PER_STEP = 1024  # 4 MiB of 4 KiB pages per step of the copy
PAUSE_SECONDS = 0.002  # between steps: the writers' I/O goes first

_SIDES = ("-wal", "-shm", "-journal")  # the files SQLite keeps beside a database
_PG_HOW = "back up a PostgreSQL database with pg_dump (docs/deployment.md, Backup)"


@dataclass(frozen=True, kw_only=True)
class NamespaceCount:
    """The memories of one namespace in a copy: live ones, and all (any status)."""

    live: int
    total: int


@dataclass(frozen=True, kw_only=True)
class Copy:
    """What a copy holds: read from the copy itself once it is written (or checked)."""

    path: str
    pages: int
    bytes: int
    schema_version: int
    namespaces: dict[str, NamespaceCount] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True, kw_only=True)
class BackupReport(Copy):
    """A finished backup: the copy, where it came from, and how it was made (steps of
    ``pages_per_step`` pages; restarts of the copy, which the held snapshot keeps at 0)."""

    source: str
    steps: int
    restarts: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class CheckReport(Copy):
    """A copy that passed :func:`check_backup` (integrity, foreign keys, remd schema)."""

    current: bool  # at this remd's schema version (an older one is migrated when opened)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def backup_file(source: str | Path, dest: str | Path, config: StoreConfig | None = None, *,
                force: bool = False, pages_per_step: int = PAGES_PER_STEP,
                pause: float = PAUSE_SECONDS) -> BackupReport:
    """Copy the remd database ``source`` to ``dest`` while other processes write it.

    Raises BackupUnsupported when either is a PostgreSQL URL, DestinationExists when ``dest``
    exists and not ``force``, StoreError when ``source`` is missing or not a remd database,
    BackupError when ``dest`` cannot be written (no directory, disk full, ...).
    """
    source, dest = str(source), str(dest)
    if is_url(source) or is_url(dest):
        raise BackupUnsupported(f"{shown(source if is_url(source) else dest)} is PostgreSQL: "
                                f"{_PG_HOW}")
    if pages_per_step < 1:
        raise BackupError(f"pages_per_step must be at least 1, not {pages_per_step}")
    target = Path(dest)
    _check_dest(source, target, force)
    started = time.perf_counter()
    config = config or StoreConfig()
    src = connect(source, config, create=False)
    tmp = ""
    try:
        src.execute("BEGIN")  # the snapshot every step copies from (see the module's doc)
        version = _schema_version(src, source)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                   dir=target.parent)
        os.close(fd)
        steps, restarts = _copy(src, tmp, pages_per_step, pause)
        copy = _summary(tmp, version)
        _fsync(tmp)
        _put(tmp, target, force)
        tmp = ""
    except BackupError:
        raise
    except apsw.Error as exc:
        raise BackupError(f"backup of {source!r} to {dest!r} failed: {exc}") from exc
    except OSError as exc:
        raise BackupError(f"cannot write backup {dest!r}: {exc.strerror or exc}") from exc
    finally:
        with contextlib.suppress(apsw.Error):
            src.close()  # ends the read transaction
        if tmp:
            for leftover in (tmp, tmp + "-journal"):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
    report = BackupReport(path=dest, source=source, pages=copy.pages, bytes=copy.bytes,
                          schema_version=version, namespaces=copy.namespaces, steps=steps,
                          restarts=restarts, seconds=time.perf_counter() - started)
    log.info("backup.done", source=source, dest=dest, pages=report.pages, steps=steps,
             restarts=restarts, seconds=round(report.seconds, 3))
    return report


def check_backup(path: str | Path) -> CheckReport:
    """Verify a copy without writing it: ``PRAGMA integrity_check``, ``foreign_key_check``,
    remd's tables at a schema version this remd opens, and its memories counted.

    Raises BackupUnsupported for a PostgreSQL URL, BackupError naming the first problem.
    """
    path = str(path)
    if is_url(path):
        raise BackupUnsupported(f"{shown(path)} is PostgreSQL: {_PG_HOW}")
    if not os.path.isfile(path) or not os.path.getsize(path):
        raise BackupError(f"no backup at {path!r} (missing or empty file)")
    started = time.perf_counter()
    try:
        conn = SqliteConnection(path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        raise BackupError(f"cannot open backup {path!r}: {exc}") from exc
    try:
        conn.enable_load_extension(True)  # a file of an older schema may still name vec0
        conn.load_extension(sqlite_vec.loadable_path())
        problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise BackupError(f"backup {path!r} fails integrity_check ({len(problems)} "
                              f"problem(s)): {problems[0]}")
        orphans = conn.execute("PRAGMA foreign_key_check").fetchall()
        if orphans:
            table, rowid, parent, _ = orphans[0]
            raise BackupError(f"backup {path!r} fails foreign_key_check ({len(orphans)} "
                              f"row(s)): {table} row {rowid} has no {parent}")
        version = _schema_version(conn, path)
        copy = _summary(path, version)
    except apsw.Error as exc:
        raise BackupError(f"backup {path!r} is not usable: {exc}") from exc
    finally:
        conn.close()
    return CheckReport(path=path, pages=copy.pages, bytes=copy.bytes, schema_version=version,
                       namespaces=copy.namespaces, current=version == SCHEMA_VERSION,
                       seconds=time.perf_counter() - started)


def _check_dest(source: str, target: Path, force: bool) -> None:
    """Refuse a DEST that would lose data or cannot be written, before copying anything."""
    if not os.path.isfile(source):
        raise BackupError(f"no such database: {source!r}")
    if not target.parent.is_dir():
        raise BackupError(f"cannot write backup {str(target)!r}: no directory "
                          f"{str(target.parent)!r}")
    _refuse_live(source, str(target))
    if not target.exists():
        return
    if target.is_dir():
        raise BackupError(f"backup destination {str(target)!r} is a directory")
    if not force:
        raise _exists(target)
    wal = Path(f"{target}-wal")
    if wal.exists() and wal.stat().st_size:
        # Its frames would be read as part of the new file: refuse rather than corrupt it.
        raise BackupError(f"{wal.name} beside {str(target)!r} is not empty: a process has it "
                          f"open (or crashed); stop it, or back up elsewhere")


def _refuse_live(source: str, dest: str) -> None:
    """Refuse, ``force`` or not, a DEST whose loss loses what a database holds: the source or
    one of its files (by path, after symbolic links, or by inode: a hard link), a file SQLite
    keeps beside any other database, or a SQLite database some process has open."""
    real = os.path.realpath(dest)
    family = {os.path.realpath(base + side): side for side in ("", *_SIDES)
              for base in (source, os.path.realpath(source))}
    side = family.get(real)
    if side is None and os.path.exists(real):
        side = next((s for p, s in family.items() if os.path.exists(p)
                     and os.path.samefile(p, real)), None)
    if side == "":
        raise BackupError(f"backup destination {dest!r} is the database itself")
    if side is not None:
        raise BackupError(f"backup destination {dest!r} is {os.path.basename(source)}{side}, "
                          f"a file of the database being copied; back up elsewhere")
    for other in _SIDES:
        if real.endswith(other) and is_sqlite(real.removesuffix(other)):
            raise BackupError(f"backup destination {dest!r} is {os.path.basename(real)}, a file "
                              f"of the SQLite database {real.removesuffix(other)!r}; back up "
                              f"elsewhere")
    if os.path.isfile(real) and is_sqlite(real):
        pids = holders(real)  # None: no lock table to ask, and a -shm says it may be open
        if pids or (pids is None and os.path.exists(real + "-shm")):
            who = f"pid {pids[0]} has it open" if pids else "it has a -shm"
            raise BackupError(f"backup destination {dest!r} is a SQLite database in use ({who}):"
                              f" stop what uses it, or back up elsewhere")


def _schema_version(conn: SqliteConnection, path: str) -> int:
    """How many migrations the file records; raises BackupError for a file that is not a
    remd database or was written by a newer remd (a migration this code does not know)."""
    if not int_scalar(conn, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                            "AND name = 'remd_migrations'"):
        raise BackupError(f"{path!r} is not a remd database (no remd_migrations table)")
    names = [str(r[0]) for r in conn.execute("SELECT name FROM remd_migrations")]
    known = {name for name, _ in MIGRATIONS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise BackupError(f"{path!r} has migration {unknown[0]!r}, newer than this remd "
                          f"({SCHEMA_VERSION}); upgrade remd")
    return len(names)


def _copy(src: apsw.Connection, tmp: str, pages_per_step: int,
          pause: float) -> tuple[int, int]:
    """Copy ``src`` into the file ``tmp``, page by page; returns (steps, restarts)."""
    dst = apsw.Connection(tmp)
    try:
        # A partial copy is deleted, never used: no journal, no syncs until the end.
        dst.execute("PRAGMA journal_mode=OFF")
        dst.execute("PRAGMA synchronous=OFF")
        steps = restarts = 0
        remaining = None
        with dst.backup("main", src, "main") as copy:
            while not copy.done:
                copy.step(pages_per_step)
                steps += 1
                if remaining is not None and copy.remaining > remaining:
                    restarts += 1  # the source changed under the copy (not with a snapshot)
                remaining = copy.remaining
                if not copy.done and pause > 0:
                    time.sleep(pause)
        # The header copied says WAL: make the copy one self-contained file.
        dst.execute("PRAGMA journal_mode=DELETE").fetchall()
    finally:
        dst.close()
    return steps, restarts


def _summary(path: str, version: int) -> Copy:
    """Pages, bytes and memories per namespace of the copy at ``path``."""
    conn = SqliteConnection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        pages = int_scalar(conn, "PRAGMA page_count")
        namespaces = {str(ns): NamespaceCount(live=int(live or 0), total=int(total))
                      for ns, total, live in conn.execute(
                          "SELECT namespace, count(*), sum(CASE WHEN status = 'live' THEN 1 "
                          "ELSE 0 END) FROM nodes GROUP BY namespace ORDER BY namespace")}
    finally:
        conn.close()
    return Copy(path=path, pages=pages, bytes=os.path.getsize(path), schema_version=version,
                namespaces=namespaces)


def _exists(target: Path) -> DestinationExists:
    return DestinationExists(f"backup destination {str(target)!r} exists (--force replaces it)")


def _fsync(path: str | Path) -> None:
    """Make a file's contents, or a directory's entries (a rename into it), durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _put(tmp: str, target: Path, force: bool) -> None:
    """Move the finished copy to ``target`` in one step: a reader never sees half a file."""
    if force:
        for side in (f"{target}-wal", f"{target}-shm"):  # empty ones (checked): stale now
            with contextlib.suppress(FileNotFoundError):
                os.unlink(side)
        os.replace(tmp, target)
    else:
        try:
            os.link(tmp, target)  # fails if target appeared meanwhile: never overwritten
        except FileExistsError as exc:
            raise _exists(target) from exc
        except OSError:  # a file system without hard links: checked, then renamed
            if target.exists():
                raise _exists(target) from None
            os.rename(tmp, target)
        else:
            os.unlink(tmp)
    _fsync(target.parent)  # the rename is durable: the directory's entry is on disk too
