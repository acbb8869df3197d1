"""Every SQL statement in remd's source (tests/sql_statements.py) in both dialects: SQLite prepares
it (EXPLAIN on a migrated database, extensions loaded), and, translated
(remd.store.postgres.translate.translate), sqlglot parses it as PostgreSQL and the suite's
PostgreSQL server prepares it (PREPARE on a migrated schema: unknown tables, columns, functions
and types are errors), both as sent and with its IN lists as arrays (how a snapshot's reads go).
A statement that runs on one store only is named below with the reason; one that neither can
read whole (a fragment completed at run time) is counted, not checked."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from remd.config import StoreConfig
from remd.errors import StoreError
from remd.store.postgres.store import PgStore
from remd.store.postgres.translate import _Masked, as_arrays, translate
from remd.store.sqlite.store import Store
from tests.pg_server import SuiteServer
from tests.sql_statements import Statement, statements

# Statements of the SQLite store only (a regular expression on the text) and why.
SQLITE_ONLY: dict[str, str] = {
    r"\bnode_fts\b": "FTS5, SQLite's full-text index (PostgreSQL: node_terms, remd.index.lexical)",
    r"\bvec_distance_cosine\(": "sqlite-vec's exact scan (PostgreSQL: remd.index.vectors)",
    r"FROM remd_migrations ORDER BY rowid": "SQLite's migration record (remd.store.sqlite.store)",
    r"\bsqlite_master\b": "SQLite's catalog: is this file a remd database "
                          "(remd.store.sqlite.store)",
    r"\bremd_int8\(": "a SQLite migration's own function (remd.store.sqlite.schema)",
}
# Statements of the PostgreSQL store only and why.
PG_ONLY: dict[str, str] = {
    r"\b(node_terms|node_terms_len|fts_stats)\b":
        "PostgreSQL's full-text index, BM25 in SQL (remd.index.lexical)",
    r"= ANY\(\?\)": "an array parameter: PostgreSQL's exact vector scan (remd.index.vectors)",
    r"\b(pg_advisory_xact_lock|to_regclass|pg_tables)\b":
        "the PostgreSQL store's write lock and migrations (remd.store.postgres.store)",
    r"\bhas_table_privilege\(": "may this role write: the PostgreSQL store's readiness "
                                 "(remd.store.postgres.store)",
    r"^SELECT name FROM remd_migrations ORDER BY seq$":
        "the PostgreSQL store's migration record (remd.store.postgres.store)",
    r"^SELECT 1 FROM (tag|node)_log WHERE namespace = \?":
        "PostgreSQL's change logs name the namespace (remd.index.changelog)",
}


def _names(sql: str, table: dict[str, str]) -> bool:
    return any(re.search(pattern, sql) for pattern in table)


def _sqlite_error(conn: Any, sql: str) -> str | None:
    try:
        conn.execute("EXPLAIN " + sql, (None,) * _Masked(sql).code.count("?")).fetchall()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _numbered(sql: str) -> str:
    """psycopg's text (``%s``, ``%%``) as the server reads a prepared statement (``$n``)."""
    count = iter(range(1, 10_000))
    return re.sub(r"%%|%s", lambda m: "%" if m.group() == "%%" else f"${next(count)}", sql)


def _pg_error(conn: Any, sql: str) -> str | None:
    import psycopg

    try:
        sqlglot.parse(sql, read="postgres")
    except sqlglot.errors.SqlglotError as exc:
        return f"sqlglot: {str(exc)[:200]}"
    try:
        conn.execute(f"PREPARE remd_check AS {_numbered(sql)}")
        conn.execute("DEALLOCATE remd_check")
    except psycopg.Error as exc:
        return f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    return None


@pytest.fixture
def sqlite_conn(tmp_path: Path) -> Iterator[Any]:
    store = Store(tmp_path / "agent.db", StoreConfig())
    with store.connection() as conn:
        # the function a SQLite migration defines for its own statement (remd.store.sqlite.schema)
        conn.create_scalar_function("remd_int8", lambda blob: blob, 1)
        yield conn
    store.close()


@pytest.fixture
def pg_conn(pg_server: SuiteServer) -> Iterator[Any]:
    import psycopg

    pg_server.sent()  # what the suite sent so far is kept for tests/store/test_pg_routing.py ...
    url = pg_server.fresh_url()
    PgStore(url, StoreConfig()).close()
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn
    pg_server.statements()  # ... and this test's PREPAREs are not


@pytest.mark.slow
def test_every_statement_works_in_both_dialects(sqlite_conn: Any, pg_conn: Any) -> None:
    found = statements()
    checked = {"both": 0, "sqlite": 0, "postgresql": 0}
    bad: list[str] = []
    unread: list[str] = []
    for stmt in found:
        verdict = _verdict(sqlite_conn, pg_conn, stmt)
        if verdict in checked:
            checked[verdict] += 1
        elif verdict == "unread":
            unread.append(f"{stmt.where}: {stmt.forms[0][:100]!r}")
        else:
            bad.append(f"{stmt.where}: {verdict}")
    print(f"\n{len(found)} statements: {checked['both']} checked in both dialects, "
          f"{checked['sqlite']} SQLite only, {checked['postgresql']} PostgreSQL only, "
          f"{len(unread)} fragments not checked:\n" + "\n".join(unread))
    assert not bad, "\n".join(bad)
    assert checked["both"] >= 200, checked  # 207 when written
    assert len(unread) <= 5, "\n".join(unread)


def _verdict(sqlite_conn: Any, pg_conn: Any, stmt: Statement) -> str:
    """'both', 'sqlite', 'postgresql' (checked where it belongs), 'unread' (a fragment) or
    what is wrong."""
    first_sqlite: str | None = None
    first_pg: str | None = None
    for form in stmt.forms:
        lite = _sqlite_error(sqlite_conn, form) is None
        pg = _check_pg(pg_conn, form)
        if lite and pg is not None and _names(form, SQLITE_ONLY):
            return "sqlite"
        if lite and pg is None:
            return "both"
        if pg is None and _names(form, PG_ONLY):
            return "postgresql"
        first_sqlite = first_sqlite or (form if lite else None)
        first_pg = first_pg or (form if pg is None else None)
    if first_sqlite is not None:
        return f"PostgreSQL: {_check_pg(pg_conn, first_sqlite)} in {first_sqlite[:160]!r}"
    if first_pg is not None:
        return f"SQLite: {_sqlite_error(sqlite_conn, first_pg)} in {first_pg[:160]!r}"
    return "unread"


_TYPING = ("IndeterminateDatatype", "AmbiguousFunction")
_ARITHMETIC = re.compile(r"(?<=[-+*/] )%s|%s(?= [-+*/])")


def _check_pg(conn: Any, sql: str) -> str | None:
    try:
        sent = translate(sql, "?" in _Masked(sql).code)
    except StoreError as exc:
        return str(exc)
    error = _pg_error(conn, sent)
    if error is not None and error.startswith(_TYPING):
        # a parameter PostgreSQL can't type alone (``? * ?``): remd binds client-side, a
        # float as (0.5::float8); the parameters in arithmetic are prepared so
        error = _pg_error(conn, _ARITHMETIC.sub("(%s::float8)", sent))
    if error is None and sent.lstrip().startswith(("SELECT", "WITH")):
        arrays, _ = as_arrays(sent)
        if arrays != sent:
            error = _pg_error(conn, arrays)
    return error
