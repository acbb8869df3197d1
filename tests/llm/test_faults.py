"""A lying or failing LLM at the HTTP level, through a real REM cycle and through the daemon.

The server is tests/llm_server.py (a real OpenAI-compatible HTTP server on 127.0.0.1). For every
fault the cycle ends cleanly, the cluster is skipped with a structured ``rem.cluster_skipped``
event giving the reason, no member is deprecated without its committed synthesis, and the key
never reaches a log line or the database. The daemon keeps running through them, in process
and as a real ``remd serve``, with one LLM client (one kept-alive connection) for its life.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from remd import Memory, RunStatus
from remd.config import LLMSettings, load_config
from remd.llm.client import LLMClient
from remd.logs import capture_events
from remd.service.daemon import Daemon
from remd.sleep.rem import ClusterOutcome
from remd.sleep.synthesis import LLMSynthesiser
from tests.llm_server import (
    NOTES_ANSWER,
    Behaviour,
    LLMServer,
    body,
    echo_auth,
    empty_choices,
    good,
    hangup,
    huge,
    null_content,
    raw,
    refused_base_url,
    slow,
    status,
)
from tests.service.test_daemon import Served
from tests.sleep.test_rem import ALICE, DAY, NOW, YEAR_AGO, line

KEY = "sk-fault-test-5d1e0c3b9a"

FAULTS: dict[str, tuple[Behaviour, ...]] = {
    "truncated json": (raw('{"synthesis": "Alice moved to Ber'),) * 2,
    "wrong shape": (good({"summary": "Alice moved", "entities": ["Alice"]}),) * 2,
    "wrong types": (good({"synthesis": ["not", "a", "string"], "key_entities": "Alice",
                          "causal_chains": [], "temporal_anchors": [], "importance": "high"}),) * 2,
    "not json at all": (raw("Sure! Here is your summary: Alice moved."),) * 2,
    "empty choices": (empty_choices(),) * 4,
    "over 1 MB": (huge(2_000_000),) * 4,
    "slow drip past the timeout": (slow(3.0, drip=0.05),) * 4,
    "silent past the timeout": (slow(3.0),) * 4,
    "headers, then a stall": (slow(3.0, drip=1.0),) * 4,
    "connection dropped mid-answer": (hangup(),) * 4,
    "null content": (null_content(),) * 4,
    "an HTML page with 200": (body(b"<html><body>Welcome to nginx!</body></html>"),) * 4,
    "a proxy's 502 page": (body(b"<html>502 Bad Gateway</html>", 502),) * 4,
    "corrupt gzip": (body(b"\x1f\x8bnot gzip at all", headers={
        "Content-Type": "application/json", "Content-Encoding": "gzip"}),) * 4,
    "401 that repeats the key": (echo_auth(401),) * 4,
    "401": (status(401),) * 4,
    "429 forever": (status(429, {"retry-after": "0"}),) * 4,
    "500": (status(500),) * 4,
    "503": (status(503),) * 4,
}


@pytest.fixture
def alice(db_path: Path) -> Iterator[Memory]:
    with Memory(db_path, clock=lambda: NOW) as m:
        m.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(ALICE)])
        yield m


def synth(base_url: str) -> LLMSynthesiser:
    s = LLMSettings(base_url=base_url, api_key=KEY, model="test-model", max_retries=1,
                    timeout=0.6)
    return LLMSynthesiser(LLMClient(s, sleep=lambda _: None))


def consistent(m: Memory) -> None:
    """No member deprecated without a committed synthesis that has its DERIVED_FROM edge."""
    q = m.store.query
    assert m.store.scalar("PRAGMA integrity_check") == "ok"
    synth_ids = {r[0] for r in q("SELECT id FROM nodes WHERE kind = 'synthesis' "
                                 "AND status = 'live'")}
    derived = set(q("SELECT src, dst FROM edges WHERE type = 'DERIVED_FROM' AND live = 1"))
    for node, st, by in q("SELECT id, status, deprecated_by FROM nodes WHERE kind != 'synthesis'"):
        if st == "deprecated":
            assert by in synth_ids and (by, node) in derived, node


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failing_llm_skips_the_cluster_and_keeps_every_member_live(
        alice: Memory, llm_server: LLMServer, fault: str) -> None:
    llm_server.script(*FAULTS[fault])
    with capture_events() as logs:
        run = alice.run_rem(now=NOW, synthesiser=synth(llm_server.base_url))
    assert run.status is RunStatus.COMPLETED
    assert (run.synthesised, run.skipped) == (0, 1)
    assert alice.stats().live == 3 and alice.stats().synthesis == 0
    consistent(alice)
    reason = alice.store.scalar("SELECT reason FROM rem_clusters WHERE run_id = ?",
                                (run.run_id,))
    assert reason
    skipped = [e for e in logs if e["event"] == "rem.cluster_skipped"]
    assert len(skipped) == 1 and skipped[0]["reason"] == reason
    assert skipped[0]["log_level"] == "warning"
    assert KEY not in json.dumps(logs, default=str)
    assert KEY not in json.dumps(alice.store.query("SELECT reason FROM rem_clusters UNION ALL "
                                                   "SELECT error FROM rem_runs"))
    # The next run, with a working LLM, consolidates the same cluster.
    llm_server.answer_with(good(NOTES_ANSWER))
    again = alice.run_rem(now=NOW, synthesiser=synth(llm_server.base_url))
    assert again.synthesised == 1
    consistent(alice)


def test_connection_refused_skips_the_cluster(alice: Memory) -> None:
    with capture_events() as logs:
        run = alice.run_rem(now=NOW, synthesiser=synth(refused_base_url()))
    assert (run.status, run.synthesised, run.skipped) == (RunStatus.COMPLETED, 0, 1)
    assert alice.stats().live == 3
    consistent(alice)
    assert any(e["event"] == "rem.cluster_skipped" and e["reason"] for e in logs)


def test_a_long_but_valid_answer_is_committed_whole_or_not_at_all(
        alice: Memory, llm_server: LLMServer) -> None:
    llm_server.default = huge(200_000)
    run = alice.run_rem(now=NOW, synthesiser=synth(llm_server.base_url))
    assert run.synthesised + run.skipped == 1
    consistent(alice)
    if run.synthesised:
        node = alice.store.scalar("SELECT content FROM nodes WHERE kind = 'synthesis'")
        assert len(node) == 200_000


@pytest.mark.parametrize("fault", ["500", "wrong shape", "slow drip past the timeout",
                                   "refused"])
def test_the_daemon_keeps_running_through_llm_faults(
        db_path: Path, llm_server: LLMServer, fault: str) -> None:
    base_url = refused_base_url() if fault == "refused" else llm_server.base_url
    if fault != "refused":
        llm_server.default = FAULTS[fault][0]
    lines = [line(f"{t} (note {k})", YEAR_AGO - (3 * k + i) * DAY)
             for k in range(4) for i, t in enumerate(ALICE)]
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        m.import_lines(lines)
    cfg = load_config(env={}, overrides={
        "triggers": {"max_live_nodes": 5},
        "llm": {"base_url": base_url, "api_key": KEY, "model": "test-model",
                "max_retries": 0, "timeout": 0.6}})
    daemon = Daemon(db_path, cfg, clock=lambda: NOW, env={})
    try:
        with capture_events() as logs:
            first = daemon.tick(NOW)
            second = daemon.tick(NOW + 60)  # still alive, and still refusing to lose anything
        for report in (first, second):
            outcome = {t.namespace: t.outcome for t in report.namespaces}
            assert outcome["work"] == "ran"
        with Memory(db_path, "work", embedder=None) as m:
            assert m.stats().live == 12 and m.stats().synthesis == 0
            consistent(m)
        # (The daemon's own events may go through a logger an earlier test configured and
        # cached; REM's skip events are what this test is about.)
        skipped = [e for e in logs if e["event"] == "rem.cluster_skipped"]
        assert len(skipped) >= 2 and all(e["reason"] for e in skipped)
        assert KEY not in json.dumps(logs, default=str)
        # Once the LLM answers again, the next tick consolidates.
        if fault != "refused":
            llm_server.answer_with(good(NOTES_ANSWER))
            daemon.tick(NOW + 120)
            with Memory(db_path, "work", embedder=None) as m:
                assert m.stats().synthesis >= 1
                consistent(m)
    finally:
        daemon.close()




def work_lines() -> list[str]:
    """Twelve year-old fragments about Alice: a few clusters' worth in one namespace."""
    return [line(f"{t} (note {k})", YEAR_AGO - (3 * k + i) * DAY)
            for k in range(4) for i, t in enumerate(ALICE)]


def test_the_daemon_keeps_one_llm_client_and_closes_it(db_path: Path,
                                                       llm_server: LLMServer) -> None:
    """Every cycle reuses one client (its kept-alive connection), failing or not; a reload
    that changes the [llm] settings swaps it, and close() closes it."""
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        m.import_lines(work_lines())
    llm: dict[str, Any] = {"base_url": llm_server.base_url, "api_key": KEY,
                           "model": "test-model", "max_retries": 0, "concurrency": 1}
    overrides: dict[str, Any] = {"triggers": {"max_live_nodes": 5}, "llm": llm}
    llm_server.answer_with(status(500))
    daemon = Daemon(db_path, load_config(env={}, overrides=overrides), overrides=overrides,
                    clock=lambda: NOW, env={}, embedder=None)
    try:
        daemon.tick(NOW)
        daemon.tick(NOW + 60)
        failing = len(llm_server.connection_of)
        assert failing >= 2 and len(set(llm_server.connection_of)) == 1
        daemon.overrides["llm"] = {**llm, "model": "another-model"}
        assert daemon.reload() is not None
        llm_server.answer_with(good(NOTES_ANSWER))
        daemon.tick(NOW + 120)
        after = llm_server.connection_of[failing:]
        assert after and len(set(after)) == 1 and after[0] != llm_server.connection_of[0]
        assert llm_server.requests[-1]["model"] == "another-model"
        with Memory(db_path, "work", embedder=None) as m:
            assert m.stats().synthesis >= 1
            consistent(m)
    finally:
        daemon.close()
    assert llm_server.wait_no_connections()  # the old client was closed at the reload, too


def test_remd_serve_keeps_running_and_serving_while_the_llm_fails(
        db_path: Path, llm_server: LLMServer) -> None:
    """A real `remd serve` (HTTP on, a token, a key): the LLM answers 500, then nonsense, then
    well. The process stays up, answers HTTP, loses nothing, consolidates once the LLM is back,
    and stops with exit code 0; neither the key nor the token is in its output."""
    token = "tok-2f9c81d0e4a7b356"
    with Memory(db_path, "work", clock=lambda: NOW) as m:
        m.import_lines(work_lines())
    llm_server.answer_with(status(500))
    served = Served(db_path, "--interval", "1", "--http", "127.0.0.1:0", env={
        "REMD_TRIGGERS__MAX_LIVE_NODES": "5", "REMD_LLM__BASE_URL": llm_server.base_url,
        "REMD_LLM__API_KEY": KEY, "REMD_LLM__MAX_RETRIES": "0", "REMD_LLM__TIMEOUT": "5",
        "REMD_LLM__CONCURRENCY": "1", "REMD_REM__MIN_COVERAGE": "0",
        "REMD_DAEMON__HTTP_TOKEN": token, "REMD_DAEMON__LOG_FORMAT": "json"})
    try:
        listening = served.wait_for("http.listening")
        first = served.wait_for("cycle.finished", namespace="work")
        assert (first["status"], first["synthesised"]) == ("completed", 0) and first["skipped"]
        reasons = [e["reason"] for e in served.seen if e.get("event") == "rem.cluster_skipped"]
        assert reasons and all("500" in r for r in reasons)
        llm_server.answer_with(good({"summary": "wrong shape"}))
        served.wait_for("synthesis.invalid_answer")
        second = served.wait_for("cycle.finished", namespace="work")
        assert second["synthesised"] == 0
        assert served.proc.poll() is None
        base = f"http://127.0.0.1:{listening['port']}"
        stats = httpx.get(f"{base}/v1/stats", params={"namespace": "work"},
                          headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert stats.status_code == 200 and stats.json()["live"] == 12
        llm_server.answer_with(good(NOTES_ANSWER))
        while (done := served.wait_for("cycle.finished", namespace="work"))["synthesised"] == 0:
            pass
        assert done["status"] == "completed"
    finally:
        code = served.stop()
    assert code == 0
    # One client, one kept-alive connection, for every cycle of the process.
    assert len(set(llm_server.connection_of)) == 1
    out = json.dumps(served.seen) + (served.proc.stderr.read() if served.proc.stderr else "")
    assert KEY not in out and token not in out
    with Memory(db_path, "work", embedder=None) as m:
        consistent(m)
        assert m.stats().synthesis >= 1


def test_a_bug_in_one_namespace_cycle_leaves_the_daemon_and_the_others_running(
        db_path: Path) -> None:
    """Not an LLM fault but the same promise: an exception that is no RemdError (here from a
    progress observer) fails that namespace's run, logged, and the next namespace still runs."""
    for ns in ("a", "b"):
        with Memory(db_path, ns, clock=lambda: NOW) as m:
            m.import_lines(work_lines())
    calls: list[ClusterOutcome] = []

    def observer(event: ClusterOutcome) -> None:
        calls.append(event)
        if len(calls) == 1:
            raise RuntimeError("observer bug")

    cfg = load_config(env={}, overrides={"triggers": {"max_live_nodes": 5}})
    daemon = Daemon(db_path, cfg, clock=lambda: NOW, env={}, embedder=None, on_cluster=observer)
    try:
        with capture_events() as logs:
            report = daemon.tick(NOW)
        outcome = {t.namespace: (t.outcome, t.error) for t in report.namespaces}
        assert outcome["a"] == ("failed", "RuntimeError: observer bug")
        assert outcome["b"][0] == "ran"
        assert any(e["event"] == "rem.crashed" and e["namespace"] == "a" for e in logs)
        for ns in ("a", "b"):
            with Memory(db_path, ns, embedder=None) as m:
                consistent(m)
        with Memory(db_path, "a", embedder=None) as m:
            assert m.stats().live == 12
            assert m.store.scalar("SELECT status FROM rem_runs WHERE namespace = 'a'") == "failed"
    finally:
        daemon.close()
