"""A PostgreSQL server that restarts under a writer (its own throwaway server, stopped and
started mid-run): the connections it broke are replaced where the statement is safe to send
again (a transaction's BEGIN, a read snapshot's first message), any other failure is a typed
StoreError (ConnectionLost while the server is gone), and no acknowledged memory is lost."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.pg_local import PgServer, bindir
from remd import Memory
from remd.errors import StoreError

pytestmark = pytest.mark.skipif(bindir() is None, reason="no PostgreSQL server programs")


@pytest.fixture
def server() -> Iterator[PgServer]:
    root = Path(tempfile.mkdtemp(prefix="remd-pgfault-"))
    srv = PgServer(root, bindir())  # type: ignore[arg-type]
    try:
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(root, ignore_errors=True)


def _restart(srv: PgServer) -> None:
    """Stop the server (fast: every session ended, committed work flushed) and start it."""
    srv._run(str(srv.bin / "pg_ctl"), "-D", str(srv.root / "data"), "-m", "fast", "-w", "stop")
    srv.start()


def test_a_restart_between_saves_is_transparent(server: PgServer) -> None:
    with Memory(server.url(), embedder=None) as m:
        first = m.save("Saved before the restart")
        m.inject("restart", 100)  # more than one pooled connection in use before
        _restart(server)  # every pooled connection is now broken
        second = m.save("Saved after the restart")  # BEGIN again on a new connection
        assert m.get(first.id).content == "Saved before the restart"  # a read: the same
        pack = m.inject("saved restart", 200, fill=True)
        assert {second.id, first.id} & {i.id for i in pack.items}


def test_a_writer_loses_no_acknowledged_memory_across_restarts(server: PgServer) -> None:
    acked: list[str] = []
    errors: list[BaseException] = []
    stop = threading.Event()
    restarted = threading.Event()
    after = []

    def writer() -> None:
        with Memory(server.url(), "faults", embedder=None) as m:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    acked.append(m.save(f"Memory number {n} of the writer").id)
                    if restarted.is_set():
                        after.append(n)
                except StoreError as exc:  # typed, never a psycopg error
                    errors.append(exc)
                except BaseException as exc:  # anything else fails the test
                    errors.append(exc)
                    raise

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    while len(acked) < 20:
        assert thread.is_alive()
        threading.Event().wait(0.05)
    for _ in range(2):
        _restart(server)
        mark = len(acked)
        while len(acked) < mark + 20:  # the writer goes on after each restart
            assert thread.is_alive(), errors
            threading.Event().wait(0.05)
    restarted.set()
    while len(after) < 5:
        threading.Event().wait(0.05)
    stop.set()
    thread.join(120)
    assert not thread.is_alive()
    assert all(isinstance(e, StoreError) for e in errors), errors
    for e in errors:  # a clear message: which database, what happened
        assert "database" in str(e), e
    with Memory(server.url(), "faults", embedder=None) as m:
        stored = {str(r[0]) for r in m.store.query(
            "SELECT id FROM nodes WHERE namespace = 'faults'")}
    assert set(acked) <= stored  # every acknowledged memory is there
