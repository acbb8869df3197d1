"""``AsyncMemory``: :class:`remd.Memory`'s methods as coroutines, for async agent frameworks.

There is one implementation: each coroutine runs the ``Memory`` method of the same name on
the engine's bounded thread pool (:attr:`remd.engine.Engine.executor`, as many threads as
the store has connections), so SQLite work never blocks the event loop and concurrency is
capped by the pool. The methods are generated from ``Memory`` (:data:`METHODS`), with its
signatures and docstrings, so the two can't drift apart.

Cancellation: cancelling an awaiting task stops the wait, not the call. The call runs on to
its end in its thread, and each call's transactions are all or nothing, so a cancelled save
or inject is either fully written or not at all. When the engine closes (its last user
lets go), calls still running finish first.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from remd.memory import Memory
from remd.models import Node, Stats
from remd.query.feedback import FeedbackResult
from remd.query.pack import Pack
from remd.sleep.remruns import RemRun
from remd.sleep.rollback import RollbackResult
from remd.sleep.triggers import TriggerReport
from remd.write.exchange import ImportResult

__all__ = ["METHODS", "AsyncMemory"]

METHODS = ("save", "save_many", "inject", "feedback", "get", "recent", "history", "forget",
           "stats", "nearest", "triggers", "run_rem", "rollback", "import_lines",
           "embed_pending")


class AsyncMemory:
    """A namespace of a remd file, with coroutine methods (see the module docstring).

    ``AsyncMemory(path, namespace, ...)`` takes ``Memory``'s arguments;
    ``AsyncMemory.wrap(memory)`` serves an open ``Memory`` (which the caller closes).
    """

    # Generated below from Memory's methods of the same names (typed here for callers).
    save: Callable[..., Awaitable[Node]]
    save_many: Callable[..., Awaitable[list[str]]]
    inject: Callable[..., Awaitable[Pack]]
    feedback: Callable[..., Awaitable[FeedbackResult]]
    get: Callable[..., Awaitable[Node]]
    recent: Callable[..., Awaitable[list[Node]]]
    history: Callable[..., Awaitable[list[Node]]]
    forget: Callable[..., Awaitable[Node]]
    stats: Callable[..., Awaitable[Stats]]
    nearest: Callable[..., Awaitable[list[tuple[Node, float]]]]
    triggers: Callable[..., Awaitable[TriggerReport]]
    run_rem: Callable[..., Awaitable[RemRun]]
    rollback: Callable[..., Awaitable[RollbackResult]]
    import_lines: Callable[..., Awaitable[ImportResult]]
    embed_pending: Callable[..., Awaitable[int]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.memory = Memory(*args, **kwargs)
        self._owns = True

    @classmethod
    def wrap(cls, memory: Memory) -> AsyncMemory:
        self = cls.__new__(cls)
        self.memory = memory
        self._owns = False
        return self

    @property
    def namespace(self) -> str:
        return self.memory.namespace

    async def close(self) -> None:
        """Let go of the file (off the event loop); if this was the engine's last user, calls
        still running finish before it closes."""
        if self._owns:
            await asyncio.to_thread(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, et: type[BaseException] | None, ev: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()


def _coroutine(name: str) -> Callable[..., Awaitable[Any]]:
    sync = getattr(Memory, name)

    @functools.wraps(sync)
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self.memory.engine.run_async(getattr(self.memory, name), *args,
                                                  **kwargs)

    return method


for _name in METHODS:
    setattr(AsyncMemory, _name, _coroutine(_name))
