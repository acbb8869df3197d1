"""The consolidation daemon behind ``remd serve``.

It watches every namespace of one database file and runs a REM cycle when a trigger fires.

Threads and connections:

- The **main thread** owns the process: signal handlers only set flags (``set_wakeup_fd``
  wakes the loop), and the loop does the rest — stop, SIGHUP reload, sd_notify watchdog pings.
- One **scheduler thread** (APScheduler ``BackgroundScheduler`` with a single worker, one
  interval job, ``max_instances=1``, ``coalesce=True``) calls :meth:`Daemon.tick`. A tick
  evaluates every namespace's triggers with a few grouped queries
  (:func:`remd.sleep.triggers.evaluate_all`), embeds a bounded batch of the embedding backlog, and
  runs REM in the namespaces whose triggers fire, one after the other, so at most one REM
  cycle runs at a time in this process; the REM run's own lease in ``rem_runs`` keeps other
  processes off the namespace.
- With ``--http``, uvicorn serves the API on its own thread (same process).
- Everything goes through one engine (:mod:`remd.engine`, held by a
  :class:`~remd.hosting.EngineHost`): one bounded connection pool and one set of caches for
  every namespace, so the process's connections, threads and memory follow the work, not the
  number of namespaces. WAL keeps readers and the REM writer out of each other's way.

Stopping: SIGTERM/SIGINT set the stop event that REM checks between clusters (``should_stop``),
so a cycle in flight finishes its current cluster, leaves the others untouched and records
itself as interrupted; the scheduler is then shut down waiting for that, and the process exits 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from remd.checks import check_namespace
from remd.config import Config, load_config
from remd.engine import Engine
from remd.errors import ConfigError, Conflict, DatabaseLocked, RemdError, StoreError
from remd.hosting import EngineHost, freeze_heap, log_secrets, shared_embedder
from remd.logs import configure_logging, get_logger
from remd.service.notify import Notifier
from remd.service.ticks import HttpFront, HttpFrontFactory, NamespaceTick, TickOutcome, TickReport
from remd.sleep.consolidate import ClusterStatus
from remd.sleep.rem import ClusterOutcome, run_rem, sentence_embed
from remd.sleep.remruns import RunStatus
from remd.sleep.synthesis import LLMSynthesiser, OfflineSynthesiser, make_synthesiser
from remd.sleep.triggers import TriggerReport, evaluate_all
from remd.text.embed import Embedder
from remd.write.backlog import embed_pending

log = get_logger("remd.daemon")

JOB_ID = "remd-tick"
_MAX_LOOP_WAIT = 5.0  # seconds the main loop sleeps at most between housekeeping checks


@dataclass
class _Signals:
    """Set by signal handlers (plain assignments only), read by the main loop."""

    stop: bool = False
    reload: bool = False
    signame: str = ""
    previous: dict[int, Any] = field(default_factory=dict)


# -- the daemon --------------------------------------------------------------------------------

class Daemon:
    """Evaluates the triggers of every namespace and runs REM where one fires.

    ``tick(now)`` is the unit of work (tests call it with explicit times); ``serve()`` runs
    it on the scheduler until a signal stops the process. Raises ConfigError/StoreError from
    the constructor when the configuration or the database file can't be used.
    """

    def __init__(self, db: str | Path, config: Config, *, config_path: str | Path | None = None,
                 overrides: Mapping[str, Any] | None = None, namespace: str = "default",
                 clock: Callable[[], float] = time.time, env: Mapping[str, str] | None = None,
                 embedder: Embedder | None | bool = True,
                 on_cluster: Callable[[ClusterOutcome], None] | None = None,
                 http: HttpFrontFactory | None = None) -> None:
        self.db = str(db)
        self.on_cluster = on_cluster  # observer called after each REM cluster (progress)
        self.config = config
        self.config_path = config_path
        self.overrides = dict(overrides or {})
        self.default_namespace = check_namespace(namespace)
        self.clock = clock
        self.env = os.environ if env is None else env
        self._embedder = shared_embedder(config) if embedder is True else (embedder or None)
        self._stop = threading.Event()
        self._tick_lock = threading.Lock()
        self._pending_config: Config | None = None
        self._signals = _Signals()
        self.notifier = Notifier(self.env)
        self.scheduler: BackgroundScheduler | None = None
        self._http_front = http  # builds the HTTP front end when daemon.http is set
        self.http: HttpFront | None = None  # serving HTTP (remd.http.app.HttpServer)
        # Open the file now: a bad path or a newer schema is reported at start, not at a tick.
        self.host = EngineHost(self.db, config, embedder=self._embedder, clock=clock)
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        # One synthesiser (so one LLM client and its kept-alive connections) for every run of
        # the daemon's life; replaced only when a reload changes what it is made from.
        self._synth: LLMSynthesiser | OfflineSynthesiser = self._synthesiser(config)
        self._synth_settings = _synth_settings(config)

    def _synthesiser(self, config: Config) -> LLMSynthesiser | OfflineSynthesiser:
        # The offline one embeds sentences with the engine being served at the time.
        return make_synthesiser(config, lambda texts: sentence_embed(self.host.engine)(texts))

    # -- the unit of work ------------------------------------------------------------------
    def tick(self, now: float | None = None) -> TickReport:
        """Evaluate every namespace's triggers at ``now`` (default: the clock), embed a bounded
        batch of the embedding backlog, and run REM where a trigger fires, one namespace after
        the other. Never runs two cycles at once: a tick that finds the previous one still
        running returns ``busy`` at once.

        Errors of one namespace are logged and do not stop the others.
        """
        at = self.clock() if now is None else now
        if not self._tick_lock.acquire(blocking=False):
            log.info("tick.skipped", reason="previous tick still running")
            return TickReport(now=at, busy=True)
        try:
            self._apply_pending_config()
            with self.host.lease() as engine:
                return self._tick(engine, at, now)
        finally:
            self._tick_lock.release()

    def _tick(self, engine: Engine, at: float, fixed: float | None) -> TickReport:
        """Evaluate at ``at``; each run starts at the clock when it starts (its rem_runs times
        are then the real ones, which daemons sharing a database are checked by), unless the
        caller ``fixed`` now."""
        started = time.perf_counter()
        try:
            reports = evaluate_all(engine, at)
        except StoreError as exc:
            log.warning("tick.failed", error=str(exc))
            return TickReport(now=at)
        embedded = self._drain_backlog(engine)
        done: list[NamespaceTick] = []
        stopped = False
        for report in reports:
            fired = tuple(r.value for r in report.fired)
            if not report.should_run:
                done.append(NamespaceTick(namespace=report.namespace, fired=fired,
                                          outcome=TickOutcome.QUIET))
                continue
            if self._stop.is_set():
                stopped = True
                break
            log.info("triggers.fired", namespace=report.namespace, fired=list(fired),
                     **{c.reason.value: c.value for c in report.checks})
            done.append(self._run(engine, report, fixed))
        # One line per tick, whatever the number of namespaces: the quiet ones are counted.
        log.info("tick.evaluated", namespaces=len(reports),
                 fired=sum(1 for t in done if t.fired), runs=sum(1 for t in done if t.run_id),
                 embedded=embedded, seconds=round(time.perf_counter() - started, 3))
        return TickReport(now=at, namespaces=tuple(done), stopped=stopped, embedded=embedded)

    def _drain_backlog(self, engine: Engine) -> int:
        """Embed up to ``daemon.backlog_per_tick`` memories saved without a vector (saved while
        the embedder was down, or the rest of an interrupted bulk save), oldest first."""
        limit = self.config.daemon.backlog_per_tick
        if limit <= 0 or engine.embedder is None:
            return 0
        try:
            return embed_pending(engine, None, limit=limit)
        except StoreError as exc:  # the next tick tries again
            log.warning("backlog.failed", error=str(exc))
            return 0

    def _run(self, engine: Engine, report: TriggerReport, now: float | None) -> NamespaceTick:
        ns = report.namespace
        fired = tuple(r.value for r in report.fired)
        reason = report.fired[0]
        log.info("rem.started", namespace=ns, trigger=reason.value, fired=list(fired))
        started = time.perf_counter()
        try:
            run = run_rem(engine, ns, trigger=reason, now=now, should_stop=self._stop.is_set,
                          synthesiser=self._synth, progress=_ClusterLog(ns, self.on_cluster))
        except (Conflict, DatabaseLocked) as exc:
            # Another process is consolidating this namespace (or holds the write lock past
            # every retry): its turn now, ours at a later tick.
            log.info("rem.busy", namespace=ns, reason=str(exc))
            return NamespaceTick(namespace=ns, fired=fired, outcome=TickOutcome.BUSY,
                                 error=str(exc))
        except RemdError as exc:
            log.error("rem.failed", namespace=ns, error=str(exc), error_type=type(exc).__name__)
            return NamespaceTick(namespace=ns, fired=fired, outcome=TickOutcome.FAILED,
                                 error=str(exc))
        except Exception as exc:  # the daemon's boundary: a bug in one namespace
            # must neither stop the process nor starve the namespaces after it at every tick.
            log.exception("rem.crashed", namespace=ns, error_type=type(exc).__name__)
            return NamespaceTick(namespace=ns, fired=fired, outcome=TickOutcome.FAILED,
                                 error=f"{type(exc).__name__}: {exc}")
        log.info("cycle.finished", namespace=ns, trigger=reason.value, run_id=run.run_id,
                 status=run.status.value, flagged=run.flagged, clusters=run.clusters,
                 synthesised=run.synthesised, skipped=run.skipped,
                 live_before=run.live_before, live_after=run.live_after,
                 seconds=round(time.perf_counter() - started, 3), timings=run.timings)
        outcome = (TickOutcome.INTERRUPTED if run.status is RunStatus.INTERRUPTED
                   else TickOutcome.RAN)
        return NamespaceTick(namespace=ns, fired=fired, outcome=outcome, run_id=run.run_id)

    # -- configuration ----------------------------------------------------------------------
    def reload(self) -> Config | None:
        """Re-read the config file and environment (SIGHUP). A bad file is logged and the
        running config kept. Returns the new config, or None when it was refused."""
        try:
            config = load_config(self.config_path, env=self.env, overrides=self.overrides)
        except ConfigError as exc:
            log.error("config.reload_failed", error=str(exc))
            return None
        old = self.config
        self.config = config
        d = config.daemon
        if ((d.log_format, d.log_level, log_secrets(config))
                != (old.daemon.log_format, old.daemon.log_level, log_secrets(old))):
            configure_logging(d.log_format, d.log_level, secrets=log_secrets(config))
        if config.embed != old.embed:
            self._embedder = shared_embedder(config)
        try:  # requests in flight finish on the old engine; new ones use this one
            self.host.reconfigure(config, self._embedder)
        except StoreError as exc:
            log.error("config.reload_failed", error=str(exc))
        # The scheduler thread swaps its synthesiser itself, between two ticks.
        self._pending_config = config
        if self.scheduler is not None and d.interval_seconds != old.daemon.interval_seconds:
            self.scheduler.reschedule_job(JOB_ID, trigger="interval", seconds=d.interval_seconds)
        if self.http is not None:
            self.http.set_token(d.http_token)
            if d.http != old.daemon.http:
                log.warning("config.http_unchanged", reason="the listen address changes "
                            "only on restart", http=old.daemon.http)
        log.info("config.reloaded", interval_seconds=d.interval_seconds,
                 config_path=str(self.config_path) if self.config_path else None)
        return config

    def _apply_pending_config(self) -> None:
        config, self._pending_config = self._pending_config, None
        if config is None:
            return
        if _synth_settings(config) != self._synth_settings:
            # On the scheduler thread between two ticks: no cycle is using the old client.
            self._synth.close()
            self._synth = self._synthesiser(config)
            self._synth_settings = _synth_settings(config)

    # -- running as a service -----------------------------------------------------------------
    def request_stop(self, signame: str = "") -> None:
        """Ask the daemon to stop: a REM cycle in flight ends after its current cluster.
        Safe from any thread (not from a signal handler: those only set flags)."""
        self._signals.stop = True
        self._signals.signame = self._signals.signame or signame
        self._stop.set()
        self._wake()

    def _wake(self) -> None:
        if self._wake_w >= 0:
            with contextlib.suppress(BlockingIOError):  # full pipe: the loop is awake anyway
                os.write(self._wake_w, b"\0")

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Only flags: the wake-up byte is written by Python's C-level handler (set_wakeup_fd).
        if signum == signal.SIGHUP:
            self._signals.reload = True
        else:
            self._signals.stop = True
            self._signals.signame = signal.Signals(signum).name

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT stop, SIGHUP reloads. Main thread only."""
        self._signals.previous[-1] = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._signals.previous[sig] = signal.signal(sig, self._on_signal)

    def restore_signal_handlers(self) -> None:
        previous = self._signals.previous
        for sig, handler in previous.items():
            if sig != -1:
                signal.signal(sig, handler)
        if -1 in previous:
            signal.set_wakeup_fd(previous[-1])
        previous.clear()

    def start(self) -> None:
        """Start the scheduler (first tick at once) and the HTTP server if configured.

        Raises ConfigError when the HTTP address can't be bound.
        """
        d = self.config.daemon
        if d.http_address is not None:
            if self._http_front is None:
                raise ConfigError("daemon.http is set, but this daemon was made without an "
                                  "HTTP front end (remd serve hands it one)")
            self.http = self._http_front(self.host, self.config, self.default_namespace)
            self.http.start()
            log.info("http.listening", host=self.http.host, port=self.http.port)
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
            timezone=UTC)
        self.scheduler.add_job(self._scheduled_tick, "interval", id=JOB_ID,
                               seconds=d.interval_seconds, next_run_time=datetime.now(UTC))
        # A tick that outlasts the interval makes APScheduler skip the next one (max_instances=1,
        # the point: no pile-up) and log a warning each time; say it once, calmly, ourselves.
        logging.getLogger("apscheduler.scheduler").addFilter(_skip_max_instances)
        self.scheduler.add_listener(self._on_skipped, EVENT_JOB_MAX_INSTANCES)
        self.scheduler.start()

    def _on_skipped(self, event: JobEvent) -> None:
        log.info("tick.skipped", reason="previous tick still running")

    def _scheduled_tick(self) -> None:
        report = self.tick()
        if self.notifier.enabled:
            self.notifier.status(f"last tick: {len(report.namespaces)} namespace(s), "
                                 f"{len(report.runs)} REM run(s)")

    def loop(self) -> None:
        """Wait for signals and requests until a stop; handle reloads and watchdog pings."""
        while not self._signals.stop:
            wait = self.notifier.watchdog_seconds or _MAX_LOOP_WAIT
            with contextlib.suppress(InterruptedError):
                ready, _, _ = select.select([self._wake_r], [], [], min(wait, _MAX_LOOP_WAIT))
                if ready:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self._wake_r, 512):
                            pass
            if self._signals.reload and not self._signals.stop:
                self._signals.reload = False
                self.notifier.reloading()
                self.reload()
                self.notifier.ready()
            if self.notifier.watchdog_seconds and self._healthy():
                self.notifier.watchdog()
        self._stop.set()

    def _healthy(self) -> bool:
        """Whether the threads doing the work are alive: no ping for a dead one, so systemd's
        watchdog restarts the service."""
        scheduler_ok = self.scheduler is None or self.scheduler.running
        return scheduler_ok and (self.http is None or self.http.alive)

    def shutdown(self, *, announce: bool = True) -> None:
        """Stop everything started: the REM cycle in flight ends after its current cluster.
        ``announce=False`` (a start that failed) stops without a word: the caller reports."""
        self._stop.set()
        if announce:
            self.notifier.stopping()
            log.info("daemon.stopping", signal=self._signals.signame or None)
        if self.http is not None:  # /readyz answers 503 from now on, while the rest stops
            self.http.drain(self.config.daemon.drain_seconds)
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)  # waits for the tick in flight
            self.scheduler = None
        if self.http is not None:
            self.http.stop()
            self.http = None
        self.close()

    def close(self) -> None:
        """Release the engine, the LLM client and the wake-up pipe (idempotent)."""
        self.host.close()
        self._synth.close()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        # Never close a number twice: the OS may have handed it to another file meanwhile.
        self._wake_r = self._wake_w = -1

    def serve(self) -> int:
        """Run until SIGTERM/SIGINT; returns the exit code (0 after a clean stop)."""
        self.install_signal_handlers()
        started = False
        try:
            # A start that fails (the HTTP address taken) raises ConfigError before any log
            # line: the CLI prints it as the one line on stderr, and stdout stays empty.
            self.start()
            started = True
            freeze_heap()
            log.info("daemon.ready", db=self.host.where, pid=os.getpid(),
                     interval_seconds=self.config.daemon.interval_seconds,
                     http=f"{self.http.host}:{self.http.port}" if self.http else None)
            self.notifier.ready(status="watching " + self.db)
            self.loop()
        finally:
            self.shutdown(announce=started)
            self.restore_signal_handlers()
        log.info("daemon.stopped")
        return 0


def _synth_settings(config: Config) -> tuple[Any, ...]:
    """What the daemon's synthesiser is made from (a reload that changes it replaces it)."""
    return config.llm, config.rem.offline_density, config.store.encoding


# -- what the REM engine reports ---------------------------------------------------------------
def _skip_max_instances(record: logging.LogRecord) -> bool:
    return "maximum number of running instances reached" not in record.getMessage()


class _ClusterLog:
    """REM progress callback: one event per committed cluster (ids and counts, never content).

    A skipped cluster is not logged here: REM itself logs ``rem.cluster_skipped`` (warning,
    with the run id and the reason), and a second event of that name would count it twice.
    """

    def __init__(self, namespace: str,
                 observer: Callable[[ClusterOutcome], None] | None = None) -> None:
        self.namespace = namespace
        self.observer = observer

    def __call__(self, event: ClusterOutcome) -> None:
        if event.status is ClusterStatus.COMMITTED:
            log.debug("rem.cluster_committed", namespace=self.namespace,
                      cluster=event.cluster_no, size=event.size,
                      synthesis_id=event.synthesis_id, done=event.done, total=event.total)
        if self.observer is not None:
            self.observer(event)


def serve(db: str | Path, *, config_path: str | Path | None, overrides: Mapping[str, Any],
          namespace: str = "default", http: HttpFrontFactory | None = None) -> int:
    """``remd serve``: load and validate the config, open the file, run until stopped; ``http``
    builds the HTTP front end when ``daemon.http`` is set (the CLI hands in
    :func:`remd.http.app.http_server`: the daemon never imports a front end).

    Raises ConfigError/StoreError (exit 1 from the CLI) when either can't be used.
    """
    config = load_config(config_path, overrides=overrides)
    configure_logging(config.daemon.log_format, config.daemon.log_level,
                      secrets=log_secrets(config))
    daemon = Daemon(db, config, config_path=config_path, overrides=overrides,
                    namespace=namespace, http=http)
    return daemon.serve()
