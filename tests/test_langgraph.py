"""remd.langgraph.RemdStore (issue 21, its LangGraph part): the BaseStore behaviours LangGraph
documents (put/get/search/delete, namespace listing with prefix and depth, replace by key),
written from its docs, and filters checked side by side with LangGraph's own InMemoryStore.
Real SQLite file, real embedder."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from remd import Memory  # noqa: E402
from remd.errors import InvalidInput  # noqa: E402
from remd.langgraph import RemdStore, from_remd_namespace, to_remd_namespace  # noqa: E402


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
