"""The PostgreSQL contract: a URL that can't connect (nothing listening on the port, a database
or role that does not exist, a bad sslmode, a server that went down) is a StoreError naming
the cause, host and port, never the password, and never a busy error (PoolExhausted) that tells
the caller to retry; the CLI, ``serve`` and ``mcp`` exit 1 with that one line. And
``benchmarks.pg_local`` start/stop may be repeated. Real servers: the suite's, and throwaway
ones in temporary directories."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from benchmarks.pg_local import PgServer, bindir
from remd import Memory
from remd.config import Config
from remd.errors import DatabaseLocked, StoreError
from tests.pg_server import SuiteServer

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
PASSWORD = "Pw-s3cret-77"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bad_urls(server: SuiteServer) -> dict[str, tuple[str, str, str]]:
    """Each case: (URL with a password, the cause its error names, where it points)."""
    port = _free_port()
    host = quote(str(server.root))
    on_socket = f"?host={host}&port=5432"
    return {
        "refused": (f"postgresql://remd:{PASSWORD}@127.0.0.1:{port}/remd",
                    "connection refused", f"127.0.0.1:{port}"),
        "no database": (f"postgresql://remd:{PASSWORD}@/nodb_x1{on_socket}",
                        'database "nodb_x1" does not exist', f"host={server.root}&port=5432"),
        "no role": (f"postgresql://nobody_x1:{PASSWORD}@/remd{on_socket}",
                    'role "nobody_x1" does not exist', f"host={server.root}&port=5432"),
        "sslmode": (f"postgresql://remd:{PASSWORD}@/remd{on_socket}&sslmode=bogus",
                    "invalid sslmode", f"host={server.root}&port=5432"),
    }


CASES = ["refused", "no database", "no role", "sslmode"]


@pytest.mark.parametrize("case", CASES)
def test_a_url_that_cannot_connect_is_a_store_error_naming_the_cause(
        pg_server: SuiteServer, case: str) -> None:
    url, cause, where = _bad_urls(pg_server)[case]
    with pytest.raises(StoreError) as raised:
        Memory(url, embedder=None)
    error = raised.value
    message = str(error)
    assert not isinstance(error, DatabaseLocked), message  # not "busy: retry later"
    assert cause.lower() in message.lower()  # libpq writes "Connection refused"
    assert where in message and "\n" not in message
    assert PASSWORD not in message


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")}
    return {**env, "REMD_EMBED__PROVIDER": "none"}


@pytest.mark.parametrize("case", ["refused", "no database"])
@pytest.mark.parametrize("command", [["stats"], ["serve"], ["mcp"]])
@pytest.mark.slow
def test_cli_serve_and_mcp_refuse_a_url_that_cannot_connect_with_one_line(
        pg_server: SuiteServer, case: str, command: list[str]) -> None:
    url, cause, where = _bad_urls(pg_server)[case]
    done = subprocess.run([*REMD, "--db", url, *command], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=_env(), timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("Error: cannot connect to ") and done.stderr.count("\n") == 1, \
        done.stderr
    assert cause in done.stderr.lower() and where in done.stderr
    assert PASSWORD not in done.stderr


@pytest.fixture
def own_root() -> Iterator[Path]:
    """A short temporary directory for a throwaway server (a unix socket path is limited to
    ~100 characters), removed afterwards with the server stopped."""
    if bindir() is None:
        pytest.skip("no PostgreSQL server programs (pg_config --bindir) on this machine")
    root = Path(tempfile.mkdtemp(prefix="remd-pgc-"))
    try:
        yield root
    finally:
        subprocess.run([sys.executable, "-m", "benchmarks.pg_local", "stop", str(root)],
                       capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def test_a_server_gone_after_open_is_a_store_error_not_busy(own_root: Path) -> None:
    found = bindir()
    assert found is not None
    server = PgServer(own_root, found)
    config = Config.model_validate({"store": {"pool_wait_ms": 200}})
    url = server.url().replace("remd@", f"remd:{PASSWORD}@")
    with Memory(url, config=config, embedder=None) as m:
        m.save("saved before the server went away")
        server.stop()
        seen = []
        for _ in range(3):  # the pooled connection breaks, then the pool can't make another
            with pytest.raises(StoreError) as raised:
                m.recent()
            seen.append(raised.value)
    assert not any(isinstance(e, DatabaseLocked) for e in seen), [str(e) for e in seen]
    assert str(seen[-1]).startswith("cannot connect to ") and "No such file" in str(seen[-1])
    assert all(PASSWORD not in str(e) and "\n" not in str(e) for e in seen)


def test_pg_local_start_and_stop_may_be_repeated(own_root: Path) -> None:
    def pg_local(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "benchmarks.pg_local", action,
                               str(own_root)], capture_output=True, text=True, timeout=120)

    first = pg_local("start")
    assert first.returncode == 0, first.stderr
    url = first.stdout.strip()
    assert url.startswith("postgresql://remd@/remd?host=")
    again = pg_local("start")
    assert (again.returncode, again.stdout.strip(), again.stderr) == (0, url,
                                                                      "already running\n")
    assert pg_local("stop").returncode == 0
    stopped = pg_local("stop")
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (0, "", "not running\n")
    restarted = pg_local("start")
    assert restarted.returncode == 0 and restarted.stdout.strip() == url, restarted.stderr
