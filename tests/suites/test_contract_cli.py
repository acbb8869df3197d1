"""The CLI's contract on bad input: a user error is exit 1 with one line on stderr and no
traceback, a usage error is exit 2, a refused call writes nothing, stdout carries results only.
One test per case seen broken; real SQLite files under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import Memory
from remd.cli.main import main
from remd.errors import quote

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
HUGE = "99999999999999999999999"


def run(db: Path | str, *args: str, input: str | bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--db", str(db), *args], input=input,
                                catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def proc(db: Path, *args: str, input: bytes | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")}
    return subprocess.run([*REMD, "--db", str(db), *args], input=input, capture_output=True,
                          env=env, timeout=timeout)


def one_line_error(code: int, out: str, err: str) -> bool:
    """Exit 1, nothing on stdout, exactly one "Error: ..." line on stderr."""
    return code == 1 and out == "" and err.startswith("Error: ") and err.count("\n") == 1


def live_count(db: Path) -> int:
    with Memory(db, embedder=None) as m:
        return m.stats().nodes


@pytest.fixture
def saved(db_path: Path) -> str:
    """A database with one memory; its id."""
    code, out, _ = run(db_path, "save", "I prefer dark chocolate", "--tag", "food")
    assert code == 0
    return out.strip()


# -- 1, 2: huge integers --------------------------------------------------------------------
def test_recent_with_a_huge_n_is_a_usage_error(db_path: Path, saved: str) -> None:
    code, out, err = run(db_path, "recent", "-n", HUGE)
    assert code == 2 and out == "" and "Traceback" not in err and "-n" in err


def test_tags_export_with_huge_max_edges_is_a_usage_error(db_path: Path, saved: str) -> None:
    code, out, err = run(db_path, "tags", "export", "--max-edges", HUGE)
    assert code == 2 and out == "" and "Traceback" not in err and "--max-edges" in err


@pytest.mark.parametrize("args", [
    ["inject", "chocolate", "--budget", HUGE], ["inject", "chocolate", "--budget", "-" + HUGE],
    ["recent", "-n", "-" + HUGE], ["tags", "export", "--max-edges", "-" + HUGE],
])
def test_every_integer_option_refuses_huge_numbers_cleanly(
        db_path: Path, saved: str, args: list[str]) -> None:
    code, out, err = run(db_path, *args)
    assert code in (1, 2) and out == "" and "Error: " in err and "Traceback" not in err


@pytest.mark.parametrize("value", [HUGE, "1e400", "inf", "nan"])
def test_serve_interval_refuses_huge_and_non_finite_values(db_path: Path, value: str) -> None:
    # A real process: a value that slips through starts a daemon (killed at the timeout).
    done = proc(db_path, "serve", "--interval", value, timeout=60)
    assert done.returncode == 2 and b"--interval" in done.stderr
    assert b"Traceback" not in done.stderr and not db_path.exists()


# -- 5: a closed pipe -------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["export"], ["recent", "-n", "2000"]])
@pytest.mark.slow
def test_a_closed_stdout_pipe_ends_quietly(db_path: Path, args: list[str]) -> None:
    with Memory(db_path, embedder=None) as m:  # ~0.5 MB of output: far more than a pipe holds
        m.save_many([f"note {i}: " + "lorem ipsum dolor " * 25 for i in range(700)],
                    embed=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")}
    with subprocess.Popen([*REMD, "--db", str(db_path), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env) as p:
        assert p.stdout is not None and p.stderr is not None
        assert p.stdout.readline()  # `| head -1`
        p.stdout.close()
        err = p.stderr.read()
        code = p.wait(timeout=120)
    assert code in (0, 141) and err == b""


# -- 6: read-only commands never create the file -----------------------------------------------
@pytest.mark.parametrize("args", [
    ["get", "x"], ["recent"], ["history", "x"], ["forget", "x"], ["stats"], ["export"],
    ["inject", "q", "--budget", "10"], ["feedback", "p", "--accept"], ["tags", "export"],
    ["tags", "rename", "a", "b"], ["tags", "merge", "a", "b"], ["tags", "subtype", "a", "b"],
    ["triggers"], ["run-rem"], ["run-rem", "--dry-run"], ["rollback", "r"],
])
def test_commands_on_a_missing_database_refuse_and_create_nothing(
        tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "agnet.db"
    code, out, err = run(typo, *args)
    assert one_line_error(code, out, err) and err == f"Error: no such database: {typo}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["init"], ["save", "a note"], ["import", "-"]])
def test_init_save_and_import_create_the_database(tmp_path: Path, args: list[str]) -> None:
    fresh = tmp_path / "new.db"
    code, _, _ = run(fresh, *args, input='{"content": "imported note"}\n')
    assert code == 0 and fresh.exists()


# -- 7: an empty --db ---------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["--db", "--config"])
def test_an_empty_path_option_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REMD_DB", raising=False)
    result = CliRunner().invoke(main, [option, "", "save", "x"], catch_exceptions=False)
    assert result.exit_code == 2 and option in result.stderr and result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no ./remd.db


# -- 11: the empty query ------------------------------------------------------------------------
def test_an_empty_query_is_reported_as_the_query(db_path: Path, saved: str) -> None:
    code, out, err = run(db_path, "inject", "  ", "--budget", "100")
    assert one_line_error(code, out, err) and "query is empty" in err
    assert "memory text" not in err


# -- 12, 13: save - names the line -----------------------------------------------------------
def test_bulk_save_numbers_lines_from_1_as_import_does(db_path: Path, saved: str) -> None:
    code, out, err = run(db_path, "save", "-", input="first\n\x00second\n")
    assert one_line_error(code, out, err) and err.startswith("Error: line 2: ")
    code, out, err = run(db_path, "save", "-", input="first\n\n   \nfourth\x00\n")
    assert one_line_error(code, out, err) and err.startswith("Error: line 4: ")
    assert live_count(db_path) == 1  # nothing of either call was written


def test_bulk_save_reports_invalid_utf8_by_line(db_path: Path, saved: str) -> None:
    done = proc(db_path, "save", "-", input=b"good line\n\xff\xfe bad line\nanother\n")
    assert done.returncode == 1 and done.stdout == b""
    assert done.stderr == b"Error: line 2: not valid UTF-8\n"
    assert live_count(db_path) == 1


def test_a_refused_save_does_not_create_the_file(db_path: Path) -> None:
    code, out, err = run(db_path, "save", "-", input="ok\n\x00\n")
    assert one_line_error(code, out, err) and not db_path.exists()
    code, out, err = run(db_path, "save", "   ")
    assert one_line_error(code, out, err) and not db_path.exists()


# -- 15: inject --json --explain, feedback --accept --reject -----------------------------------
def test_inject_json_with_explain_carries_the_explanation(db_path: Path, saved: str) -> None:
    code, out, _ = run(db_path, "inject", "dark chocolate", "--budget", "100", "--json")
    assert code == 0 and set(json.loads(out)) == {"pack_id", "budget", "tokens_used", "items"}
    code, out, _ = run(db_path, "inject", "dark chocolate", "--budget", "100", "--json",
                       "--explain")
    pack = json.loads(out)
    assert code == 0 and set(pack) == {"pack_id", "budget", "tokens_used", "items", "explain"}
    assert pack["explain"][0].startswith(f"pack {pack['pack_id']}: ")
    assert all(isinstance(line, str) for line in pack["explain"])
    assert any(saved in line for line in pack["explain"])


def test_feedback_accept_and_reject_exclude_each_other(db_path: Path, saved: str) -> None:
    _, out, _ = run(db_path, "inject", "dark chocolate", "--budget", "100", "--json")
    pack_id = json.loads(out)["pack_id"]
    code, out, err = run(db_path, "feedback", pack_id, "--accept", "--reject")
    assert code == 2 and out == "" and "--accept" in err and "--reject" in err
    code, out, _ = run(db_path, "feedback", pack_id, "--reject")
    assert code == 0 and out.startswith("feedback recorded")  # the refused call wrote nothing


# -- 16: user input quoted in messages is capped ----------------------------------------------
@pytest.mark.parametrize("args", [
    ["get", "{id}"], ["history", "{id}"], ["forget", "{id}"], ["rollback", "{id}"],
    ["feedback", "{id}", "--accept"], ["tags", "rename", "{id}", "new"],
    ["--namespace", "{id}", "recent"],
])
def test_a_long_id_is_not_echoed_whole(db_path: Path, saved: str, args: list[str]) -> None:
    long_id = "x" * 10_000
    argv = [a.replace("{id}", long_id) for a in args]
    if argv[0] == "--namespace":
        result = CliRunner().invoke(main, [*argv[:2], "--db", str(db_path), *argv[2:]],
                                    catch_exceptions=False)
        code, out, err = result.exit_code, result.stdout, result.stderr
    else:
        code, out, err = run(db_path, *argv)
    assert one_line_error(code, out, err) and len(err) < 300  # tags cut their own ("...")


def test_quote_caps_long_values() -> None:
    assert quote("abc") == "'abc'"
    assert quote("y" * 200) == repr("y" * 80 + "…")
    assert quote("z" * 30, limit=10) == repr("z" * 10 + "…")
    assert len(quote(list(range(1000)))) == 81


# -- 22, 23: run-rem and triggers JSON -------------------------------------------------------------
def utc(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    assert at.utcoffset() == UTC.utcoffset(None)
    return at


def test_triggers_json_times_are_iso_8601_utc(db_path: Path, saved: str) -> None:
    code, out, _ = run(db_path, "triggers", "--json")
    assert code == 0
    utc(json.loads(out)["now"])


def test_run_rem_json_times_are_iso_8601_utc(db_path: Path, saved: str) -> None:
    for extra in ([], ["--dry-run"]):
        code, out, _ = run(db_path, "run-rem", "--json", *extra)
        obj = json.loads(out)
        assert code == 0 and isinstance(obj["started_at"], str)
        started = utc(obj["started_at"])
        if obj["finished_at"] is not None:
            assert utc(obj["finished_at"]) >= started


def test_run_rem_json_has_a_plan_only_for_a_dry_run(db_path: Path, saved: str) -> None:
    code, out, _ = run(db_path, "run-rem", "--json", "--dry-run")
    assert code == 0 and "plan" in json.loads(out)
    code, out, _ = run(db_path, "run-rem", "--json")
    obj = json.loads(out)
    assert code == 0 and not obj["dry_run"] and "plan" not in obj
