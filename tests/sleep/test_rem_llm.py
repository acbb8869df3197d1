"""REM with an LLM synthesiser that behaves as a small local model did (tests/llm_server.py's
modes): an over-target answer still shorter than its members is kept, a template echo is
refused and counted, a cluster the model failed at is not asked again with the same members,
and a dry run never calls the model. Real SQLite file, real embedder, loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from remd import Memory
from remd.errors import LLMError
from remd.logs import capture_events
from remd.sleep.synthesis import Fragment
from remd.text.reading import gives_self_away
from remd.text.tokens import TokenCounter
from tests.llm_server import LLMServer, good, template_echo, verbatim
from tests.sleep.test_rem import ALICE, DAY, NOW, YEAR_AGO, line, llm_synth, members_live


@pytest.fixture
def alice(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "a.db", clock=lambda: NOW) as m:
        m.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(ALICE)])
        yield m


def fragments() -> list[Fragment]:
    return [Fragment(id=f"f{i}", content=t, importance=0.2, created_at=YEAR_AGO)
            for i, t in enumerate(ALICE)]


def test_an_answer_over_the_target_but_shorter_than_its_members_is_kept(
        llm_server: LLMServer) -> None:
    count = TokenCounter().count
    total = sum(count(t) for t in ALICE)
    answer = "Alice moved to Berlin (relocated) because Acme opened its Berlin office there."
    assert 5 < count(answer) < total
    llm_server.script(good({"synthesis": answer}))
    got = llm_synth(llm_server, counted=True).synthesise(fragments(), target_tokens=5)
    assert got.synthesis == answer and len(llm_server.requests) == 1  # not asked again


def test_a_verbatim_join_is_asked_again_once_then_the_cluster_is_skipped(
        llm_server: LLMServer) -> None:
    llm_server.answer_with(verbatim())
    with pytest.raises(LLMError, match="not shorter than its members"):
        llm_synth(llm_server, counted=True).synthesise(fragments(), target_tokens=5)
    assert len(llm_server.requests) == 2


def test_a_template_echo_is_refused_counted_and_a_warning(alice: Memory,
                                                          llm_server: LLMServer) -> None:
    llm_server.answer_with(template_echo())
    with capture_events() as events:
        run = alice.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
    assert run.synthesised == 0 and members_live(alice)
    assert run.to_dict()["skipped_by"] == {"template_echo": 1}
    assert [e for e in events if e["event"] == "rem.cluster_skipped"
            and e["log_level"] == "warning" and "template" in e["reason"]]


def test_a_cluster_the_model_failed_at_is_not_asked_again_until_something_changes(
        alice: Memory, llm_server: LLMServer) -> None:
    llm_server.answer_with(template_echo())
    first = alice.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
    assert first.skipped == 1 and len(llm_server.requests) == 1
    # the same members, model and prompt a day later: no call, the skip says why
    again = alice.run_rem(now=NOW + DAY, synthesiser=llm_synth(llm_server))
    assert len(llm_server.requests) == 1
    assert again.to_dict()["skipped_by"] == {"asked_before": 1}
    assert first.run_id in again.outcomes[0]["reason"]
    # another model is asked
    llm_server.answer_with(good())
    other = alice.run_rem(now=NOW + 2 * DAY, synthesiser=llm_synth(llm_server, model="m2"))
    assert len(llm_server.requests) == 2 and other.synthesised == 1


def test_the_skip_is_remembered_for_rem_llm_skip_days(tmp_path: Path,
                                                      llm_server: LLMServer) -> None:
    from remd.config import load_config

    config = load_config(env={}, overrides={"rem": {"llm_skip_days": 3}})
    with Memory(tmp_path / "d.db", clock=lambda: NOW, config=config) as m:
        m.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(ALICE)])
        llm_server.answer_with(template_echo())
        m.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
        m.run_rem(now=NOW + 2 * DAY, synthesiser=llm_synth(llm_server))
        assert len(llm_server.requests) == 1
        m.run_rem(now=NOW + 4 * DAY, synthesiser=llm_synth(llm_server))
        assert len(llm_server.requests) == 2  # the days passed: asked again


def test_a_dry_run_never_calls_the_model(alice: Memory, llm_server: LLMServer) -> None:
    plan = alice.run_rem(now=NOW, dry_run=True, synthesiser=llm_synth(llm_server))
    assert llm_server.requests == []
    assert plan.clusters == 1 and plan.plan[0].status == "unverified"
    assert plan.skipped == 0 and plan.synthesised == 0
    run = alice.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
    assert run.synthesised == 1 and len(llm_server.requests) == 1  # asked once, by the run


EXAM = ["I passed my driving exam on 3 May, first try.",
        "Passed my driving exam on 3 May on the first try!",
        "I got through my driving exam first time, on 3 May."]


def test_a_synthesis_that_gives_the_speakers_life_to_someone_else_is_refused(
        tmp_path: Path, llm_server: LLMServer) -> None:
    with Memory(tmp_path / "e.db", clock=lambda: NOW) as m:
        m.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(EXAM)])
        llm_server.answer_with(good({"synthesis": "Maya passed her driving exam on 3 May, "
                                                  "first try.", "key_entities": ["Maya"]}))
        run = m.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
        assert run.synthesised == 0 and m.stats().live == 3
        assert run.to_dict()["skipped_by"] == {"wrong_subject": 1}
        # an account with no subject gives the speaker's life to no one else: not refused so
        assert not gives_self_away(EXAM, "The driving exam was passed on 3 May, first try.")
        assert gives_self_away(EXAM, "He passed the driving exam on 3 May, first try.")
        # the same answer in the speaker's words is kept
        llm_server.answer_with(good({"synthesis": "I passed my driving exam on 3 May, first "
                                                  "try.", "key_entities": []}))
        run = m.run_rem(now=NOW, synthesiser=llm_synth(llm_server, model="m2"))
        assert run.synthesised == 1
