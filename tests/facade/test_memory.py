from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from remd import AsyncMemory, Config, EdgeType, InvalidInput, Memory, NodeKind, NodeStatus, NotFound
from remd.config import StoreConfig
from remd.text.tokens import get_encoding
from tests.conftest import Clock

pytestmark = pytest.mark.backends


def _dump(m: Memory) -> list[tuple[object, ...]]:
    return m.store.query("SELECT id, namespace, content, status, confidence FROM nodes "
                         "ORDER BY rid") + m.store.query("SELECT * FROM edges ORDER BY eid")


def test_save_is_durable_typed_and_counted(db_path: Path) -> None:
    text = "I'm allergic to peanuts and I prefer dark chocolate"
    with Memory(db_path) as m:
        node = m.save(text, tags=["Diet Notes"], source="chat")
    assert node.kind is NodeKind.EPISODIC and node.status is NodeStatus.LIVE
    assert node.tokens == len(get_encoding("o200k_base").encode_ordinary(text))
    assert "diet-note" in node.tags
    assert 3 <= len(node.tags) <= 9  # 3-8 extracted plus the explicit one
    with Memory(db_path) as again:  # a new connection sees it: committed on return
        assert again.get(node.id) == node
        assert again.stats().pending_embeddings == 0


def test_tags_are_normalised_and_reused(mem: Memory) -> None:
    a = mem.save("My food preferences: spicy curry and mango")
    b = mem.save("She has a strong preference for mango lassi")
    assert "preference" in a.tags and "preference" in b.tags
    count = mem.store.scalar("SELECT count(*) FROM tags WHERE namespace = 'default' "
                             "AND name = 'preference'")
    df = mem.store.scalar("SELECT df FROM tags WHERE name = 'preference'")
    assert count == 1 and df == 2
    for tag in a.tags:
        assert tag == tag.lower() and " " not in tag


def test_tag_cooccurrence_edges_increment(mem: Memory) -> None:
    mem.save("kayak trip on the fjord", tags=["kayak", "fjord"])
    mem.save("another kayak lesson on the fjord", tags=["kayak", "fjord"])
    rows = mem.store.query(
        "SELECT te.count, te.weight FROM tag_edges te JOIN tags a ON a.tid = te.src "
        "JOIN tags b ON b.tid = te.dst WHERE a.name = 'kayak' AND b.name = 'fjord'")
    assert rows and rows[0][0] == 2 and 0.5 < rows[0][1] <= 1.0
    back = mem.store.query(
        "SELECT te.count FROM tag_edges te JOIN tags a ON a.tid = te.src "
        "JOIN tags b ON b.tid = te.dst WHERE a.name = 'fjord' AND b.name = 'kayak'")
    assert back == [(2,)]


def test_save_many_commits_then_embeds_backlog(mem: Memory) -> None:
    texts = [f"meeting {i} with the Lisbon team about invoices" for i in range(130)]
    ids = mem.save_many(texts, embed=False)
    assert len(ids) == len(set(ids)) == 130
    assert [mem.get(i).content for i in ids[:3]] == texts[:3]
    assert mem.stats().pending_embeddings == 130
    assert mem.embed_pending() == 130
    assert mem.stats().pending_embeddings == 0
    assert mem.store.scalar("SELECT count(*) FROM node_vec_bit") == 130


@pytest.mark.parametrize("exact", [False, True])
def test_nearest_finds_a_paraphrase(mem: Memory, exact: bool) -> None:
    target = mem.save("My dog Rex needs his heartworm pill every month")
    mem.save_many(["The quarterly tax filing is due in April",
                   "We repainted the kitchen a pale green",
                   "The train to Porto leaves at 9"])
    hits = mem.nearest("medication schedule for my puppy", k=2, exact=exact)
    assert hits[0][0].id == target.id
    assert hits[0][1] <= hits[1][1]


def test_nearest_by_index_agrees_with_vec0(mem: Memory) -> None:
    """The bit-index search and sqlite-vec's exact scan give the same neighbours and the same
    cosine distances, up to the int8 form of the query the scan compares in (sqlite-vec
    compares vectors of one element type; the stored ones are int8)."""
    mem.save_many([f"{animal} {verb} near the {place}" for animal in ("dog", "cat", "heron")
                   for verb in ("sleeps", "hunts", "waits") for place in ("river", "barn")])
    for query in ("a bird fishing by the water", "pets resting in the farm building"):
        fast = mem.nearest(query, k=5)
        slow = mem.nearest(query, k=5, exact=True)
        assert [n.id for n, _ in fast] == [n.id for n, _ in slow]
        assert [d for _, d in fast] == pytest.approx([d for _, d in slow], abs=3e-3)


@pytest.mark.parametrize("exact", [False, True])
def test_nearest_returns_k_live_memories_past_forgotten_ones(mem: Memory, exact: bool) -> None:
    """Forgotten memories closer to the query than every live one must not shrink the answer
    below k (the search is asked again for more)."""
    close = [mem.save(f"my dog Rex takes his heartworm pill, note {i}") for i in range(6)]
    far = [mem.save(text) for text in ("The quarterly tax filing is due in April",
                                       "We repainted the kitchen a pale green",
                                       "The train to Porto leaves at 9")]
    for node in close:
        mem.forget(node.id)
    hits = mem.nearest("heartworm pill for my dog", k=2, exact=exact)
    assert len(hits) == 2
    assert {n.id for n, _ in hits} <= {n.id for n in far}
    assert hits[0][1] <= hits[1][1]
    every = mem.nearest("heartworm pill for my dog", k=9, live_only=False, exact=exact)
    assert {n.id for n, _ in every} == {n.id for n in close + far}


@pytest.mark.parametrize("bad", ["", "   \n\t", "a\x00b", "lone \ud800 surrogate", 42, None])
def test_bad_text_is_refused_and_nothing_changes(mem: Memory, bad: object) -> None:
    mem.save("an existing memory about the harbour")
    before = _dump(mem)
    with pytest.raises(InvalidInput):
        mem.save(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        mem.save_many(["fine text", bad])  # type: ignore[list-item]
    assert _dump(mem) == before


def test_text_over_the_limit_is_refused(db_path: Path) -> None:
    cfg = Config(store=StoreConfig(max_content_chars=100))
    with Memory(db_path, config=cfg, embedder=None) as m:
        with pytest.raises(InvalidInput, match="limit is 100"):
            m.save("x" * 101)
        assert m.stats().nodes == 0


@pytest.mark.parametrize("ns", ["", "has space", "-leading", "a" * 65, "semi;colon", "ü"])
def test_bad_namespace_is_refused(db_path: Path, ns: str) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        Memory(db_path, ns)


@pytest.mark.parametrize("tags", [["ok", 3], "single-string", ["   "]])
def test_bad_tags_are_refused(mem: Memory, tags: object) -> None:
    with pytest.raises(InvalidInput):
        mem.save("a memory with bad tags", tags=tags)  # type: ignore[arg-type]
    assert mem.stats().nodes == 0


def test_unknown_ids_raise_not_found(mem: Memory) -> None:
    for call in (mem.get, mem.forget, mem.history, mem.edges):
        with pytest.raises(NotFound, match="no memory 'nope'"):
            call("nope")
    with pytest.raises(LookupError):  # NotFound is a LookupError for callers not using remd's
        mem.get("nope")


def test_namespaces_do_not_cross(db_path: Path) -> None:
    with Memory(db_path, "work", embedder=None) as work, \
            Memory(db_path, "home", embedder=None) as home:
        w = work.save("the deploy key rotates on Fridays")
        home.save("buy oat milk")
        assert [n.content for n in home.recent()] == ["buy oat milk"]
        with pytest.raises(NotFound):
            home.get(w.id)
        assert home.stats().nodes == 1 and work.stats().nodes == 1


def test_fact_update_supersedes_old_value(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        old = m.save("My city is Bangalore")
        clock.advance(3600)
        new = m.save("My city has changed to Mumbai")
        assert old.kind is NodeKind.FACT and new.kind is NodeKind.FACT
        old_now = m.get(old.id)
        assert old_now.status is NodeStatus.SUPERSEDED
        assert old_now.valid_until == clock.now
        assert (new.id, old.id, EdgeType.SUPERSEDES, 1.0) in m.edges(new.id)
        clock.advance(3600)
        moved = m.save("I moved to Pune last week")
        assert m.get(new.id).status is NodeStatus.SUPERSEDED
        assert [n.id for n in m.history(old.id)] == [old.id, new.id, moved.id]
        assert [n.content for n in m.recent()] == ["I moved to Pune last week"]


def test_restating_a_fact_confirms_it(mem: Memory) -> None:
    first = mem.save("My favourite colour is teal")
    second = mem.save("my favorite colour is Teal")
    assert second.confidence > first.confidence
    assert mem.get(first.id).status is NodeStatus.SUPERSEDED
    assert second.valid_from == first.valid_from


def test_memory_links_become_typed_edges(mem: Memory) -> None:
    base = mem.save("API design v1: REST with JSON bodies")
    ext = mem.save(f"This extends [[memory:{base.id}]] with pagination rules")
    dangling = mem.save("This depends on [[memory:not-written-yet]] being approved")
    contra = mem.save(f"This contradicts [[memory:{base.id}]]: we chose gRPC")
    repl = mem.save(f"API design v2 supersedes [[memory:{base.id}]]")
    assert (ext.id, base.id, EdgeType.EXTENDS, 1.0) in mem.edges(base.id)
    assert mem.edges(dangling.id)[0][1:3] == ("not-written-yet", EdgeType.DEPENDS_ON)
    assert (contra.id, base.id, EdgeType.CONTRADICTS, 1.0) in mem.edges(base.id)
    old = mem.get(base.id)
    assert old.status is NodeStatus.SUPERSEDED and old.confidence < 0.5
    assert repl.id in [n.id for n in mem.history(base.id)]


def test_forget_is_soft(mem: Memory) -> None:
    node = mem.save("temporary wifi password is hunter2")
    mem.forget(node.id)
    assert mem.get(node.id).status is NodeStatus.FORGOTTEN
    assert mem.recent() == []
    assert mem.store.scalar("SELECT count(*) FROM nodes") == 1


def test_stats_counts(mem: Memory) -> None:
    mem.save("My city is Oslo")
    mem.save("My city is Bergen")
    mem.save("note about skiing")
    s = mem.stats()
    assert (s.nodes, s.live, s.superseded, s.facts) == (3, 2, 1, 1)
    assert s.tags > 0 and s.edges == 1 and s.schema_version >= 1


# -- issue 38 row 19: a save dated by its caller (imports, replays) ---------------------------
THEN = datetime(2024, 3, 14, 9, 30, tzinfo=UTC)
DAY = 86400.0


def test_a_save_is_dated_with_the_rules_of_an_imports_created_at(db_path: Path,
                                                                 clock: Clock) -> None:
    with Memory(db_path, embedder=None, clock=clock) as m:
        node = m.save("We moved the office to the harbour", created_at=THEN)
        assert node.created_at == node.last_access == THEN.timestamp()
        plus_one = timezone(timedelta(hours=1))
        same = [m.save("an offset is kept",
                       created_at=datetime(2024, 3, 14, 10, 30, tzinfo=plus_one)),
                m.save("ISO 8601 as on import", created_at="2024-03-14T09:30:00Z"),
                m.save("no offset means UTC, as on import", created_at="2024-03-14T09:30:00")]
        assert {n.created_at for n in same} == {THEN.timestamp()}
        day = m.save("a date alone is midnight UTC", created_at="2024-03-14")
        assert day.created_at == datetime(2024, 3, 14, tzinfo=UTC).timestamp()
        ids = m.save_many(["one", "two"], created_at=THEN)
        assert {m.get(i).created_at for i in ids} == {THEN.timestamp()}
        skew = m.save("a clock an hour ahead is believable",
                      created_at=datetime.fromtimestamp(clock.now + 3600, UTC))
        assert skew.created_at == clock.now + 3600
        before = m.stats().nodes
        for bad, message in [
            (datetime(2024, 3, 14, 9, 30), "has no time zone"),
            (datetime.fromtimestamp(clock.now + 2 * DAY, UTC), "more than a day in the future"),
            ("3000-01-01", "more than a day in the future"),
            ("2024-13-01", "is not ISO 8601"),
            (1710408600, "an ISO 8601 string"),
            (True, "an ISO 8601 string"),
        ]:
            with pytest.raises(InvalidInput, match=message):
                m.save("refused", created_at=bad)
            with pytest.raises(InvalidInput, match=f"item 0: .*{message}"):
                m.save_many(["refused"], created_at=bad)
        assert m.stats().nodes == before


def test_dated_saves_replay_a_fact_history(db_path: Path, clock: Clock) -> None:
    """Replayed oldest first with their dates, facts supersede as they did when told."""
    with Memory(db_path, embedder=None, clock=clock) as m:
        old = m.save("My city is Bangalore", created_at=THEN)
        new = m.save("My city has changed to Mumbai", created_at=THEN + timedelta(days=30))
        assert m.get(old.id).status is NodeStatus.SUPERSEDED
        assert m.get(old.id).valid_until == new.created_at == new.valid_from
        assert new.created_at == (THEN + timedelta(days=30)).timestamp() < clock.now


def test_async_memory_dates_a_save(db_path: Path, clock: Clock) -> None:
    async def body() -> tuple[float, float]:
        async with AsyncMemory(db_path, embedder=None, clock=clock) as m:
            one = await m.save("dated through the async API", created_at=THEN)
            (two,) = await m.save_many(["and in bulk"], created_at="2024-03-14T09:30:00Z")
            with pytest.raises(InvalidInput, match="has no time zone"):
                await m.save("refused", created_at=datetime(2024, 3, 14))
            return one.created_at, (await m.get(two)).created_at

    assert asyncio.run(body()) == (THEN.timestamp(), THEN.timestamp())
