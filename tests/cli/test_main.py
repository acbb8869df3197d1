from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd.cli.main import main
from tests.llm_server import refused_base_url
from tests.suites.test_contract_readers import as_user

pytestmark = pytest.mark.backends

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]


def run(db: Path, *args: str, input: str | None = None,
        ns: str | None = None) -> tuple[int, str, str]:
    runner = CliRunner()
    pre = ["--db", str(db)] + (["--namespace", ns] if ns else [])
    result = runner.invoke(main, [*pre, *args], input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_quickstart_flow(db_path: Path) -> None:
    code, out, _ = run(db_path, "init")
    assert code == 0 and "schema version" in out
    code, out, _ = run(db_path, "save", "I prefer dark chocolate", "--tag", "food")
    node_id = out.strip()
    assert code == 0 and re.fullmatch(r"[0-9a-z]{16}", node_id)
    code, out, _ = run(db_path, "recent", "--json")
    items = json.loads(out)
    assert items[0]["id"] == node_id and "food" in items[0]["tags"]
    code, out, _ = run(db_path, "get", node_id, "--json")
    assert json.loads(out)["content"] == "I prefer dark chocolate"
    code, out, _ = run(db_path, "stats", "--json")
    assert json.loads(out)["live"] == 1


def test_bulk_save_from_stdin(db_path: Path) -> None:
    code, out, _ = run(db_path, "save", "-", input="first line\n\nsecond line\nthird\n")
    assert code == 0 and len(out.split()) == 3
    _, out, _ = run(db_path, "stats", "--json")
    assert json.loads(out)["live"] == 3 and json.loads(out)["pending_embeddings"] == 0


def test_history_and_forget(db_path: Path) -> None:
    _, a, _ = run(db_path, "save", "My job is baker")
    _, b, _ = run(db_path, "save", "My job has changed to chef")
    code, out, _ = run(db_path, "history", b.strip(), "--json")
    assert code == 0 and [n["id"] for n in json.loads(out)] == [a.strip(), b.strip()]
    assert json.loads(out)[0]["status"] == "superseded"
    code, out, _ = run(db_path, "forget", b.strip())
    assert code == 0
    _, out, _ = run(db_path, "recent", "--json")
    assert json.loads(out) == []


def remd(db: Path, *args: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    """`remd` as a real process: its own stdout and stderr, logging as the CLI sets it up."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")} | (env or {})
    return subprocess.run([*REMD, "--db", str(db), *args], capture_output=True, text=True,
                          env=full_env, timeout=300)


@pytest.mark.slow
def test_forget_prints_only_the_id(db_path: Path) -> None:
    node_id = remd(db_path, "save", "My job is baker").stdout.strip()
    forgot = remd(db_path, "forget", node_id)
    assert (forgot.returncode, forgot.stdout, forgot.stderr) == (0, node_id + "\n", "")


@pytest.mark.slow
def test_warnings_go_to_stderr_and_stdout_keeps_the_result(db_path: Path) -> None:
    down = {"REMD_EMBED__PROVIDER": "openai", "REMD_EMBED__BASE_URL": refused_base_url()}
    saved = remd(db_path, "save", "I water the basil on Sundays", env=down)
    assert saved.returncode == 0 and re.fullmatch(r"[0-9a-z]{16}\n", saved.stdout)
    assert "embed.failed" in saved.stderr and "warning" in saved.stderr
    injected = remd(db_path, "inject", "basil on Sundays", "--budget", "100", "--json", env=down)
    assert injected.returncode == 0 and "inject.embed_failed" in injected.stderr
    pack = json.loads(injected.stdout)  # the whole of stdout is the one JSON object
    assert [item["id"] for item in pack["items"]] == [saved.stdout.strip()]


def test_export_import_via_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    run(a, "save", "alpha note")
    run(a, "save", "beta note")
    _, dump, _ = run(a, "export")
    f = tmp_path / "dump.jsonl"
    f.write_text(dump)
    code, out, _ = run(b, "import", str(f))
    assert code == 0 and "imported 2" in out
    _, dump2, _ = run(b, "export")
    assert dump2 == dump
    code, out, _ = run(b, "import", "-", input=dump)
    assert code == 0 and "skipped 2" in out


def test_namespace_option_scopes_commands(db_path: Path) -> None:
    _, wid, _ = run(db_path, "save", "work thing", ns="work")
    code, _, err = run(db_path, "get", wid.strip())
    assert code == 1 and "no memory" in err
    _, out, _ = run(db_path, "recent", "--json", ns="work")
    assert len(json.loads(out)) == 1


def test_db_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "env.db"
    monkeypatch.setenv("REMD_DB", str(target))
    result = CliRunner().invoke(main, ["save", "from env"])
    assert result.exit_code == 0 and target.exists()


@pytest.mark.parametrize("args", [
    ["save", "   "], ["get", "missing"], ["history", "missing"], ["forget", "missing"],
    ["--namespace", "bad ns", "recent"],
])
def test_user_errors_exit_1_with_one_line(db_path: Path, args: list[str]) -> None:
    code, out, err = run(db_path, *args)
    assert code == 1
    assert err.startswith("Error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_not_a_database_exit_1(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("hello" * 200)
    code, _, err = run(bogus, "recent")
    assert code == 1 and "not a SQLite database" in err


def test_bad_import_exit_1(db_path: Path, tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_bytes(b'{"content": "ok"}\n\xff\xfe not utf8\n')
    code, _, err = run(db_path, "import", str(f))
    assert code == 1 and "line" in err or "UTF-8" in err
    code, out, err = run(db_path, "stats", "--json")  # the refused import created nothing
    assert code == 1 and out == "" and "no such database" in err


def test_usage_errors_exit_2(db_path: Path) -> None:
    assert run(db_path, "recent", "-n", "minus")[0] == 2
    assert run(db_path, "no-such-command")[0] == 2


def test_every_command_is_documented_in_readme() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name in main.commands:
        assert f"remd {name}" in readme or f"`{name}`" in readme, name


def test_a_read_command_on_a_missing_database_creates_nothing(db_path: Path) -> None:
    """A file that isn't there, or a PostgreSQL database without remd's tables: `no such
    database`, exit 1, nothing made; a URL's password never shows."""
    db = str(db_path).replace("postgresql://remd@", "postgresql://remd:s3cret@")
    result = CliRunner().invoke(main, ["--db", db, "recent"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: no such database: ")
    assert "s3cret" not in result.output
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM pg_tables "
                                "WHERE schemaname = current_schema()").fetchone() == (0,)
    else:
        assert not db_path.exists()
    assert CliRunner().invoke(main, ["--db", db, "save", "now it exists"]).exit_code == 0
    assert CliRunner().invoke(main, ["--db", db, "recent"]).exit_code == 0


# -- a path the command cannot use is a runtime error: exit 1, one line, no usage banner -------
def one_line(code: int, out: str, err: str) -> bool:
    return (code == 1 and out == "" and err.startswith("Error: ") and err.count("\n") == 1
            and "Usage:" not in err)


@pytest.mark.sqlite_only("paths of files")
def test_a_directory_where_a_file_belongs_exits_1(db_path: Path, tmp_path: Path) -> None:
    run(db_path, "save", "a memory to back up")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for args, said in [(["backup", str(folder)], "is a directory"),
                       (["backup", "--check", str(folder)], "no backup at"),
                       (["--config", str(folder), "recent"], "cannot read config file")]:
        code, out, err = run(db_path, *args)
        assert one_line(code, out, err) and said in err, (args, err)
    result = CliRunner().invoke(main, ["--db", str(folder), "recent"])
    assert one_line(result.exit_code, result.stdout, result.stderr)
    assert "is a directory" in result.stderr
    assert list(folder.iterdir()) == []


def test_a_database_this_user_cannot_read_exits_1(tmp_path: Path) -> None:
    """A file the user may not read: mode 0 when the tests run as a user; as root (who reads
    any file) a file of root's with mode 0600, read by user nobody (a forked child: the
    interpreter lives where nobody may not go)."""
    where = Path(tempfile.mkdtemp(prefix="remd-unreadable-"))
    try:
        where.chmod(0o755)
        db = where / "agent.db"
        assert run(db, "save", "a private memory")[0] == 0
        assert run(db, "recent")[0] == 0  # the commands' imports done, as root
        if os.geteuid() == 0:
            db.chmod(0o600)
            code, out, err = as_user("nobody", lambda: list(run(db, "recent")))
        else:
            db.chmod(0)
            code, out, err = run(db, "recent")
        assert one_line(code, out, err), err
        assert "cannot read database" in err and str(db) in err
    finally:
        shutil.rmtree(where)


# -- issue 38 row 19: remd save --at ----------------------------------------------------------
def test_save_at_dates_the_memory_as_import_does(db_path: Path) -> None:
    code, out, _ = run(db_path, "save", "The office moved to the harbour",
                       "--at", "2024-03-14T09:30:00Z")
    assert code == 0
    _, got, _ = run(db_path, "get", out.strip(), "--json")
    assert json.loads(got)["created_at"] == "2024-03-14T09:30:00.000000+00:00"
    code, out, _ = run(db_path, "save", "-", "--at", "2024-03-14", input="one\ntwo\n")
    assert code == 0
    for node_id in out.split():
        _, got, _ = run(db_path, "get", node_id, "--json")
        assert json.loads(got)["created_at"] == "2024-03-14T00:00:00.000000+00:00"
    for bad, message in [("3000-01-01", "more than a day in the future"),
                         ("yesterday", "is not ISO 8601")]:
        code, out, err = run(db_path, "save", "refused", "--at", bad)
        assert code == 1 and out == "" and message in err and err.count("\n") == 1
    _, out, _ = run(db_path, "stats", "--json")
    assert json.loads(out)["nodes"] == 3
