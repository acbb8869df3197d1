"""The evaluation harness's own pieces, on tiny inline data (no LoCoMo file needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.eval import baselines, locomo
from remd.text.tokens import TokenCounter

KNOWN = ["D1:1", "D1:2", "D8:6", "D9:17", "D30:5", "D10:19"]


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter("o200k_base")


def test_evidence_is_split_on_semicolons_and_spaces() -> None:
    assert locomo.parse_evidence(["D8:6; D9:17"], KNOWN) == ("D8:6", "D9:17")
    assert locomo.parse_evidence(["D1:1 D1:2", "D8:6"], KNOWN) == ("D1:1", "D1:2", "D8:6")


def test_unmatched_evidence_is_dropped_and_duplicates_removed() -> None:
    # The quirks of locomo10.json: a malformed id, a zero-padded turn, a bare "D".
    assert locomo.parse_evidence(["D:11:26", "D30:05", "D", ""], KNOWN) == ()
    assert locomo.parse_evidence(["D1:1", "D1:1;D1:1", "D99:1"], KNOWN) == ("D1:1",)


def _sample() -> dict[str, object]:
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Look!",
                 "blip_caption": "a photo of a dog", "img_url": ["x"]},
            ],
            "session_2_date_time": "10:00 am on 9 May, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Bye"}],
        },
        "qa": [
            {"question": "What did Ann adopt?", "answer": "a puppy", "evidence": ["D1:1"],
             "category": 4},
            {"question": "What did Bob show?", "answer": "a dog", "evidence": ["D1:1"],
             "category": 1},
            {"question": "Unanswerable?", "adversarial_answer": "x", "evidence": ["D:1:1"],
             "category": 5},
        ],
    }


def test_turns_are_formatted_with_date_speaker_and_caption() -> None:
    conv = locomo.build_conversation(0, _sample(), {})
    assert [t.content for t in conv.turns] == [
        "[1:56 pm on 8 May, 2023] Ann: I adopted a puppy.",
        "[1:56 pm on 8 May, 2023] Bob: Look! [shared a photo: a photo of a dog]",
        "[10:00 am on 9 May, 2023] Ann: Bye",
    ]
    assert conv.turns[0].at < conv.turns[1].at < conv.turns[2].at
    assert conv.end == conv.turns[2].at


def test_audit_overrides_evidence_by_zero_based_question_id() -> None:
    overrides = locomo.audit_overrides([
        {"question_id": "locomo_0_qa1", "correct_evidence": ["D1:2"]},
        {"question_id": "locomo_0_qa2", "correct_evidence": []},
        {"question_id": "locomo_1_qa0", "correct_evidence": ["D2:1"]},  # another sample
    ])
    conv = locomo.build_conversation(0, _sample(), overrides)
    by_id = {q.qid: q for q in conv.qa}
    assert by_id["locomo_0_qa0"].evidence == ("D1:1",) and not by_id["locomo_0_qa0"].audited
    assert by_id["locomo_0_qa1"].evidence == ("D1:2",) and by_id["locomo_0_qa1"].audited
    assert by_id["locomo_0_qa2"].evidence == ()  # audited: no valid evidence, so not scored
    assert [q.qid for q in locomo.scored(conv.qa)] == ["locomo_0_qa0", "locomo_0_qa1"]


def test_load_reads_both_files(tmp_path: Path) -> None:
    (tmp_path / locomo.DATA_FILE).write_text(json.dumps([_sample()]), encoding="utf-8")
    (tmp_path / locomo.AUDIT_FILE).write_text(
        json.dumps([{"question_id": "locomo_0_qa0", "correct_evidence": ["D2:1"]}]),
        encoding="utf-8")
    assert locomo.load(tmp_path)[0].qa[0].evidence == ("D2:1",)
    assert locomo.load(tmp_path, use_audit=False)[0].qa[0].evidence == ("D1:1",)
    with pytest.raises(FileNotFoundError, match="--data"):
        locomo.load(tmp_path / "missing")


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    fused = baselines.rrf([[0, 1, 2], [2, 0]])
    # doc 0: 1/61 + 1/62; doc 2: 1/63 + 1/61; doc 1: 1/62.
    assert fused == [0, 2, 1]
    assert baselines.rrf([[3, 4], [4, 3]]) == [3, 4]  # a tie keeps first appearance
    assert baselines.rrf([[5]], k=0) == [5]


def test_rrf_scores_match_the_formula() -> None:
    a, b = [1, 2, 3, 4], [4, 3, 2, 1]
    expect = {d: 1 / (60 + a.index(d) + 1) + 1 / (60 + b.index(d) + 1) for d in a}
    fused = baselines.rrf([a, b])
    assert [round(expect[d], 12) for d in fused] == sorted(
        (round(v, 12) for v in expect.values()), reverse=True)


def test_pack_is_greedy_by_rank_and_skips_what_does_not_fit(counter: TokenCounter) -> None:
    texts = ["alpha beta gamma delta " * 20, "short one", "another short one"]
    table = baselines.TokenTable(texts, counter)
    small = table.alone[1] + table.alone[2] + 1
    packed = baselines.pack([0, 1, 2], table, small)
    assert packed.indices == (1, 2)  # the long first item is skipped, not truncated
    assert packed.tokens == counter.count("short one\nanother short one") <= small
    assert baselines.pack([0], table, 3).indices == ()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=60).map(str.strip).filter(bool), min_size=1,
                max_size=12), st.integers(min_value=0, max_value=120), st.randoms())
def test_pack_never_exceeds_budget(texts: list[str], budget: int, rnd: object) -> None:
    counter = TokenCounter("o200k_base")
    table = baselines.TokenTable(texts, counter)
    ranking = list(range(len(texts)))
    rnd.shuffle(ranking)  # type: ignore[attr-defined]
    packed = baselines.pack(ranking, table, budget)
    joined = "\n".join(texts[i] for i in packed.indices)
    assert packed.tokens == (counter.count(joined) if packed.indices else 0)
    assert packed.tokens <= budget
    # Greedy: every skipped item would have overflowed at the moment it was considered.
    chosen = list(packed.indices)
    assert chosen == sorted(chosen, key=ranking.index)


def test_recency_and_dense_rankings() -> None:
    assert baselines.recency_rank([1.0, 3.0, 2.0, 3.0]) == [3, 1, 2, 0]
    import numpy as np

    corpus = np.eye(3, dtype=np.float32)
    assert baselines.dense_rank(np.array([0.1, 0.9, 0.5], np.float32), corpus) == [1, 2, 0]


def test_probe_variants_are_named_or_validated_overrides() -> None:
    from benchmarks.eval import inject_probe

    assert inject_probe.parse_variant("no-date") == ({"date_weight": 0.0}, None)
    assert inject_probe.parse_variant("date_weight=1,fts_k=64") == (
        {"date_weight": 1.0, "fts_k": 64}, None)
    for bad in ("nonsense", "no_such_key=1", "fts_k=-3", "fts_k=many"):
        with pytest.raises((SystemExit, ValueError)):
            inject_probe.parse_variant(bad)


def test_probe_scores_a_tiny_conversation_and_writes_nothing(tmp_path: Path) -> None:
    from benchmarks.eval import inject_probe
    from benchmarks.eval.locomo_run import RemdSubject
    from remd import Config
    from remd.text.embed import MiniLMEmbedder

    conv = locomo.build_conversation(0, _sample(), {})
    subject = RemdSubject(tmp_path / "p.db", Config(),
                          baselines.CachedEmbedder(MiniLMEmbedder()))
    try:
        mem = subject.ingest(conv)
        tallies = inject_probe.evaluate(subject, [conv], ["base", "no-date"], (16, 256),
                                        diagnose=True)
        assert mem.store.scalar("SELECT count(*) FROM packs") == 0
        assert mem.store.scalar("SELECT sum(access_count) FROM nodes") == 0
    finally:
        subject.close()
    base = tallies["base"]
    # "What did Ann adopt?" (single-hop, evidence D1:1) at 256 tokens: the whole conversation fits.
    assert base.recall[(4, 256)] == [1.0]
    assert sum(base.cause[(4, 256)].values()) == 1 and base.cause[(4, 256)]["packed"] == 1
    assert base.recall[(4, 16)] in ([0.0], [1.0])  # 16 tokens hold one turn at most
    assert len(base.seconds) == 2  # each question with evidence was probed once, not per budget


def test_the_rem_section_runs_a_cycle_on_the_current_api(db_path: Path) -> None:
    """benchmarks.eval's REM section forces one offline cycle (it once called an old
    signature and failed only when the section ran)."""
    from benchmarks.eval import rem_eval
    from remd import Memory
    from tests.sleep.test_rem import NOW, fragments, old_lines

    with Memory(db_path, clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(3)))
        before = rem_eval._live_tokens(m)
        run = rem_eval.run_rem(m)
        assert run.synthesised >= 3 and rem_eval._live_tokens(m) < before


def test_the_drift_section_runs_on_the_current_api(tmp_path: Path) -> None:
    """drift.run had crashed since the engine issue (an unhashable clock) and nothing ran it."""
    from benchmarks.eval import drift

    scores = drift.run([1], [60], tmp_path, budgets=(64,), methods=("remd",))
    score = scores[("remd", 64)]
    assert score.recall  # it asked its questions and scored them


def test_the_personal_section_finds_the_right_memory_first(tmp_path: Path) -> None:
    from benchmarks.eval import personal

    rows, unknown = personal.run(tmp_path)
    assert len(rows) == len(personal.QUESTIONS) and len(unknown) == len(personal.UNKNOWN)
    assert sum(r.first_ok for r in rows) >= len(rows) - 1
    assert not any(r.stale for r in rows + unknown)
    assert all(r.tokens <= r.tokens_fill for r in rows)


# Every item of the evaluation sets, as moved from Python literals into benchmarks/eval/data:
# a set that loses an item fails here.
SET_SIZES = {
    "everyday": {"updates": 42, "unrelated": 33, "late_unrelated": 6, "controls": 13},
    "everyday_check": {"updates": 23, "unrelated": 28, "late_unrelated": 0, "controls": 8},
    "everyday_holdout": {"updates": 21, "unrelated": 26, "late_unrelated": 0, "controls": 8},
}


def test_the_data_files_load_with_every_item() -> None:
    from benchmarks.eval import (
        datafiles,
        drift,
        everyday,
        everyday_sets,
        fact_world,
        life,
        noloss,
        personal,
    )

    for name, sizes in SET_SIZES.items():
        s = everyday.load(name)
        assert s.name == name and not everyday.problems(s)
        assert {k: len(getattr(s, k)) for k in sizes} == sizes
    assert (len(personal.MEMORIES), len(personal.QUESTIONS), len(personal.UNKNOWN),
            len(personal.STALE)) == (40, 16, 3, 2)
    assert (len(drift.ATTRIBUTES), len(drift.FILLER)) == (7, 36)
    assert (len(fact_world.RELATIONS), len(fact_world.CHAINS), len(fact_world.REFERENCES),
            len(fact_world.WORLD.statements)) == (10, 10, 4, 257)
    assert sum(len(f) for _, f in noloss.TOPICS) == 64 and len(noloss.UNRELATED) == 20
    assert (len(life.STABLE), len(life.CHANGES), len(life.EVENTS), len(life.TOPICS),
            len(life.DETAILS), len(life.NEVER)) == (15, 25, 40, 12, 20, 8)
    assert not life.problems()
    for f in sorted(datafiles.DATA.glob("*.json")):  # every file parses and names itself
        raw = datafiles.read_path(f)
        assert raw.get("name", f.stem) == f.stem and raw["about"]
    # the fourth round's runner takes its own format only
    assert [f.name for f in everyday_sets.files()] == ["everyday_v2_dev.json",
                                                       "everyday_v2_holdout.json",
                                                       "everyday_v3_dev.json",
                                                       "everyday_v3_holdout.json"]
    for f in everyday_sets.files():  # and each set's phrases do what they claim
        assert everyday_sets.problems(everyday_sets.load(f)) == [], f.name


def test_one_everyday_runner_runs_the_check_and_holdout_sets(tmp_path: Path) -> None:
    """everyday.run on a slice of each set's data (the whole sets take minutes: the truth
    section runs them)."""
    from dataclasses import replace

    from benchmarks.eval import everyday

    for name in ("everyday_check", "everyday_holdout"):
        full = everyday.load(name)
        s = replace(full, updates=full.updates[:2], unrelated=full.unrelated[:3],
                    controls=full.controls[:2])
        assert [t for _, t in everyday.schedule(s)][0] in (
            [u.old for u in s.updates] + list(s.unrelated) + [c.texts[0] for c in s.controls])
        res = everyday.run(s, tmp_path)
        assert res.name == name and res.saved == 2 * 2 + 3 + sum(len(c.texts)
                                                                 for c in s.controls)
        assert [r.question for r in res.updates] == [u.question for u in s.updates]
        for phase in everyday.PHASES:
            assert all(phase in r.first and phase in r.tokens for r in res.updates)
            assert all(phase in r.present for r in res.controls)
        assert res.rem.status


def test_recorded_results_print_back_as_they_were_printed(
        capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.eval import report, tables

    rec = report.Recorder()
    with rec.section("demo"):
        print("## Demo\n\nSome prose.\n")
        print(report.table(["measure", "value", "ok", "none"],
                           [["a", 0.12345, True, None], ["b", float("nan"), 3, "x"]]) + "\n")
        report.table(["never printed"], [[1]])
        print("| a | hand-made |\n| --- | --- |")
        print("\n".join([report.table(["x"], [[1]]), report.table(["y", "z"], [[2, "w"]],
                                                                  ["l", "l"])]))
    printed = capsys.readouterr().out
    blocks = rec.sections["demo"]["blocks"]
    assert [next(iter(b)) for b in blocks] == ["text", "table", "text", "table", "text",
                                               "table", "text"]
    assert blocks[1]["table"]["rows"][0] == ["a", 0.12345, True, None]
    assert blocks[1]["table"]["rows"][1][1] == "nan"  # strict JSON, printed the same
    assert report.render(json.loads(json.dumps(blocks, allow_nan=False))) == printed
    results = {"machine": "m", "seconds": 1.4, "sections": rec.sections}
    assert tables.text(results) == f"remd evaluation — m\n\n{printed}\n(total 1 s)\n"


def test_update_pairs_reads_the_simulated_lifes_pairs() -> None:
    """``update_pairs --sets life`` called a function that did not exist."""
    from benchmarks.eval import life, update_pairs

    order, pairs = update_pairs.statements("life")
    assert order and pairs and {t for pair in pairs for t in pair} <= set(order)
    change = life.CHANGES[0]  # its first value's sayings are updated by its second value's
    said = set(order)
    assert {(a, b) for a in change.states[0].sayings for b in change.states[1].sayings
            if a in said and b in said} <= pairs
