"""The engine under Memory: one per file per process, a bounded pool shared by every
namespace, caches within one memory budget, set-based trigger evaluation."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from remd import Config, Memory, StoreError
from remd.errors import PoolExhausted
from remd.service.daemon import Daemon
from remd.sleep.triggers import evaluate, evaluate_all
from tests.helpers import hogged

pytestmark = pytest.mark.backends

NOW = 1_750_000_000.0
DAY = 86400.0


def _config(**sections: dict[str, object]) -> Config:
    return Config.model_validate(sections)


def test_memories_on_one_file_share_one_engine(db_path: Path) -> None:
    a = Memory(db_path, "a", embedder=None)
    b = Memory(db_path, "b", embedder=None)
    assert a.engine is b.engine
    other = Memory(db_path, "a", embedder=None, config=_config(store={"max_connections": 2}))
    assert other.engine is not a.engine  # another config is another engine
    other.close()
    a.save("alpha")
    a.close()
    assert [n.content for n in Memory(db_path, "a", engine=b.engine).recent()] == ["alpha"]
    assert b.recent() == []  # nothing crosses namespaces
    store = b.store
    b.close()  # the last user: the engine closes
    with pytest.raises(StoreError, match="closed"):
        store.query("SELECT 1")


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.slow
def test_many_namespaces_share_a_bounded_pool(db_path: Path) -> None:
    """300 namespaces used from 8 threads: connections, file descriptors and caches follow
    the pool and the budget, not the number of namespaces."""
    config = _config(store={"max_connections": 3}, engine={"cache_mb": 1})
    Memory(db_path, config=config, embedder=None).close()
    before = _fds()

    def work(i: int) -> int:
        with Memory(db_path, f"ns{i}", config=config, embedder=None) as m:
            m.save(f"note {i} about the garden tomatoes and the harbour ferry")
            pack = m.inject("garden tomatoes", 100)
            assert [item.content for item in pack.items] == [
                f"note {i} about the garden tomatoes and the harbour ferry"]
            return len(pack.items)

    with Memory(db_path, "keeper", config=config, embedder=None) as keeper, \
            ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(work, range(300))) == 300
        engine = keeper.engine
        assert engine.store.opened <= 3
        assert _fds() - before <= 3 * 4  # a connection holds the file, its WAL and shm
        assert engine.caches.total_bytes <= 1 << 20
        assert engine.caches.evicted > 0 and len(engine.caches) < 300


def test_a_pool_with_no_free_connection_answers_busy(db_path: Path) -> None:
    config = _config(store={"max_connections": 1, "pool_wait_ms": 50})
    with Memory(db_path, config=config, embedder=None) as m:
        m.save("the only memory")
        with hogged(m.store), pytest.raises(PoolExhausted, match="connections .* are in use"):
            m.save("refused while every connection is leased")
        assert [n.content for n in m.recent()] == ["the only memory"]  # nothing written
        m.save("accepted once one is free")


def test_the_cache_budget_drops_least_recently_used_namespaces(db_path: Path) -> None:
    config = _config(engine={"cache_mb": 0.05})
    with Memory(db_path, "ns0", config=config, embedder=None) as m:
        packs = {}
        for i in range(12):
            mem = Memory.bound(m.engine, f"ns{i}")
            mem.save_many([f"memory {j} of namespace {i}: kayak river {j}" for j in range(40)])
            packs[i] = [it.id for it in mem.inject("kayak river", 200).items]
        caches = m.engine.caches
        assert caches.evicted > 0
        assert len(caches) < 12
        # Dropped views reload exactly: the same packs come back.
        for i in range(12):
            assert [it.id for it in Memory.bound(m.engine, f"ns{i}").inject(
                "kayak river", 200).items] == packs[i]


def test_evaluate_all_agrees_with_each_namespace(db_path: Path) -> None:
    with Memory(db_path, "busy", clock=lambda: NOW - 10 * DAY, embedder=None) as m:
        m.save_many([f"fragment {i} about the Falcon deploy" for i in range(40)])
        m.inject("Falcon deploy", 100)
        Memory.bound(m.engine, "quiet").save("I water the basil on Sundays")
        contradicted = Memory.bound(m.engine, "torn")
        first = contradicted.save("The office opens at nine")
        contradicted.save(f"The office opens at ten, not nine [[contradicts:{first.id}]]")
        config = _config(triggers={"max_live_nodes": 30, "idle_hours": 1})
    with Memory(db_path, "busy", config=config, embedder=None) as m:
        every = evaluate_all(m.engine, NOW)
        assert [r.namespace for r in every] == ["busy", "quiet", "torn"]
        for report in every:
            assert report == evaluate(m.engine, report.namespace, NOW)
        busy = {c.reason.value: c for c in every[0].checks}
        assert busy["node_count"].fired and busy["idle"].fired
        assert busy["retrieval_quality"].value is not None


def test_a_tick_embeds_the_backlog_of_every_namespace(db_path: Path) -> None:
    with Memory(db_path, "a", embedder=None) as m:
        m.save_many(["the boiler was serviced in March", "the car needs new tyres"],
                    embed=False)
        Memory.bound(m.engine, "b").save_many(["my sister lives in Porto"], embed=False)
    daemon = Daemon(db_path, Config(), clock=lambda: NOW, env={})
    try:
        report = daemon.tick(NOW)
    finally:
        daemon.close()
    assert report.embedded == 3
    with Memory(db_path, "b") as b:
        assert b.stats().pending_embeddings == 0
        assert [n.content for n, _ in b.nearest("where does my sister live?", 1)] == [
            "my sister lives in Porto"]


def test_an_unhashable_clock_is_accepted_and_shared_by_identity(tmp_path: Path) -> None:
    from dataclasses import dataclass

    @dataclass
    class Clock:  # eq=True and not frozen: instances are unhashable
        now: float

        def __call__(self) -> float:
            return self.now

    clock = Clock(1_700_000_000.0)
    with Memory(tmp_path / "c.db", clock=clock) as a, Memory(tmp_path / "c.db", clock=clock) as b:
        assert a.engine is b.engine
        assert a.save("saved at the clock's time").created_at == 1_700_000_000.0
        with Memory(tmp_path / "c.db", clock=Clock(5.0)) as c:
            assert c.engine is not a.engine
