"""What the long-running front ends share (``remd serve`` with its HTTP API, ``remd mcp``):
the one engine they serve every namespace from, the secrets their logs mask, and the start-up
heap freeze.

:class:`EngineHost` holds the process's engine for the served file. Requests lease it for
their duration (a namespace is a parameter, not a connection: the engine's bounded pool is
shared by all of them). A SIGHUP reload swaps in an engine built from the new config; the old
one closes when the last request using it is done.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import SecretStr

from remd.config import Config
from remd.engine import Engine, open_engine
from remd.text.embed import Embedder, make_embedder


class EngineHost:
    """The engine a front end serves from, swappable at run time. Thread-safe.

    Raises StoreError (SchemaVersionError, ...) from the constructor when the file can't be
    used, so a bad path is reported at start.
    """

    def __init__(self, db: str | Path, config: Config, *, embedder: Embedder | None,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = str(db)
        self.clock = clock
        self._lock = threading.Lock()
        self._engine: Engine | None = open_engine(db, config, embedder=embedder or None,
                                                  clock=clock)

    @property
    def engine(self) -> Engine:
        engine = self._engine
        if engine is None:
            raise RuntimeError("the engine host is closed")
        return engine

    @property
    def config(self) -> Config:
        return self.engine.config

    @property
    def where(self) -> str:
        """Where the served database is, as logs may show it (a URL without its password)."""
        return self.engine.store.where

    @contextlib.contextmanager
    def lease(self) -> Iterator[Engine]:
        """The current engine, kept open for the block even if a reload replaces it."""
        with self._lock:
            engine = self.engine
            engine.acquire()
        try:
            yield engine
        finally:
            engine.release()

    def reconfigure(self, config: Config, embedder: Embedder | None) -> None:
        """Serve from an engine built with ``config`` from now on (requests in flight finish
        on the old one, which closes after them). Raises StoreError."""
        fresh = open_engine(self.db, config, embedder=embedder or None, clock=self.clock)
        with self._lock:
            old, self._engine = self._engine, fresh
        if old is not None:
            fresh.telemetry.absorb(old.telemetry)  # the counters a scraper sees never go back
            old.release()

    def close(self) -> None:
        with self._lock:
            old, self._engine = self._engine, None
        if old is not None:
            old.release()


class Throttle:
    """At most one log line per cause per ``interval`` seconds: an overloaded server (no file
    descriptors left, every connection leased) fails the same way thousands of times a
    second, and a log line each would fill the disk and hide everything else. ``allow`` says
    whether this occurrence may be logged and how many were suppressed since the last one."""

    def __init__(self, interval: float = 60.0, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.interval = interval
        self.clock = clock
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def allow(self, cause: str) -> tuple[bool, int]:
        now = self.clock()
        with self._lock:
            last = self._last.get(cause)
            if last is not None and now - last < self.interval:
                self._suppressed[cause] = self._suppressed.get(cause, 0) + 1
                return False, 0
            self._last[cause] = now
            return True, self._suppressed.pop(cause, 0)


def log_secrets(config: Config) -> list[str]:
    """The values the logs must never show: the LLM and embedder keys, the bearer token and
    any password written into a base URL (``https://user:pass@host/v1``)."""
    found: list[SecretStr | str | None] = [config.daemon.http_token]
    for key, url in ((config.llm.api_key, config.llm.base_url),
                     (config.embed.api_key, config.embed.base_url)):
        found.append(key)
        if url:
            with contextlib.suppress(ValueError):  # a malformed URL has no password to hide
                found.append(urlsplit(url).password)
    return [s.get_secret_value() if isinstance(s, SecretStr) else s for s in found if s]


def shared_embedder(config: Config) -> Embedder | None:
    """The configured embedder, loaded once for the process (None if off)."""
    return make_embedder(config.embed)


def freeze_heap() -> None:
    """Take what a front end allocated while starting (modules, the model, the config: ~50k
    objects that live as long as the process) out of the garbage collector's full passes.

    A full pass walks every tracked object, tens of milliseconds added to whichever request
    triggered it. Objects made later are collected as before. Long-running front ends only
    (``remd serve``, ``remd mcp``): a library must not change its host process's collector.
    """
    gc.collect()
    gc.freeze()
