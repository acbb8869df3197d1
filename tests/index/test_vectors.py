"""The in-process bit index behind inject's vector seeds, on a real file.

The index mirrors node_vec_bit and is topped up by rid; these tests pin the cases where rows
are not simply appended, so the mirror can never serve a stale neighbourhood.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import remd.index.vectors as scan
from remd import Memory
from remd.index.vectors import write_vectors
from remd.store.quantisation import DIM, quantise
from tests.helpers import knn

pytestmark = pytest.mark.backends

NS = "default"


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _fill(mem: Memory, vectors: np.ndarray) -> list[int]:
    rids = list(range(1, len(vectors) + 1))
    with mem.store.transaction() as conn:
        write_vectors(conn, NS, rids, vectors)
    return rids


def test_appended_rows_are_found(db_path: Path) -> None:
    rng = np.random.default_rng(0)
    vecs = _unit(rng, 300)
    with Memory(db_path, embedder=None) as mem:
        _fill(mem, vecs[:200])
        assert knn(mem, NS, vecs[7], k=1, rerank=1)[0][0] == 8
        with mem.store.transaction() as conn:
            write_vectors(conn, NS, list(range(201, 301)), vecs[200:])
        best = knn(mem, NS, vecs[250], k=1, rerank=1)[0]
        assert best[0] == 251 and best[1] > 0.999
        assert len(mem.engine.caches.view(NS).bits) == 300


def test_a_reused_rid_is_searched_with_its_new_vector(db_path: Path) -> None:
    """A rollback deletes a synthesis node's vector; SQLite may give its rid to the next memory."""
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 400)
    target = _unit(rng, 1)[0]
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        assert knn(mem, NS, vecs[-1], k=1, rerank=1)[0][0] == rids[-1]  # index built
        with mem.store.transaction() as conn:
            conn.execute("DELETE FROM node_vec_bit WHERE rid = ?", (rids[-1],))
            write_vectors(conn, NS, [rids[-1]], target)
        best = knn(mem, NS, target, k=1, rerank=1)[0]
        assert best[0] == rids[-1] and best[1] > 0.999
        # The old vector is gone from the mirror too: its nearest is now someone else.
        assert knn(mem, NS, vecs[-1], k=1, rerank=1)[0][0] != rids[-1]


def test_a_replaced_vector_is_searched_with_its_new_bits(db_path: Path) -> None:
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 400)
    target = _unit(rng, 1)[0]
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        knn(mem, NS, vecs[0], k=1)
        with mem.store.transaction() as conn:
            write_vectors(conn, NS, [rids[10]], target)  # INSERT OR REPLACE of an existing rid
        best = knn(mem, NS, target, k=1, rerank=1)[0]
        assert best[0] == rids[10] and best[1] > 0.999


def test_deleted_rows_leave_the_mirror(db_path: Path) -> None:
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 50)
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        knn(mem, NS, vecs[0], k=1)
        with mem.store.transaction() as conn:
            conn.execute("DELETE FROM node_vec_bit WHERE rid > ?", (rids[24],))
        found = {rid for rid, _ in knn(mem, NS, vecs[40], k=10, rerank=8)}
        assert found and max(found) <= rids[24]
        assert len(mem.engine.caches.view(NS).bits) == 25


def test_a_replaced_vector_reloads_only_its_own_namespace(db_path: Path) -> None:
    """The vectors' generation is per namespace (migration 0016): replacing a vector of one
    namespace leaves another namespace's bit index as it was, no reload, and its searches
    exact."""
    rng = np.random.default_rng(4)
    vecs = _unit(rng, 80)
    with Memory(db_path, embedder=None) as mem:
        with mem.store.transaction() as conn:
            write_vectors(conn, "a", list(range(1, 41)), vecs[:40])
            write_vectors(conn, "b", list(range(41, 81)), vecs[40:])
        assert knn(mem, "a", vecs[3], k=1)[0][0] == 4
        assert knn(mem, "b", vecs[43], k=1)[0][0] == 44
        b_index = mem.engine.caches.view("b").bits
        built_at = b_index._generation
        with mem.store.transaction() as conn:
            write_vectors(conn, "a", [4], vecs[50])  # replaced: a's generation moves
        with mem.store.snapshot() as conn:
            generations = dict(conn.execute("SELECT namespace, generation FROM vec_generations"))
        assert generations == {"a": 1}
        assert knn(mem, "a", vecs[50], k=1)[0][0] == 4  # a reloaded: the new bits
        assert knn(mem, "b", vecs[50], k=1)[0][0] == 51
        assert mem.engine.caches.view("b").bits is b_index and b_index._generation == built_at


def test_a_split_scan_finds_exactly_what_one_scan_finds() -> None:
    """The Hamming scan of a large namespace runs in parts on threads; the parts' best,
    merged by distance with ties in rid order, are the whole scan's best."""
    from remd.index.vectors import BitIndex
    from remd.store.quantisation import quantise

    rng = np.random.default_rng(5)
    n = 150_000
    index = BitIndex("default")
    index._grow(n)
    bits = quantise(rng.standard_normal((n, 384)).astype(np.float32))
    index._planes[:, :n] = bits.view(np.uint64).T
    index._rids[:n] = np.arange(1, n + 1) * 3
    index._n = n
    for _ in range(5):
        q = rng.standard_normal(384).astype(np.float32)
        whole = index.candidates(q, 128)
        assert len(whole) == 128
        for parts in (2, 3):
            assert index.candidates(q, 128, parts=parts).tolist() == whole.tolist()


def _reference_nearest(bits: np.ndarray, q: np.ndarray, lo: int, hi: int, n: int
                       ) -> tuple[list[int], list[int]]:
    """The n nearest positions in [lo, hi) by Hamming distance, ties by position: the slow,
    obvious way (unpacked bits, a stable sort of every distance)."""
    unpacked = np.unpackbits(bits[lo:hi], axis=1)
    dist = (unpacked != np.unpackbits(q)).sum(axis=1)
    order = np.argsort(dist, kind="stable")[:n]
    pos = np.sort(order)
    return (pos + lo).tolist(), dist[pos].tolist()


def _planes(bits: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(bits.view(np.uint64).T)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 3000), n=st.integers(1, 400), distinct=st.integers(1, 50),
       data=st.data())
def test_the_scan_finds_the_n_nearest_with_ties_by_position(
        size: int, n: int, distinct: int, data: st.DataObject) -> None:
    """Whether the cut-off distance comes from the whole range or from a sample (forced
    here at small sizes), the scan returns exactly the n nearest, ties in position order:
    few distinct rows make most distances tie."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dim = data.draw(st.sampled_from([384, 384, 64, 100, 768, 1000, 1536]))  # any embedder's
    rows = quantise(rng.standard_normal((distinct, dim)).astype(np.float32))
    bits = rows[rng.integers(0, distinct, size=size)]
    q = rows[rng.integers(0, distinct)] if data.draw(st.booleans()) else quantise(
        rng.standard_normal(dim).astype(np.float32))[0]
    lo = data.draw(st.integers(0, size - 1))
    hi = data.draw(st.integers(lo + 1, size))
    want = _reference_nearest(bits, q, lo, hi, n)
    planes, qw = _planes(bits), q.view(np.uint64)
    for sample_min, sample in ((1 << 30, 8192), (1, 64)):  # whole range; sample always
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(scan, "_SAMPLE_MIN", sample_min)
            mp.setattr(scan, "_SAMPLE", sample)
            pos, dist = scan._nearest(planes, qw, lo, hi, n)
        assert (pos.tolist(), dist.tolist()) == want


def test_a_large_scan_with_many_ties_finds_the_n_nearest() -> None:
    """Past _SAMPLE_MIN, with most rows repeated (distances tie in long runs)."""
    rng = np.random.default_rng(9)
    rows = quantise(rng.standard_normal((40, 384)).astype(np.float32))
    bits = rows[rng.integers(0, 40, size=scan._SAMPLE_MIN * 2)]
    planes = _planes(bits)
    for q in (rows[3], quantise(rng.standard_normal(384).astype(np.float32))[0]):
        for n in (1, 128, 5000):
            pos, dist = scan._nearest(planes, q.view(np.uint64), 17, len(bits), n)
            assert (pos.tolist(), dist.tolist()) == _reference_nearest(bits, q, 17, len(bits), n)


@pytest.mark.parametrize("dim", [100, 768, 1536])
def test_vectors_of_any_size_are_stored_and_searched(db_path: Path, dim: int) -> None:
    """A file of another embedder's size: the sign bits padded to whole words, the mirror
    as wide as its rows, the exact scan and the rerank on the stored int8 rows; a question of
    another size finds nothing rather than failing."""
    rng = np.random.default_rng(dim)
    vecs = rng.standard_normal((500, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        width = mem.store.one("SELECT length(bits), length(vec) FROM node_vec_bit")
        assert width is not None and tuple(width) == (8 * -(-dim // 64), dim)
        for i in (0, 123, 499):
            best = knn(mem, NS, vecs[i], k=1, rerank=1)[0]
            assert best[0] == rids[i] and best[1] > 0.999
            assert mem.store.exact_scan(NS, vecs[i], 1)[0][0] == rids[i]
        assert len(mem.engine.caches.view(NS).bits) == 500
        assert knn(mem, NS, _unit(rng, 1)[0], k=3) == []  # a 384-d question


def _clustered(rng: np.random.Generator, n: int, clusters: int) -> np.ndarray:
    centres = _unit(rng, clusters)
    m = centres[rng.integers(0, clusters, n)] + rng.standard_normal((n, DIM)) * 0.045
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def test_cells_scan_a_bounded_slice_and_keep_the_neighbourhood(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``vector_cells_from`` vectors a question scans only the cells nearest it (about
    ``vector_cells_probe`` vectors and those loaded since the build); on clustered vectors
    the Hamming candidates are nearly the flat scan's, and vectors written after the build
    (appended, or late with a lower rid) are found."""
    from remd import Config
    from remd.config import InjectConfig
    from remd.index import bitcells

    rng = np.random.default_rng(8)
    vecs = _clustered(rng, 6000, 20)
    monkeypatch.setattr(bitcells, "CELLS", 16)
    config = Config(inject=InjectConfig(vector_cells_from=4000, vector_cells_probe=1200))
    with Memory(db_path, config=config, embedder=None) as mem:
        with mem.store.transaction() as conn:  # rid 101 comes late, below the others
            conn.execute("INSERT INTO nodes (rid, id, namespace, kind, content, created_at, "
                         "last_access, tokens, embedded) VALUES (101, 'late', ?, 'episodic', "
                         "'late', 0, 0, 1, 0)", (NS,))
            write_vectors(conn, NS, list(range(1, 101)) + list(range(102, 5001)),
                          np.concatenate([vecs[:100], vecs[101:5000]]))
        index = mem.engine.caches.view(NS).bits
        queries = vecs[5000:5040]
        knn(mem, NS, queries[0], k=1)
        assert index._cells is not None and index._cells.covered == 4999
        overlap = []
        for q in queries:
            got = index.candidates(q, 64)
            assert len(got) == 64 and np.all(np.diff(got) > 0)  # rid order, no repeats
            index.cells_from = 0  # off: the flat scan
            flat = index.candidates(q, 64)
            index.cells_from = 4000
            overlap.append(len(set(got.tolist()) & set(flat.tolist())) / 64)
        assert np.mean(overlap) > 0.9
        with mem.store.transaction() as conn:
            write_vectors(conn, NS, [101] + list(range(5001, 5101)),
                          np.concatenate([vecs[100:101], vecs[5000:5100]]))
            conn.execute("UPDATE nodes SET embedded = 1 WHERE rid = 101")
        for rid, v in ((101, vecs[100]), (5050, vecs[5049]), (7, vecs[6])):
            best = knn(mem, NS, v, k=1, rerank=1)[0]
            assert best[0] == rid and best[1] > 0.999
        assert index._cells is not None and index._cells.covered == 4999  # not rebuilt
        assert len(index._cells.extra) == 101
