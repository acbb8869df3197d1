"""The database file's pages kept in memory: ``[store] resident_mb``.

inject reads SQLite's pages through the operating system's page cache (``mmap_size``). The
kernel may drop those pages when a process sits idle, and the first question after it then
waits for the disk: on this project's 2-core VM a question at 1M memories took 29 ms with no
major page fault and 208 ms with 41 of them after 2 minutes idle (docs/benchmarks.md).

:class:`Resident` maps the file read-only and locks the mapping (``mlock``): the page-cache
pages of the file stay in memory, and SQLite's own reads of them never wait for the disk. The
cost is the file's size in locked memory (about 2 GB per million memories, stated in
docs/benchmarks.md), up to ``resident_mb``. The mapping grows with the file: :meth:`refresh`
(at most every ``_EVERY`` seconds, from the store's read path) maps what the file gained.

Locking memory is the host's decision, so it is off unless configured. A process without
the right to lock that much (``RLIMIT_MEMLOCK``: the systemd unit sets ``LimitMEMLOCK``) logs
one warning and falls back to asking the kernel to read the pages ahead (``MADV_WILLNEED``),
which loads them but does not keep them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import threading
import time

from remd.logs import get_logger

log = get_logger("remd.store")

_CHUNK = 64 << 20  # the mapping grows by whole chunks (the last one: to the file's end)
_EVERY = 5.0  # seconds between two looks at the file's size


_PROT_READ, _MAP_SHARED, _MADV_WILLNEED = 1, 1, 3
_FAILED = ctypes.c_void_p(-1).value


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None
    if libc is not None:
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long)
        for name in ("munmap", "mlock"):
            getattr(libc, name).argtypes = (ctypes.c_void_p, ctypes.c_size_t)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return libc


class Resident:
    """Up to ``limit`` bytes of the file at ``path`` mapped and locked in memory."""

    def __init__(self, path: str, limit: int) -> None:
        self.path = path
        self.limit = limit
        self.locked = 0  # bytes locked
        self.mapped = 0  # bytes mapped (locked, or only read ahead when locking is refused)
        self.refused = False  # the process may not lock: pages read ahead instead
        self._maps: list[tuple[int, int, bool]] = []  # (address, length, locked) a chunk
        self._lock = threading.Lock()
        self._next = 0.0
        self._libc = _libc()
        self.refresh(force=True)

    def refresh(self, *, force: bool = False) -> None:
        """Map and lock what the file gained since the last look (cheap when nothing did)."""
        now = time.monotonic()
        if self._libc is None or (not force and now < self._next):
            return
        with self._lock:
            self._next = now + _EVERY
            try:
                size = min(os.path.getsize(self.path), self.limit)
            except OSError:
                return
            size -= size % mmap.PAGESIZE
            if size <= self.mapped:
                return
            stale = None
            if self._maps and self._maps[-1][1] < _CHUNK:  # the tail chunk grew: map it anew
                stale = self._maps.pop()
                self.mapped -= stale[1]
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except OSError:
                return
            try:
                while self.mapped < size:
                    length = min(_CHUNK, size - self.mapped)
                    address = self._libc.mmap(None, length, _PROT_READ, _MAP_SHARED, fd,
                                              self.mapped)
                    if address in (None, _FAILED):
                        log.warning("store.resident_failed", path=self.path,
                                    reason=os.strerror(ctypes.get_errno()))
                        break
                    self._maps.append((address, length, self._hold(address, length)))
                    self.mapped += length
            finally:
                os.close(fd)
                if stale is not None:  # after the new mapping holds its pages
                    self._release(*stale)

    def _hold(self, address: int, length: int) -> bool:
        """Lock the chunk (True), or only read it ahead."""
        assert self._libc is not None
        if not self.refused:
            if self._libc.mlock(address, length) == 0:
                self.locked += length
                return True
            errno = ctypes.get_errno()
            self.refused = True
            log.warning("store.resident_refused", path=self.path, reason=os.strerror(errno),
                        hint="raise RLIMIT_MEMLOCK (LimitMEMLOCK= in the systemd unit) or "
                        "lower store.resident_mb")
        self._libc.madvise(address, length, _MADV_WILLNEED)
        return False

    def _release(self, address: int, length: int, locked: bool) -> None:
        assert self._libc is not None
        self._libc.munmap(address, length)  # unmapping unlocks
        self.locked -= length if locked else 0

    def close(self) -> None:
        with self._lock:
            for chunk in self._maps:
                self._release(*chunk)
            self._maps.clear()
            self.mapped = 0
