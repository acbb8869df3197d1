"""The optional LLM update judge (remd/llm/judge.py, remd/write/saves.py judge_with_llm)
against the loopback OpenAI-compatible server: the model's "update" acts only as far as the
offline reading agrees, an all-"update" answer is distrusted, memories are numbered in the
prompt, every fault keeps the offline decision, and a rest after an endpoint failure delays
the judging instead of skipping it. Real SQLite file, real embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remd import Memory
from remd.config import Config, load_config
from remd.logs import capture_events
from remd.models import EdgeType, NodeStatus
from tests.llm_server import (
    LLMServer,
    all_update,
    good,
    numbered,
    raw,
    refused_base_url,
    slow,
    status,
)
from tests.write.test_updates import Clock, saved

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def llm_config(base_url: str, cooldown: float = 0.0) -> Config:
    return load_config(env={}, overrides={
        "llm": {"base_url": base_url, "timeout": 1.0, "max_retries": 0, "backoff_base": 0.0},
        "updates": {"llm": True, "llm_timeout": 1.0, "llm_cooldown": cooldown}})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def llm_mem(tmp_path: Path, clock: Clock, llm_server: LLMServer) -> Iterator[Memory]:
    with Memory(tmp_path / "j.db", config=llm_config(llm_server.base_url), clock=clock) as m:
        yield m


def first(m: Memory, clock: Clock, server: LLMServer, *texts: str) -> list[str]:
    """Save ``texts`` while the model has nothing to say (no older memory to judge)."""
    server.answer_with(raw('{"decisions": []}'))
    ids = saved(m, clock, *texts)
    m.engine.drain()
    return ids


def first_answered(relation: str) -> Any:
    """The model's answer for the first memory it is shown, whatever the others."""
    return good({"decisions": [{"n": 1, "relation": relation}]})


def judged(m: Memory, clock: Clock, server: LLMServer, relation: str, text: str) -> str:
    """Save ``text`` while the model answers ``relation`` for the first memory it is shown;
    its id once the judge has run."""
    server.answer_with(first_answered(relation))
    (new,) = saved(m, clock, text)
    m.engine.drain()
    return new


def links(m: Memory, node_id: str, kind: EdgeType) -> list[Any]:
    return [e for e in m.links(node_id) if e.type is kind]


def test_the_prompt_numbers_the_memories_and_never_shows_their_ids(
        llm_mem: Memory, clock: Clock, llm_server: LLMServer) -> None:
    (old,) = first(llm_mem, clock, llm_server, "I'm on lesson 40 of my Japanese course.")
    judged(llm_mem, clock, llm_server, "add", "Finished lesson 95 of Japanese last night!")
    prompt = llm_server.messages()[-1]["content"]
    assert '<memory n="1"' in prompt and old not in prompt and "lesson 40" in prompt
    # a sure offline update stands against the model's "add" (the user can restore it)
    assert llm_mem.get(old).status is NodeStatus.SUPERSEDED


def test_the_models_add_undoes_a_probable_update(llm_mem: Memory, clock: Clock,
                                                 llm_server: LLMServer) -> None:
    (old,) = first(llm_mem, clock, llm_server, "For my hay fever I take cetirizine.")
    judged(llm_mem, clock, llm_server, "add", "I'm on fexofenadine for the allergies now, the "
                                              "other tablets made me drowsy.")
    assert llm_mem.get(old).status is NodeStatus.LIVE
    assert not links(llm_mem, old, EdgeType.CONTRADICTS)  # the model said both stay true


def test_the_models_update_supersedes_where_the_reading_finds_one_attribute(
        llm_mem: Memory, clock: Clock, llm_server: LLMServer) -> None:
    (old,) = first(llm_mem, clock, llm_server, "My manager is Henrik.")
    # no cue: not sure offline
    new = judged(llm_mem, clock, llm_server, "update", "Sanne is who I report to.")
    assert llm_mem.get(old).status is NodeStatus.SUPERSEDED
    (edge,) = links(llm_mem, old, EdgeType.SUPERSEDES)
    assert edge.src == new and "model" in (edge.context or "")


def test_the_model_alone_never_supersedes_an_unrelated_memory(
        llm_mem: Memory, clock: Clock, llm_server: LLMServer) -> None:
    cats, resus = first(llm_mem, clock, llm_server, "I have two cats.",
                        "I'm in resus most shifts at the moment, love it.")
    # a weak model: "update" for each memory it is shown, one at a time
    with capture_events() as events:
        judged(llm_mem, clock, llm_server, "update", "I live in Leeds.")
    assert llm_mem.get(cats).status is NodeStatus.LIVE
    assert not llm_mem.links(cats)  # not even a CONTRADICTS
    assert any(e["event"] == "update.llm_unsupported" for e in events)
    # one subject and alike sentences, no shared attribute the reading knows: a probable
    # update at most, both live, the newer ranked first
    rota = judged(llm_mem, clock, llm_server, "update",
                  "The rota has me in majors for the next few months.")
    assert llm_mem.get(resus).status is NodeStatus.LIVE
    (edge,) = links(llm_mem, resus, EdgeType.CONTRADICTS)
    assert edge.src == rota and "model" in (edge.context or "")


def test_the_model_alone_never_supersedes_what_only_shares_an_attribute(
        llm_mem: Memory, clock: Clock, llm_server: LLMServer) -> None:
    (car,) = first(llm_mem, clock, llm_server, "My car is a blue Fiat Panda.")
    judged(llm_mem, clock, llm_server, "update", "The car needs new tyres before winter.")
    assert llm_mem.get(car).status is NodeStatus.LIVE  # one car, no other value


def test_an_answer_calling_every_memory_updated_is_distrusted(
        llm_mem: Memory, clock: Clock, llm_server: LLMServer) -> None:
    olds = first(llm_mem, clock, llm_server, "My manager is Henrik.",
                 "My manager Henrik sits on the third floor.", "Henrik is my manager.")
    llm_server.answer_with(all_update())
    with capture_events() as events:
        saved(llm_mem, clock, "I report to Sanne now.")
        llm_mem.engine.drain()
    assert any(e["event"] == "updates.llm_distrusted" for e in events)
    assert len(numbered(llm_server)) >= 2
    # only the offline decisions stand: no edge says "model"
    assert not [e for o in olds for e in llm_mem.links(o) if "model" in (e.context or "")]


@pytest.mark.parametrize("fault", ["bad json", "unknown number", "garbled id", "500",
                                   "refused", "slow"])
def test_every_fault_keeps_the_offline_decision(tmp_path: Path, clock: Clock,
                                                llm_server: LLMServer, fault: str) -> None:
    base = refused_base_url() if fault == "refused" else llm_server.base_url
    with Memory(tmp_path / "f.db", config=llm_config(base), clock=clock) as m:
        (old,) = first(m, clock, llm_server, "I'm on lesson 40 of my Japanese course.")
        llm_server.answer_with({
            "bad json": raw("{not json"),
            "unknown number": good({"decisions": [{"n": 7, "relation": "add"}]}),
            # what a small model did to a 16-character id
            "garbled id": good({"decisions": [{"id": old[:-2] + "xx", "relation": "add"}]}),
            "500": status(500), "refused": raw("{}"), "slow": slow(3.0)}[fault])
        with capture_events() as events:
            (new,) = saved(m, clock, "Finished lesson 95 of Japanese last night!")
            m.engine.drain()
        assert m.get(old).status is NodeStatus.SUPERSEDED  # the offline decision stands
        assert m.get(new).status is NodeStatus.LIVE
        assert any(e["event"] == "updates.llm_failed" for e in events)


def test_a_rest_delays_the_judging_and_never_skips_it(tmp_path: Path, clock: Clock,
                                                      llm_server: LLMServer) -> None:
    with Memory(tmp_path / "r.db", config=llm_config(llm_server.base_url, cooldown=0.5),
                clock=clock) as m:
        henrik, lessons = first(m, clock, llm_server, "My manager is Henrik.",
                                "I'm on lesson 40 of my Japanese course.")
        # the first call fails: the judge rests, then asks again; the next save waits too
        llm_server.answer_with(first_answered("update"))
        llm_server.script(status(500))
        asked = len(llm_server.requests)
        with capture_events() as events:
            saved(m, clock, "I report to Sanne now.")
            saved(m, clock, "Finished lesson 95 of Japanese last night!")
            m.engine.drain()
        assert m.get(henrik).status is NodeStatus.SUPERSEDED  # asked again after the rest
        assert [e for e in events if e["event"] == "updates.llm_resting"
                and e["log_level"] == "warning"]
        assert not [e for e in events if e["event"] == "updates.llm_failed"
                    and e.get("attempt") == 2]
        # the failed call, its second asking, and the save that waited: none skipped
        assert len(llm_server.requests) - asked == 3
        assert m.get(lessons).status is NodeStatus.SUPERSEDED


def test_a_closed_memory_does_not_wait_out_a_rest(tmp_path: Path, clock: Clock,
                                                  llm_server: LLMServer) -> None:
    import time

    m = Memory(tmp_path / "c.db", config=llm_config(llm_server.base_url, cooldown=600),
               clock=clock)
    first(m, clock, llm_server, "My manager is Henrik.")
    llm_server.answer_with(status(500))
    saved(m, clock, "I report to Sanne now.", "My manager is Sanne.")
    began = time.monotonic()
    m.close()
    assert time.monotonic() - began < 30  # not the 600 s rest
