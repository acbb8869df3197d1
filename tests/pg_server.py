"""The suite's PostgreSQL server (benchmarks/pg_local.py), started once per session.

Each test that asks gets a fresh schema of one database (a new schema is milliseconds; a new
database is a copy of a template), named in the URL's ``search_path``, so every test starts
from an empty remd database. ``REMD_TEST_PG=0`` skips the PostgreSQL arm (a machine without the
server programs skips it too, saying why).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.pg_local import PgServer, bindir

__all__ = ["PgServer", "SuiteServer", "pg_server"]


class SuiteServer(PgServer):
    """The suite's server, which also keeps every statement text the suite sends (for
    tests/store/test_pg_routing.py): pg_stat_statements is read and reset at each new schema, so
    its table never fills."""

    def __init__(self, root: Path, bin_dir: Path) -> None:
        self.seen: set[str] = set()
        super().__init__(root, bin_dir)

    def fresh_url(self) -> str:
        self.seen |= self.statements()
        return super().fresh_url()

    def sent(self) -> set[str]:
        """Every statement text seen so far."""
        self.seen |= self.statements()
        return self.seen


@pytest.fixture(scope="session")
def pg_server() -> Iterator[SuiteServer]:
    if os.environ.get("REMD_TEST_PG") == "0":
        pytest.skip("REMD_TEST_PG=0: the PostgreSQL arm is off")
    found = bindir()
    if found is None:
        pytest.skip("no PostgreSQL server programs (pg_config --bindir) on this machine")
    root = Path(tempfile.mkdtemp(prefix="remd-pg-"))
    server = SuiteServer(root, found)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
