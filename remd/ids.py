"""Sortable, collision-resistant ids (ULID-like, lower-case Crockford base32)."""

from __future__ import annotations

import hashlib
import os
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _b32(value: int, width: int) -> str:
    out = []
    for _ in range(width):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str = "") -> str:
    """16 characters: 10 of milliseconds, 6 random (monotonic within a millisecond)."""
    global _last_ms, _last_rand
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            _last_rand = (_last_rand + 1) & ((1 << 30) - 1)
        else:
            _last_rand = int.from_bytes(os.urandom(4), "big") & ((1 << 29) - 1)
        _last_ms = ms
        return prefix + _b32(ms, 10) + _b32(_last_rand, 6)


def derived_id(base: str, salt: str) -> str:
    """An id made from ``base`` and ``salt``, the same every time: ``base``'s first 10
    characters (its time part, so ids still sort by time) and 6 from a hash of both."""
    digest = int.from_bytes(hashlib.blake2b(f"{salt}\0{base}".encode(), digest_size=8).digest(),
                            "big")
    return base[:10] + _b32(digest & ((1 << 30) - 1), 6)
