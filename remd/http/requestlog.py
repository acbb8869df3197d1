"""What the HTTP API served (:mod:`remd.http.app`): the requests of each window, logged as one
``http.summary`` event when the window ends."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

from remd.errors import InvalidInput
from remd.logs import get_logger

# The HTTP server's events: under the logger name hosts already filter them by.
log = get_logger("remd.http")

SUMMARY_SECONDS = 60.0


class RequestLog:
    """Requests since the last ``http.summary`` event. Thread-safe.

    Each request is recorded; :meth:`run` (the server's timer thread) logs the summary when the
    window has lasted ``every`` seconds, and so does the first request recorded past that (if no
    timer runs); an idle window writes nothing, and :meth:`flush` logs what is left when the
    server stops. One line a minute replaces one line per request: at 40,000 requests those
    were ~6 MB of journal saying the same thing.
    """

    def __init__(self, every: float = SUMMARY_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not every > 0:
            raise InvalidInput(f"the summary interval must be positive, not {every!r}")
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._open(clock())

    def _open(self, now: float) -> None:
        self.since = now
        self.count = 0
        self.statuses: Counter[str] = Counter()
        self.endpoints: Counter[str] = Counter()
        self.ms_total = 0.0
        self.ms_max = 0.0

    def record(self, endpoint: str, status: int, ms: float) -> None:
        with self._lock:
            self.count += 1
            self.statuses[str(status)] += 1
            self.endpoints[endpoint] += 1
            self.ms_total += ms
            self.ms_max = max(self.ms_max, ms)
            due = self.clock() - self.since >= self.every
        if due:
            self.flush()

    def run(self, stop: threading.Event) -> None:
        """Log each window's summary when it ends, until ``stop`` is set (a thread's loop:
        without it a summary waited for the next request, minutes or hours later)."""
        while not stop.wait(max(0.0, self.since + self.every - self.clock())):
            if self.clock() - self.since >= self.every:
                self.flush()

    def flush(self) -> None:
        """Log the summary of the window (nothing if it saw no request) and open a new one."""
        with self._lock:
            now = self.clock()
            if not self.count:
                self.since = now
                return
            summary = {"requests": self.count, "by_endpoint": dict(self.endpoints),
                       "by_status": dict(self.statuses),
                       "ms_mean": round(self.ms_total / self.count, 2),
                       "ms_max": round(self.ms_max, 2), "seconds": round(now - self.since, 1)}
            self._open(now)
        log.info("http.summary", **summary)
