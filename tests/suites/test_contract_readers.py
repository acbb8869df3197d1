"""The CLI and the SQLite file keep the contract (rows 11-15): a reader never blocks the owner's
writes, config errors come first and a read never writes a schema, every number of --explain
can be checked against the pack, history shows what a synthesis came from, and --help says
--db takes a URL. Real SQLite files; the reader and the owner are real users (forked
processes that drop root)."""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner

from remd import Memory
from remd.cli.main import main
from remd.wire import node_to_dict
from tests.sleep.test_rem import DAY, NOW, YEAR_AGO, line


def run(db: Path | str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--db", str(db), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, out: str, err: str) -> bool:
    return code == 1 and out == "" and err.startswith("Error: ") and err.count("\n") == 1


# -- row 11: a reader never blocks the owner's writes ----------------------------------------
OWNER, READER = "daemon", "nobody"


def as_user(name: str, work: Callable[[], Any]) -> Any:
    """``work()`` in a forked child running as user ``name`` (root drops to it); its result
    (JSON) back through a pipe. A fork, not a new interpreter: the interpreter lives under
    /root, which other users cannot enter."""
    user = pwd.getpwnam(name)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            data = json.dumps(work()).encode()
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            data = json.dumps({"crash": repr(exc)}).encode()
            code = 1
        finally:
            with open(w, "wb") as pipe:
                pipe.write(data)
            os._exit(code)
    os.close(w)
    with open(r, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert not (isinstance(result, dict) and "crash" in result), result
    return result


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory both users can enter and write (as /tmp is), with a config that needs no
    embedding model; the commands' imports done first, as root (a child can't import from
    /root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the owner and the reader as two users")
    try:
        pwd.getpwnam(OWNER), pwd.getpwnam(READER)
    except KeyError:
        pytest.skip(f"needs users {OWNER} and {READER}")
    where = Path(tempfile.mkdtemp(prefix="remd-shared-"))
    try:
        where.chmod(0o1777)
        (where / "remd.toml").write_text('[embed]\nprovider = "none"\n')
        (where / "remd.toml").chmod(0o644)
        warm = where / "warm.db"
        for args in (["save", "warm up"], ["recent"], ["history", "x"], ["recent"]):
            cli(warm, *args)
        for path in where.glob("warm.db*"):
            path.unlink()
        yield where
    finally:
        for path in where.iterdir():
            path.unlink()
        where.rmdir()


def cli(db: Path, *args: str) -> list[Any]:
    config = str(db.parent / "remd.toml")
    result = CliRunner().invoke(main, ["--db", str(db), "--config", config, *args])
    return [result.exit_code, result.stdout, result.stderr]


def owned(db: Path) -> dict[str, int]:
    return {p.name: p.stat().st_uid for p in db.parent.glob(db.name + "*")}


def test_a_reader_never_blocks_the_owners_writes(shared: Path) -> None:
    db = shared / "agent.db"
    assert as_user(OWNER, lambda: cli(db, "save", "the owner's first memory"))[0] == 0
    db.chmod(0o644)  # the owner lets others read it
    assert as_user(OWNER, lambda: cli(db, "save", "the owner's second memory"))[0] == 0
    code, out, err = as_user(READER, lambda: cli(db, "recent"))
    assert (code, err) == (0, "") and "first memory" in out and "second memory" in out
    code, out, err = as_user(OWNER, lambda: cli(db, "save", "written after the reader"))
    assert (code, err) == (0, ""), err
    code, out, _ = as_user(READER, lambda: cli(db, "recent"))
    assert code == 0 and "written after the reader" in out
    owner = pwd.getpwnam(OWNER).pw_uid
    assert owned(db) == {"agent.db": owner, "agent.db-wal": owner, "agent.db-shm": owner}


def test_a_reader_is_refused_rather_than_create_the_wal_files(shared: Path) -> None:
    db = shared / "agent.db"
    assert as_user(OWNER, lambda: cli(db, "save", "the owner's memory"))[0] == 0
    db.chmod(0o644)
    for suffix in ("-wal", "-shm"):  # as an older remd's last close left the file
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    code, out, err = as_user(READER, lambda: cli(db, "recent"))
    assert one_line_error(code, out, err)
    assert "agent.db-wal" in err and "agent.db-shm" in err and "owner" in err
    assert list(owned(db)) == ["agent.db"]  # the reader created nothing
    assert as_user(OWNER, lambda: cli(db, "save", "still writable"))[0] == 0
    assert as_user(READER, lambda: cli(db, "recent"))[0] == 0


def test_a_save_blocked_by_files_a_reader_left_names_them(shared: Path) -> None:
    db = shared / "agent.db"
    assert as_user(OWNER, lambda: cli(db, "save", "the owner's memory"))[0] == 0
    db.chmod(0o644)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    def old_reader() -> int:  # what a reader did before: SQLite creates the files, its own
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        (count,) = conn.execute("SELECT count(*) FROM nodes").fetchone()
        conn.close()
        return int(count)

    assert as_user(READER, old_reader) == 1
    code, out, err = as_user(OWNER, lambda: cli(db, "save", "blocked"))
    assert one_line_error(code, out, err)
    assert "agent.db-wal" in err and "agent.db-shm" in err and f"user {READER}" in err
    assert "delete them" in err
    for suffix in ("-wal", "-shm"):  # the fix the message gives works
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert as_user(OWNER, lambda: cli(db, "save", "unblocked"))[0] == 0


# -- row 12: config errors first; a read command never writes a schema ------------------------
def test_a_bad_config_is_reported_before_a_missing_database(tmp_path: Path) -> None:
    bad = tmp_path / "remd.toml"
    bad.write_text("[inject\nbudget = ")
    code, out, err = run(tmp_path / "missing.db", "--config", str(bad), "recent")
    assert one_line_error(code, out, err) and "remd.toml" in err and "no such database" not in err
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("args", [
    ["recent"], ["stats"], ["get", "x"], ["history", "x"], ["export"], ["triggers"],
    ["tags", "export"], ["inject", "q", "--budget", "10"], ["run-rem", "--dry-run"],
])
def test_a_read_command_on_an_empty_file_writes_nothing(tmp_path: Path, args: list[str]) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    code, out, err = run(empty, *args)
    assert one_line_error(code, out, err) and "no such database" in err and "empty" in err
    assert [p.name for p in tmp_path.iterdir()] == ["empty.db"] and empty.stat().st_size == 0


def test_init_makes_an_empty_file_a_database(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    assert run(empty, "init")[0] == 0
    assert run(empty, "stats")[0] == 0


# -- row 13: every number of --explain matches the pack ---------------------------------------
NUMBER = r"(\d+\.\d+)"


def test_explain_numbers_can_be_checked_against_the_items(db_path: Path) -> None:
    for text in ("I prefer dark chocolate over milk chocolate",
                 "My sister Anna lives in Lisbon and works as an architect",
                 "The dentist appointment is on Friday at 3pm"):
        assert run(db_path, "--namespace", "me", "save", text)[0] == 0
    for i in range(12):  # another namespace, larger: never counted
        assert run(db_path, "save", f"Chocolate note {i}: dark chocolate bar number {i}")[0] == 0
    code, out, _ = run(db_path, "--namespace", "me", "inject", "what chocolate do I like",
                       "--budget", "200", "--explain")
    assert code == 0
    lines = out.splitlines()
    touched = int(re.search(r"(\d+) memories touched", lines[0]).group(1))  # type: ignore[union-attr]
    assert 1 <= touched <= 3
    stop = lines[1]
    assert stop.startswith(("stopped (floor)", "stopped (gap)")), stop
    kept = {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^\d+\. (\S+) score .*; floor score " + NUMBER, out, re.M)}
    assert len(kept) == int(re.search(r"(\d+) item\(s\)", lines[0]).group(1))  # type: ignore[union-attr]
    weakest = re.search(r"the weakest kept: (\S+) at " + NUMBER, out)
    assert weakest is not None and kept[weakest.group(1)] == float(weakest.group(2))
    assert float(weakest.group(2)) == min(kept.values())
    floor = float(re.search(r"floor (?:is )?" + NUMBER, stop).group(1))  # type: ignore[union-attr]
    assert all(score >= floor for score in kept.values())
    if stop.startswith("stopped (floor)"):
        left = re.search(r"the best of them at " + NUMBER, stop)
        best = re.search(r"to its best, " + NUMBER, stop)
        assert left is not None and best is not None
        assert float(left.group(1)) < floor and float(best.group(1)) == max(kept.values())
    else:
        fall = re.search(f"fall from {NUMBER} to {NUMBER}", stop)
        assert fall is not None and float(fall.group(1)) == min(kept.values())
        assert float(fall.group(2)) < floor


# -- row 14: history lists what a synthesis came from and what superseded a memory -----------
NOTES = ["Bob's bank notes: the branch on Elm Street closes at 5pm",
         "Bob's bank notes again: the Elm Street branch closes at 5pm",
         "More of Bob's bank notes: Elm Street branch, closing 5pm"]


@pytest.fixture
def folded(db_path: Path) -> tuple[str, list[str]]:
    """A synthesis of three year-old notes, and the notes' ids."""
    with Memory(db_path, clock=lambda: NOW) as m:
        m.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(NOTES)])
        assert m.run_rem(now=NOW).synthesised == 1
        (synthesis,) = [n.id for n in m.recent(10) if n.kind.value == "synthesis"]
        members = [e.dst for e in m.links(synthesis) if e.type.value == "DERIVED_FROM"]
    assert len(members) == 3
    return synthesis, members


def test_history_lists_what_a_synthesis_came_from(db_path: Path,
                                                  folded: tuple[str, list[str]]) -> None:
    synthesis, members = folded
    for command in ("get", "history"):
        code, out, _ = run(db_path, command, synthesis)
        assert code == 0 and all(f"derived from: {m}" in out for m in members), (command, out)
    code, out, _ = run(db_path, "history", synthesis, "--json")
    (entry,) = json.loads(out)
    with Memory(db_path, embedder=None) as m:
        fields = node_to_dict(m.get(synthesis))
    assert {k: v for k, v in entry.items() if k != "links"} == fields  # the keys of export
    assert sorted(e["dst"] for e in entry["links"] if e["type"] == "DERIVED_FROM") \
        == sorted(members)
    code, out, _ = run(db_path, "get", synthesis, "--json")
    assert json.loads(out)["links"] == entry["links"]


def test_history_json_lists_what_superseded_a_memory(db_path: Path) -> None:
    _, old, _ = run(db_path, "save", "I live in Lisbon")
    _, new, _ = run(db_path, "save", "I moved to Porto, I no longer live in Lisbon")
    old, new = old.strip(), new.strip()
    code, out, _ = run(db_path, "history", old, "--json")
    entries = {e["id"]: e for e in json.loads(out)}
    assert code == 0 and set(entries) == {old, new}
    assert entries[old]["status"] == "superseded"
    assert {(e["src"], e["dst"], e["type"]) for e in entries[old]["links"]} \
        == {(new, old, "SUPERSEDES")}
    code, out, _ = run(db_path, "history", old)
    assert code == 0 and f"updated by: {new}" in out


# -- row 15: --help says --db takes a postgresql:// URL ---------------------------------------
def test_help_says_db_takes_a_postgresql_url() -> None:
    result = CliRunner().invoke(main, ["--help"], catch_exceptions=False)
    assert result.exit_code == 0
    db_help = result.stdout[result.stdout.index("--db"):result.stdout.index("--namespace")]
    assert "postgresql://" in db_help and "URL" in db_help
    assert "in one SQLite file." not in " ".join(result.stdout.split())


def test_file_modes_of_a_new_database_stay_private(tmp_path: Path) -> None:
    """The kept -wal and -shm files take the database's mode, never a wider one."""
    db = tmp_path / "agent.db"
    assert run(db, "save", "a private memory")[0] == 0
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"agent.db": 0o600, "agent.db-wal": 0o600, "agent.db-shm": 0o600}
