"""The daemon: ticks with explicit times over a real file, stop and busy handling, config
reload, logging, sd_notify, and `remd serve` as a real process driven by real signals."""

from __future__ import annotations

import gc
import io
import json
import logging
import os
import queue
import resource
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import structlog
from click.testing import CliRunner

from remd import ConfigError, InvalidInput, Memory, StoreError, load_config
from remd.cli.main import main
from remd.hosting import EngineHost, freeze_heap
from remd.http.app import http_server
from remd.logs import REDACTED, capture_events, configure_logging, get_logger
from remd.service.daemon import Daemon
from remd.service.notify import Notifier
from remd.sleep.rem import ClusterOutcome
from remd.wire import iso
from tests.llm_server import slow

DAY = 86400.0
HOUR = 3600.0
NOW = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
# What REM is for: one incident of each project restated again and again with its dates.
TEMPLATES = [
    "{p} had timeouts on 2024-02-11.",
    "Saw timeouts on {p} again on 2024-03-12.",
    "{p} had timeouts again on 2024-04-13, {who} was on call.",
    "Timeouts on {p} once more on 2024-05-14.",
    "The {p} service timed out again on 2024-06-15.",
    "{p} hit timeouts again on 2024-07-16.",
]
TOPICS = [
    {"p": "Falcon", "who": "Priya Sharma", "c": "Lisbon", "t": "Postgres", "n": 120},
    {"p": "Heron", "who": "Lars Olsen", "c": "Oslo", "t": "Kafka", "n": 157},
    {"p": "Juniper", "who": "Mei Chen", "c": "Nairobi", "t": "Redis", "n": 194},
]
REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]


def old_fragments(topics: list[dict[str, Any]] = TOPICS) -> list[str]:
    """Year-old fragments (six per topic) as import lines with their real dates."""
    return [json.dumps({"content": t.format(**v),
                        "created_at": iso(NOW - 365 * DAY - (10 * i + j) * DAY)})
            for i, v in enumerate(topics) for j, t in enumerate(TEMPLATES)]


def fill(db: Path, namespace: str, lines: list[str]) -> None:
    with Memory(db, namespace, clock=lambda: NOW) as m:
        m.import_lines(lines)


def statuses(db: Path, namespace: str) -> dict[str, str]:
    with Memory(db, namespace, embedder=None) as m:
        return dict(m.store.query("SELECT id, status FROM nodes WHERE namespace = ?",
                                  (namespace,)))


def runs(db: Path) -> list[tuple[str, str, str, str]]:
    with Memory(db, embedder=None) as m:
        return [tuple(r) for r in m.store.query(  # type: ignore[misc]
            "SELECT namespace, status, trigger, run_id FROM rem_runs ORDER BY started_at, rowid")]


@pytest.fixture
def cfg() -> Any:
    return load_config(env={}, overrides={"triggers": {"max_live_nodes": 10}})


@pytest.fixture
def daemon_factory(db_path: Path, cfg: Any) -> Iterator[Any]:
    made: list[Daemon] = []

    def make(**kwargs: Any) -> Daemon:
        kwargs.setdefault("clock", lambda: NOW)
        kwargs.setdefault("env", {})
        d = Daemon(db_path, kwargs.pop("config", cfg), **kwargs)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()


# -- ticks -----------------------------------------------------------------------------------
def test_tick_consolidates_only_the_namespaces_whose_trigger_fires(
        db_path: Path, daemon_factory: Any) -> None:
    fill(db_path, "work", old_fragments())  # 18 live > 10: node_count fires
    with Memory(db_path, "home", clock=lambda: NOW) as m:
        home = m.save("I water the basil on Sundays").id
    daemon = daemon_factory()
    with capture_events() as logs:
        report = daemon.tick(NOW)

    outcome = {t.namespace: t for t in report.namespaces}
    assert outcome["home"].outcome == "quiet" and outcome["home"].fired == ()
    assert outcome["work"].outcome == "ran" and "node_count" in outcome["work"].fired
    assert [(ns, st, trig) for ns, st, trig, _ in runs(db_path)] == [
        ("work", "completed", "node_count")]
    assert statuses(db_path, "home") == {home: "live"}
    work = statuses(db_path, "work")
    assert list(work.values()).count("live") < 18 and "deprecated" in work.values()

    # One summary line per tick, whatever the number of namespaces; a line per fired one.
    summary = [e for e in logs if e["event"] == "tick.evaluated"]
    assert len(summary) == 1 and summary[0]["namespaces"] == 2
    assert summary[0]["fired"] == 1 and summary[0]["runs"] == 1
    assert [e["namespace"] for e in logs if e["event"] == "triggers.fired"] == ["work"]
    finished = next(e for e in logs if e["event"] == "cycle.finished")
    assert finished["namespace"] == "work" and finished["status"] == "completed"
    assert finished["live_before"] == 18 and finished["synthesised"] >= 1
    assert "total" in finished["timings"]
    # Memory contents never reach an info-level event.
    flat = json.dumps([e for e in logs if e["log_level"] != "debug"], default=str)
    assert "Priya" not in flat and "basil" not in flat


def test_a_second_tick_right_after_finds_nothing_to_do(db_path: Path,
                                                       daemon_factory: Any) -> None:
    fill(db_path, "work", old_fragments())
    daemon = daemon_factory()
    assert daemon.tick(NOW).runs
    second = daemon.tick(NOW + 60)
    assert second.runs == () and second.namespaces[0].outcome == "quiet"


def test_a_rolled_back_run_is_not_redone_by_the_next_ticks(db_path: Path,
                                                            daemon_factory: Any) -> None:
    """The idle trigger fired, the run was rolled back: the ticks that follow neither fire idle
    again nor fold the members, until the hold ends (rem.hold_days) and idle fires again."""
    fill(db_path, "work", old_fragments())  # no save for a year: idle fires
    daemon = daemon_factory(config=load_config(env={}, overrides={
        "triggers": {"disabled": ["node_count"]}}))
    (run_id,) = daemon.tick(NOW).runs
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        back = m.rollback(run_id)
        assert back.held == back.members_restored >= 2
    for at in (NOW, NOW + 1, NOW + HOUR, NOW + 5 * HOUR, NOW + 29 * DAY):
        tick = daemon.tick(at)
        assert tick.runs == () and tick.namespaces[0].fired == (), at
    assert set(statuses(db_path, "work").values()) == {"live"}
    assert [(st, trig) for _, st, trig, _ in runs(db_path)] == [("rolled_back", "idle")]

    later = daemon.tick(NOW + 31 * DAY)
    assert later.runs and later.namespaces[0].fired == ("idle",)
    assert "deprecated" in statuses(db_path, "work").values()


def test_other_triggers_after_a_rollback_fold_nothing_held(db_path: Path,
                                                          daemon_factory: Any) -> None:
    """Held memories (a rollback's, and those no synthesis could be made denser than) do not
    count towards node_count: with every old memory held, no run starts and nothing is
    folded; new activity elsewhere does not end a hold; when the holds end, runs fold again."""
    fill(db_path, "work", old_fragments())
    daemon = daemon_factory()
    (run_id,) = daemon.tick(NOW).runs
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        m.rollback(run_id)
        m.save("Lunch with the platform team moved to Thursday.")
    for at in (NOW + HOUR, NOW + 6 * HOUR):
        tick = daemon.tick(at)
        assert tick.namespaces[0].fired == () and tick.runs == ()
        assert list(statuses(db_path, "work").values()).count("live") == 19
    assert daemon.tick(NOW + 31 * DAY).runs  # the holds have ended: node_count fires again
    # ...and what can be merged is folded (the merging synthesiser folds restated fragments
    # only, so fewer than before it, when every cluster folded).
    assert list(statuses(db_path, "work").values()).count("deprecated") >= 2


def test_idle_trigger_counts_saves_and_injects_of_other_processes(
        db_path: Path, tmp_path: Path, daemon_factory: Any) -> None:
    start = NOW

    def agent(code: str, at: float) -> None:
        # Another process, with its clock fixed at ``at``: activity the daemon only sees
        # through the file.
        script = (f"from remd import Memory\n"
                  f"with Memory({str(db_path)!r}, clock=lambda: {at!r}) as m:\n    {code}\n")
        subprocess.run([sys.executable, "-c", script], check=True, timeout=120)

    agent("m.save('The staging database is called cormorant')", start)
    daemon = daemon_factory()

    def idle(at: float) -> bool:
        tick = daemon.tick(at).namespaces[0]
        return "idle" in tick.fired

    assert not idle(start + 3 * HOUR)
    agent("m.inject('what is the staging database called?', 200)", start + 2 * HOUR)
    assert not idle(start + 5 * HOUR)  # 3 h after the inject
    assert idle(start + 6.5 * HOUR)  # 4.5 h after it: a REM run starts
    assert not idle(start + 9 * HOUR)  # nothing new since that run
    assert [r[2] for r in runs(db_path)] == ["idle"]


def test_stop_mid_cycle_finishes_the_current_cluster_and_leaves_the_rest(
        db_path: Path, daemon_factory: Any) -> None:
    fill(db_path, "a-work", old_fragments())
    fill(db_path, "b-work", old_fragments())
    before_b = statuses(db_path, "b-work")
    handled: list[ClusterOutcome] = []

    def on_cluster(event: ClusterOutcome) -> None:
        if event.status in ("committed", "skipped"):
            handled.append(event)
            daemon.request_stop()  # what SIGTERM does, from inside the cycle

    daemon = daemon_factory(on_cluster=on_cluster)
    report = daemon.tick(NOW)

    assert len(handled) == 1 and handled[0].total >= 2
    assert report.stopped and [t.namespace for t in report.namespaces] == ["a-work"]
    assert report.namespaces[0].outcome == "interrupted"
    ((ns, status, _, run_id),) = runs(db_path)
    assert (ns, status) == ("a-work", "interrupted")
    with Memory(db_path, "a-work", embedder=None) as m:
        clusters = m.store.query("SELECT status FROM rem_clusters WHERE run_id = ?", (run_id,))
        deprecated = m.store.scalar("SELECT count(*) FROM nodes WHERE namespace = 'a-work' "
                                    "AND status = 'deprecated'")
    assert len(clusters) == 1  # only the cluster in flight was written
    assert deprecated == (handled[0].size if handled[0].status == "committed" else 0)
    assert statuses(db_path, "b-work") == before_b  # never visited
    assert daemon.tick(NOW).namespaces == ()  # a stopped daemon starts no more work


def test_a_tick_while_one_runs_returns_busy_at_once(db_path: Path,
                                                    daemon_factory: Any) -> None:
    fill(db_path, "work", old_fragments())
    inner: list[Any] = []

    def on_cluster(event: ClusterOutcome) -> None:
        if not inner:
            inner.append(daemon.tick(NOW))

    daemon = daemon_factory(on_cluster=on_cluster)
    outer = daemon.tick(NOW)
    assert inner[0].busy and inner[0].namespaces == ()
    assert outer.namespaces[0].outcome == "ran" and len(runs(db_path)) == 1


def test_a_namespace_consolidated_by_another_daemon_is_busy_not_failed(
        db_path: Path, daemon_factory: Any) -> None:
    fill(db_path, "work", old_fragments())
    other = daemon_factory()
    seen: list[Any] = []

    def on_cluster(event: ClusterOutcome) -> None:
        if not seen:
            seen.append(other.tick(NOW))  # the first daemon holds the namespace's lease

    first = daemon_factory(on_cluster=on_cluster)
    assert first.tick(NOW).namespaces[0].outcome == "ran"
    assert seen[0].namespaces[0].outcome == "busy"
    assert "already running" in (seen[0].namespaces[0].error or "")
    assert len(runs(db_path)) == 1


def test_a_file_with_no_memories_ticks_quietly(daemon_factory: Any) -> None:
    report = daemon_factory().tick(NOW)
    assert report.namespaces == () and not report.busy


def test_start_loop_and_request_stop_in_process(db_path: Path) -> None:
    config = load_config(env={}, overrides={"daemon": {"http": "127.0.0.1:0",
                                                       "interval_seconds": 3600}})
    daemon = Daemon(db_path, config, env={}, embedder=None, http=http_server)
    daemon.start()
    loop = threading.Thread(target=daemon.loop)
    loop.start()
    # The HTTP API runs in this process beside the scheduler.
    with httpx.Client(base_url=f"http://127.0.0.1:{daemon.http.port}", timeout=60) as api:
        assert api.post("/v1/memories", json={"content": "in-process"}).status_code == 201
    assert daemon.scheduler is not None and daemon.scheduler.running
    daemon.request_stop()
    loop.join(timeout=60)
    assert not loop.is_alive()
    daemon.shutdown()
    assert daemon.scheduler is None and daemon.http is None
    daemon.request_stop()  # harmless once everything is closed


# -- configuration ---------------------------------------------------------------------------
def test_reload_reads_the_file_again_and_keeps_the_old_config_when_it_is_bad(
        db_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "remd.toml"
    path.write_text("[daemon]\ninterval_seconds = 60\n[triggers]\nmax_live_nodes = 500\n")
    config = load_config(path, env={})
    daemon = Daemon(db_path, config, config_path=path, clock=lambda: NOW, env={})
    path.write_text("[daemon]\ninterval_seconds = 5\n[triggers]\nmax_live_nodes = 10\n")
    new = daemon.reload()
    assert new is not None and daemon.config.daemon.interval_seconds == 5
    assert daemon.config.triggers.max_live_nodes == 10

    path.write_text("[daemon]\ninterval_seconds = -1\n")
    with capture_events() as logs:
        assert daemon.reload() is None
    assert daemon.config.daemon.interval_seconds == 5
    failed = next(e for e in logs if e["event"] == "config.reload_failed")
    assert "interval_seconds" in failed["error"]
    daemon.close()


def test_reloaded_thresholds_apply_from_the_next_tick(db_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "remd.toml"
    path.write_text('[triggers]\nmax_live_nodes = 500\ndisabled = ["idle"]\n')
    fill(db_path, "work", old_fragments())
    daemon = Daemon(db_path, load_config(path, env={}), config_path=path, clock=lambda: NOW,
                    env={})
    assert daemon.tick(NOW).namespaces[0].outcome == "quiet"
    path.write_text('[triggers]\nmax_live_nodes = 10\ndisabled = ["idle"]\n')
    daemon.reload()
    assert daemon.tick(NOW).namespaces[0].outcome == "ran"
    daemon.close()


def test_config_layers_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "remd.toml"
    path.write_text('[daemon]\ninterval_seconds = 30\nhttp = "127.0.0.1:9000"\n')
    env = {"REMD_DAEMON__INTERVAL_SECONDS": "20"}
    assert load_config(path, env={}).daemon.interval_seconds == 30
    assert load_config(path, env=env).daemon.interval_seconds == 20
    flags = {"daemon": {"interval_seconds": 10, "http": "[::1]:0"}}
    config = load_config(path, env=env, overrides=flags)
    assert config.daemon.interval_seconds == 10 and config.daemon.http_address == ("::1", 0)
    assert load_config(env={"REMD_DAEMON__HTTP": ""}).daemon.http is None
    for loopback in ("8765", ":8765"):
        address = load_config(env={}, overrides={"daemon": {"http": loopback}}).daemon
        assert address.http_address == ("127.0.0.1", 8765)


@pytest.mark.parametrize("http", ["nonsense", "127.0.0.1", "host:99999", "h:x", "a b:80"])
def test_bad_http_address_is_a_config_error(http: str) -> None:
    with pytest.raises(ConfigError, match="daemon"):
        load_config(env={}, overrides={"daemon": {"http": http}})


@pytest.mark.parametrize(("args", "env", "message"), [
    (["serve", "--http", "nonsense"], {}, "HOST:PORT"),
    (["serve"], {"REMD_DAEMON__INTERVAL_SECONDS": "soon"}, "interval_seconds"),
    (["serve", "--config", "/nonexistent/remd.toml"], {}, "does not exist"),
    (["serve"], {"REMD_DAEMON__LOG_LEVEL": "loud"}, "log_level"),
])
def test_serve_refuses_bad_config_at_start_with_one_line(
        db_path: Path, args: list[str], env: dict[str, str], message: str) -> None:
    result = CliRunner().invoke(main, ["--db", str(db_path), *args], env=env)
    assert result.exit_code == 1, result.output
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_serve_usage_errors_exit_2(db_path: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(db_path), "serve", "--interval", "0"])
    assert result.exit_code == 2


def test_serve_refuses_a_taken_port(db_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["--db", str(db_path), "serve", "--http",
                                           f"127.0.0.1:{port}"])
    assert result.exit_code == 1 and "cannot listen" in result.stderr


# -- the engine the front ends serve from ---------------------------------------------------
def test_host_serves_every_namespace_from_one_engine_and_swaps_it_on_reload(
        db_path: Path) -> None:
    host = EngineHost(db_path, load_config(env={}), embedder=None)
    with host.lease() as first, host.lease() as second:
        assert first is second  # one engine: one pool and one set of caches for all
        Memory.bound(first, "a").save("alpha memory")
        assert Memory.bound(second, "b").recent() == []  # nothing crosses namespaces
    with pytest.raises(InvalidInput):
        Memory.bound(host.engine, "bad namespace")
    with host.lease() as old:
        host.reconfigure(load_config(env={}, overrides={"store": {"max_content_chars": 5}}),
                         None)
        # A request in flight keeps its engine until it is done.
        assert [n.content for n in Memory.bound(old, "a").recent()] == ["alpha memory"]
    with host.lease() as fresh:
        assert fresh is not old and fresh.config.store.max_content_chars == 5
        assert [n.content for n in Memory.bound(fresh, "a").recent()] == ["alpha memory"]
    with pytest.raises(StoreError, match="closed"):
        old.store.query("SELECT 1")
    host.close()


# -- logging ---------------------------------------------------------------------------------
@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    yield stream
    configure_logging("console", "warning", stream=sys.stderr)


def test_logs_are_json_lines_without_secrets_or_contents(log_stream: io.StringIO) -> None:
    configure_logging("json", "info", stream=log_stream)
    log = get_logger("remd.test")
    log.info("memory.saved", id="abc", content="my bank PIN is 1234", api_key="sk-secret",
             query="what is my PIN", namespace="default")
    log.debug("dropped.below.level", content="x")
    logging.getLogger("uvicorn.error").warning("stdlib %s", "record")
    structlog.get_logger("plugin").warning("not remd's", token="t0k")  # structlog's defaults
    lines = [json.loads(line) for line in log_stream.getvalue().splitlines()]
    assert [e["event"] for e in lines] == ["memory.saved", "stdlib record", "not remd's"]
    saved = lines[0]
    assert saved["id"] == "abc" and saved["api_key"] == REDACTED and saved["level"] == "info"
    assert "content" not in saved and "query" not in saved and "timestamp" in saved
    # Every field but the clock's (whose microseconds may well read "1234").
    shown = json.dumps([{k: v for k, v in e.items() if k != "timestamp"} for e in lines])
    assert "1234" not in shown and "sk-secret" not in shown
    assert lines[1]["logger"] == "uvicorn.error" and lines[1]["level"] == "warning"
    assert lines[2]["token"] == REDACTED and lines[2]["level"] == "warning"


def test_contents_are_logged_at_debug_only(log_stream: io.StringIO) -> None:
    configure_logging("json", "debug", stream=log_stream)
    log = get_logger("remd.test")
    log.debug("memory.saved", content="visible at debug", token="t0k")
    log.info("memory.saved", content="hidden at info")
    first, second = (json.loads(x) for x in log_stream.getvalue().splitlines())
    assert first["content"] == "visible at debug" and first["token"] == REDACTED
    assert "content" not in second


# -- sd_notify -------------------------------------------------------------------------------
@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(60)
    yield sock, path
    sock.close()


def test_notifier_sends_datagrams_to_the_socket(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "4000000"})
    assert notifier.enabled and notifier.watchdog_seconds == 2.0
    assert notifier.ready(status="watching x")
    ready = sock.recv(4096).decode().split("\n")
    assert ready[0] == "READY=1" and "STATUS=watching x" in ready
    assert notifier.watchdog() and sock.recv(4096) == b"WATCHDOG=1"
    assert notifier.stopping() and sock.recv(4096) == b"STOPPING=1"


def test_notifier_speaks_abstract_sockets_and_is_off_without_systemd() -> None:
    name = f"remd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(60)
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(4096).startswith(b"READY=1")
    off = Notifier({})
    assert not off.enabled and not off.ready() and off.watchdog_seconds is None
    assert Notifier({"WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"}).watchdog_seconds is None
    # A socket that is gone is logged, never raised: the daemon keeps running.
    assert not Notifier({"NOTIFY_SOCKET": "/nonexistent/notify"}).ready()


# -- `remd serve` as a real process ----------------------------------------------------------
def recv_until(sock: socket.socket, prefix: bytes) -> list[bytes]:
    """Datagrams received up to and including the first that starts with ``prefix`` (STATUS
    updates from the scheduler thread may come in between)."""
    got = []
    while not got or not got[-1].startswith(prefix):
        got.append(sock.recv(4096))
    return got


class Served:
    """A `remd serve` subprocess whose JSON log lines are read on a thread. One a failed test
    left running is killed after the test (tests/conftest.py: :meth:`kill_left`)."""

    started: ClassVar[list[subprocess.Popen[str]]] = []

    @classmethod
    def kill_left(cls) -> None:
        """SIGKILL every `remd serve` still running (a test failed before stopping it)."""
        started, cls.started = cls.started, []
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=60)

    def __init__(self, db: Path, *args: str, env: dict[str, str] | None = None,
                 max_fds: int | None = None) -> None:
        full_env = {**os.environ, **(env or {})}
        full_env.pop("REMD_CONFIG", None)

        def limit() -> None:  # in the child: a lower RLIMIT_NOFILE, as systemd would set it
            if max_fds is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))

        self.proc = subprocess.Popen([*REMD, "--db", str(db), "serve", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=full_env, text=True, preexec_fn=limit)
        Served.started.append(self.proc)
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except json.JSONDecodeError:
                self.events.put({"event": "<not json>", "line": line})

    def wait_for(self, event: str, timeout: float = 90, **match: Any) -> dict[str, Any]:
        """The next log event of this name (matching ``match``); fails after ``timeout``."""
        while True:
            try:
                item = self.events.get(timeout=timeout)
            except queue.Empty:
                self.proc.kill()
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"no {event!r} event; stderr: {err}") from None
            self.seen.append(item)
            if item.get("event") == event and all(item.get(k) == v for k, v in match.items()):
                return item

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        while not self.events.empty():
            self.seen.append(self.events.get())
        return code


def test_serve_runs_rem_and_stops_on_sigterm_with_exit_0(
        db_path: Path, notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    fill(db_path, "work", old_fragments())
    served = Served(db_path, "--interval", "3600", env={
        "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000",
        "REMD_TRIGGERS__MAX_LIVE_NODES": "10"})
    ready = served.wait_for("daemon.ready")
    assert ready["pid"] == served.proc.pid and ready["interval_seconds"] == 3600
    recv_until(sock, b"READY=1")
    # The first tick runs at start, not after the first interval.
    finished = served.wait_for("cycle.finished", namespace="work")
    assert finished["status"] == "completed" and finished["trigger"] == "node_count"
    assert served.stop(signal.SIGTERM) == 0
    names = [e.get("event") for e in served.seen]
    assert "daemon.stopping" in names and names[-1] == "daemon.stopped"
    got = recv_until(sock, b"STOPPING=1")
    assert b"WATCHDOG=1" in got
    assert all(n != "<not json>" for n in names)


def test_serve_reloads_config_on_sighup(db_path: Path, tmp_path: Path,
                                        notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    config = tmp_path / "remd.toml"
    config.write_text("[daemon]\ninterval_seconds = 3600\n")
    served = Served(db_path, "--config", str(config), env={"NOTIFY_SOCKET": path})
    served.wait_for("daemon.ready")
    recv_until(sock, b"READY=1")
    config.write_text("[daemon]\ninterval_seconds = 1800\n")
    served.proc.send_signal(signal.SIGHUP)
    reloaded = served.wait_for("config.reloaded")
    assert reloaded["interval_seconds"] == 1800
    assert b"RELOADING=1" in recv_until(sock, b"READY=1")
    config.write_text("[daemon]\ninterval_seconds = 'often'\n")
    served.proc.send_signal(signal.SIGHUP)
    assert "interval_seconds" in served.wait_for("config.reload_failed")["error"]
    assert served.stop(signal.SIGINT) == 0


def test_sigterm_during_a_cycle_finishes_the_cluster_in_flight_and_exits_0(
        db_path: Path, llm_server: Any) -> None:
    fill(db_path, "work", old_fragments())
    # Each synthesis (the fragments merged, every detail kept) takes a while: the signal
    # lands mid-call.
    llm_server.default = slow(1.5, merging=True)
    asked = threading.Event()
    record = llm_server.begin

    def begin(body: dict[str, Any], headers: dict[str, str]) -> Any:
        asked.set()
        return record(body, headers)

    llm_server.begin = begin
    served = Served(db_path, "--interval", "3600", env={
        "REMD_TRIGGERS__MAX_LIVE_NODES": "10", "REMD_LLM__BASE_URL": llm_server.base_url,
        "REMD_LLM__API_KEY": "sk-test-key", "REMD_LLM__CONCURRENCY": "1",
        "REMD_REM__MIN_COVERAGE": "0"})
    served.wait_for("rem.started", namespace="work")
    assert asked.wait(timeout=120)  # the first cluster's synthesis is in flight
    assert served.stop(signal.SIGTERM) == 0

    finished = next(e for e in served.seen if e.get("event") == "cycle.finished")
    planned = next(e for e in served.seen if e.get("event") == "rem.planned")
    # Two clusters or more were planned; the run counts the one it reached (counts add up).
    assert finished["status"] == "interrupted" and planned["clusters"] >= 2
    assert finished["clusters"] == finished["synthesised"] + finished["skipped"] == 1
    assert len(llm_server.requests) == 1  # nothing new was asked after the signal
    ((_, status, _, run_id),) = runs(db_path)
    assert status == "interrupted"
    with Memory(db_path, "work", embedder=None) as m:
        clusters = m.store.query("SELECT status, members FROM rem_clusters WHERE run_id = ?",
                                 (run_id,))
        deprecated = m.store.scalar("SELECT count(*) FROM nodes WHERE namespace = 'work' "
                                    "AND status = 'deprecated'")
        assert m.store.query("PRAGMA integrity_check") == [("ok",)]
    ((cluster_status, members),) = clusters  # the cluster in flight was finished
    assert cluster_status == "committed" and deprecated == len(json.loads(members))
    assert "sk-test-key" not in json.dumps(served.seen)


class _Cycle:
    pass


def test_freeze_heap_keeps_startup_objects_out_of_full_collections() -> None:
    try:
        freeze_heap()
        assert gc.get_freeze_count() > 1000  # the modules and objects made while starting
        # Garbage made afterwards is still collected: a reference cycle, then a full pass.
        a, b = _Cycle(), _Cycle()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
