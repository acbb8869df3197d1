"""The in-process bit index behind inject's vector seeds, on a real file.

The index mirrors node_vec_bit and is topped up by rid; these tests pin the cases where rows
are not simply appended, so the mirror can never serve a stale neighbourhood.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from remd import Memory
from remd.vectors import DIM, index_for, knn, write_vectors

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
        assert knn(mem.store, NS, vecs[7], k=1, rerank=1)[0][0] == 8
        with mem.store.transaction() as conn:
            write_vectors(conn, NS, list(range(201, 301)), vecs[200:])
        best = knn(mem.store, NS, vecs[250], k=1, rerank=1)[0]
        assert best[0] == 251 and best[1] > 0.999
        assert len(index_for(mem.store, NS)) == 300


def test_a_reused_rid_is_searched_with_its_new_vector(db_path: Path) -> None:
    """A rollback deletes a synthesis node's vector; SQLite may give its rid to the next memory."""
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 400)
    target = _unit(rng, 1)[0]
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        assert knn(mem.store, NS, vecs[-1], k=1, rerank=1)[0][0] == rids[-1]  # index built
        with mem.store.transaction() as conn:
            conn.execute("DELETE FROM node_vec_bit WHERE rid = ?", (rids[-1],))
            write_vectors(conn, NS, [rids[-1]], target)
        best = knn(mem.store, NS, target, k=1, rerank=1)[0]
        assert best[0] == rids[-1] and best[1] > 0.999
        # The old vector is gone from the mirror too: its nearest is now someone else.
        assert knn(mem.store, NS, vecs[-1], k=1, rerank=1)[0][0] != rids[-1]


def test_a_replaced_vector_is_searched_with_its_new_bits(db_path: Path) -> None:
    rng = np.random.default_rng(2)
    vecs = _unit(rng, 400)
    target = _unit(rng, 1)[0]
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        knn(mem.store, NS, vecs[0], k=1)
        with mem.store.transaction() as conn:
            write_vectors(conn, NS, [rids[10]], target)  # INSERT OR REPLACE of an existing rid
        best = knn(mem.store, NS, target, k=1, rerank=1)[0]
        assert best[0] == rids[10] and best[1] > 0.999


def test_deleted_rows_leave_the_mirror(db_path: Path) -> None:
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 50)
    with Memory(db_path, embedder=None) as mem:
        rids = _fill(mem, vecs)
        knn(mem.store, NS, vecs[0], k=1)
        with mem.store.transaction() as conn:
            conn.execute("DELETE FROM node_vec_bit WHERE rid > ?", (rids[24],))
        found = {rid for rid, _ in knn(mem.store, NS, vecs[40], k=10, rerank=8)}
        assert found and max(found) <= rids[24]
        assert len(index_for(mem.store, NS)) == 25


def test_a_split_scan_finds_exactly_what_one_scan_finds() -> None:
    """The Hamming scan of a large namespace runs in parts on threads; the parts' best,
    merged by distance with ties in rid order, are the whole scan's best."""
    from remd.vectors import BitIndex, quantise

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
