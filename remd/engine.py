"""The engine: one database file in one process, shared by every namespace.

An :class:`Engine` holds what does not depend on the namespace: the store and its bounded
connection pool, the config, the clock, the token counter, the embedder (loaded on first use)
with its small LRU of query vectors, and inject's caches within one memory budget
(:mod:`remd.index.caches`). Engine functions take ``(engine, namespace, ...)``; the
:class:`~remd.memory.Memory` facade is an engine plus a namespace.

Opening: :func:`open_engine` returns the process's engine for a file, config, embedder and
clock, creating it on first use and counting its users; :meth:`Engine.release` closes it when
the last one lets go. So every ``Memory("agent.db")`` of a process shares one pool and one set
of caches, however many namespaces they work in.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from remd.config import Config
from remd.errors import StoreError
from remd.index import keys, vectormodel
from remd.index.caches import Caches
from remd.logs import get_logger
from remd.parts import S, Service
from remd.store import is_url, open_store
from remd.telemetry import Telemetry
from remd.text.embed import Embedder, Vectors, configured_dim, embedder_name, make_embedder
from remd.text.tokens import TokenCounter

T = TypeVar("T")
_log = get_logger("remd.engine")

Clock = Callable[[], float]
EmbedderSpec = Embedder | None | bool


def _model(config: Config, spec: EmbedderSpec) -> vectormodel.Model | None:
    """The model this engine would embed with (None: none), known without loading it."""
    if spec is True:
        if config.embed.provider == "none":
            return None
        return vectormodel.Model(embedder_name(config.embed), configured_dim(config.embed))
    return None if spec is None or spec is False else vectormodel.of(spec)


class Engine:
    """One database file in one process. Thread-safe.

    Raises StoreError (and subclasses) if the file cannot be used, ConfigError for a bad
    configuration.
    """

    def __init__(self, path: str | Path, config: Config, *, embedder: EmbedderSpec = True,
                 clock: Clock = time.time, create: bool = True) -> None:
        self.config = config
        self.clock = clock
        self.store = open_store(path, config.store, create=create)
        try:
            self.counter = TokenCounter(config.store.encoding)
            self.tokens_exact = self._token_encoding()
            keys.refresh(self.store)  # what memories are about, read by this version
            wanted = _model(config, embedder)
            if wanted is not None:  # a file's vectors are one embedder's
                vectormodel.check_open(self.store, wanted)
        except BaseException:
            self.store.close()
            raise
        self.caches = Caches(config.engine.cache_mb, config.inject.graph_cache_tags,
                             (config.inject.vector_cells_from, config.inject.vector_cells_probe))
        # What this engine's calls add up to (read by remd.http.metrics at scrape time).
        self.telemetry = Telemetry()
        # embedder=True: the configured one, loaded lazily on first use; None/False: none.
        self._embedder_spec: EmbedderSpec = embedder
        self._embedder: Embedder | None = None
        self._embedder_lock = threading.Lock()
        # Agents ask the same questions again ("what do I know about the user?"): the last
        # inject.query_cache query embeddings are kept, so a repeat skips the model run.
        self._query_vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._query_lock = threading.Lock()
        self._users = 0
        self._key: Hashable | None = None  # set by open_engine
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._services: dict[str, Service | None] = {}
        self._services_lock = threading.Lock()
        self._background: ThreadPoolExecutor | None = None
        self._pending: list[Future[Any]] = []

    @property
    def path(self) -> str:
        return self.store.path

    def _token_encoding(self) -> bool:
        """True if every stored ``tokens`` count is in this config's encoding, so inject can
        use them as they are. The encoding is recorded when a file is created; an engine opened
        with another one marks the file "mixed" (its saves would mix them), and a file from
        before the record is treated the same: counts are then recomputed where they are
        shown. A read-only file is read, never marked."""
        store = self.store
        mine = self.config.store.encoding
        row = store.one("SELECT value FROM remd_meta WHERE key = 'token_encoding'")
        if row is None and store.one("SELECT 1 FROM nodes LIMIT 1") is None:
            with contextlib.suppress(StoreError), store.transaction() as conn:
                conn.execute("INSERT OR IGNORE INTO remd_meta (key, value) SELECT "
                             "'token_encoding', ? WHERE NOT EXISTS (SELECT 1 FROM nodes)",
                             (mine,))
            row = store.one("SELECT value FROM remd_meta WHERE key = 'token_encoding'")
        if row is not None and row[0] == mine:
            return True
        if row is None or row[0] != "mixed":
            with contextlib.suppress(StoreError), store.transaction() as conn:
                conn.execute("INSERT INTO remd_meta (key, value) VALUES ('token_encoding', "
                             "'mixed') ON CONFLICT (key) DO UPDATE SET value = 'mixed'")
        return False

    # -- the embedder --------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        with self._embedder_lock:
            spec = self._embedder_spec
            if spec is not None and spec is not False:
                self._embedder = make_embedder(self.config.embed) if spec is True else spec
            self._embedder_spec = None
            return self._embedder

    @property
    def embeds(self) -> bool:
        """Whether this engine has an embedder (or will load one on first use), without
        loading it."""
        with self._embedder_lock:
            spec = self._embedder_spec
            if spec is None or spec is False:  # loaded already, or none asked for
                return self._embedder is not None
            return spec is not True or self.config.embed.provider != "none"

    def query_vector(self, text: str) -> Vectors | None:
        """The embedding of a query (None without an embedder), from a small LRU of recent
        queries. Raises EmbedError when the embedder fails."""
        embedder = self.embedder
        if embedder is None:
            return None
        with self._query_lock:
            cached = self._query_vectors.get(text)
            if cached is not None:
                self._query_vectors.move_to_end(text)
                return cached
        fresh: Vectors = embedder.embed([text])[0]
        fresh.setflags(write=False)  # shared by every later call with this text
        with self._query_lock:
            self._query_vectors[text] = fresh
            while len(self._query_vectors) > self.config.inject.query_cache:
                self._query_vectors.popitem(last=False)
        return fresh

    def service(self, name: str, make: Callable[[Config], S | None]) -> S | None:
        """The engine's ``name`` helper, made by ``make(config)`` on first use and kept until
        the engine closes (None, kept too, when ``make`` says there is none). The wings say
        what they need (:mod:`remd.write.assistants`); the engine only holds it."""
        with self._services_lock:
            if name not in self._services:
                self._services[name] = make(self.config)
            return self._services[name]  # type: ignore[return-value]

    def in_background(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the engine's background thread (work a save does not wait
        for: the LLM update judge); :meth:`drain` waits for it, and so does closing."""
        with self._executor_lock:
            if self._background is None:
                self._background = ThreadPoolExecutor(1, thread_name_prefix="remd-background")
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(self._background.submit(fn, *args))

    def drain(self) -> None:
        """Wait for the background work submitted so far (its errors are the work's to log)."""
        with self._executor_lock:
            pending, self._pending = self._pending, []
        for future in pending:
            future.exception()

    @property
    def executor(self) -> ThreadPoolExecutor:
        """The threads that run :class:`remd.AsyncMemory`'s calls off the event loop: as many
        as the store has connections (``store.max_connections``), created on first use."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.config.store.max_connections,
                    thread_name_prefix="remd-async")
            return self._executor

    async def run_async(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` awaited on :attr:`executor`, off the caller's event loop
        (every async front end runs its calls this way)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))

    # -- lifetime ------------------------------------------------------------------------
    def acquire(self) -> None:
        """One more user (each one calls :meth:`release` when done)."""
        with _registry_lock:
            if self._users <= 0:
                raise RuntimeError("the engine is closed")
            self._users += 1

    def release(self) -> None:
        """One user lets go; the last one closes the engine (its connections and threads)."""
        with _registry_lock:
            self._users -= 1
            if self._users > 0:
                return
            if _registry.get(self._key) is self:
                del _registry[self._key]
        self.close()

    def close(self) -> None:
        """Close the store now, whoever still uses the engine (idempotent). Calls already
        running on :attr:`executor` finish first: a write is never cut in half."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
            background, self._background = self._background, None
        if executor is not None:
            executor.shutdown(wait=True)
        if background is not None:
            with self._services_lock:
                waiting = [s for s in self._services.values() if s is not None]
            for helper in waiting:
                helper.interrupt()  # a judge waiting out a rest gives up: offline decisions stay
            background.shutdown(wait=True)
        with self._services_lock:
            services, self._services = self._services, {}
        for service in services.values():
            if service is not None:
                service.close()
        self.store.close()


_registry: dict[Hashable, Engine] = {}
_registry_lock = threading.Lock()


def _file_key(path: str | Path) -> str | None:
    """The file's identity in this process: its real path (None for ``:memory:``, which is a
    new database per connection and is never shared)."""
    text = str(path)
    if is_url(text):
        return text
    return None if text == ":memory:" else os.path.realpath(text)


def open_engine(path: str | Path, config: Config, *, embedder: EmbedderSpec = True,
                clock: Clock = time.time, create: bool = True) -> Engine:
    """The process's engine for this file, config, embedder and clock (a new one on first
    use), with one more user: call :meth:`Engine.release` when done.

    Raises StoreError if the file can't be used, SchemaVersionError for a newer file.
    """
    file = _file_key(path)
    spec: Hashable = embedder if isinstance(embedder, bool) or embedder is None \
        else ("object", id(embedder))
    try:  # any callable is a clock; an unhashable one (a mutable dataclass) is keyed by identity
        clock_key: Hashable = (clock, hash(clock))
    except TypeError:
        clock_key = ("object", id(clock))
    key = (file, config, spec, clock_key)
    with _registry_lock:
        engine = _registry.get(key) if file is not None else None
        if engine is not None:
            engine._users += 1
            return engine
    # Opened outside the lock: migrating a file may wait for another process's write lock.
    fresh = Engine(path, config, embedder=embedder, clock=clock, create=create)
    with _registry_lock:
        engine = _registry.get(key) if file is not None else None
        if engine is None:
            fresh._key = key
            fresh._users = 1
            if file is not None:
                _registry[key] = fresh
            return fresh
        engine._users += 1
    fresh.close()  # another thread opened the same one meanwhile
    return engine
