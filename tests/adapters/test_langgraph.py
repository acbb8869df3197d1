"""remd.langgraph.RemdStore (issue 21, its LangGraph part): the BaseStore behaviours LangGraph
documents (put/get/search/delete, namespace listing with prefix and depth, replace by key),
written from its docs, and filters checked side by side with LangGraph's own InMemoryStore.
Real SQLite file, real embedder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("langgraph")

from langgraph.store.base import PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from remd import Memory, load_config  # noqa: E402
from remd.cli.main import main  # noqa: E402
from remd.errors import InvalidInput  # noqa: E402
from remd.langgraph import RemdStore, from_remd_namespace, to_remd_namespace  # noqa: E402
from remd.service.daemon import Daemon  # noqa: E402
from remd.wire import iso  # noqa: E402


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RemdStore]:
    s = RemdStore(tmp_path / "lg.db")
    yield s
    s.close()


@pytest.mark.parametrize("ns", [(), ("users",), ("users", "u 1"), ("a.b", "x_y", "é")])
def test_namespaces_map_reversibly(ns: tuple[str, ...]) -> None:
    name = to_remd_namespace(ns)
    assert from_remd_namespace(name) == ns
    with pytest.raises(InvalidInput):
        to_remd_namespace(("x" * 70,))


def test_put_get_replace_and_delete(store: RemdStore, tmp_path: Path) -> None:
    ns = ("users", "u1", "memories")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"text": "allergic to peanuts"})
    item = store.get(ns, "food")
    assert item is not None and item.value == {"text": "allergic to peanuts"}
    assert item.key == "food" and item.namespace == ns
    store.put(ns, "food", {"text": "allergic to peanuts and shellfish"})  # same key: replace
    again = store.get(ns, "food")
    assert again is not None and again.value["text"].endswith("shellfish")
    assert len(store.search(ns)) == 1
    store.delete(ns, "food")
    assert store.get(ns, "food") is None and store.search(ns) == []
    with Memory(tmp_path / "lg.db", to_remd_namespace(ns), embedder=None) as m:
        assert m.stats().nodes == 2 and m.stats().forgotten == 2  # forgotten, never lost


def test_search_by_query_filter_and_prefix(store: RemdStore) -> None:
    store.put(("users", "u1"), "a", {"text": "I am allergic to peanuts", "kind": "health"})
    store.put(("users", "u1"), "b", {"text": "I live in Lisbon", "kind": "home"})
    store.put(("users", "u2"), "c", {"text": "I drive a blue car", "kind": "car"})
    hits = store.search(("users", "u1"), query="what food allergies?")
    assert hits and hits[0].key == "a" and hits[0].score is not None
    assert [h.key for h in store.search(("users",), filter={"kind": "car"})] == ["c"]
    store.put(("users2",), "d", {"text": "a sibling namespace, not under users"})
    assert {h.key for h in store.search(("users",))} == {"a", "b", "c"}
    assert [h.key for h in store.search(("users",), limit=1, offset=0)] != []


def test_list_namespaces_with_prefix_suffix_and_depth(store: RemdStore) -> None:
    for ns in [("users", "u1", "memories"), ("users", "u2", "memories"), ("docs", "d1")]:
        store.put(ns, "k", {"text": f"about {'/'.join(ns)}"})
    assert store.list_namespaces() == [("docs", "d1"), ("users", "u1", "memories"),
                                       ("users", "u2", "memories")]
    assert store.list_namespaces(prefix=("users",)) == [("users", "u1", "memories"),
                                                         ("users", "u2", "memories")]
    assert store.list_namespaces(suffix=("d1",)) == [("docs", "d1")]
    assert store.list_namespaces(max_depth=1) == [("docs",), ("users",)]


def test_async_forms(store: RemdStore) -> None:
    async def main() -> None:
        await store.aput(("a",), "k", {"text": "async value"})
        item = await store.aget(("a",), "k")
        assert item is not None and item.value == {"text": "async value"}

    asyncio.run(main())


def test_a_refused_put_keeps_the_old_value(store: RemdStore, tmp_path: Path) -> None:
    from datetime import datetime

    ns = ("users", "u1")
    store.put(ns, "food", {"text": "allergic to peanuts"})
    with pytest.raises(InvalidInput, match="not JSON"):
        store.put(ns, "food", {"when": datetime(2025, 1, 1)})
    with pytest.raises(InvalidInput):  # longer than a memory may be
        store.put(ns, "food", {"text": "x" * 70_000})
    item = store.get(ns, "food")
    assert item is not None and item.value == {"text": "allergic to peanuts"}


def test_putting_the_same_value_again_keeps_it(store: RemdStore) -> None:
    ns = ("users", "u1")
    value = {"text": "My city is Lisbon"}
    store.put(ns, "city", value)
    store.put(ns, "city", value)
    item = store.get(ns, "city")
    assert item is not None and item.value == value


def test_keys_are_independent_even_when_values_state_the_same_fact(store: RemdStore) -> None:
    ns = ("users", "u1")
    store.put(ns, "home", {"text": "My city is Lisbon"})
    store.put(ns, "trip", {"text": "My city is Porto"})  # would supersede as a fact statement
    home, trip = store.get(ns, "home"), store.get(ns, "trip")
    assert home is not None and home.value == {"text": "My city is Lisbon"}
    assert trip is not None and trip.value == {"text": "My city is Porto"}


# -- contract row 8: filters as InMemoryStore applies them; bad input refused -----------------
_THINGS = {
    "k1": {"a": 1, "kind": "x", "meta": {"lang": "en", "n": 1}, "tags": ["a", "b"]},
    "k2": {"a": 2, "kind": "y", "meta": {"lang": "pt"}},
    "k3": {"a": 2.5, "kind": "x", "tags": ["b"]},
    "k4": {"a": 3, "kind": "y", "meta": {"lang": "en"}},
    "k5": {"a": "3", "kind": "x"},  # a numeric string: both stores order it as 3
    "k6": {"a": 4, "kind": None},
}
_FILTERS: list[dict[str, Any]] = [
    {"a": {"$gt": 2}}, {"a": {"$gte": 2}}, {"a": {"$lt": 2.5}}, {"a": {"$lte": 2.5}},
    {"a": {"$eq": 2}}, {"a": {"$ne": 2}}, {"a": {"$gt": 1, "$lt": 4}}, {"a": {"$gt": "2"}},
    {"a": 2}, {"kind": "x"}, {"kind": {"$ne": "x"}}, {"kind": None}, {"missing": {"$ne": 1}},
    {"a": {"$gte": 2}, "kind": "y"}, {"meta": {"lang": "en"}}, {"meta": {"lang": {"$ne": "pt"}}},
    {"tags": ["a", "b"]}, {"tags": ["b"]}, {},
]


@pytest.mark.parametrize("spec", _FILTERS, ids=[json.dumps(f) for f in _FILTERS])
def test_filters_match_side_by_side_with_in_memory_store(store: RemdStore,
                                                         spec: dict[str, Any]) -> None:
    reference = InMemoryStore()
    for key, value in _THINGS.items():
        for s in (store, reference):
            s.put(("things",), key, value)
    expected = sorted(h.key for h in reference.search(("things",), filter=spec))
    assert sorted(h.key for h in store.search(("things",), filter=spec)) == expected


def test_an_item_without_a_number_to_order_by_does_not_match(store: RemdStore) -> None:
    store.put(("t",), "n", {"a": 5})
    store.put(("t",), "none", {"b": 5})  # InMemoryStore raises TypeError on float(None) here
    store.put(("t",), "word", {"a": "five"})
    assert [h.key for h in store.search(("t",), filter={"a": {"$gt": 2}})] == ["n"]


@pytest.mark.parametrize("kwargs", [
    {"filter": {"a": {"$in": [1, 2]}}}, {"filter": {"a": {"$gt": 1, "lt": 3}}},
    {"filter": {"meta": {"n": {"$regex": "x"}}}}, {"filter": {"a": {"$gt": "two"}}},
    {"filter": {"a": {"$lte": None}}}, {"limit": -1}, {"offset": -2}, {"limit": 1.5},
])
def test_bad_search_input_is_refused(store: RemdStore, kwargs: dict[str, Any]) -> None:
    store.put(("t",), "k", {"a": 1})
    with pytest.raises(InvalidInput) as err:
        store.search(("t",), **kwargs)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError):  # InvalidInput is a ValueError, as InMemoryStore raises
        asyncio.run(store.asearch(("t",), **kwargs))


def test_bad_list_namespaces_input_is_refused(store: RemdStore) -> None:
    store.put(("t",), "k", {"a": 1})
    for kwargs in ({"limit": -1}, {"offset": -1}):
        with pytest.raises(InvalidInput, match="must be a whole number"):
            store.list_namespaces(**kwargs)


def test_a_key_that_is_not_a_string_is_refused(store: RemdStore) -> None:
    ns = ("t",)
    store.put(ns, "5", {"text": "five as a string"})
    for bad in (5, 5.0, None, ("k",)):
        with pytest.raises(InvalidInput, match="key must be a string"):
            store.put(ns, bad, {"text": "replaced?"})  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="key must be a string"):
            store.get(ns, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="key must be a string"):
            store.delete(ns, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="key must be a string"):
            asyncio.run(store.aput(ns, bad, {"text": "replaced?"}))  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):  # a bad op leaves the whole batch unapplied
        store.batch([PutOp(ns, "new", {"text": "new"}), PutOp(ns, 7, {"text": "bad"})])  # type: ignore[arg-type]
    assert store.get(ns, "new") is None
    item = store.get(ns, "5")
    assert item is not None and item.value == {"text": "five as a string"}
    assert [h.key for h in store.search(ns)] == ["5"]


# -- issue 38 row 1: REM never folds a store item ---------------------------------------------
DAY = 86400.0
NOW = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
_PROJECTS = ("Falcon", "Heron", "Juniper")
_FRAGMENTS = ("{p} had timeouts on 2024-02-11.", "Saw timeouts on {p} again on 2024-03-12.",
              "Timeouts on {p} once more on 2024-05-14.", "{p} hit timeouts again on 2024-07-16.")
# Values that say what the fragments say, so a run would cluster them with the fragments.
_VALUES = {f"{p.lower()}-{i}": {"text": t.format(p=p), "n": i, "nested": {"ok": True}}
           for p in _PROJECTS for i, t in enumerate(_FRAGMENTS[:3])}


def _store_items_days_ago(db: Path, ns: tuple[str, ...]) -> None:
    """Nine store items written 20 days before NOW, beside year-old ordinary fragments."""
    lines = [json.dumps({"content": t.format(p=p), "created_at": iso(NOW - 365 * DAY - k * DAY)})
             for k, (p, t) in enumerate((p, t) for p in _PROJECTS for t in _FRAGMENTS)]
    with Memory(db, to_remd_namespace(ns), clock=lambda: NOW - 20 * DAY) as m:
        m.import_lines(lines)
    s = RemdStore(db, clock=lambda: NOW - 20 * DAY)
    try:
        for key, value in _VALUES.items():
            s.put(ns, key, value)
    finally:
        s.close()


def _assert_items_exact(db: Path, ns: tuple[str, ...], when: str) -> None:
    s = RemdStore(db, clock=lambda: NOW)
    try:
        for key, value in _VALUES.items():
            item = s.get(ns, key)
            assert item is not None, f"{key} gone {when}"
            assert json.dumps(item.value, sort_keys=True) == json.dumps(value, sort_keys=True)
        listed = {i.key: i.value for i in s.search(ns, limit=100)}
        assert listed == _VALUES, when
        for key, value in _VALUES.items():  # each found by a search for its own words
            found = s.search(ns, query=value["text"], limit=100)
            assert key in [i.key for i in found], f"{key} not found by search {when}"
    finally:
        s.close()


@pytest.mark.backends
def test_store_items_survive_the_daemons_run_and_a_run_by_hand(db_path: Path) -> None:
    """Issue 38 row 1: nine items put days ago beside year-old fragments; the daemon's tick
    (a trigger fires) folds the fragments, then runs by hand; every get is the value put."""
    db = db_path
    ns = ("users", "u1")
    _store_items_days_ago(db, ns)
    daemon = Daemon(db, load_config(env={}, overrides={"triggers": {"max_live_nodes": 10}}),
                    clock=lambda: NOW, env={})
    try:
        tick = daemon.tick(NOW)
    finally:
        daemon.close()
    (ran,) = [t for t in tick.namespaces if t.namespace == to_remd_namespace(ns)]
    assert ran.outcome == "ran" and tick.runs  # a trigger fired and the fragments were folded
    with Memory(db, to_remd_namespace(ns), embedder=None) as m:
        assert m.stats().deprecated > 0
    _assert_items_exact(db, ns, "after the daemon's run")

    with Memory(db, to_remd_namespace(ns), clock=lambda: NOW + 40 * DAY) as m:
        m.save("Falcon had timeouts again on 2025-06-20.")  # something new to fold
        run = m.run_rem(now=NOW + 400 * DAY, include_held=True)
        assert run.status.value == "completed"
    _assert_items_exact(db, ns, "after a run by hand")
    result = CliRunner().invoke(main, ["--db", str(db), "--namespace", to_remd_namespace(ns),
                                       "run-rem", "--json"], env={"REMD_DB": None})
    assert result.exit_code == 0, result.output
    _assert_items_exact(db, ns, "after remd run-rem")


def test_an_ordinary_memory_never_supersedes_a_store_item(store: RemdStore,
                                                          tmp_path: Path) -> None:
    ns = ("users", "u1")
    store.put(ns, "home", {"text": "I live in Lisbon"})
    store.put(ns, "commute", {"text": "I ride my bike to work"})
    with Memory(tmp_path / "lg.db", to_remd_namespace(ns)) as m:
        m.save("These days I take the U-Bahn to work instead of riding my bike")
        m.save("I live in Porto now, I moved from Lisbon")
        live = {n.source for n in m.recent(50)}
    assert {"lg:home", "lg:commute"} <= live
    for key, text in (("home", "I live in Lisbon"), ("commute", "I ride my bike to work")):
        item = store.get(ns, key)
        assert item is not None and item.value == {"text": text}


def test_a_namespace_of_store_items_alone_does_not_fire_the_node_count(tmp_path: Path) -> None:
    s = RemdStore(tmp_path / "lg.db")
    try:
        for i in range(15):
            s.put(("notes",), f"k{i}", {"text": f"note number {i}"})
        with Memory(tmp_path / "lg.db", to_remd_namespace(("notes",)), embedder=None,
                    config=load_config(env={}, overrides={"triggers": {"max_live_nodes": 10}})
                    ) as m:
            (count,) = [c for c in m.triggers().checks if c.reason.value == "node_count"]
            assert not count.fired and count.value == 0.0, count.explanation
            run = m.run_rem(now=NOW + 400 * DAY)
            assert run.flagged == 0 and "15 values kept exact" in run.why_none
    finally:
        s.close()


def test_an_export_keeps_store_items_exact_through_an_import(tmp_path: Path) -> None:
    ns = ("users", "u1")
    _store_items_days_ago(tmp_path / "a.db", ns)
    with Memory(tmp_path / "a.db", to_remd_namespace(ns), embedder=None) as m:
        lines = list(m.export_lines())
    items = [json.loads(line) for line in lines if "lg:" in line]
    assert len(items) == len(_VALUES) and all(i["exact"] is True for i in items)
    assert not any("exact" in json.loads(line) for line in lines if "lg:" not in line)
    with Memory(tmp_path / "b.db", to_remd_namespace(ns), clock=lambda: NOW) as m:
        m.import_lines(lines)
        assert list(m.export_lines()) == lines
        assert m.run_rem(now=NOW).synthesised > 0  # the fragments fold, the items don't
    _assert_items_exact(tmp_path / "b.db", ns, "after an import and a run")
    with Memory(tmp_path / "c.db") as m, pytest.raises(InvalidInput, match="exact"):
        m.import_lines([json.dumps({"content": "x", "exact": "yes"})])


@pytest.mark.backends
def test_store_items_of_an_older_database_are_kept_exact_once_migrated(db_path: Path) -> None:
    """A file written before migration 0013 (PostgreSQL: 0005) holds the items as plain
    memories; the migration marks the adapter's, and only those."""
    ns = ("users", "u1")
    _store_items_days_ago(db_path, ns)
    with Memory(db_path, "default", embedder=None) as m:
        m.save("source lg:x outside the adapter's namespaces", source="lg:x")
        (last,) = [n for n in m.store.applied() if n.endswith("_exact_values")]
        with m.store.transaction() as conn:  # as the file was before the migration
            conn.execute("UPDATE nodes SET judged = 1")
            conn.execute("DELETE FROM remd_migrations WHERE name = ?", (last,))
    with Memory(db_path, "default", embedder=None) as m:
        assert m.store.applied()[-1] == last
        marked = m.store.query("SELECT namespace, source FROM nodes WHERE judged = 2")
    assert sorted(str(s) for _, s in marked) == sorted(f"lg:{k}" for k in _VALUES)
    with Memory(db_path, to_remd_namespace(ns), clock=lambda: NOW) as m:
        assert m.run_rem(now=NOW).synthesised > 0
    _assert_items_exact(db_path, ns, "after the migration and a run")


def test_a_link_that_says_it_replaces_a_store_item_leaves_it(store: RemdStore,
                                                             tmp_path: Path) -> None:
    ns = ("users", "u1")
    store.put(ns, "home", {"text": "I live in Lisbon"})
    with Memory(tmp_path / "lg.db", to_remd_namespace(ns), embedder=None) as m:
        (item,) = [n for n in m.recent(5) if n.source == "lg:home"]
        m.save(f"This replaces [[memory:{item.id}]]: I live in Porto")
    got = store.get(ns, "home")
    assert got is not None and got.value == {"text": "I live in Lisbon"}
