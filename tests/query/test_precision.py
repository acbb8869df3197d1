"""Precision (issue 18): the right memory first, a pack that stops where relevance does, fact
questions answered by the live fact, low-information words that steer nothing, sentence vectors.

Real parts: a real SQLite file, the packaged MiniLM embedder, the real tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from benchmarks.eval.personal import MEMORIES
from remd import Memory
from remd.cli.main import main
from remd.errors import InvalidInput
from remd.query.pack import explain
from remd.query.walk import Specificity
from remd.text.fact_questions import question_keys
from tests.http.test_app import serve

PERSONAL = MEMORIES  # benchmarks/eval/personal.py: 40 memories, two facts changed later


@pytest.fixture(scope="module")
def personal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    now = [1_700_000_000.0]
    with Memory(tmp_path_factory.mktemp("personal") / "p.db", clock=lambda: now[0]) as m:
        for text in PERSONAL:
            now[0] += 86_400.0
            m.save(text)
        yield m


@pytest.mark.parametrize(("question", "answer"), [
    ("where do I live?", "I moved to Hyderabad."),
    ("which city am I based in?", "I moved to Hyderabad."),
    ("who is my manager?", "My manager is now Karthik Rao."),
    ("what sweets do I like?", "I love gulab jamun and rasmalai, my favourite sweets."),
    ("what is my dog's name?", "My dog is called Bruno, he's a beagle."),
    ("what am I allergic to?", "I'm allergic to peanuts."),
])
def test_the_right_memory_comes_first_at_a_tight_budget(personal: Memory, question: str,
                                                         answer: str) -> None:
    pack = personal.inject(question, 40)
    assert pack.items and pack.items[0].content == answer


def test_fact_questions_get_the_live_fact_never_the_superseded_one(personal: Memory) -> None:
    for fill in (False, True):
        pack = personal.inject("where do I live?", 200, fill=fill)
        assert pack.items[0].content == "I moved to Hyderabad."
        assert pack.items[0].parts.fact > 1.0
        assert "I live in Bangalore." not in [i.content for i in pack.items]
    managers = [i.content for i in personal.inject("who is my manager?", 200, fill=True).items]
    assert managers[0] == "My manager is now Karthik Rao."
    assert "My manager is Priya Nair." not in managers


def test_low_information_words_do_not_steer(personal: Memory) -> None:
    pack = personal.inject("what sweets do I like?", 200)
    assert "like" not in {s.tag for s in pack.seeds}
    like_tagged = personal.store.query(
        "SELECT count(*) FROM tags WHERE namespace = ? AND name IN ('like', 'want', 'really', "
        "'thing', 'changed')", (personal.namespace,))
    assert like_tagged[0][0] == 0
    assert "Iceland" not in pack.text


def test_the_floor_stops_the_pack_and_fill_packs_to_the_budget(personal: Memory) -> None:
    floor = personal.inject("who is my manager?", 200)
    full = personal.inject("who is my manager?", 200, fill=True)
    assert 0 < floor.tokens_used < full.tokens_used <= 200
    assert len(full.items) > len(floor.items) >= 1
    # The floor only trims: what it keeps is what fill packs first, in the same order.
    assert [i.id for i in floor.items] == [i.id for i in full.items][: len(floor.items)]
    assert floor.stop in ("floor", "gap") and not floor.fill
    assert full.fill and full.stop in ("budget", "candidates")
    lines = list(explain(floor))
    assert lines[1].startswith(f"stopped ({floor.stop})")
    assert any("stopped (" in line and "fill" in line for line in explain(full))


def test_a_question_about_nothing_stored_gets_an_empty_pack(personal: Memory) -> None:
    for question in ("how tall am I?", "what is my favourite football club?",
                     "what's the wifi password at the office?"):
        pack = personal.inject(question, 200)
        assert pack.tokens_used <= 20, [i.content for i in pack.items]
    pack = personal.inject("how tall am I?", 200)
    assert pack.items == () and pack.stop == "unrelated"
    assert "floor_similarity" in pack.stop_detail
    assert personal.inject("how tall am I?", 200, fill=True).items  # fill: what there is


def test_a_one_word_query_that_names_a_tag_is_not_unrelated(personal: Memory) -> None:
    pack = personal.inject("food", 100)
    assert pack.stop != "unrelated" and pack.items


def test_the_floor_is_configurable(tmp_path: Path) -> None:
    from remd import Config
    from remd.config import InjectConfig

    off = Config(inject=InjectConfig(floor_similarity=0, floor_spread=0, floor_gap=0))
    with Memory(tmp_path / "off.db", config=off) as m:
        for text in PERSONAL:
            m.save(text)
        assert (m.inject("who is my manager?", 200).tokens_used
                == m.inject("who is my manager?", 200, fill=True).tokens_used)
        assert m.inject("how tall am I?", 200).items  # the unrelated rule is off too


def test_fill_must_be_a_bool(personal: Memory) -> None:
    with pytest.raises(InvalidInput, match="fill"):
        personal.inject("where do I live?", 100, fill="yes")  # type: ignore[arg-type]


def test_cli_fill_flag(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    runner = CliRunner()
    for text in PERSONAL:
        assert runner.invoke(main, ["--db", str(db), "save", text]).exit_code == 0
    used = {}
    for extra in ((), ("--fill",)):
        r = runner.invoke(main, ["--db", str(db), "inject", "who is my manager?", "--budget",
                                 "200", "--json", *extra], catch_exceptions=False)
        assert r.exit_code == 0
        obj = json.loads(r.stdout)
        assert set(obj) == {"pack_id", "budget", "tokens_used", "items"}
        used[bool(extra)] = obj["tokens_used"]
    assert used[False] < used[True]
    r = runner.invoke(main, ["--db", str(db), "inject", "who is my manager?", "--budget", "200",
                             "--explain"], catch_exceptions=False)
    assert "stopped (" in r.stdout


def test_http_fill(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    with Memory(db) as m:
        for text in PERSONAL:
            m.save(text)
    server, pool = serve(db)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            used = {}
            for fill in (False, True):
                r = api.post("/v1/inject", json={"query": "who is my manager?",
                                                 "token_budget": 200, "fill": fill})
                assert r.status_code == 200, r.text
                used[fill] = r.json()["tokens_used"]
            assert used[False] < used[True]
            bad = api.post("/v1/inject", json={"query": "q", "token_budget": 10, "fill": "yes"})
            assert bad.status_code in (400, 422)
    finally:
        server.stop()
        pool.close()


@pytest.mark.parametrize(("question", "keys"), [
    ("where do I live?", ["user/city"]),
    ("Which city am I based in?", ["user/city"]),
    ("where am I from?", ["user/hometown"]),
    ("who is my manager?", ["user/manager"]),
    ("what's my favourite movie?", ["user/favorite movie"]),
    ("what is my dog's name?", ["user's dog/name"]),
    ("what is my dog called?", ["user's dog/name"]),
    ("what phone do I have?", ["user/phone"]),
    ("where do I work?", ["user/employer"]),
    ("what do I do for a living?", ["user/job"]),
    ("where does Caroline live?", ["caroline/city"]),
    ("what is Caroline's job?", ["caroline/job"]),
    ("What did Caroline research?", []),
    ("what sweets do I like?", []),
    ("my god, where is it", []),
])
def test_question_keys(question: str, keys: list[str]) -> None:
    assert question_keys(question) == keys


def test_idf_applies_in_a_small_namespace() -> None:
    spec = Specificity(12, 0)
    assert not spec.uniform
    assert spec.one(1) > spec.one(6) > spec.one(12)


LONG = ("[2:31 pm on 17 July, 2023] Melanie: Hey Caroline, hope all is good! I had a quiet "
        "weekend after we went camping with my family two weekends ago. The kids loved the "
        "campfire and we roasted marshmallows. Work has been hectic, so it was nice to unplug.")


def test_a_memory_of_several_sentences_gets_a_vector_per_sentence(tmp_path: Path) -> None:
    with Memory(tmp_path / "s.db") as m:
        long_id = m.save(LONG).id
        short = m.save("I bought new running shoes.")
        rows = m.store.query("SELECT s.rid, n.id FROM sentence_vec s JOIN nodes n "
                             "ON n.rid = s.rid WHERE s.namespace = ?", (m.namespace,))
        assert {node_id for _, node_id in rows} == {long_id}  # one sentence: its own vector
        assert len(rows) == 4
        pack = m.inject("What did Melanie do with her family?", 200, fill=True)
        top = pack.items[0]
        assert top.id == long_id
        whole = m.store.query(
            "SELECT vec FROM node_vec_bit v JOIN nodes n ON n.rid = v.rid WHERE n.id = ?",
            (long_id,))
        import numpy as np

        from remd.store.quantisation import from_int8

        q = np.asarray(m.engine.query_vector("What did Melanie do with her family?"))
        whole_sim = float(from_int8([whole[0][0]])[0] @ (q / np.linalg.norm(q)))
        assert top.parts.vector > whole_sim + 0.05  # its best sentence, not the whole
        assert short.id not in {i.id for i in m.inject("camping with family", 100).items}


CHAT = [
    "[1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday and it was "
    "so powerful.",
    "[1:57 pm on 8 May, 2023] Melanie: Wow, that sounds powerful! I went to a pottery class "
    "yesterday.",
    "[2:01 pm on 8 May, 2023] Caroline: I am researching adoption agencies these days.",
    "[2:03 pm on 8 May, 2023] Melanie: I have been researching camping spots for the kids.",
]


def test_a_chat_turn_said_by_the_person_the_query_names_counts_more(tmp_path: Path) -> None:
    from remd import Config
    from remd.config import InjectConfig

    with Memory(tmp_path / "chat.db") as m:
        for text in CHAT:
            m.save(text)
        pack = m.inject("What did Caroline research?", 500, fill=True)
        top = pack.items[0]
        assert top.content == CHAT[2] and top.parts.speaker == 2.0
        assert all(i.parts.speaker == 1.0 for i in pack.items if "Melanie:" in i.content)
        assert any("(speaker x2)" in line for line in explain(pack))
        melanie = m.inject("What did Melanie research?", 500, fill=True)
        assert melanie.items[0].content == CHAT[3]
    off = Config(inject=InjectConfig(speaker_weight=0))
    with Memory(tmp_path / "chat.db", config=off) as m:
        assert all(i.parts.speaker == 1.0
                   for i in m.inject("What did Caroline research?", 500, fill=True).items)


def test_the_floor_reads_scores_without_the_speaker_prior() -> None:
    from dataclasses import dataclass

    from remd.config import InjectConfig
    from remd.query.packer import relevance_floor

    @dataclass
    class C:
        rid: int
        tokens: int
        base: float
        speaker: float = 1.0
        outdated_by: int | None = None
        vector: float = 0.9  # like the query: not a weak pack

    cfg = InjectConfig(floor_spread=0.0, floor_gap=0.6)
    # Boosted, the second item would fall to 0.45 of the first: a gap. Without the prior the
    # two are level, and both stay.
    picked = [(C(1, 5, 2.0, 2.0), 2.0, 0.0), (C(2, 5, 0.9), 0.9, 0.0)]
    kept, stop = relevance_floor(picked, cfg)
    assert [c.rid for c, _, _ in kept] == [1, 2] and stop is None
    picked = [(C(1, 5, 2.0), 2.0, 0.0), (C(2, 5, 0.9), 0.9, 0.0)]
    kept, stop = relevance_floor(picked, cfg)
    assert [c.rid for c, _, _ in kept] == [1] and stop is not None and stop.reason == "gap"
