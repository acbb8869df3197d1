"""AsyncMemory (issue 21, its async part): Memory's methods as coroutines on the engine's
bounded executor. Real SQLite file, real embedder, real tokenizer."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from remd import AsyncMemory, Memory
from remd.async_memory import METHODS
from remd.errors import InvalidInput, NotFound
from remd.text.tokens import TokenCounter

pytestmark = pytest.mark.backends


def test_every_method_is_a_coroutine_with_memorys_signature() -> None:
    for name in METHODS:
        method = getattr(AsyncMemory, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(Memory, name)), name
        assert method.__doc__ == getattr(Memory, name).__doc__


def test_fifty_concurrent_coroutines_save_and_inject_within_budget(tmp_path: Path) -> None:
    counter = TokenCounter("o200k_base")

    async def main() -> tuple[list[str], list[tuple[int, int, str]]]:
        async with AsyncMemory(tmp_path / "a.db") as mem:
            async def agent(i: int) -> tuple[str, tuple[int, int, str]]:
                node = await mem.save(f"Project {i} ships on day {i} of the sprint; "
                                      f"it uses queue number {i * 7}.")
                budget = 16 + i
                pack = await mem.inject(f"When does project {i} ship?", budget)
                return node.id, (budget, pack.tokens_used, pack.text)

            results = await asyncio.gather(*(agent(i) for i in range(50)))
            ids = [r[0] for r in results]
            stats = await mem.stats()
            assert stats.live == 50
            return ids, [r[1] for r in results]

    ids, packs = asyncio.run(main())
    assert len(set(ids)) == 50  # every save landed, once
    with Memory(tmp_path / "a.db", embedder=None) as m:
        assert {n.id for n in m.recent(100)} == set(ids)
        assert m.store.scalar("SELECT count(*) FROM packs") == 50
    for budget, used, text in packs:
        assert used <= budget and used == counter.count(text)


def test_errors_are_raised_from_the_coroutine(tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncMemory(tmp_path / "e.db", embedder=None) as mem:
            with pytest.raises(InvalidInput):
                await mem.save("   ")
            with pytest.raises(NotFound):
                await mem.get("nosuch")
            assert (await mem.stats()).live == 0  # nothing written by the refused save

    asyncio.run(main())


def test_a_cancelled_inject_leaves_the_file_consistent(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with Memory(db) as m:
        m.save_many([f"Note {i}: the deploy of service {i} moved to Friday." for i in range(200)])

    async def main() -> int:
        async with AsyncMemory(db) as mem:
            tasks = [asyncio.create_task(mem.inject(f"deploy of service {i}", 400))
                     for i in range(20)]
            await asyncio.sleep(0)  # let them start
            for t in tasks[::2]:
                t.cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            cancelled = sum(isinstance(r, asyncio.CancelledError) for r in done)
            assert cancelled > 0
            await mem.save("written after the cancellations")
            return cancelled
        # close() waited for the calls still running in their threads

    asyncio.run(main())
    with Memory(db, embedder=None) as m:
        assert m.store.scalar("PRAGMA integrity_check") == "ok"
        # Every recorded pack has all of its items: no half-written inject.
        for pack_id, tokens in m.store.query("SELECT pack_id, tokens_used FROM packs"):
            items = m.store.query("SELECT tokens FROM pack_items WHERE pack_id = ?", (pack_id,))
            assert (items or tokens == 0) and tokens <= 400
        assert m.store.scalar("SELECT count(*) FROM packs") <= 20
        assert m.recent(1)[0].content == "written after the cancellations"


def test_wrap_serves_an_open_memory_and_leaves_it_open(tmp_path: Path) -> None:
    with Memory(tmp_path / "w.db", embedder=None) as m:
        async def main() -> str:
            mem = AsyncMemory.wrap(m)
            node = await mem.save("I prefer tea")
            await mem.close()  # not its Memory: still open
            return node.id

        node_id = asyncio.run(main())
        assert m.get(node_id).content == "I prefer tea"
