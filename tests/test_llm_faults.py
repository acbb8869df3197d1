"""A lying or failing LLM at the HTTP level, through a real REM cycle and through the daemon.

The server is tests/llm_server.py (a real OpenAI-compatible HTTP server on 127.0.0.1). For every
fault the cycle ends cleanly, the cluster is skipped with a structured ``rem.cluster_skipped``
event giving the reason, no member is deprecated without its committed synthesis, and the key
never reaches a log line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from remd import Memory, RunStatus
from remd.config import load_config
from remd.daemon import Daemon
from remd.exchange import import_lines
from remd.llm import LLMClient, LLMSettings
from remd.synthesis import LLMSynthesiser
from tests.llm_server import (
    Behaviour,
    LLMServer,
    empty_choices,
    good,
    huge,
    raw,
    refused_base_url,
    slow,
    status,
)
from tests.test_rem import ALICE, DAY, NOW, YEAR_AGO, line

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
    "401": (status(401),) * 4,
    "429 forever": (status(429, {"retry-after": "0"}),) * 4,
    "500": (status(500),) * 4,
    "503": (status(503),) * 4,
}


@pytest.fixture
def alice(db_path: Path) -> Iterator[Memory]:
    with Memory(db_path, clock=lambda: NOW) as m:
        import_lines(m, [line(t, YEAR_AGO - i * DAY) for i, t in enumerate(ALICE)])
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
    with structlog.testing.capture_logs() as logs:
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
    # The next run, with a working LLM, consolidates the same cluster.
    with llm_server._lock:
        llm_server._queue.clear()  # behaviours the client did not retry into
    llm_server.default = good()
    again = alice.run_rem(now=NOW, synthesiser=synth(llm_server.base_url))
    assert again.synthesised == 1
    consistent(alice)


def test_connection_refused_skips_the_cluster(alice: Memory) -> None:
    with structlog.testing.capture_logs() as logs:
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
        import_lines(m, lines)
    cfg = load_config(env={}, overrides={
        "triggers": {"max_live_nodes": 5},
        "llm": {"base_url": base_url, "api_key": KEY, "model": "test-model",
                "max_retries": 0, "timeout": 0.6}})
    daemon = Daemon(db_path, cfg, clock=lambda: NOW, env={})
    try:
        with structlog.testing.capture_logs() as logs:
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
            llm_server.default = good()
            daemon.tick(NOW + 120)
            with Memory(db_path, "work", embedder=None) as m:
                assert m.stats().synthesis >= 1
                consistent(m)
    finally:
        daemon.close()


