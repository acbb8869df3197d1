"""What an engine counts while it works: calls, latencies and REM outcomes, in memory.

:class:`Telemetry` is a handful of plain counters and histogram buckets behind one lock. The
engine owns one (``engine.telemetry``), so every front end and every library user of the
engine is counted; the engine functions add to it once, at the end of a call, from values
they already hold (no SQL, no clock read beyond the one that times the call). Nothing here
knows Prometheus: :mod:`remd.http.metrics` reads a :class:`TelemetrySnapshot` at scrape time and
renders it.

No counter is kept per namespace or per user: the numbers stay a fixed size however many
namespaces the file holds.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field
from enum import StrEnum

# Upper bounds (seconds) of inject's latency buckets: a warm inject takes milliseconds, a cold
# one (model load, first snapshot of a namespace) up to seconds.
INJECT_BUCKETS: tuple[float, ...] = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                     1.0, 2.5, 5.0, 10.0)
# A REM run: milliseconds (nothing flagged) to many minutes (an LLM per cluster).
REM_BUCKETS: tuple[float, ...] = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
# Live memories and live tokens of a namespace after a run.
LIVE_BUCKETS: tuple[float, ...] = (10, 100, 1_000, 10_000, 100_000, 1_000_000)
TOKEN_BUCKETS: tuple[float, ...] = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)


class LLMRole(StrEnum):
    """Who asked the LLM (a closed set: the label of the LLM counters)."""

    TAGGER = "tagger"
    SYNTHESISER = "synthesiser"
    UPDATE_JUDGE = "update_judge"


class RunOutcome(StrEnum):
    """How a REM run ended (``rem_runs.status`` of a run that ran; a dry run is not counted)."""

    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class Histogram:
    """Cumulative-ready buckets: ``counts[i]`` observations ≤ ``bounds[i]`` and above the bound
    before it; ``counts[-1]`` the ones above every bound."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    total: float  # the sum of the observed values

    @property
    def count(self) -> int:
        return sum(self.counts)


class _Buckets:
    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def add(self, other: _Buckets) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total

    def frozen(self) -> Histogram:
        return Histogram(bounds=self.bounds, counts=tuple(self.counts), total=self.total)


@dataclass(frozen=True, kw_only=True)
class TelemetrySnapshot:
    """The counters at one moment (what a scrape renders)."""

    injects: Histogram
    saves: int
    feedback: int
    rem_runs: dict[str, int]  # by RunOutcome value
    rem_seconds: Histogram
    rem_flagged: int
    rem_folded: int
    rem_rollbacks: int
    rem_live: Histogram
    rem_live_tokens: Histogram
    llm_calls: dict[str, int]  # by LLMRole value
    llm_failures: dict[str, int]
    namespaces: int | None  # as the last trigger evaluation counted them; None: not yet
    rem_tops: dict[str, int] = field(default_factory=dict)  # after runs: kept / changed


class Telemetry:
    """An engine's counters. Thread-safe; each hook takes the lock once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._injects = _Buckets(INJECT_BUCKETS)
        self._saves = 0
        self._feedback = 0
        self._runs = dict.fromkeys([o.value for o in RunOutcome], 0)
        self._rem_seconds = _Buckets(REM_BUCKETS)
        self._flagged = 0
        self._folded = 0
        self._rollbacks = 0
        self._live = _Buckets(LIVE_BUCKETS)
        self._live_tokens = _Buckets(TOKEN_BUCKETS)
        self._llm_calls = dict.fromkeys([r.value for r in LLMRole], 0)
        self._llm_failures = dict.fromkeys([r.value for r in LLMRole], 0)
        self._namespaces: int | None = None
        self._tops = {"kept": 0, "changed": 0}

    # -- the hooks (one call at the end of each operation) ---------------------------------
    def injected(self, seconds: float) -> None:
        """One inject answered, in ``seconds``."""
        with self._lock:
            self._injects.observe(seconds)

    def saved(self, memories: int) -> None:
        """``memories`` memories written by one save (a bulk save or import: all of them)."""
        with self._lock:
            self._saves += memories

    def fed_back(self) -> None:
        """One feedback call answered (applied or already given)."""
        with self._lock:
            self._feedback += 1

    def rem_finished(self, outcome: RunOutcome | str, seconds: float, *, flagged: int,
                     folded: int, live: int, live_tokens: int) -> None:
        """A REM run ended: how, in how long, what it flagged and folded, and the namespace's
        live memories and tokens afterwards."""
        key = RunOutcome(outcome).value
        with self._lock:
            self._runs[key] += 1
            self._rem_seconds.observe(seconds)
            self._flagged += flagged
            self._folded += folded
            self._live.observe(live)
            self._live_tokens.observe(live_tokens)

    def rem_tops(self, *, kept: int, changed: int) -> None:
        """After a REM run, recent questions asked again: how many kept their first item and
        how many had it changed (remd.sleep.usefulness)."""
        with self._lock:
            self._tops["kept"] += kept
            self._tops["changed"] += changed

    def rolled_back(self) -> None:
        """A REM run was rolled back (it was counted by its outcome when it ended)."""
        with self._lock:
            self._rollbacks += 1

    def llm_called(self, role: LLMRole, *, failed: bool) -> None:
        """One question to the LLM for ``role`` (re-asks included), answered or failed."""
        with self._lock:
            self._llm_calls[role.value] += 1
            if failed:
                self._llm_failures[role.value] += 1

    def namespaces_seen(self, count: int) -> None:
        """How many namespaces a trigger evaluation of the whole file found (the daemon
        evaluates them every tick, so the number is kept without a query of its own)."""
        with self._lock:
            self._namespaces = count

    # -- reading ---------------------------------------------------------------------------
    def snapshot(self) -> TelemetrySnapshot:
        with self._lock:
            return TelemetrySnapshot(
                injects=self._injects.frozen(), saves=self._saves, feedback=self._feedback,
                rem_runs=dict(self._runs), rem_seconds=self._rem_seconds.frozen(),
                rem_flagged=self._flagged, rem_folded=self._folded,
                rem_rollbacks=self._rollbacks, rem_live=self._live.frozen(),
                rem_live_tokens=self._live_tokens.frozen(), llm_calls=dict(self._llm_calls),
                llm_failures=dict(self._llm_failures), namespaces=self._namespaces,
                rem_tops=dict(self._tops))

    def absorb(self, other: Telemetry) -> None:
        """Add ``other``'s counts to these (a reload's new engine carries the old one's on,
        so the counters a scraper sees never go back)."""
        if other is self:
            return
        with other._lock:
            o = (other._injects, other._saves, other._feedback, dict(other._runs),
                 other._rem_seconds, other._flagged, other._folded, other._rollbacks,
                 other._live, other._live_tokens, dict(other._llm_calls),
                 dict(other._llm_failures), other._namespaces, dict(other._tops))
        with self._lock:
            self._injects.add(o[0])
            self._saves += o[1]
            self._feedback += o[2]
            for k, v in o[3].items():
                self._runs[k] += v
            self._rem_seconds.add(o[4])
            self._flagged += o[5]
            self._folded += o[6]
            self._rollbacks += o[7]
            self._live.add(o[8])
            self._live_tokens.add(o[9])
            for k, v in o[10].items():
                self._llm_calls[k] += v
            for k, v in o[11].items():
                self._llm_failures[k] += v
            if self._namespaces is None:
                self._namespaces = o[12]
            for k, v in o[13].items():
                self._tops[k] += v
