"""A real PostgreSQL server for the suite: ``initdb`` and ``pg_ctl`` in a temporary directory,
listening on a unix socket only, started once per session.

PostgreSQL refuses to run as root, so when the tests run as root the directory is given to the
``postgres`` user and the server programs run through ``runuser -u postgres --``. Each test
that asks gets a fresh schema of one database (a new schema is milliseconds; a new database is
a copy of a template), named in the URL's ``search_path``, so every test starts from an empty
remd database.

``REMD_TEST_PG=0`` skips the PostgreSQL arm (a machine without the server programs skips it
too, saying why).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest


def bindir() -> Path | None:
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(out)
    return path if (path / "pg_ctl").exists() else None


class PgServer:
    """One running server; :meth:`fresh_url` gives an empty schema's URL."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.root = root
        self.bin = bin_dir
        self.socket_dir = root
        self._serial = itertools.count(1)
        self._as_postgres = os.geteuid() == 0
        self.start()

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=True)

    def start(self) -> None:
        if self._as_postgres:
            shutil.chown(self.root, "postgres")
        data = self.root / "data"
        if not data.exists():
            self._run(str(self.bin / "initdb"), "-D", str(data), "-A", "trust", "-U", "remd",
                      "--no-sync", "-E", "UTF8", "--locale=C")
        self._run(str(self.bin / "pg_ctl"), "-D", str(data), "-w", "-l",
                  str(self.root / "log"), "-o",
                  f"-k {self.root} -c listen_addresses='' -c fsync=off "
                  "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
                  "-c log_min_duration_statement=-1", "start")
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'remd'").fetchone():
                conn.execute("CREATE DATABASE remd")

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate",
                  "stop")

    def admin_url(self) -> str:
        return f"postgresql://remd@/postgres?host={quote(str(self.root))}"

    def url(self, schema: str | None = None) -> str:
        base = f"postgresql://remd@/remd?host={quote(str(self.root))}"
        if schema is None:
            return base
        return base + "&options=" + quote(f"-csearch_path={schema}")

    def fresh_url(self) -> str:
        """The URL of a new, empty schema."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._serial)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return self.url(name)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if os.environ.get("REMD_TEST_PG") == "0":
        pytest.skip("REMD_TEST_PG=0: the PostgreSQL arm is off")
    found = bindir()
    if found is None:
        pytest.skip("no PostgreSQL server programs (pg_config --bindir) on this machine")
    root = Path(tempfile.mkdtemp(prefix="remd-pg-"))
    server = PgServer(root, found)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
