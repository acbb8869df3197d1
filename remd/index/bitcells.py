"""Cells: a coarse partition of a large namespace's sign bits, so a question scans a slice.

The flat Hamming scan of :mod:`remd.index.vectors` reads all six 64-bit planes of every vector:
~5-8 ms of CPU per question at 1M vectors on this project's 2-core VM, the one step of inject
whose work grows with the namespace. With ``[inject] vector_cells_from`` set (0, the default:
off), a namespace of at least that many vectors also keeps *cells*: the vectors grouped by the
nearest of ``CELLS`` binary centroids (k-majority, a k-means for bit vectors: each centroid bit
is its members' majority), each vector in its nearest and second nearest cell (``SPILL``). A
question ranks the cells by the dot product of its float vector with each cell's mean sign
vector, takes cells best first until they hold ``vector_cells_probe`` vectors, and scans only
those (plus the vectors loaded since the build), read as contiguous slices of a cell-ordered
copy of the planes. The work per question is bounded by the probe, whatever the namespace's
size: ~0.4-1 ms at 1M here.

It is an approximation on top of the Hamming pre-filter, which is why it is off by default:
on ``benchmarks/bench_million.py``'s synthetic 1M vectors it keeps the exact cosine top-1 for
~95% of the questions where the flat scan keeps 100% (docs/benchmarks.md). Building takes a
few seconds at 1M (once per load, again when a quarter more vectors came) and holds ~110 MB
at 1M of 384 dimensions: the cell-ordered planes (2 x 48 bytes a vector), positions (2 x 8
bytes), centroids.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

CELLS = 256  # centroids
SPILL = 2  # cells each vector is in (its nearest and second nearest)
PROBE = 32_768  # vectors a question scans (cells nearest first, until they hold this many)
_ROUNDS = 4  # k-majority iterations
_SAMPLE_PER = 64  # training vectors per centroid


def distances(planes: U64, q: U64) -> npt.NDArray[np.uint16]:
    """Hamming distance of every column of ``planes`` (words x n) to ``q``."""
    x = np.bitwise_xor(planes, q[:, None])
    out: npt.NDArray[np.uint16] = np.bitwise_count(x).sum(axis=0, dtype=np.uint16)
    return out


def _nearest_centroid(planes: U64, centroids: U64
                      ) -> tuple[I64, npt.NDArray[np.uint16], I64]:
    """For each column of ``planes``: the index of its nearest centroid (column of
    ``centroids``, ties to the lower index), the distance to it, and the index of the second
    nearest."""
    n, k = planes.shape[1], centroids.shape[1]
    top = np.iinfo(np.uint16).max
    best, second = np.full(n, top, np.uint16), np.full(n, top, np.uint16)
    arg, arg2 = np.zeros(n, np.int64), np.zeros(n, np.int64)
    if n >= 65_536:  # one pass per centroid over long planes (no large temporaries)
        buf = np.empty(n, np.uint64)
        acc = np.empty(n, np.uint16)
        cnt = np.empty(n, np.uint8)
        for c in range(k):
            np.bitwise_xor(planes[0], centroids[0, c], out=buf)
            np.bitwise_count(buf, out=cnt)
            acc[:] = cnt
            for j in range(1, planes.shape[0]):
                np.bitwise_xor(planes[j], centroids[j, c], out=buf)
                np.bitwise_count(buf, out=cnt)
                acc += cnt
            runner = (acc >= best) & (acc < second)
            second[runner], arg2[runner] = acc[runner], c
            better = acc < best
            second[better], arg2[better] = best[better], arg[better]
            best[better], arg[better] = acc[better], c
        return arg, best, arg2
    step = max(1024, (1 << 21) // max(1, k))
    cents = centroids[:, :, None]
    for lo in range(0, n, step):
        block = planes[:, None, lo:lo + step]
        dist = np.bitwise_count(np.bitwise_xor(block, cents)).sum(axis=0, dtype=np.uint16)
        near = np.argmin(dist, axis=0)
        arg[lo:lo + step] = near
        cols = np.arange(dist.shape[1])
        best[lo:lo + step] = dist[near, cols]
        if k > 1:
            dist[near, cols] = top
            arg2[lo:lo + step] = np.argmin(dist, axis=0)
    return arg, best, arg2


def _majority(planes: U64, labels: npt.NDArray[np.int64], k: int, old: U64) -> U64:
    """Each centroid's bits: the majority of its members' (an empty one keeps its old bits)."""
    bits = np.unpackbits(np.ascontiguousarray(planes.T).view(np.uint8), axis=1,
                         bitorder="little")  # n x bits
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=k)
    grouped = bits[order]
    ends = np.cumsum(sizes).tolist()
    sums = np.zeros((k, bits.shape[1]), np.int64)  # members' set bits per centroid
    for c, (lo, hi) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
        if hi > lo:
            sums[c] = grouped[lo:hi].sum(axis=0)
    maj = (2 * sums > sizes[:, None]).astype(np.uint8)
    packed = np.packbits(maj, axis=1, bitorder="little").view(np.uint64).T  # words x k
    out: U64 = np.where(sizes[None, :] > 0, packed, old)
    return out


def train(planes: U64, k: int) -> U64:
    """k binary centroids of the columns of ``planes`` (strided sample, k-majority)."""
    n = planes.shape[1]
    sample = planes[:, :: max(1, n // (k * _SAMPLE_PER))]
    k = min(k, sample.shape[1])
    centroids: U64 = np.ascontiguousarray(sample[:, :: max(1, sample.shape[1] // k)][:, :k])
    for _ in range(_ROUNDS):
        labels = _nearest_centroid(sample, centroids)[0]
        centroids = np.ascontiguousarray(_majority(sample, labels, k, centroids))
    return centroids


class Cells:
    """The cells of the first ``covered`` positions of a bit index (and the positions loaded
    since, scanned whole)."""

    def __init__(self, planes: U64, n: int) -> None:
        view = planes[:, :n]
        self.centroids: U64 = train(view, CELLS)
        # Every vector to its nearest centroid of all (a two-level assignment, each vector to
        # the nearest of its group's, missed the nearest for a third of them, and a question
        # near such a vector does not look in its cell).
        near, _, runner_up = _nearest_centroid(view, self.centroids)
        # ... and to its second nearest too (SPILL 2): a vector near the border of two
        # cells is found from either side.
        cell = np.concatenate([near, runner_up][:SPILL])
        entries = np.concatenate([np.arange(n, dtype=np.int64)] * SPILL)
        by_cell = np.argsort(cell, kind="stable")  # by cell, then position
        self.order: I64 = entries[by_cell]
        self.starts: I64 = np.searchsorted(cell[by_cell],
                                           np.arange(self.centroids.shape[1] + 1))
        # The planes again in cell order: a question reads its cells as contiguous slices
        # (gathering 33k columns from the position-ordered planes took ~4 ms: cache misses).
        self.planes: U64 = np.ascontiguousarray(view[:, self.order])
        # Each cell's mean sign vector (+-1 per bit): a question ranks cells by its float
        # vector's dot product with these (Hamming distance to the majority bits ranks them
        # too coarsely: its own memory's cell was missed for 7% of the questions at 1M).
        self.means = np.zeros((self.centroids.shape[1], 64 * planes.shape[0]), np.float32)
        for c in range(self.centroids.shape[1]):
            lo, hi = int(self.starts[c]), int(self.starts[c + 1])
            if hi > lo:
                bits = np.unpackbits(np.ascontiguousarray(self.planes[:, lo:hi].T).view(np.uint8),
                                     axis=1, bitorder="little")
                self.means[c] = 2.0 * bits.mean(axis=0) - 1.0
        self.covered = n
        self.extra: I64 = np.zeros(0, np.int64)  # positions loaded since (not in a cell)

    def nbytes(self) -> int:
        return int(self.order.nbytes + self.starts.nbytes + self.centroids.nbytes
                   + self.means.nbytes
                   + self.planes.nbytes + self.extra.nbytes)

    def stale(self) -> bool:
        """Enough vectors came after the build (a quarter) to build again."""
        return len(self.extra) > max(PROBE, self.covered // 4)

    def appended(self, n0: int, n1: int) -> None:
        """Positions [n0, n1) were appended to the index."""
        self.extra = np.concatenate([self.extra, np.arange(n0, n1, dtype=np.int64)])

    def moved(self, order: I64, n0: int) -> None:
        """The index re-sorted its positions (new position i holds old position order[i]);
        positions from ``n0`` (old numbering) were the fresh ones, not in any cell."""
        where = np.empty_like(order)
        where[order] = np.arange(len(order), dtype=np.int64)
        self.order = where[self.order]
        self.extra = np.concatenate([where[self.extra], where[n0:]]) if len(self.extra) \
            else where[n0:]
        # The rows loaded before keep their relative order (a stable sort of rids that were
        # sorted), so each cell's positions stay ascending and aligned with ``planes``.

    def nearest(self, planes: U64, q: U64, n: int, probe: int = PROBE,
                query: npt.NDArray[np.float32] | None = None) -> I64:
        """The positions (ascending) of the n nearest to ``q`` by Hamming distance, ties by
        position, among the vectors of the cells nearest ``q`` (until they hold ``probe``)
        and every position not in a cell (read from the index's ``planes``)."""
        if query is not None:  # (padded with zeros as its sign bits are)
            padded = np.zeros(self.means.shape[1], np.float32)
            padded[:len(query)] = query[:self.means.shape[1]]
            ranked = np.argsort(-(self.means @ padded), kind="stable")
        else:
            ranked = np.argsort(distances(self.centroids, q), kind="stable")
        sizes = np.diff(self.starts)[ranked]
        take = ranked[: int(np.searchsorted(np.cumsum(sizes), probe)) + 1].tolist()
        spans = [(int(self.starts[c]), int(self.starts[c + 1])) for c in take]
        pos = np.concatenate([*(self.order[lo:hi] for lo, hi in spans), self.extra])
        sub = np.concatenate([*(self.planes[:, lo:hi] for lo, hi in spans),
                              planes[:, self.extra]], axis=1)
        found = distances(sub, q)
        if SPILL > 1:  # a vector in two of the cells: once
            pos, first = np.unique(pos, return_index=True)
            found = found[first]
        if len(pos) <= n:
            return pos
        cut = int(np.searchsorted(np.cumsum(np.bincount(found, minlength=64 * len(q) + 1)), n))
        below = pos[found < cut]
        at = np.sort(pos[found == cut])[: n - len(below)]
        out: I64 = np.sort(np.concatenate([below, at]))
        return out
