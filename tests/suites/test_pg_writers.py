"""Writes on PostgreSQL are serialised per namespace (remd/store/postgres/locks.py): writers on two
namespaces hold their transactions at once; two on one namespace take turns, and fact
supersession stays exact; a transaction naming no namespace waits for every writer.

No timing assertions: a writer that must wait is seen waiting in pg_locks (an advisory lock
not granted) before the transaction it waits for commits."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from remd import Memory
from tests.pg_server import PgServer

JOIN = 120  # seconds a thread may take: only a hung test ever waits this long


@pytest.fixture
def url(pg_server: PgServer) -> Iterator[str]:
    fresh = pg_server.fresh_url()
    with Memory(fresh, embedder=None) as m:  # the schema, before anyone races to create it
        m.store.schema_version()
    yield fresh


def _waiting(url: str) -> int:
    """Backends waiting for an advisory lock."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks "
                           "WHERE locktype = 'advisory' AND NOT granted").fetchone()
    assert row is not None
    return int(row[0])


class _Run(threading.Thread):
    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.fn, self.result, self.error = fn, None, None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # handed to the test
            self.error = exc

    def finished(self) -> Any:
        self.join(JOIN)
        assert not self.is_alive(), "the writer never finished"
        if self.error is not None:
            raise self.error
        return self.result


def _until_waiting(url: str, run: _Run, n: int = 1) -> None:
    """Until ``n`` backends wait for an advisory lock (the writer of ``run`` is queued)."""
    deadline = time.monotonic() + JOIN
    while _waiting(url) < n:
        assert run.is_alive(), "the writer did not wait"
        assert time.monotonic() < deadline, "the writer never queued"
        time.sleep(0.02)


def test_writers_on_two_namespaces_hold_transactions_at_once(url: str) -> None:
    with Memory(url, "alpha", embedder=None) as a, Memory(url, "beta", embedder=None) as b:
        with a.store.transaction("alpha") as conn:
            conn.execute("UPDATE remd_meta SET value = value WHERE key = 'nothing'")
            # alpha's transaction is open and holds its lock: beta's save commits meanwhile
            saved = _Run(lambda: b.save("Saved in beta while alpha's transaction is open"))
            node = saved.finished()
            assert conn.in_transaction
        assert b.get(node.id).content.startswith("Saved in beta")
        assert _waiting(url) == 0


def test_writers_on_one_namespace_take_turns(url: str) -> None:
    with Memory(url, "alpha", embedder=None) as a, Memory(url, "alpha", embedder=None) as a2:
        with a.store.transaction("alpha") as conn:
            conn.execute("UPDATE remd_meta SET value = value WHERE key = 'nothing'")
            saved = _Run(lambda: a2.save("Saved once the first writer committed"))
            _until_waiting(url, saved)  # queued behind alpha's lock, not done
            assert saved.is_alive()
        node = saved.finished()
        assert a.get(node.id).status.value == "live"


def test_a_transaction_naming_no_namespace_waits_for_every_writer(url: str) -> None:
    with Memory(url, "alpha", embedder=None) as a, Memory(url, "beta", embedder=None) as b:
        with a.store.transaction("alpha"):
            everyone = _Run(lambda: _global_write(b))
            _until_waiting(url, everyone)
            assert everyone.is_alive()
        everyone.finished()
        # and every namespace's writer waits for it
        with a.store.transaction():
            saved = _Run(lambda: b.save("After the database-wide transaction"))
            _until_waiting(url, saved)
            assert saved.is_alive()
        saved.finished()


def _global_write(m: Memory) -> None:
    with m.store.transaction() as conn:
        conn.execute("UPDATE remd_meta SET value = value WHERE key = 'nothing'")


def test_a_nested_transaction_takes_the_lock_its_outer_one_lacks(url: str) -> None:
    with Memory(url, "alpha", embedder=None) as a, Memory(url, "beta", embedder=None) as b:
        with a.store.transaction("alpha"):
            with a.store.transaction("beta"):  # now holds beta's lock too
                saved = _Run(lambda: b.save("Waits for the nested beta lock"))
                _until_waiting(url, saved)
            assert saved.is_alive()  # a savepoint's end releases no lock
        saved.finished()


def test_two_writers_on_one_namespace_supersede_exactly(url: str) -> None:
    per_writer = 15
    cities = [f"{a}{b}ville" for a in "BCDFGHKLMNPRST" for b in "aeiou"]

    def writer(no: int) -> list[str]:
        with Memory(url, "shared", embedder=None) as m:
            return [m.save(f"My city is {cities[no * per_writer + i]}").id
                    for i in range(per_writer)]

    runs = [_Run(lambda no=no: writer(no)) for no in range(2)]  # type: ignore[misc]
    acked = [i for r in runs for i in r.finished()]
    assert len(set(acked)) == 2 * per_writer
    with Memory(url, "shared", embedder=None) as m:
        rows = m.store.query("SELECT id, status FROM nodes WHERE namespace = 'shared' "
                             "AND fact_key IS NOT NULL")
        status = {str(i): str(s) for i, s in rows}
        assert set(status) == set(acked)  # every acknowledged memory present
        assert sorted(status.values()).count("live") == 1
        assert sum(1 for s in status.values() if s == "superseded") == 2 * per_writer - 1
        edges = m.store.query("SELECT src, dst FROM edges WHERE namespace = 'shared' "
                              "AND type = 'SUPERSEDES'")
        # each memory superseded exactly once, by exactly one newer one: one chain
        assert len(edges) == 2 * per_writer - 1
        assert len({d for _, d in edges}) == len(edges)
        assert len({s for s, _ in edges}) == len(edges)
