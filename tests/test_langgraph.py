"""remd.langgraph.RemdStore (issue 21, its LangGraph part): the BaseStore behaviours LangGraph
documents (put/get/search/delete, namespace listing with prefix and depth, replace by key),
written from its docs. Real SQLite file, real embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph")

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
