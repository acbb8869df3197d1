"""A throwaway PostgreSQL server for trying remd on PostgreSQL, for the benchmarks and for the
test suite: ``initdb`` and ``pg_ctl`` of the machine's PostgreSQL (``pg_config --bindir``) in a
directory of your choice, listening on a unix socket in that directory only (no TCP), with
trust authentication for the user ``remd``. PostgreSQL refuses to run as root: as root, the
directory is given to the ``postgres`` user and the server programs run through
``runuser -u postgres --``.

    python -m benchmarks.pg_local start /tmp/remd-pg   # prints the URL of database "remd"
    python -m benchmarks.pg_local stop /tmp/remd-pg

Both may be repeated: ``start`` on a server already running there says "already running" on
stderr, prints its URL and exits 0; ``stop`` on one that is not running says "not running" and
exits 0. Exit 1: no PostgreSQL server programs, or ``pg_ctl`` failed (its last line on stderr).

Durability is relaxed for speed, for trying and testing, never for data you keep:
``fsync=off`` and ``full_page_writes=off`` (an operating-system crash or a power cut can lose
or corrupt the whole database) and ``synchronous_commit=off`` (a commit is acknowledged before
its WAL is written: a crash of the server loses the last ones). ``stop`` is a fast shutdown,
which writes every acknowledged commit first (see docs/postgresql.md).
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote


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

    def __init__(self, root: Path, bin_dir: Path, *, start: bool = True) -> None:
        self.root = root
        self.bin = bin_dir
        self.socket_dir = root
        self._serial = itertools.count(1)
        self._as_postgres = os.geteuid() == 0
        if start:
            self.start()

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check)

    def running(self) -> bool:
        """Whether a server runs on this directory's data (``pg_ctl status`` exits 0; 3 when
        stopped, 4 when there is no data directory)."""
        return self._run(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "status",
                         check=False).returncode == 0

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
                  "-c log_min_duration_statement=-1 "
                  # statements sent, for the suite's routing check (tests/pg_routing.py)
                  "-c shared_preload_libraries=pg_stat_statements "
                  "-c pg_stat_statements.track=all -c pg_stat_statements.max=20000", "start")
        import psycopg

        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'remd'").fetchone():
                conn.execute("CREATE DATABASE remd")
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public")

    def statements(self, *, reset: bool = True) -> set[str]:
        """The texts of the statements database ``remd`` has run since the last reset
        (pg_stat_statements: constants are ``$n``); ``reset``: forget them after reading."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT query FROM public.pg_stat_statements s JOIN pg_database d"
                " ON d.oid = s.dbid WHERE d.datname = 'remd'").fetchall()
            if reset:
                conn.execute("SELECT public.pg_stat_statements_reset()")
        return {str(row[0]) for row in rows}

    def stop(self) -> None:
        """A fast shutdown: sessions are ended and a checkpoint writes everything committed,
        so no acknowledged commit is lost (``-m immediate`` is a crash to PostgreSQL: with
        ``synchronous_commit=off`` it lost the commits whose WAL was not written yet)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "fast",
                  "-w", "stop")

    def admin_url(self) -> str:
        return f"postgresql://remd@/postgres?host={quote(str(self.root))}"

    def url(self) -> str:
        """The URL of database ``remd``."""
        return f"postgresql://remd@/remd?host={quote(str(self.root))}"

    def fresh_url(self) -> str:
        """The URL of a new, empty schema."""
        return schema_url(self.url(), f"t{os.getpid()}_{next(self._serial)}", fresh=True)


def schema_url(url: str, schema: str, *, fresh: bool = False) -> str:
    """The URL of ``schema`` in the database ``url`` names (its ``search_path``), made if
    missing; ``fresh``: dropped first, with everything in it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if fresh:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    return url + ("&" if "?" in url else "?") + "options=" + quote(f"-csearch_path={schema}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.pg_local", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "stop"])
    ap.add_argument("directory", type=Path)
    args = ap.parse_args(argv)
    found = bindir()
    if found is None:
        print("no PostgreSQL server programs: pg_config --bindir", file=sys.stderr)
        return 1
    args.directory.mkdir(parents=True, exist_ok=True)
    server = PgServer(args.directory.resolve(), found, start=False)
    try:
        if args.action == "stop":
            if server.running():
                server.stop()
            else:
                print("not running", file=sys.stderr)
            return 0
        if server.running():
            print("already running", file=sys.stderr)
        else:
            server.start()
    except subprocess.CalledProcessError as exc:
        lines = (exc.stderr or "").strip().splitlines() or [str(exc)]
        print(lines[-1], file=sys.stderr)
        return 1
    print(server.url())
    return 0


if __name__ == "__main__":
    sys.exit(main())
