"""Triggers, evaluated at explicit times (no sleeping)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import Config, Memory, TriggerReason, load_config
from remd.cli.main import main
from remd.sleep.triggers import HOUR, evaluate
from tests.conftest import Clock

pytestmark = pytest.mark.backends

DAY = 24 * HOUR


def check(report: object, reason: TriggerReason) -> object:
    return next(c for c in report.checks if c.reason is reason)  # type: ignore[attr-defined]


def test_an_empty_namespace_fires_nothing(mem: Memory) -> None:
    report = evaluate(mem.engine, mem.namespace, 1_750_000_000.0)
    assert not report.should_run and report.fired == ()
    assert {c.reason for c in report.checks} == {
        TriggerReason.NODE_COUNT, TriggerReason.RETRIEVAL_QUALITY, TriggerReason.IDLE,
        TriggerReason.CONTRADICTIONS}
    assert check(report, TriggerReason.IDLE).value is None  # type: ignore[attr-defined]


def test_node_count_per_namespace(db_path: Path, clock: Clock) -> None:
    cfg = load_config(env={}, overrides={"triggers": {"max_live_nodes": 3}})
    with Memory(db_path, config=cfg, clock=clock) as m:
        m.save_many([f"note {i} about kayaks" for i in range(3)], embed=False)
        assert TriggerReason.NODE_COUNT not in m.triggers().fired
        m.save_many(["one more note about kayaks"], embed=False)
        report = m.triggers()
        assert TriggerReason.NODE_COUNT in report.fired
        assert check(report, TriggerReason.NODE_COUNT).value == 4  # type: ignore[attr-defined]
    with Memory(db_path, "other", config=cfg, clock=clock) as other:
        assert TriggerReason.NODE_COUNT not in other.triggers().fired  # per namespace


def test_idle_fires_after_four_hours_until_a_rem_run(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        m.save("The boiler service is booked for March")
        start = clock.now
        assert TriggerReason.IDLE not in evaluate(m.engine, m.namespace, start + 3 * HOUR).fired
        report = evaluate(m.engine, m.namespace, start + 5 * HOUR)
        assert TriggerReason.IDLE in report.fired
        assert "5.00 h" in check(report, TriggerReason.IDLE).explanation  # type: ignore
        m.run_rem(now=start + 5 * HOUR)
        after = evaluate(m.engine, m.namespace, start + 9 * HOUR)
        assert TriggerReason.IDLE not in after.fired  # consolidated since the last activity
        clock.now = start + 10 * HOUR
        m.save("The boiler service moved to April")
        assert TriggerReason.IDLE in evaluate(m.engine, m.namespace, start + 15 * HOUR).fired


def test_retrieval_quality_uses_the_importance_of_recent_packs(db_path: Path,
                                                               clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        for text in ("The Falcon deploy key rotates every 90 days",
                     "Falcon deploys run from the Lisbon build farm",
                     "The Falcon on-call rota is in the ops wiki"):
            m.save(text)
        assert check(evaluate(m.engine, m.namespace), TriggerReason.RETRIEVAL_QUALITY).value is None  # type: ignore
        m.inject("Falcon deploys", token_budget=200)  # importance 0.5 when injected
        assert TriggerReason.RETRIEVAL_QUALITY not in evaluate(m.engine, m.namespace).fired
        clock.advance(365 * DAY)
        m.refresh_importance()  # a year unused: importance ~0.1
        for _ in range(3):
            m.inject("Falcon deploy key", token_budget=200)
        report = evaluate(m.engine, m.namespace)
        value = check(report, TriggerReason.RETRIEVAL_QUALITY).value  # type: ignore
        assert value is not None and value < 0.45
        assert TriggerReason.RETRIEVAL_QUALITY in report.fired
        # A run answers those packs: they never start another one (the daemon would start a
        # run at every tick), until the agent injects again.
        m.run_rem(now=clock.now)
        clock.advance(60)
        report = evaluate(m.engine, m.namespace)
        assert TriggerReason.RETRIEVAL_QUALITY not in report.fired
        assert "since the last of them" in check(  # type: ignore[attr-defined]
            report, TriggerReason.RETRIEVAL_QUALITY).explanation
        m.inject("Falcon deploy key", token_budget=200)
        assert TriggerReason.RETRIEVAL_QUALITY in evaluate(m.engine, m.namespace).fired


def test_contradiction_ratio(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        notes = [m.save(f"Weekly note {i} about the garden") for i in range(10)]
        assert TriggerReason.CONTRADICTIONS not in m.triggers().fired
        m.save(f"This contradicts [[memory:{notes[0].id}]]: the garden is paved")
        report = m.triggers()
        c = check(report, TriggerReason.CONTRADICTIONS)
        assert c.value == pytest.approx(2 / 11, abs=1e-6)  # type: ignore[attr-defined]
        assert TriggerReason.CONTRADICTIONS in report.fired


def test_disabled_triggers_are_reported_but_never_fire(db_path: Path, clock: Clock) -> None:
    cfg = Config.model_validate({"triggers": {"max_live_nodes": 1, "disabled": ["node_count"]}})
    with Memory(db_path, config=cfg, clock=clock) as m:
        m.save_many(["a note about tides", "a note about moons"], embed=False)
        c = check(m.triggers(), TriggerReason.NODE_COUNT)
        assert not c.fired and not c.enabled and "disabled" in c.explanation  # type: ignore


def test_cli_triggers_prints_one_object(db_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--db", str(db_path), "save", "a note about tides"]).exit_code \
        == 0
    out = runner.invoke(main, ["--db", str(db_path), "triggers", "--json"])
    assert out.exit_code == 0, out.output
    obj = json.loads(out.stdout)
    assert set(obj) >= {"namespace", "should_run", "fired", "triggers"}
    assert [t["name"] for t in obj["triggers"]] == ["node_count", "retrieval_quality", "idle",
                                                    "contradictions"]
    text = runner.invoke(main, ["--db", str(db_path), "triggers"])
    assert text.exit_code == 0 and "node_count" in text.output
