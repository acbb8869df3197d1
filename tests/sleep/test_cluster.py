"""Union-Find and the REM clustering guards (pure functions: no database needed)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remd.config import RemConfig
from remd.errors import InvalidInput
from remd.sleep.cluster import UnionFind, build_clusters, coherence


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, np.float64)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def around(center: np.ndarray, n: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    return unit(center + noise * rng.standard_normal((n, center.shape[0])))


# -- Union-Find ----------------------------------------------------------------------------------
def test_union_find_basics() -> None:
    uf = UnionFind(6)
    assert uf.groups() == [[0], [1], [2], [3], [4], [5]] and uf.clusters() == []
    uf.union(0, 1)
    uf.union(3, 4)
    uf.union(4, 5)
    assert uf.connected(0, 1) and uf.connected(3, 5) and not uf.connected(1, 3)
    assert uf.set_size(5) == 3 and uf.set_size(2) == 1
    assert uf.clusters() == [[0, 1], [3, 4, 5]]
    assert uf.union(0, 1) == uf.find(0)  # already joined: a no-op


def test_union_by_rank_keeps_the_taller_root() -> None:
    uf = UnionFind(4)
    tall = uf.union(0, 1)  # rank 1
    assert uf.union(tall, 2) == tall  # a rank-0 root hangs under the rank-1 one
    assert uf.rank[tall] == 1 and uf.parent[2] == tall


def test_path_compression_flattens_a_chain() -> None:
    n = 100_000  # iterative find: a long chain cannot hit the recursion limit
    uf = UnionFind(n)
    for i in range(n - 1):  # build a worst-case chain by hand (bypassing union by rank)
        uf.parent[i] = i + 1
    assert uf.find(0) == n - 1
    assert all(uf.parent[i] == n - 1 for i in range(0, n, 997))


def test_union_find_refuses_a_negative_size() -> None:
    with pytest.raises(InvalidInput):
        UnionFind(-1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))))
def test_union_find_matches_naive_components(case: tuple[int, list[tuple[int, int]]]) -> None:
    n, unions = case
    uf = UnionFind(n)
    label = list(range(n))  # naive: relabel a whole component on every union
    for a, b in unions:
        uf.union(a, b)
        old, new = label[b], label[a]
        label = [new if x == old else x for x in label]
    groups = uf.groups()
    assert sorted(x for g in groups for x in g) == list(range(n))  # a partition
    for g in groups:
        assert len({label[x] for x in g}) == 1
    assert len(groups) == len(set(label))
    assert all(uf.set_size(g[0]) == len(g) for g in groups)


# -- clustering ----------------------------------------------------------------------------------
def test_coherence_is_mean_pairwise_cosine() -> None:
    rng = np.random.default_rng(0)
    v = unit(rng.standard_normal((7, 16)))
    sims = v @ v.T
    expected = (sims.sum() - np.trace(sims)) / (7 * 6)
    assert coherence(v) == pytest.approx(expected, abs=1e-6)
    assert coherence(v[:1]) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(0, 2**31 - 1), st.integers(2, 8))
def test_every_flagged_item_ends_in_one_cluster_or_alone(n: int, seed: int,
                                                         cap: int) -> None:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((4, 24))
    v = unit(centers[rng.integers(0, 4, n)] + 0.6 * rng.standard_normal((n, 24))) if n else \
        np.zeros((0, 24), np.float32)
    tags = [set(rng.integers(0, 12, rng.integers(0, 4)).tolist()) for _ in range(n)]
    chars = rng.integers(10, 400, n).tolist()
    df: dict[int, int] = {}
    for ts in tags:
        for t in ts:
            df[t] = df.get(t, 0) + 1
    cfg = RemConfig(max_cluster_size=cap, max_cluster_chars=1200, theta=0.7)
    result = build_clusters(v, tags, chars, tag_df=df, live_count=max(n, 1), config=cfg)
    seen = [m for c in result.clusters for m in c.members]
    assert len(seen) == len(set(seen))  # nobody in two clusters
    assert len(seen) + result.singletons == n  # everybody somewhere
    for c in result.clusters:
        assert 2 <= len(c.members) <= cap
        assert sum(chars[m] for m in c.members) <= 1200
        assert c.coherence >= cfg.coherence_min - 1e-9
        assert c.coherence == pytest.approx(coherence(v[list(c.members)]), abs=1e-4)


def test_a_common_tag_does_not_chain_unrelated_fragments() -> None:
    rng = np.random.default_rng(1)
    n = 40
    v = unit(rng.standard_normal((n, 64)))  # unrelated contents
    year = 7  # on every memory: a year, a frequent word
    tags = [{year, 100 + i} for i in range(n)]
    df = {year: n, **{100 + i: 1 for i in range(n)}}
    result = build_clusters(v, tags, [50] * n, tag_df=df, live_count=n, config=RemConfig())
    assert result.clusters == () and result.singletons == n
    assert result.stats["evidence_links"] == 0


def test_a_specific_tag_links_related_fragments() -> None:
    rng = np.random.default_rng(2)
    center = rng.standard_normal(64)
    topic = around(center, 5, 0.9, rng)  # related, but not near-duplicates
    other = unit(rng.standard_normal((5, 64)))
    v = np.vstack([topic, other])
    sims = topic @ topic.T
    assert sims[np.triu_indices(5, 1)].max() < RemConfig().theta  # similarity alone: no link
    tags = [{1} for _ in range(5)] + [{2 + i} for i in range(5)]
    df = {1: 5, **{2 + i: 1 for i in range(5)}}
    result = build_clusters(v, tags, [50] * 10, tag_df=df, live_count=200, config=RemConfig())
    assert [c.members for c in result.clusters] == [(0, 1, 2, 3, 4)]


def test_a_shared_tag_between_dissimilar_fragments_fails_the_coherence_check() -> None:
    rng = np.random.default_rng(3)
    v = unit(np.eye(6, 32) + 0.01 * rng.standard_normal((6, 32)))  # orthogonal contents
    tags = [{1}] * 6
    result = build_clusters(v, tags, [50] * 6, tag_df={1: 6}, live_count=100,
                            config=RemConfig())
    assert result.clusters == ()
    # Too unlike each other for the shared tag to link them at all (cluster._TAG_LINK_COS).
    assert result.stats["evidence_links"] == 0


def test_the_size_cap_splits_along_the_weakest_similarity() -> None:
    rng = np.random.default_rng(4)
    a_center, b_center = rng.standard_normal(64), rng.standard_normal(64)
    bridge = unit((a_center + b_center)[None, :])[0]
    # The groups are alike enough (cosine ~0.5) for the tag they share to link across them.
    a = around(0.8 * bridge + a_center / np.linalg.norm(a_center), 6, 0.05, rng)
    b = around(0.8 * bridge + b_center / np.linalg.norm(b_center), 6, 0.05, rng)
    v = np.vstack([a, b])
    tags = [{1}] * 12  # one specific tag on all twelve: one connected component
    cfg = RemConfig(max_cluster_size=6, coherence_min=-1.0)
    result = build_clusters(v, tags, [50] * 12, tag_df={1: 12}, live_count=500, config=cfg)
    assert sorted(c.members for c in result.clusters) == [(0, 1, 2, 3, 4, 5),
                                                          (6, 7, 8, 9, 10, 11)]
    assert result.stats["refused_size"] > 0


def test_near_duplicates_link_by_similarity_and_typed_edges_link_too() -> None:
    rng = np.random.default_rng(5)
    base = unit(rng.standard_normal((3, 64)))
    dup = unit(base + 0.05 * rng.standard_normal((3, 64)))
    v = np.vstack([base, dup])  # i and i+3 are near-duplicates
    tags: list[set[int]] = [set() for _ in range(6)]
    result = build_clusters(v, tags, [50] * 6, tag_df={}, live_count=6, config=RemConfig())
    assert sorted(c.members for c in result.clusters) == [(0, 3), (1, 4), (2, 5)]
    # A typed edge is evidence, but the coherence check still applies to it.
    linked = build_clusters(v, tags, [50] * 6, tag_df={}, live_count=6,
                            config=RemConfig(coherence_min=-1.0), edges=[(0, 1)])
    assert (0, 1, 3, 4) in [c.members for c in linked.clusters]


def test_the_text_budget_caps_a_cluster() -> None:
    rng = np.random.default_rng(6)
    v = around(rng.standard_normal(64), 4, 0.02, rng)
    result = build_clusters(v, [set()] * 4, [3000] * 4, tag_df={}, live_count=4,
                            config=RemConfig(max_cluster_chars=6000))
    assert all(len(c.members) == 2 for c in result.clusters)
    assert result.stats["refused_chars"] > 0


def test_inputs_of_different_lengths_are_refused() -> None:
    with pytest.raises(InvalidInput):
        build_clusters(np.zeros((2, 4), np.float32), [set()], [1, 2], tag_df={},
                       live_count=2, config=RemConfig())


def test_alike_memories_about_different_subjects_stay_apart() -> None:
    rng = np.random.default_rng(7)
    base = unit(rng.standard_normal((1, 64)))
    v = unit(np.repeat(base, 3, axis=0) + 0.03 * rng.standard_normal((3, 64)))  # near-dups
    falcon, heron, teal = 1, 2, 3
    # "the Falcon wiki hint is teal-1" / "the Heron wiki hint is teal-2" / "hint: teal"
    tags = [{falcon, teal}, {heron, teal}, {teal}]
    df = {falcon: 5, heron: 5, teal: 40}
    result = build_clusters(v, tags, [50] * 3, tag_df=df, live_count=1000, config=RemConfig())
    assert all(set(c.members) != {0, 1} for c in result.clusters)
    assert result.stats["refused_subject"] >= 1
    # The memory that names nothing more specific than "teal" may join either one.
    assert [len(c.members) for c in result.clusters] == [2]
    assert 2 in result.clusters[0].members
