"""Nearest memories by vector in bounded time: a Hamming pre-filter, then an exact cosine rerank.

vec0 scans every float vector of a partition (measured 67-78 ms for a top-10 over 100k here),
and even its ``bit[384]`` scan takes ~13 ms at 100k. So the search runs in two steps:

1. Hamming distance between the query's sign bits and every memory's, over an in-process
   numpy mirror of ``node_vec_bit`` (one uint64 plane per 64 dimensions: six for MiniLM's 384,
   column-major so each plane is one contiguous XOR + popcount pass: ~0.7 ms per 100k vectors
   of 384 dimensions). The mirror takes the width of the first row it loads (a file holds one
   embedder's vectors: :mod:`remd.index.vectormodel`) and skips any row of another. The
   mirror is never the source of truth: it is loaded from SQLite and topped up incrementally
   before every search.
2. The ``k * rerank`` best by Hamming distance are read back (primary-key seeks in
   ``node_vec_bit``, int8 vectors) and ranked by cosine similarity.

Sign bits of MiniLM vectors keep the neighbourhood well enough that the true top-k is almost
always within the top ``8k`` by Hamming distance (see tests/query/test_inject.py for the recall
check).
"""

from __future__ import annotations

import array
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from remd.index import bitcells
from remd.store import DIM, F32, from_int8, quantise, to_int8, words
from remd.store.seam import Connection, Read, Store

U64 = npt.NDArray[np.uint64]


def write_vectors(conn: Connection, namespace: str, rids: Sequence[int],
                  vectors: npt.ArrayLike) -> None:
    """Store freshly computed embeddings (inside the caller's transaction): the sign bits and
    the int8 vector (:func:`to_int8`). ``node_vec_bit`` is the one store of vectors (migration
    0008)."""
    m = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    bits, small = quantise(m), to_int8(m)
    conn.executemany(
        "INSERT OR REPLACE INTO node_vec_bit (rid, namespace, bits, vec) VALUES (?, ?, ?, ?)",
        [(int(rid), namespace, bits[i].tobytes(), small[i].tobytes())
         for i, rid in enumerate(rids)])


def write_sentence_vectors(conn: Connection, namespace: str, rid: int,
                           vectors: npt.ArrayLike) -> None:
    """Store the embeddings of a memory's sentences (``sentence_vec``, migration 0010), in the
    caller's transaction, replacing any it had."""
    m = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    # Deleting no row fires no trigger: the generation moves only when rows are replaced.
    conn.execute("DELETE FROM sentence_vec WHERE namespace = ? AND rid = ?", (namespace, rid))
    if not len(m):
        return
    bits, small = quantise(m), to_int8(m)
    conn.executemany(
        "INSERT INTO sentence_vec (rid, namespace, bits, vec) VALUES (?, ?, ?, ?)",
        [(int(rid), namespace, bits[i].tobytes(), small[i].tobytes()) for i in range(len(m))])


def delete_vectors(conn: Connection, namespace: str) -> None:
    """Every stored vector of the namespace gone (a move to another embedder), in the
    caller's transaction; the triggers move its generation, so its mirrors reload."""
    conn.execute("DELETE FROM sentence_vec WHERE namespace = ?", (namespace,))
    conn.execute("DELETE FROM node_vec_bit WHERE namespace = ?", (namespace,))


# A namespace's vectors' generation: bumped when one of its rows is deleted or replaced (no
# row until the first time).
_GENERATION = "SELECT generation FROM vec_generations WHERE namespace = ?"


class BitIndex:
    """The sign bits of one namespace's embeddings, in memory, in key order.

    ``table`` is ``node_vec_bit`` (one vector per memory, keyed by rid) or ``sentence_vec``
    (one per sentence of a memory that has several, keyed by sid, which only grows: rows are
    only ever appended, so there is nothing pending to rescan).

    Rows normally arrive in increasing rid order and are appended. A node embedded late (its rid
    below ones already loaded, e.g. saved by another process whose embedding finished later) is
    caught by rescanning from the lowest rid still waiting for its embedding at the previous
    refresh; it is then inserted in order (a rare, whole-array re-sort). Deleted or replaced
    rows (a REM rollback, a re-embed) bump the namespace's row of ``vec_generations`` (migrations
    0003 and 0016), and the next refresh reloads the namespace in full.
    """

    def __init__(self, namespace: str, table: str = "node_vec_bit", *,
                 cells: tuple[int, int] = (0, 0)) -> None:
        if table not in ("node_vec_bit", "sentence_vec"):
            raise ValueError(f"no vectors in table {table!r}")
        self.namespace = namespace
        self.table = table
        self._key = "rid" if table == "node_vec_bit" else "sid"
        self._words = words(DIM)  # until the first row loaded says otherwise
        self._planes: U64 = np.zeros((self._words, 0), np.uint64)
        self._rids: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self._n = 0
        self._floor: int | None = None  # lowest rid pending embedding at the last refresh
        self._generation: str | None = None  # the vectors' generation the mirror was built at
        self._cells: bitcells.Cells | None = None  # large namespaces: remd/index/bitcells.py
        # From how many vectors the index keeps cells (0: never), and how many vectors a
        # question then scans ([inject] vector_cells_from, vector_cells_probe).
        self.cells_from, self.probe = cells
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def _upto(self) -> int:
        return int(self._rids[self._n - 1]) if self._n else 0

    def _grow(self, extra: int) -> None:
        need = self._n + extra
        cap = self._planes.shape[1]
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 8)
        planes = np.zeros((self._words, new_cap), np.uint64)
        planes[:, :self._n] = self._planes[:, :self._n]
        rids = np.zeros(new_cap, np.int64)
        rids[:self._n] = self._rids[:self._n]
        self._planes, self._rids = planes, rids

    def nbytes(self) -> int:
        """What the index holds in memory (for the cache budget)."""
        cells = self._cells.nbytes() if self._cells is not None else 0
        return int(self._planes.nbytes + self._rids.nbytes) + 2 * 112 + cells  # + the objects

    def _loaded(self, rid: int) -> bool:
        i = int(np.searchsorted(self._rids[:self._n], rid))
        return i < self._n and int(self._rids[i]) == rid

    def probes(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The statements :meth:`refresh` runs, as things stand: the vectors' generation, (for
        memories) the oldest one not embedded yet, and the rows after the last one loaded
        (PostgreSQL sends them ahead in one message: PgConnection.prefetch)."""
        start = self._upto if self._floor is None else min(self._upto, self._floor - 1)
        key = self._key
        return [(_GENERATION, (self.namespace,)),
                *([("SELECT min(rid) FROM nodes WHERE namespace = ? AND embedded = 0",
                    (self.namespace,))] if key == "rid" else []),
                (f"SELECT {key}, bits FROM {self.table} WHERE namespace = ? AND {key} > ? "
                 f"ORDER BY {key}", (self.namespace, start))]

    def refresh(self, conn: Connection) -> int:
        """Load the rows committed since the last refresh; returns how many were added.

        Run it in the same read transaction as the search so both see one state of the file.
        """
        with self._lock:
            generation = conn.execute(_GENERATION, (self.namespace,)).fetchone()
            gen = None if generation is None else str(generation[0])
            if gen != self._generation:  # rows deleted or replaced since: reload in full
                self._n, self._floor, self._generation = 0, None, gen
                self._cells = None
            upto = self._upto
            probes = self.probes()
            floor = conn.execute(*probes[1]).fetchone() if self._key == "rid" else None
            # Streamed into two flat buffers rather than a list of row tuples: a first load
            # of 1M vectors takes 1.7 s this way, 2.9 s that way.
            fresh_rids = array.array("q")
            fresh_bits = bytearray()
            width = 8 * self._words if self._n else 0  # an empty mirror takes the first row's
            for r, b in conn.execute(*probes[-1]):
                if not width and len(b) and len(b) % 8 == 0:
                    width = len(b)
                    self._words = width // 8
                    self._planes = np.zeros((self._words, 0), np.uint64)
                if len(b) == width and (r > upto or not self._loaded(r)):
                    fresh_rids.append(r)
                    fresh_bits += b
            self._floor = int(floor[0]) if floor and floor[0] is not None else None
            if not fresh_rids:
                return 0
            self._grow(len(fresh_rids))
            packed = np.frombuffer(fresh_bits, np.uint8).reshape(-1, width)
            n0, n1 = self._n, self._n + len(fresh_rids)
            # Little-endian uint64 words of the LSB-first bits, one plane per word.
            self._planes[:, n0:n1] = packed.view(np.uint64).T
            self._rids[n0:n1] = np.frombuffer(fresh_rids, np.int64)
            self._n = n1
            if fresh_rids[0] <= upto:
                order = np.argsort(self._rids[:n1], kind="stable")
                self._rids[:n1] = self._rids[:n1][order]
                self._planes[:, :n1] = self._planes[:, :n1][:, order]
                if self._cells is not None:
                    self._cells.moved(order, n0)
            elif self._cells is not None:
                self._cells.appended(n0, n1)
            return len(fresh_rids)

    def _cells_for(self, total: int) -> bitcells.Cells | None:
        """The cells of a large namespace (built, or built again, when due; under the
        lock), None below ``cells_from`` vectors or when cells are off."""
        if not self.cells_from or total < self.cells_from:  # (deletions reload in full)
            return None
        if self._cells is None or self._cells.stale():
            self._cells = bitcells.Cells(self._planes, total)
        return self._cells

    def candidates(self, query: npt.ArrayLike, n: int, *, parts: int = 1
                   ) -> npt.NDArray[np.int64]:
        """The rids of (up to) the n vectors nearest to ``query`` by Hamming distance (ties
        by rid order). ``parts`` > 1 splits the scan over the scan pool's threads (numpy
        releases the GIL), for large namespaces."""
        q = quantise(query)[0].view(np.uint64)
        with self._lock:
            total, planes, rids = self._n, self._planes, self._rids
            if len(q) != planes.shape[0]:  # another embedder's question: none is near
                total = 0
            cells = self._cells_for(total) if 0 < n < total else None
        if total == 0 or n <= 0:
            return np.zeros(0, np.int64)
        if n >= total:
            return rids[:total].copy()
        if cells is not None:  # a large namespace: the cells nearest the question only
            qf = np.asarray(query, np.float32).reshape(-1)
            picked: npt.NDArray[np.int64] = rids[cells.nearest(planes, q, n, self.probe, qf)]
            return picked
        parts = max(1, min(parts, total // _PART_MIN))
        if parts == 1:
            pos, _ = _nearest(planes, q, 0, total, n)
        else:
            bounds = np.linspace(0, total, parts + 1).astype(np.int64).tolist()
            # The first part here, the others on the part pool, whose tasks never wait on
            # anything (this method may itself run on the scan pool: no deadlock).
            rest = [_pools("part").submit(_nearest, planes, q, lo, hi, n)
                    for lo, hi in zip(bounds[1:-1], bounds[2:], strict=True)]
            found = [_nearest(planes, q, bounds[0], bounds[1], n),
                     *(f.result() for f in rest)]
            pos = np.concatenate([p for p, _ in found])
            dist = np.concatenate([d for _, d in found])
            pos = pos[np.argsort(dist, kind="stable")[:n]]  # ties: position (= rid) order
            pos.sort()
        out: npt.NDArray[np.int64] = rids[pos].copy()
        return out


def _nearest(planes: U64, q: U64, lo: int, hi: int, n: int
             ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint16]]:
    """Positions (ascending) in [lo, hi) of the n nearest by Hamming distance, ties by
    position, and their distances."""
    dist = _distances(planes, q, lo, hi)
    size = hi - lo
    if n >= size:
        return np.arange(lo, hi, dtype=np.int64), dist
    # Over a large range, a sample suggests a bound that a few times n vectors are within, and
    # only those are looked at. The bound is checked (at least n within), so the result is the
    # one the whole range gives.
    if size >= _SAMPLE_MIN:
        sample = np.sort(dist[:: max(1, size // _SAMPLE)])
        bound = sample[min(len(sample) - 1, 4 * n * len(sample) // size + 8)]
        cand = np.flatnonzero(dist <= bound)
        if len(cand) >= n:
            pos = cand[_select(dist[cand], n)]
            return pos + lo, dist[pos]
    pos = _select(dist, n)
    return pos + lo, dist[pos]


def _select(dist: npt.NDArray[np.uint16], n: int) -> npt.NDArray[np.int64]:
    """Indices (ascending) of the n smallest of ``dist``: every one below the cut-off distance
    and the first of those at it. Distances are small integers (0..bits): a histogram finds the
    cut-off in O(len), cheaper than a partition."""
    cut = int(np.searchsorted(np.cumsum(np.bincount(dist)), n))
    below = np.flatnonzero(dist < cut)
    at = np.flatnonzero(dist == cut)[: n - len(below)]
    return np.sort(np.concatenate([below, at]))


def _distances(planes: U64, q: U64, lo: int, hi: int) -> npt.NDArray[np.uint16]:
    """Hamming distance of positions [lo, hi) to q: one contiguous XOR + popcount pass per
    plane, summed a byte at a time over up to three planes (at most 192) and widened once per
    three (twice for 384 dimensions)."""
    size = hi - lo
    buf = np.empty(size, np.uint64)
    spare = np.empty(size, np.uint8)
    groups = []
    for first in range(0, len(q), 3):
        acc = np.empty(size, np.uint8)
        for j in range(first, min(first + 3, len(q))):
            np.bitwise_xor(planes[j, lo:hi], q[j], out=buf)
            if j == first:
                np.bitwise_count(buf, out=acc)
            else:
                np.bitwise_count(buf, out=spare)
                acc += spare
        groups.append(acc)
    if len(groups) == 1:
        return groups[0].astype(np.uint16)
    dist: npt.NDArray[np.uint16] = np.add(groups[0], groups[1], dtype=np.uint16)
    for more in groups[2:]:
        dist += more
    return dist


def knn(index: BitIndex, conn: Connection, query: npt.ArrayLike, k: int, *,
        rerank: int = 8) -> list[tuple[int, float]]:
    """Up to ``k * rerank`` (rid, cosine similarity) pairs, most similar first, with the
    namespace's index brought to ``conn``'s snapshot first.

    Every status is included (the caller keeps the live ones, which is why it gets more than k).
    """
    q = unit(query)
    if k <= 0 or q is None:
        return []
    index.refresh(conn)
    return exact(conn, index.namespace, index.candidates(q, k * max(1, rerank)), q)


def exact_scan(store: Store, namespace: str, query: npt.ArrayLike, k: int
               ) -> list[tuple[int, float]]:
    """(rid, cosine distance) of the k nearest of every stored vector of the namespace (every
    status), nearest first: an exact scan of the stored vectors (sqlite-vec's
    ``vec_distance_cosine`` on SQLite; compared in process on PostgreSQL), for
    ``nearest(exact=True)`` (the query in the stored int8 form)."""
    return store.exact_scan(namespace, query, k)


def unit(query: npt.ArrayLike) -> F32 | None:
    """The query as a float32 unit vector (None for a zero vector)."""
    q: F32 = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    return None if norm == 0.0 else q / norm


def exact(conn: Connection, namespace: str, keys: npt.NDArray[np.int64], q: F32,
          table: str = "node_vec_bit") -> list[tuple[int, float]]:
    """(rid, cosine similarity) of the given candidates of ``namespace`` by their stored
    vectors, best first.

    ``keys`` are rids of ``node_vec_bit``, or sids of ``sentence_vec``: then each memory
    appears once, with the similarity of its best sentence.
    """
    if len(keys) == 0:
        return []
    rows = conn.vector_rows(namespace, [int(r) for r in keys], table)
    if not rows:
        return []
    sims = from_int8([r[1] for r in rows]) @ q
    return _best(np.fromiter((r[0] for r in rows), np.int64, len(rows)), sims)


def stored(conn: Connection, namespace: str, rids: Sequence[int]) -> dict[int, F32]:
    """The stored vectors of ``rids`` (those that have one) as float32 unit rows."""
    if not rids:
        return {}
    rows = conn.vector_rows(namespace, rids, "node_vec_bit")
    if not rows:
        return {}
    mat = from_int8([r[1] for r in rows])
    return {int(r[0]): mat[i] for i, r in enumerate(rows)}


def best_per_rid(hits: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """(rid, similarity) pairs, each rid once with its best similarity, best first (ties by
    rid)."""
    pairs = hits if isinstance(hits, list) else list(hits)
    if not pairs:
        return []
    rids = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
    sims = np.fromiter((p[1] for p in pairs), np.float64, len(pairs))
    return _best(rids, sims)


def _best(rids: npt.NDArray[np.int64], sims: npt.NDArray[np.floating[Any]]
          ) -> list[tuple[int, float]]:
    """:func:`best_per_rid` of parallel arrays (numpy: no Python per pair but the result)."""
    order = np.lexsort((rids, -sims))  # best first, ties by rid
    r = rids[order]
    _, first = np.unique(r, return_index=True)  # each rid's first (best) place
    keep = order[np.sort(first)]
    return list(zip(rids[keep].tolist(), sims[keep].tolist(), strict=True))


@dataclass(frozen=True)
class Scan:
    """A vector search under way: the unit query and its Hamming candidates (or their future,
    when the scan runs on the worker thread)."""

    namespace: str
    q: F32
    rids: npt.NDArray[np.int64] | Future[npt.NDArray[np.int64]]
    table: str = "node_vec_bit"

    def read(self, conn: Connection) -> Read | None:
        """The read :meth:`finish` will make (None: no candidate), the scan waited for (to
        send it ahead with others: Connection.prefetch)."""
        rids = self.rids if isinstance(self.rids, np.ndarray) else self.rids.result()
        if not len(rids):
            return None
        return conn.vector_read(self.namespace, [int(r) for r in rids], self.table)

    def finish(self, conn: Connection) -> list[tuple[int, float]]:
        """The candidates ranked by exact cosine (float vectors read back), best first: (rid,
        similarity), a memory's best sentence standing for it in ``sentence_vec``."""
        rids = self.rids if isinstance(self.rids, np.ndarray) else self.rids.result()
        return exact(conn, self.namespace, rids, self.q, self.table)


# Below this many vectors the Hamming scan takes well under 0.2 ms: not worth a thread hop.
_SCAN_THREAD_MIN = 16_384
_PART_MIN = 65_536  # vectors per part when a scan is split over threads
_SAMPLE_MIN = 65_536  # from this many vectors a scan finds its cut-off from a sample...
_SAMPLE = 8_192  # ...of about this many distances
_pool: dict[str, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()


def _pools(kind: str) -> ThreadPoolExecutor:
    """The process's worker threads for vector scans (created on first use): "scan" runs a
    whole scan beside inject's lexical search, "part" the parts of a split scan."""
    with _pool_lock:
        pool = _pool.get(kind)
        if pool is None:
            pool = _pool[kind] = ThreadPoolExecutor(max_workers=2,
                                                    thread_name_prefix=f"remd-{kind}")
        return pool


def start_scan(index: BitIndex, conn: Connection, query: npt.ArrayLike,
               want: int) -> Scan | None:
    """Bring the namespace's bit index to ``conn``'s snapshot and start the Hamming pre-filter
    for the ``want`` nearest: on a worker thread for large namespaces, so the caller can do
    other work meanwhile (inject runs its lexical search: numpy and SQLite both release the
    GIL). None for a zero query vector."""
    q = unit(query)
    if q is None:
        return None
    index.refresh(conn)
    if len(index) < _SCAN_THREAD_MIN:
        return Scan(index.namespace, q, index.candidates(q, want), index.table)
    return Scan(index.namespace, q, _pools("scan").submit(index.candidates, q, want, parts=2),
                index.table)
