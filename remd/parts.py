"""The engine as its wings see it: the parts of one open file (config, clock, store, token
counter, caches, telemetry, embedder, background thread, helper slots) that ``remd/write``,
``remd/query`` and ``remd/sleep`` are handed. :class:`remd.engine.Engine` has them all; the wings
type against this, so they sit below the engine and never import it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from remd.config import Config
from remd.index.caches import Caches
from remd.store.seam import Store
from remd.telemetry import Telemetry
from remd.text.embed import Embedder, Vectors
from remd.text.tokens import TokenCounter

S = TypeVar("S", bound="Service")


class Service(Protocol):
    """A helper an engine keeps for its wings (the LLM tagger, the update judge): made once,
    told to stop waiting before the engine's background thread is joined, closed with it."""

    def interrupt(self) -> None: ...

    def close(self) -> None: ...


class Parts(Protocol):
    config: Config
    clock: Callable[[], float]
    store: Store
    counter: TokenCounter
    caches: Caches
    telemetry: Telemetry
    tokens_exact: bool  # every stored token count is in this config's encoding

    @property
    def embedder(self) -> Embedder | None: ...

    @property
    def embeds(self) -> bool: ...

    def query_vector(self, text: str) -> Vectors | None: ...

    def in_background(self, fn: Callable[..., Any], *args: Any) -> None: ...

    def service(self, name: str, make: Callable[[Config], S | None]) -> S | None: ...
