"""executemany of a one-row INSERT on PostgreSQL: one statement over arrays where that does
what the rows one by one do, each row otherwise (remd/store/postgres/connection.py _unnest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remd.config import StoreConfig
from remd.store.postgres.connection import _unnest
from remd.store.postgres.store import PgStore
from remd.store.postgres.translate import one_row
from tests.pg_server import SuiteServer

EDGE = ("INSERT INTO tag_edges (namespace, src, dst, count, weight) VALUES (?, ?, ?, 1, ?) "
        "ON CONFLICT (src, dst) DO UPDATE SET count = tag_edges.count + 1, "
        "weight = tag_edges.weight + (1.0 - tag_edges.weight) * ?")


def test_which_statements_go_as_one() -> None:
    assert one_row(EDGE) == (("namespace", "src", "dst", "count", "weight"), (1, 2), 4)
    assert one_row("INSERT INTO t (a) SELECT ?") is None
    assert one_row("INSERT INTO t (a, b) VALUES (?, lower(?))") is None
    rows = [["n", 1, 2, 0.5, 0.1], ["n", 2, 1, 0.5, 0.1]]
    assert _unnest(EDGE, rows) is not None
    assert _unnest(EDGE, [*rows, ["n", 1, 2, 0.5, 0.1]]) is None  # one key twice
    assert _unnest(EDGE, [rows[0], ["n", 2, 1, 0.5, 0.2]]) is None  # the tail differs
    assert _unnest(EDGE, [rows[0], ["n", 2, 1, 1, 0.1]]) is None  # int and float: no type
    plain = "INSERT INTO access_log (rid, namespace, at, pack_id) VALUES (?, ?, ?, ?)"
    assert _unnest(plain, [[1, "n", 1.0, None], [2, "n", 2.0, None]]) is None  # no type


@pytest.fixture
def pg_store(pg_server: SuiteServer) -> Iterator[PgStore]:
    store = PgStore(pg_server.fresh_url(), StoreConfig())
    yield store
    store.close()


def test_one_statement_or_row_by_row_the_rows_are_the_same(pg_store: PgStore) -> None:
    with pg_store.transaction("n") as conn:
        for name in ("a", "b", "c"):
            conn.execute("INSERT INTO tags (namespace, name, df, created_at) "
                         "VALUES ('n', ?, 0, 0)", (name,))
        tids = [int(r[0]) for r in conn.execute("SELECT tid FROM tags ORDER BY tid")]
        a, b, c = tids
        conn.executemany(EDGE, [("n", a, b, 0.5, 0.1), ("n", b, c, 0.5, 0.1)])  # one
        conn.executemany(EDGE, [("n", a, b, 0.5, 0.1), ("n", a, b, 0.5, 0.1)])  # row by row
        conn.executemany("INSERT INTO access_log (rid, namespace, at, pack_id) "
                         "VALUES (?, ?, ?, ?)", [(1, "n", 1.0, None), (2, "n", 2.0, "p")])
    got = pg_store.query("SELECT src, dst, count, weight FROM tag_edges ORDER BY src, dst")
    assert [(s, d, n) for s, d, n, _ in got] == [(a, b, 3), (b, c, 1)]
    assert got[0][3] == pytest.approx(0.5 + 0.5 * 0.1 + (1 - 0.55) * 0.1)
    assert pg_store.query("SELECT rid, pack_id FROM access_log ORDER BY rid") == [
        (1, None), (2, "p")]
