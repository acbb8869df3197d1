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

__all__ = ["PgServer", "pg_server"]


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
