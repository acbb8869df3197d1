"""inject: hard token budgets, hybrid seeds, bounded walks, recorded packs (real database)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tiktoken
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remd import Config, InvalidInput, Memory, Pack
from remd.cli.main import main
from remd.config import EmbedConfig, InjectConfig
from remd.store.quantisation import to_int8
from remd.text.embed import make_embedder
from remd.text.tagging import extract_query_tags
from remd.text.tokens import get_encoding
from tests.conftest import Clock
from tests.helpers import knn

pytestmark = pytest.mark.backends

DAY = 86400.0
FOOD = "I'm allergic to peanuts and I prefer dark chocolate"
FLIGHT = "Our flight to Lisbon departs from gate twelve at dawn"
DISTRACTORS = [
    "Meeting with Bob about the quarterly budget on Friday",
    "The deploy pipeline uses GitHub Actions and Docker",
    "I like hiking in the mountains on weekends",
    "Remember to water the plants every Tuesday",
    "The cat's vet appointment is on March 3rd",
    "My sister Anna teaches chemistry at the high school",
    "The physician said my blood pressure readings look healthy",
    "Renew the car insurance before the end of the month",
    "The wifi password at the office changed last week",
    "I adopted a golden retriever puppy named Biscuit",
    "Book club is reading a novel about lighthouse keepers",
    "The bathroom tap has been leaking since Sunday",
]


def tiktoken_count(text: str) -> int:
    """Counted here, not through remd.text.tokens: the stock tiktoken encoding object."""
    enc: tiktoken.Encoding = get_encoding("o200k_base")
    return len(enc.encode(text, disallowed_special=()))


def check_pack(pack: Pack, saved: set[str]) -> None:
    joined = "\n".join(item.content for item in pack.items)
    assert pack.tokens_used == tiktoken_count(joined) <= pack.budget
    assert pack.text == joined
    for item in pack.items:
        assert item.content in saved  # verbatim, never truncated
        assert item.tokens == tiktoken_count(item.content)
    assert len({item.id for item in pack.items}) == len(pack.items)


@pytest.fixture
def corpus(mem: Memory, clock: Clock) -> Memory:
    mem.engine.clock = clock  # the fixture opened it with the real clock
    mem.save_many([FOOD, FLIGHT, *DISTRACTORS])
    return mem


# -- the hard budget ---------------------------------------------------------------------------
_VOCAB = ("peanut chocolate Lisbon flight gate café naïve 東京 🙂 budget meeting Docker plant "
          "vet sister chemistry insurance wifi puppy novel tap ... , ; ! ? \" ' - 42 2024")
WORDS = st.sampled_from(_VOCAB.split())
TEXTS = st.lists(st.lists(WORDS, min_size=1, max_size=40).map(" ".join), min_size=1,
                 max_size=25)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=TEXTS, budgets=st.lists(st.integers(0, 400), min_size=1, max_size=6),
       query=st.lists(WORDS, min_size=1, max_size=8).map(" ".join),
       separator=st.sampled_from(["\n", "\n\n", " | ", ""]))
def test_budget_is_never_exceeded(texts: list[str], budgets: list[int], query: str,
                                  separator: str) -> None:
    config = Config(inject=InjectConfig(separator=separator))
    enc = get_encoding("o200k_base")
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "p.db", config=config) as m:
        m.save_many(texts)
        saved = {t.strip() for t in texts}
        for budget in budgets:
            pack = m.inject(query, budget)
            joined = separator.join(item.content for item in pack.items)
            assert pack.tokens_used == len(enc.encode(joined, disallowed_special=()))
            assert pack.tokens_used <= budget
            for item in pack.items:
                assert item.content in saved
                assert item.tokens == len(enc.encode(item.content, disallowed_special=()))


def test_budget_too_small_for_any_item_gives_an_empty_recorded_pack(corpus: Memory) -> None:
    pack = corpus.inject("food preferences", 3)
    assert pack.items == () and pack.tokens_used == 0 and pack.pack_id
    assert corpus.store.scalar("SELECT budget FROM packs WHERE pack_id = ?",
                               (pack.pack_id,)) == 3


def test_budget_zero_is_an_empty_pack(corpus: Memory) -> None:
    pack = corpus.inject("food preferences", 0)
    assert pack.items == () and pack.tokens_used == 0 and pack.budget == 0


@pytest.mark.parametrize("budget", [-1, 1.5, "100", True, None])
def test_bad_budget_is_refused_and_nothing_stored(corpus: Memory, budget: object) -> None:
    with pytest.raises(InvalidInput):
        corpus.inject("food", budget)  # type: ignore[arg-type]
    assert corpus.store.scalar("SELECT count(*) FROM packs") == 0
    assert corpus.store.scalar("SELECT sum(access_count) FROM nodes") == 0


@pytest.mark.parametrize("query", ["", "   ", None, 42, "x" * 70000])
def test_bad_query_is_refused(corpus: Memory, query: object) -> None:
    with pytest.raises(InvalidInput):
        corpus.inject(query, 100)  # type: ignore[arg-type]
    assert corpus.store.scalar("SELECT count(*) FROM packs") == 0


def test_big_budget_takes_everything_relevant_and_stays_exact(corpus: Memory) -> None:
    pack = corpus.inject("what do I eat, where do I fly, who are my pets", 10_000, fill=True)
    check_pack(pack, {FOOD, FLIGHT, *DISTRACTORS})
    assert FOOD in {i.content for i in pack.items}


# -- finding the right memory ------------------------------------------------------------------
def test_food_preferences_finds_the_mme_example(corpus: Memory) -> None:
    pack = corpus.inject("What are my food preferences?", 40)
    assert pack.items and pack.items[0].content == FOOD
    top = pack.items[0]
    assert "graph" in top.sources and top.path and top.path[0] in {"food", "preference"}
    assert {s.tag for s in pack.seeds if s.origin == "query"} >= {"food", "preference"}
    check_pack(pack, {FOOD, FLIGHT, *DISTRACTORS})


def test_paraphrase_with_no_shared_word_or_tag_is_found_by_vector(corpus: Memory) -> None:
    query = "when does the plane leave for Portugal?"
    flight = next(n for n in corpus.recent(50) if n.content == FLIGHT)
    assert not {t for t, _ in extract_query_tags(query)} & set(flight.tags)
    pack = corpus.inject(query, 12, dated=False)  # room for one memory, undated
    assert [i.content for i in pack.items] == [FLIGHT]
    item = pack.items[0]
    assert "vector" in item.sources and "lexical" not in item.sources
    # If the walk reached it too, it started from a tag of a vector neighbour (a hybrid seed).
    vector_seeds = {s.tag for s in pack.seeds if s.origin == "vector"}
    assert not item.path or item.path[0] in vector_seeds


def test_without_embedder_tags_and_words_still_work(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        m.save_many([FOOD, *DISTRACTORS])
        pack = m.inject("What are my food preferences?", 40)
        assert pack.items[0].content == FOOD
        assert "vector" not in pack.items[0].sources


def test_superseded_fact_is_never_injected_its_successor_is(mem: Memory, clock: Clock) -> None:
    mem.engine.clock = clock  # the fixture opened it with the real clock
    old = mem.save("My city is Bangalore")
    clock.advance(DAY)
    new = mem.save("My city has changed to Mumbai")
    mem.save_many(DISTRACTORS)
    assert mem.get(old.id).status.value == "superseded"
    for query in ("Which city do I live in?", "Bangalore", "my city", "Mumbai Bangalore city"):
        ids = {i.id for i in mem.inject(query, 10_000).items}
        assert new.id in ids and old.id not in ids


def test_inactive_and_other_namespace_nodes_are_never_injected(db_path: Path) -> None:
    with Memory(db_path) as a, Memory(db_path, namespace="other") as b:
        gone = a.save("Secret garden tomatoes grow by the fence")
        a.forget(gone.id)
        kept = a.save("Tomatoes in the garden need water daily")
        b.save("Tomatoes garden fence in the other namespace")
        pack = a.inject("garden tomatoes fence", 10_000)
        assert [i.id for i in pack.items] == [kept.id]
        assert all(i.content != gone.content for i in b.inject("garden tomatoes", 1000).items)


def test_fts_syntax_in_the_query_never_reaches_the_user(corpus: Memory) -> None:
    for query in ('"unbalanced', "AND OR NOT", "NEAR(peanut chocolate", "content:peanut*",
                  "peanut^ -chocolate", "{a b}: c", "'); DROP TABLE nodes; --"):
        check_pack(corpus.inject(query, 200), {FOOD, FLIGHT, *DISTRACTORS})
    assert corpus.stats().live == 14


def test_items_explain_themselves(corpus: Memory, clock: Clock) -> None:
    pack = corpus.inject("What are my food preferences?", 200)
    for item in pack.items:
        p = item.parts
        assert item.sources and 0 < p.relevance <= 1
        assert 0 < p.recency <= 1 and 0 < p.importance <= 1 and p.diversity >= 0
        base = p.relevance * p.recency * p.importance + p.context
        assert item.score == pytest.approx(base - p.diversity)
        if "graph" in item.sources:
            assert p.graph > 0 and item.path
    scores = [i.score for i in pack.items]
    assert scores == sorted(scores, reverse=True)


# -- bounds -----------------------------------------------------------------------------------
def test_walk_is_bounded_by_beam_and_caps(db_path: Path) -> None:
    cfg = Config(inject=InjectConfig(fanout=2, depth=2, beam=3, per_tag_cap=2,
                                     max_candidates=4, vector_k=2, fts_k=2, context_from=0))
    with Memory(db_path, config=cfg) as m:
        m.save_many([f"peanut chocolate recipe number {i} with almonds and honey"
                     for i in range(40)])
        pack = m.inject("peanut chocolate almonds", 10_000)
        assert pack.tags_activated <= 3
        # graph rows <= beam * per_tag_cap, plus at most vector_k + fts_k hits
        assert len(pack.items) <= 4 + 2 + 2


def test_depth_zero_uses_seed_tags_only(corpus: Memory) -> None:
    cfg = corpus.config.model_copy(update={"inject": InjectConfig(depth=0)})
    with Memory(corpus.store.path, config=cfg) as m:
        pack = m.inject("What are my food preferences?", 200)
        assert pack.tags_activated == len(pack.seeds)
        assert all(len(i.path) <= 1 for i in pack.items)


# -- bookkeeping -------------------------------------------------------------------------------
def test_pack_is_recorded_and_access_updated(corpus: Memory, clock: Clock) -> None:
    clock.advance(3 * DAY)
    pack = corpus.inject("What are my food preferences?", 60)
    assert pack.items
    row = corpus.store.one("SELECT namespace, query, budget, tokens_used, created_at "
                           "FROM packs WHERE pack_id = ?", (pack.pack_id,))
    assert row == ("default", "What are my food preferences?", 60, pack.tokens_used, clock.now)
    items = corpus.store.query("SELECT rank, n.id, p.tokens, p.path FROM pack_items p "
                               "JOIN nodes n ON n.rid = p.rid WHERE pack_id = ? ORDER BY rank",
                               (pack.pack_id,))
    assert [r[1] for r in items] == [i.id for i in pack.items]
    assert [r[2] for r in items] == [i.tokens for i in pack.items]
    assert all(isinstance(json.loads(r[3]), list) for r in items)
    for item in pack.items:
        node = corpus.get(item.id)
        assert node.access_count == 1 and node.last_access == clock.now
    assert corpus.store.scalar("SELECT count(*) FROM access_log WHERE pack_id = ?",
                               (pack.pack_id,)) == len(pack.items)


def test_to_dict_has_exactly_the_cli_keys(corpus: Memory) -> None:
    d = corpus.inject("food", 100).to_dict()
    assert set(d) == {"pack_id", "budget", "tokens_used", "items"}
    assert all(set(i) == {"id", "content", "tokens", "score", "tags", "date"} for i in d["items"])


# -- the quantised vector index ----------------------------------------------------------------
@pytest.mark.slow
def test_bit_knn_matches_exact_cosine_on_real_embeddings(db_path: Path) -> None:
    rng = np.random.default_rng(7)
    words = ("garden kitchen train budget doctor guitar ocean python coffee winter election "
             "museum football recipe laptop violin desert hospital river festival")
    vocab = words.split()
    texts = [" ".join(rng.choice(vocab, size=6)) + f" note {i}" for i in range(240)]
    with Memory(db_path) as m:
        m.save_many(texts)
        embedder = m.embedder
        assert embedder is not None
        # Against the model's float32 vectors, not the stored int8 ones.
        mat = embedder.embed(texts)
        rids = np.array([r[0] for r in m.store.query("SELECT rid FROM nodes ORDER BY rid")])
        hits = 0
        queries = [f"{a} and {b}" for a, b in zip(vocab, vocab[1:], strict=False)]
        for q in queries:
            vec = embedder.embed([q])[0]
            exact = set(rids[np.argsort(-(mat @ vec))[:5]].tolist())
            got = {rid for rid, _ in knn(m, "default", vec, 5, rerank=8)[:5]}
            hits += len(exact & got)
        assert hits / (5 * len(queries)) >= 0.9


@pytest.mark.sqlite_only("sqlite_master and vec0")
def test_each_vector_is_stored_once(mem: Memory) -> None:
    mem.save_many(DISTRACTORS)
    names = {r[0] for r in mem.store.query("SELECT name FROM sqlite_master")}
    assert "node_vec" not in names and not any("chunks" in n for n in names)
    rows = mem.store.query("SELECT vec FROM node_vec_bit")
    assert len(rows) == len(DISTRACTORS) and all(len(r[0]) == 384 for r in rows)  # int8


def test_index_catches_late_embeddings(db_path: Path) -> None:
    cfg = Config(embed=EmbedConfig(embed_on_save=False))
    with Memory(db_path, config=cfg) as m:
        a = m.save(FLIGHT)
        b = m.save(FOOD)
        rid_a, rid_b = m._rid(a.id), m._rid(b.id)
        m.embed_pending(rids=[rid_b])  # b (the later rid) is embedded first
        m.inject("anything", 50)
        index = m.engine.caches.view("default").bits
        assert len(index) == 1
        m.embed_pending()
        pack = m.inject("when does the plane leave for Portugal?", 12, dated=False)
        assert len(index) == 2 and [i.id for i in pack.items] == [a.id]
        assert {r for r, _ in knn(m, "default", m.embedder.embed([FLIGHT])[0], 1)
                } >= {rid_a}  # type: ignore[union-attr]


@pytest.mark.sqlite_only("SQLite migrations")
def test_migration_keeps_every_vector_once_in_a_file_of_the_previous_schema(
        db_path: Path) -> None:
    """A file as the previous release made it (migrations up to 0007: vectors in vec0's
    node_vec and again in node_vec_bit) opens with its vectors intact, stored once."""
    from remd.store.sqlite.store import connect
    from tests.store.test_store import old_file

    embedder = make_embedder(EmbedConfig())
    assert embedder is not None
    texts = [FOOD, FLIGHT, DISTRACTORS[0]]
    vecs = embedder.embed(texts)
    old_file(db_path, "0007_node_tags_rid_cover")
    conn = connect(db_path, Config().store)
    with conn:
        for rid, (text, vec) in enumerate(zip(texts, vecs, strict=True), 1):
            conn.execute("INSERT INTO nodes (rid, id, namespace, kind, content, created_at, "
                         "last_access, tokens, embedded) VALUES (?, ?, 'default', 'episodic', "
                         "?, 1.7e9, 1.7e9, 9, 1)", (rid, f"m{rid}", text))
            conn.execute("INSERT INTO node_fts (rowid, content) VALUES (?, ?)", (rid, text))
            conn.execute("INSERT INTO node_vec (rowid, namespace, embedding) VALUES (?, ?, ?)",
                         (rid, "default", vec.tobytes()))
            if rid < 3:  # the third only in vec0: the migration copies it over
                conn.execute("INSERT INTO node_vec_bit (rid, namespace, bits, vec) "
                             "VALUES (?, 'default', ?, ?)",  # as the previous release did
                             (rid, np.packbits(vec > 0, bitorder="little").tobytes(),
                              vec.tobytes()))
        # vec0 took a chunk of 1,024 vectors for this one namespace
        assert conn.execute("SELECT count(*) FROM sqlite_master "
                            "WHERE name LIKE 'node_vec_%chunks%'").fetchone()[0] > 0
    conn.close()
    with Memory(db_path) as m:
        assert "0008_vectors_once" in m.store.applied()  # and every later one
        names = {r[0] for r in m.store.query("SELECT name FROM sqlite_master")}
        assert not {n for n in names if n.startswith("node_vec") and n != "node_vec_bit"
                    and not n.startswith("node_vec_bit")}
        rows = m.store.query("SELECT rid, bits, vec FROM node_vec_bit ORDER BY rid")
        assert [r[0] for r in rows] == [1, 2, 3]
        for (_, bits, vec), want in zip(rows, vecs, strict=True):
            assert vec == to_int8(want)[0].tobytes()  # rewritten in the stored int8 form
            assert bits == np.packbits(want > 0, bitorder="little").tobytes()
        for exact in (True, False):
            near = m.nearest("when does my plane to Lisbon leave?", 1, exact=exact)
            assert [n.id for n, _ in near] == ["m2"]
        assert m.inject("what food do I like?", 40).items[0].id == "m1"


# -- CLI ---------------------------------------------------------------------------------------
def cli(db: Path, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["--db", str(db), *args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_cli_inject_json_and_explain(db_path: Path) -> None:
    cli(db_path, "save", FOOD)
    cli(db_path, "save", DISTRACTORS[0])
    code, out, _ = cli(db_path, "inject", "What are my food preferences?", "--budget", "30",
                       "--json")
    assert code == 0
    obj = json.loads(out)
    assert set(obj) == {"pack_id", "budget", "tokens_used", "items"}
    assert obj["budget"] == 30 and obj["items"][0]["content"] == FOOD
    assert obj["tokens_used"] == tiktoken_count("\n".join(i["content"] for i in obj["items"]))
    code, out, _ = cli(db_path, "inject", "food preferences", "--budget", "100", "--explain")
    assert code == 0 and "relevance" in out and "path" in out
    code, out, _ = cli(db_path, "inject", "food", "--budget", "100")
    assert code == 0 and FOOD in out


def test_cli_inject_budget_errors(db_path: Path) -> None:
    cli(db_path, "save", FOOD)
    code, _, err = cli(db_path, "inject", "food", "--budget", "-5")
    assert code == 1 and err.startswith("Error: ") and err.count("\n") == 1
    code, out, _ = cli(db_path, "inject", "food", "--budget", "0", "--json")
    assert code == 0 and json.loads(out)["items"] == []
    assert cli(db_path, "inject", "food")[0] == 2  # --budget is required


class _BrokenEmbedder:
    """Saves embed fine (the real model); the query embedding fails with ``error``."""

    name = "broken-at-query"
    dim = 384

    def __init__(self, error: Exception) -> None:
        self.real = make_embedder(EmbedConfig())
        self.error = error

    def embed(self, texts: list[str]) -> np.ndarray:
        if texts and texts[0].startswith("Q:"):
            raise self.error
        assert self.real is not None
        return self.real.embed(texts)


def test_a_failing_query_embedding_leaves_tags_and_words(db_path: Path) -> None:
    from remd.text.embed import EmbedError

    with Memory(db_path, embedder=_BrokenEmbedder(EmbedError("model gone"))) as m:  # type: ignore[arg-type]
        m.save_many([FOOD, *DISTRACTORS])
        pack = m.inject("Q: food preferences, peanuts?", 200)
        assert pack.items and pack.items[0].content == FOOD
        assert "vector" not in pack.items[0].sources


def test_a_bug_in_the_query_embedding_is_not_swallowed(db_path: Path) -> None:
    with Memory(db_path, embedder=_BrokenEmbedder(ZeroDivisionError("bug"))) as m:  # type: ignore[arg-type]
        m.save_many([FOOD])
        with pytest.raises(ZeroDivisionError):
            m.inject("Q: food preferences?", 200)
        assert m.inject("food preferences", 200).items  # and the next call works



def _vm_steps(mem: Any, fn: Any) -> int:
    """SQLite virtual-machine instructions run by ``fn`` (work, not time)."""
    steps = [0]

    def tick() -> bool:
        steps[0] += 1
        return False  # True would abort the statement

    # The block holds one pooled connection for this thread: fn's reads run on it.
    with mem.store.connection() as conn:
        conn.set_progress_handler(tick, 10)
        try:
            fn()
        finally:
            conn.set_progress_handler(None)
    return steps[0] * 10


def test_inject_and_feedback_work_does_not_grow_with_the_tag_vocabulary(
        tmp_path: Path) -> None:
    """The same memories and query, with and without 30,000 more tags in the namespace: the
    SQL work of inject and feedback must not follow the vocabulary (a join that read every tag
    of the namespace did, once: 13 ms per inject and 28 ms per feedback edge at 200k tags)."""
    work = []
    for extra in (0, 30_000):
        with Memory(tmp_path / f"v{extra}.db", embedder=None, clock=Clock()) as m:
            m.save_many([FOOD, *DISTRACTORS, "Peanuts are banned at the school party",
                         "Dark chocolate cake for the birthday party"])
            with m.store.transaction() as conn:
                conn.executemany("INSERT INTO tags (namespace, name, df, created_at) "
                                 "VALUES ('default', ?, 1, 0)",
                                 [(f"unused{i}",) for i in range(extra)])
                conn.execute("ANALYZE")
            packs: list[Pack] = []
            steps = _vm_steps(m, lambda m=m, packs=packs: packs.append(
                m.inject("What are my food preferences?", 200, fill=True)))
            assert packs[0].items[0].content == FOOD
            results: list[Any] = []
            steps_fb = _vm_steps(m, lambda m=m, p=packs[0], r=results: r.append(
                m.feedback(p.pack_id, True)))
            assert results[0].edges_updated > 0
            work.append((steps, steps_fb))
    (small, small_fb), (big, big_fb) = work
    assert big <= 1.2 * small + 2_000, work
    assert big_fb <= 1.2 * small_fb + 2_000, work


def _live_mismatches(m: Memory) -> int:
    return int(m.store.scalar(
        "SELECT count(*) FROM node_tags nt JOIN nodes n ON n.rid = nt.rid "
        "WHERE nt.live != (n.status = 'live')"))


def test_node_tags_live_follows_every_status_change(tmp_path: Path) -> None:
    """node_tags.live (what the per-tag reads use) equals nodes.status = 'live' after saves,
    fact updates, forget, a REM run, its rollback, a tag merge and an import of dead memories."""
    from tests.sleep.test_rem import NOW, fragments, old_lines

    with Memory(tmp_path / "a.db", clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(6)))
        m.save("My city is Bangalore")
        m.save("My city has changed to Mumbai")  # supersedes
        gone = m.save("Temporary note about the garden shed key")
        m.forget(gone.id)
        assert _live_mismatches(m) == 0
        run = m.run_rem(now=NOW)
        assert run.synthesised > 0
        dead = int(m.store.scalar("SELECT count(*) FROM node_tags WHERE live = 0"))
        assert dead > 0 and _live_mismatches(m) == 0
        m.merge_tags(*[str(r[0]) for r in m.store.query(
            "SELECT t.name FROM tags t JOIN node_tags nt ON nt.tid = t.tid WHERE nt.live = 0 "
            "GROUP BY t.tid ORDER BY count(*) DESC LIMIT 2")])
        assert _live_mismatches(m) == 0
        exported = list(m.export_lines())
        m.rollback(run.run_id)
        assert _live_mismatches(m) == 0
    with Memory(tmp_path / "b.db", clock=lambda: NOW) as fresh:
        fresh.import_lines(exported)  # deprecated and superseded memories arrive dead
        assert int(fresh.store.scalar("SELECT count(*) FROM node_tags WHERE live = 0")) > 0
        assert _live_mismatches(fresh) == 0


@pytest.mark.soak
def test_per_tag_reads_skip_no_dead_rows(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same 30 live memories of a tag, with and without 3,000 newer (so first in weight
    order) memories of that tag gone dead: the per-tag reads must not step over the dead ones
    (they did, row by row, before node_tags.live: 3,000 more rows per tag)."""
    _dead_rows_skipped(tmp_path, monkeypatch, 3000)


def test_per_tag_reads_skip_600_dead_rows(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak above with 600 dead memories (stepping over them would cost thousands of
    steps more, far above the allowance)."""
    _dead_rows_skipped(tmp_path, monkeypatch, 600)


def _dead_rows_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead_count: int) -> None:
    from remd.query.inject import _Injector

    steps: list[int] = []
    read = _Injector._graph_candidates

    def counted(self: Any, conn: Any, walk: Any, cands: Any) -> int:
        box: list[int] = []
        steps.append(_vm_steps(self.engine, lambda: box.append(read(self, conn, walk, cands))))
        return box[0]

    monkeypatch.setattr(_Injector, "_graph_candidates", counted)
    rng = np.random.default_rng(2)
    words = [f"zq{i}x" for i in range(4000)]
    work: list[int] = []
    for dead in (0, dead_count):
        with Memory(tmp_path / f"d{dead}.db", embedder=None, clock=Clock()) as m:
            live = [m.save(" ".join(rng.choice(words, 6)), tags=["garden"]).id
                    for _ in range(30)]
            if dead:
                m.save_many([" ".join(rng.choice(words, 6)) for _ in range(dead)],
                            tags=["garden"])
                with m.store.transaction() as conn:  # as REM or forget would leave them
                    conn.execute("UPDATE nodes SET status = 'deprecated' WHERE id NOT IN "
                                 f"({','.join('?' * len(live))})", live)
            assert _live_mismatches(m) == 0
            pack = m.inject("garden", 400)
            assert pack.items and {i.id for i in pack.items} <= set(live)
            work.append(steps[-1])
    assert work[1] <= 1.2 * work[0] + 500, work


@pytest.mark.sqlite_only("SQLite migrations")
def test_migration_0004_marks_the_dead_rows_of_an_existing_file(db_path: Path) -> None:
    """A file written by the previous schema (no node_tags.live) with superseded and forgotten
    memories: opening it with this remd backfills live = 0 for exactly their rows."""
    from remd.store.sqlite.store import StoreConfig, connect
    from tests.store.test_store import old_file

    old_file(db_path, "0003_vec_generation")
    rows = [("My city is Bangalore", "superseded"), ("My city has changed to Mumbai", "live"),
            ("Temporary note about the garden shed key", "forgotten"),
            *((text, "live") for text in DISTRACTORS)]
    conn = connect(db_path, StoreConfig())
    with conn:  # as remd wrote them then: nodes, their words, a tag each
        conn.execute("INSERT INTO tags (tid, namespace, name, df, created_at) "
                     "VALUES (1, 'default', 'city', ?, 0)", (len(rows),))
        for rid, (text, status) in enumerate(rows, 1):
            conn.execute("INSERT INTO nodes (rid, id, namespace, kind, content, status, "
                         "created_at, last_access, tokens) "
                         "VALUES (?, ?, 'default', 'episodic', ?, ?, 0, 0, 8)",
                         (rid, f"old{rid}", text, status))
            conn.execute("INSERT INTO node_fts (rowid, content) VALUES (?, ?)", (rid, text))
            conn.execute("INSERT INTO node_tags (tid, rid, weight) VALUES (1, ?, 1.0)", (rid,))
    conn.close()
    with Memory(db_path, embedder=None) as new:
        assert new.store.schema_version() >= 4
        dead = new.store.query("SELECT DISTINCT n.content FROM node_tags nt "
                               "JOIN nodes n ON n.rid = nt.rid WHERE nt.live = 0")
        assert sorted(r[0] for r in dead) == ["My city is Bangalore",
                                              "Temporary note about the garden shed key"]
        assert _live_mismatches(new) == 0
        assert "Mumbai" in new.inject("which city do I live in?", 100).text


class _CountingEmbedder:
    """The real model, counting the query texts it is asked to embed."""

    name = "counting"
    dim = 384

    def __init__(self) -> None:
        self.real = make_embedder(EmbedConfig())
        self.asked: list[str] = []
        self.fail = False

    def embed(self, texts: list[str]) -> np.ndarray:
        from remd.text.embed import EmbedError

        if len(texts) == 1:
            self.asked.append(texts[0])
            if self.fail:
                raise EmbedError("down")
        assert self.real is not None
        return self.real.embed(texts)


@pytest.mark.parametrize("cache", [0, 2, 256])
def test_a_repeated_query_reuses_its_embedding(db_path: Path, cache: int) -> None:
    emb = _CountingEmbedder()
    cfg = Config(inject=InjectConfig(query_cache=cache))
    with Memory(db_path, config=cfg, embedder=emb, clock=Clock()) as m:  # type: ignore[arg-type]
        m.save_many([FOOD, FLIGHT, *DISTRACTORS])
        emb.asked.clear()
        q1, q2, q3 = "food preferences?", "when does my plane leave?", "my sister's job"
        first = m.inject(q1, 60)
        again = m.inject(q1, 60)
        assert [i.id for i in first.items] == [i.id for i in again.items]
        assert [i.score for i in first.items] == [i.score for i in again.items]
        m.inject(q2, 60)
        m.inject(q3, 60)  # with room for 2, q1 is now the least recently used: evicted
        m.inject(q1, 60)
        expected = {0: [q1, q1, q2, q3, q1], 2: [q1, q2, q3, q1], 256: [q1, q2, q3]}[cache]
        assert emb.asked == expected
        emb.fail = True  # a failure is not remembered: the next ask tries again
        fresh = "something never asked before"
        assert m.inject(fresh, 60).pack_id and m.inject(fresh, 60).pack_id
        assert emb.asked[-2:] == [fresh, fresh]


def test_item_counts_follow_the_encoding_the_file_was_written_with(
        db_path: Path, stock_tiktoken: dict[str, tiktoken.Encoding]) -> None:
    """Items carry the count taken at save time only while the file's counts are all in the
    configured encoding; a Memory opened with another encoding marks the file "mixed" and
    every count is taken again. Either way each item's count is exact for this config."""
    with Memory(db_path, embedder=None) as m:
        m.save_many([FOOD, *DISTRACTORS])
        assert m.tokens_exact
    other = Config.model_validate({"store": {"encoding": "cl100k_base"}})
    with Memory(db_path, config=other, embedder=None) as m:
        assert not m.tokens_exact
        enc = stock_tiktoken["cl100k_base"]
        pack = m.inject("What are my food preferences?", 500)
        assert pack.items
        assert all(i.tokens == len(enc.encode(i.content)) for i in pack.items)
        assert pack.tokens_used == len(enc.encode(pack.text))
    with Memory(db_path, embedder=None) as m:
        assert not m.tokens_exact  # mixed for good: counts are recomputed
        enc = stock_tiktoken["o200k_base"]
        pack = m.inject("What are my food preferences?", 500)
        assert all(i.tokens == len(enc.encode(i.content)) for i in pack.items)
