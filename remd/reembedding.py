"""``remd.reembed``: move a database to another embedding model (``remd reembed``).

A file holds one embedder's vectors and records which (:mod:`remd.index.vectormodel`); opening
it with another is a ConfigError. This moves it: the embedder of ``config`` (its ``[embed]``
section) is recorded, every vector is dropped and every memory re-embedded in batches. Inject
finds the memories not yet re-embedded through their words and tags; a call killed halfway
is resumed by the next (or by the daemon's ticks, with ``background=True``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from remd.config import Config
from remd.errors import ConfigError
from remd.index.vectormodel import Model
from remd.memory import Memory
from remd.text.embed import configured_dim, embedder_name
from remd.write import reembed as _reembed
from remd.write.reembed import Reembedded

__all__ = ["Reembedded", "reembed"]


def reembed(path: str | Path, config: Config | None = None, *, background: bool = False,
            progress: Callable[[int, int], None] | None = None) -> Reembedded:
    """Move the database at ``path`` (every namespace) to ``config``'s embedder.

    ``background``: only begin the move (the daemon's ticks embed the backlog, or a later
    call). ``progress(done, total)`` is called after each batch. Raises ConfigError when
    ``config`` has no embedder, StoreError when the database cannot be opened; an embedder
    that fails leaves the rest in the backlog (logged) for the next call.
    """
    config = config or Config()
    if config.embed.provider == "none":
        raise ConfigError("reembed needs an embedder: [embed] provider is 'none'")
    target = Model(embedder_name(config.embed), configured_dim(config.embed))
    started = time.monotonic()
    with Memory(path, config=config, embedder=None, create=False) as m:
        before, began = _reembed.begin(m.store, target)
        total = _reembed.pending(m.store)
    embedded = 0
    if not background and total:
        done = 0

        def tick(n: int) -> None:
            nonlocal done
            done += n
            if progress is not None:
                progress(done, total)

        with Memory(path, config=config, create=False) as m:
            embedded = _reembed.finish(m.engine, tick)
    with Memory(path, config=config, embedder=None, create=False) as m:
        return _reembed.report(m.store, before, began, embedded, started)
