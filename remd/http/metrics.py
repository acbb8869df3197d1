"""Prometheus metrics of a served engine (``GET /metrics`` of ``remd serve --http``).

The engine counts as it works (:mod:`remd.telemetry`: plain counters, no Prometheus there);
this module renders those counters in the Prometheus text format at scrape time, with
``prometheus-client``, through a private :class:`~prometheus_client.CollectorRegistry` (the
library never touches the client's global registry, so a host's own metrics stay its own).
Two gauges are read from the database at scrape time, each with one bounded query: the
embedding backlog (counted up to :data:`BACKLOG_CAP`) and, until the daemon's first tick has
counted them, the namespaces.

No label carries a namespace, a user or any stored value: the only labels are closed sets
(a REM run's outcome, an LLM role), so a file of 10,000 namespaces has as many series as a
file of one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from remd.engine import Engine
from remd.errors import StoreError
from remd.readiness import count_namespaces, pending_embeddings
from remd.telemetry import Histogram

BACKLOG_CAP = 10_000  # the backlog gauge counts this many pending memories at most

EngineSource = Callable[[], Engine]


def _histogram(name: str, doc: str, h: Histogram) -> HistogramMetricFamily:
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, n in zip(h.bounds, h.counts, strict=False):
        running += n
        buckets.append((f"{bound:g}", running))
    buckets.append(("+Inf", running + h.counts[-1]))
    return HistogramMetricFamily(name, doc, buckets=buckets, sum_value=h.total)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=value)


def _by(name: str, doc: str, label: str, values: dict[str, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


class EngineCollector(Collector):
    """Reads the served engine's counters (and two cheap gauges) at each scrape."""

    def __init__(self, source: EngineSource) -> None:
        self._source = source  # the engine serving now (a SIGHUP reload may swap it)

    def collect(self) -> Iterator[Metric]:
        engine = self._source()
        t = engine.telemetry.snapshot()
        yield _histogram("remd_inject_seconds", "Time an inject took to answer, in seconds.",
                         t.injects)
        yield _counter("remd_injects_total", "Injects answered.", t.injects.count)
        yield _counter("remd_saves_total", "Memories saved (a bulk save or an import counts "
                       "each memory).", t.saves)
        yield _counter("remd_feedback_total", "Feedback calls answered.", t.feedback)
        yield _by("remd_rem_runs_total", "REM runs ended, by outcome.", "outcome", t.rem_runs)
        yield _histogram("remd_rem_run_seconds", "Time a REM run took, in seconds.",
                         t.rem_seconds)
        yield _counter("remd_rem_flagged_total", "Memories flagged by REM runs.", t.rem_flagged)
        yield _counter("remd_rem_folded_total", "Memories folded into syntheses by REM runs.",
                       t.rem_folded)
        yield _counter("remd_rem_rollbacks_total", "REM runs rolled back.", t.rem_rollbacks)
        yield _by("remd_rem_recent_tops_total", "Recent questions asked again after a REM run "
                  "that folded something: whether their first item was kept (the same memory "
                  "or the synthesis it was folded into) or changed.", "outcome",
                  {k: t.rem_tops.get(k, 0) for k in ("kept", "changed")})
        yield _histogram("remd_rem_live_memories", "Live memories of the namespace a REM run "
                         "worked on, after the run.", t.rem_live)
        yield _histogram("remd_rem_live_tokens", "Live tokens of the namespace a REM run "
                         "worked on, after the run.", t.rem_live_tokens)
        yield _by("remd_llm_calls_total", "Questions asked to the LLM, by role.", "role",
                  t.llm_calls)
        yield _by("remd_llm_failures_total", "Questions to the LLM that got no usable answer, "
                  "by role.", "role", t.llm_failures)
        waited, gave_up = engine.store.pool_waits()
        yield _counter("remd_pool_waits_total", "Connection leases that waited for a free "
                       "connection of the pool.", waited)
        yield _counter("remd_pool_exhausted_total", "Connection leases that gave up waiting "
                       "(answered 503, retry).", gave_up)
        yield from self._from_database(engine, t.namespaces)

    def _from_database(self, engine: Engine, namespaces: int | None) -> Iterator[Metric]:
        """The gauges that read the database (left out of a scrape when it does not answer:
        the counters above are still worth having)."""
        try:
            backlog = pending_embeddings(engine, BACKLOG_CAP)
            if namespaces is None:
                namespaces = count_namespaces(engine)
        except StoreError:
            return
        yield GaugeMetricFamily("remd_embedding_backlog", "Memories waiting for their vector "
                                f"(counted up to {BACKLOG_CAP}).", value=backlog)
        yield GaugeMetricFamily("remd_namespaces", "Namespaces holding memories (as the "
                                "daemon's last tick counted them).", value=namespaces)


class Metrics:
    """A private registry with one :class:`EngineCollector`; :meth:`render` is a scrape."""

    def __init__(self, source: EngineSource) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(EngineCollector(source))

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """The scrape's body and content type, in the format ``accept`` asks for (Prometheus
        text by default, OpenMetrics when asked). Blocking: reads the database."""
        encoder, content_type = choose_encoder(accept)
        return encoder(self.registry), content_type
