"""Online backup (remd/store/sqlite/backup.py, `remd backup`): copies taken while 8 writer
processes save and
`remd serve` consolidates the same file are whole, open as remd databases and hold every memory
acknowledged before they started; the writers see no error. And the refusals: a corrupt copy,
an existing DEST, PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remd import Memory
from remd.errors import BackupError, BackupUnsupported, DestinationExists
from remd.store.sqlite.backup import backup_file, check_backup
from tests.service.test_daemon import Served

ROOT = Path(__file__).resolve().parents[2]
REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
WRITERS = 8
BACKUPS = 4
NAMESPACES = ("alpha", "beta", "gamma", "delta")


def remd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*REMD, *args], capture_output=True, text=True, timeout=120)


class Writer:
    """tests/crash_writer.py saving forever in ``namespace``; every id it prints (once its save
    returned) lands in its ack log, a file read while it runs."""

    def __init__(self, db: Path, namespace: str, where: Path) -> None:
        self.acks = where / f"acks-{namespace}-{id(self)}.log"
        self.errors = where / f"errors-{namespace}-{id(self)}.log"
        with self.acks.open("w") as out, self.errors.open("w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "tests.crash_writer", str(db),
                                          namespace], cwd=ROOT, stdout=out, stderr=err)

    def acknowledged(self) -> set[str]:
        """Ids on the complete lines of the log (a line being written is not acknowledged)."""
        lines = self.acks.read_text().split("\n")[:-1]
        return {line for line in lines if line != "ready"}


def saved_ids(path: Path) -> set[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {row[0] for row in con.execute("SELECT id FROM nodes")}
    finally:
        con.close()


@pytest.mark.soak
def test_backups_under_eight_writers_and_the_daemon(db_path: Path, tmp_path: Path) -> None:
    _backups_under_writers(db_path, tmp_path, WRITERS, BACKUPS)


@pytest.mark.soak  # 14 s: the default tier's slowest test; the 8-writer soak covers more
def test_backups_under_two_writers_and_the_daemon(db_path: Path, tmp_path: Path) -> None:
    """The soak above with 2 writers and 2 copies (the second through the command)."""
    _backups_under_writers(db_path, tmp_path, 2, 2)


def _backups_under_writers(db_path: Path, tmp_path: Path, count: int, backups: int) -> None:
    with Memory(db_path, embedder=None) as m:  # the schema, before anyone races to create it
        m.store.schema_version()
    served = Served(db_path, "--interval", "0.5", env={
        "REMD_TRIGGERS__MAX_LIVE_NODES": "12",  # REM fires again and again as the writers save
        "REMD_REM__MIN_AGE_DAYS": "0",
        "REMD_REM__TAU": "0.95",
        "REMD_DAEMON__LOG_LEVEL": "info",
    })
    writers = [Writer(db_path, NAMESPACES[i % len(NAMESPACES)], tmp_path)
               for i in range(count)]
    try:
        served.wait_for("daemon.ready")
        deadline = time.monotonic() + 60
        while not all(w.acknowledged() for w in writers) and time.monotonic() < deadline:
            time.sleep(0.1)
        served.wait_for("cycle.finished", timeout=60)  # REM is consolidating under the copies
        copies = []
        for n in range(backups):
            time.sleep(0.5)  # the writers move on between copies
            dest = tmp_path / f"copy{n}.db"
            before = set().union(*(w.acknowledged() for w in writers))
            if n == 1:  # one of them through the command
                done = remd("--db", str(db_path), "backup", str(dest), "--json")
                assert done.returncode == 0, done.stderr
                report = json.loads(done.stdout)
                pages, restarts = report["pages"], report["restarts"]
            else:
                made = backup_file(db_path, dest, pages_per_step=64)  # many steps
                pages, restarts = made.pages, made.restarts
            assert pages > 0 and restarts == 0
            copies.append((dest, before))
        running = [w.proc.poll() for w in writers]
        after = set().union(*(w.acknowledged() for w in writers))
    finally:
        for w in writers:
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGTERM)
            w.proc.wait(timeout=60)
        code = served.stop(signal.SIGTERM)

    # The writers were saving all along, and saw no error.
    assert running == [None] * count
    assert [w.errors.read_text() for w in writers] == [""] * count
    assert code == 0
    bad = [e for e in served.seen if e.get("level") in ("warning", "error", "critical")
           or e.get("event") in ("rem.failed", "tick.failed", "triggers.failed")]
    assert bad == [], bad[:3]
    assert len(after) > len(copies[-1][1]) > len(copies[0][1]) > 0

    for dest, before in copies:
        checked = check_backup(dest)  # integrity_check, foreign keys, schema
        assert checked.current and checked.bytes == dest.stat().st_size
        held = saved_ids(dest)
        assert before <= held, f"{dest.name} lacks {len(before - held)} acknowledged memories"
        assert sum(c.total for c in checked.namespaces.values()) == len(held)
        with Memory(dest, "alpha", embedder=None) as m:  # opens as a remd database
            assert m.recent(5)
            assert m.inject("alpha memory about topic 3", 200).items
            m.save("written into the restored copy")
        assert remd("backup", "--check", str(dest)).returncode == 0


def test_check_refuses_a_corrupt_copy_in_one_line(db_path: Path, tmp_path: Path) -> None:
    with Memory(db_path, "work", embedder=None) as m:
        m.save_many([f"memory {i} of the project" for i in range(300)])
    dest = tmp_path / "copy.db"
    made = backup_file(db_path, dest)
    assert made.namespaces["work"].live == 300 and check_backup(dest).pages == made.pages
    data = bytearray(dest.read_bytes())
    page = 4096
    data[5 * page:9 * page] = b"\xa5" * (4 * page)  # pages 6-9: overwritten
    dest.write_bytes(bytes(data))
    with pytest.raises(BackupError, match="copy.db"):
        check_backup(dest)
    done = remd("backup", "--check", str(dest))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("Error: backup ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 500)
    done = remd("backup", "--check", str(garbage))
    assert done.returncode == 1 and "not usable" in done.stderr, done.stderr


def test_an_existing_destination_is_refused_unless_forced(db_path: Path, tmp_path: Path) -> None:
    with Memory(db_path, "work", embedder=None) as m:
        m.save("the first memory")
    dest = tmp_path / "copy.db"
    dest.write_bytes(b"precious")
    with pytest.raises(DestinationExists):
        backup_file(db_path, dest)
    done = remd("--db", str(db_path), "backup", str(dest))
    assert done.returncode == 1 and "exists" in done.stderr and "--force" in done.stderr
    assert dest.read_bytes() == b"precious"  # untouched, and no temporary file left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([db_path.name, "copy.db",
                                                                 *_sidecars(db_path)])
    done = remd("--db", str(db_path), "backup", str(dest), "--force")
    assert done.returncode == 0, done.stderr
    assert "work: 1 live / 1 memories" in done.stdout
    assert check_backup(dest).namespaces["work"].total == 1
    with pytest.raises(BackupError, match="the database itself"):
        backup_file(db_path, db_path, force=True)


def _sidecars(db: Path) -> list[str]:
    return [p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-")]


def test_postgresql_is_refused_with_the_pg_dump_hint(db_path: Path, tmp_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        m.save("a memory")
    url = "postgresql://remd:secret@127.0.0.1:1/remd"  # never connected to
    for source, dest in ((url, str(tmp_path / "copy.db")), (str(db_path), url)):
        with pytest.raises(BackupUnsupported, match="pg_dump") as caught:
            backup_file(source, dest)
        assert "secret" not in str(caught.value)
    with pytest.raises(BackupUnsupported, match="pg_dump"):
        check_backup(url)
    done = remd("--db", url, "backup", str(tmp_path / "copy.db"))
    assert done.returncode == 1 and "pg_dump" in done.stderr and "secret" not in done.stderr
    assert not (tmp_path / "copy.db").exists()


# -- DEST is never a file of a live database, --force or not --------------------------------
def _writing(db: Path, where: Path, at_least: int = 50) -> Writer:
    """A writer process saving into ``db``, once it has ``at_least`` acknowledged memories."""
    writer = Writer(db, "work", where)
    deadline = time.monotonic() + 120
    while len(writer.acknowledged()) < at_least:
        assert writer.proc.poll() is None, writer.errors.read_text()
        assert time.monotonic() < deadline, "the writer is too slow"
        time.sleep(0.05)
    return writer


def _stopped(writer: Writer) -> set[str]:
    """Kill the writer (its WAL is recovered by the next opener); what it acknowledged."""
    writer.proc.kill()
    writer.proc.wait(timeout=60)
    return writer.acknowledged()


def one_line_refusal(done: subprocess.CompletedProcess[str], said: str) -> bool:
    return (done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1
            and said in done.stderr)


@pytest.mark.slow
def test_a_forced_backup_never_overwrites_the_live_databases_own_files(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    Memory(db, embedder=None).close()
    writer = _writing(db, tmp_path)
    try:
        link = tmp_path / "harmless-looking.db"
        link.symlink_to(f"{db}-wal")
        hard = tmp_path / "hard-link.db"
        os.link(f"{db}-wal", hard)
        for dest, said in [(f"{db}-wal", "agent.db-wal"), (link, "agent.db-wal"),
                           (hard, "agent.db-wal"), (f"{db}-shm", "agent.db-shm"),
                           (f"{db}-journal", "agent.db-journal"), (db, "the database itself")]:
            done = remd("--db", str(db), "backup", "--force", str(dest))
            assert one_line_refusal(done, said), (dest, done.stderr)
            with pytest.raises(BackupError, match=said):
                backup_file(db, dest, force=True)
        assert writer.proc.poll() is None, writer.errors.read_text()
    finally:
        acked = _stopped(writer)
    assert not Path(f"{db}-journal").exists() and hard.stat().st_ino == link.stat().st_ino
    hard.unlink()
    assert len(acked) >= 50 and acked <= saved_ids(db)
    assert writer.errors.read_text() == ""


@pytest.mark.slow
def test_a_forced_backup_never_overwrites_a_database_in_use(tmp_path: Path) -> None:
    source, live = tmp_path / "agent.db", tmp_path / "other.db"
    with Memory(source, embedder=None) as m:
        m.save("the memory of the source")
    Memory(live, embedder=None).close()
    writer = _writing(live, tmp_path)
    try:
        done = remd("--db", str(source), "backup", "--force", str(live))
        assert one_line_refusal(done, "in use"), done.stderr
        assert f"pid {writer.proc.pid}" in done.stderr
        for side in ("-wal", "-shm", "-journal"):  # another database's files, in use or not
            done = remd("--db", str(source), "backup", "--force", f"{live}{side}")
            assert one_line_refusal(done, f"other.db{side}"), done.stderr
    finally:
        acked = _stopped(writer)
    assert len(acked) >= 50 and acked <= saved_ids(live)
    Memory(live, embedder=None).close()  # its WAL copied back, and no process has it open
    done = remd("--db", str(source), "backup", "--force", str(live))
    assert done.returncode == 0, done.stderr  # an old copy: --force replaces it
    assert saved_ids(live) == saved_ids(source)
