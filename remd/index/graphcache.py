"""An in-process cache of the tag graph's hot rows, exact by construction.

inject reads the same rows query after query: the top-M edges of the tags it walks, the best
live memories of the tags it activates, and those tags' names and document frequencies. Read
from SQLite each time they cost about one microsecond of SQLite work per row plus the Python
around it, a few thousand rows per query. This cache keeps them in process, per open store,
and is never the source of truth:

- Every write that could change a cached row appends the tag's id to ``tag_log`` (triggers of
  migration 0005, whoever writes). Before each use the cache reads the log entries after its
  last look, in the caller's read snapshot, and evicts those tags; the next use reloads them.
  A reader therefore sees exactly what a fresh SQL read in the same snapshot would.
- Every write transaction prunes the log (``Store.transaction``). A cache that finds the
  entries after its last look already pruned, or more changes than it is worth evicting one
  by one (a REM run flipping thousands of memories), drops everything.
- Entries are bounded (``capacity`` tags per kind); past it the oldest half is dropped.
- A namespace of fewer than ``CACHE_FROM`` memories keeps nothing: its walk reads a few dozen
  short rows from SQLite, and ten thousand such namespaces would otherwise hold ~25 KB each.

One cache per namespace (:mod:`remd.index.caches`); callers hold the namespace's view, which
serialises its use.
"""

from __future__ import annotations

import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from remd.index import changelog
from remd.store import in_reads, rows_in
from remd.store.seam import Connection

# Past this many changed tags since the last look, dropping the cache beats evicting each.
_EVICT_MAX = 4096
CACHE_FROM = 256  # memories a namespace needs before its rows are kept


@dataclass(frozen=True, slots=True)
class Edges:
    """A tag's top out-edges, best first (numpy: the walk does array arithmetic on them), and
    how many were asked for when they were read (a longer request reloads)."""

    ids: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64]
    limit: int


@dataclass(frozen=True, slots=True)
class Members:
    """A tag's best live memories, best first (lists: read one by one), and the limit asked."""

    ids: list[int]
    weights: list[float]
    limit: int


_Rows = TypeVar("_Rows", Edges, Members)


class TagGraphCache:
    """The cached rows of one namespace's tags."""

    def __init__(self, namespace: str, capacity: int) -> None:
        self.namespace = namespace
        self.capacity = capacity
        self.keeping = False  # set by size_for: is the namespace large enough to cache?
        self.edges: dict[int, Edges] = {}
        self.members: dict[int, Members] = {}
        self.info: dict[int, tuple[str, int]] = {}
        self.seq: int | None = None  # last tag_log entry applied; None: never synced
        self.hits = 0
        self.misses = 0
        self._bytes = 0  # what nbytes() reports, kept as entries come and go

    # -- coherence ------------------------------------------------------------------------
    def sync(self, conn: Connection) -> None:
        """Evict what changed since the last sync (in the caller's read snapshot)."""
        if not self.keeping:
            return
        ns = self.namespace
        top = changelog.newest(conn, "tag_log", ns)
        if top == self.seq:
            return
        if self.seq is None or top < self.seq:  # first use, or the log was emptied/rebuilt
            self.clear()
        else:
            changed = None
            if changelog.intact(conn, "tag_log", ns, self.seq):
                changed = [int(r[0]) for r in changelog.since(
                    conn, "tag_log", "DISTINCT tid", ns, self.seq, _EVICT_MAX + 1)]
            if changed is None or len(changed) > _EVICT_MAX:
                self.clear()
            else:
                for tid in changed:  # (on SQLite, other namespaces' tags are not here)
                    for table in (self.edges, self.members, self.info):
                        gone = table.pop(tid, None)
                        if gone is not None:
                            self._bytes -= _size(gone)
        self.seq = top

    def size_for(self, memories: int) -> None:
        """Keep rows only for a namespace of at least CACHE_FROM memories (and a positive
        capacity); a namespace that falls below drops what it kept."""
        keeping = self.capacity > 0 and memories >= CACHE_FROM
        if self.keeping and not keeping:
            self.clear()
            self.seq = None  # on growing again, start from whatever the log says then
        self.keeping = keeping

    def clear(self) -> None:
        self.edges.clear()
        self.members.clear()
        self.info.clear()
        self._bytes = 0

    def nbytes(self) -> int:
        """Roughly what the cache holds in memory (for the cache budget): per entry, its
        arrays or lists plus the Python objects around them. Kept as entries come and go:
        asked after every inject."""
        return self._bytes

    # -- reads ----------------------------------------------------------------------------
    def top_edges(self, conn: Connection, tid: int, limit: int) -> Edges:
        """The ``limit`` highest-weight out-edges of ``tid``: (dst tids, weights)."""
        cached = self._cached(self.edges, tid, limit)
        if cached is not None:
            return cached
        ids, weights = _rows(conn, _READS["edges"].format(tag="?"), (self.namespace, tid, limit))
        edges = _entry("edges", ids, weights, limit)
        assert isinstance(edges, Edges)
        self._put(self.edges, tid, edges)
        return edges

    def top_members(self, conn: Connection, tid: int, limit: int) -> Members:
        """The ``limit`` best live memories carrying ``tid``: (rids, tag weights)."""
        cached = self._cached(self.members, tid, limit)
        if cached is not None:
            return cached
        ids, weights = _rows(conn, _READS["members"].format(tag="?"),
                             (self.namespace, tid, limit))
        members = _entry("members", ids, weights, limit)
        assert isinstance(members, Members)
        self._put(self.members, tid, members)
        return members

    def prefetch(self, conn: Connection, kind: str, tids: Sequence[int], limit: int) -> None:
        """On PostgreSQL, read the rows of the ``tids`` not cached yet (``kind`` "edges" or
        "members", ``limit`` rows each) in one statement, into the cache, so that the walk's
        reads that follow are hits: one round trip instead of one per tag. Edges come with
        their targets' names and document frequencies, which the walk asks next (one round
        trip instead of two, even for one tag). SQLite reads a tag's rows in microseconds:
        nothing to gain."""
        table = self.edges if kind == "edges" else self.members
        missing = [t for t in tids if (t not in table or table[t].limit < limit)]
        named = kind == "edges"
        if not self.keeping or len(missing) < (1 if named else 2):
            return
        # One statement for them all (remd/store/postgres/search.py); None on SQLite.
        rows = conn.rows_per_tag(_READS[kind], missing, self.namespace, limit, named=named)
        if rows is None:
            return
        found: dict[int, tuple[array.array[int], array.array[float]]] = {
            t: (array.array("q"), array.array("d")) for t in missing}
        for tid, other, weight, *info in rows:
            ids, weights = found[int(tid)]
            ids.append(int(other))
            weights.append(float(weight))
            if info and info[0] is not None:
                self._remember(int(other), str(info[0]), int(info[1]))
        for tid, (ids, weights) in found.items():
            self._put(table, tid, _entry(kind, ids, weights, limit))

    def names(self, conn: Connection, tids: Iterable[int]) -> dict[int, tuple[str, int]]:
        """(name, df) of each tag that exists; one statement for the ones not cached."""
        out: dict[int, tuple[str, int]] = {}
        missing: list[int] = []
        for tid in tids:
            got = self.info.get(tid)
            if got is None:
                missing.append(tid)
            else:
                out[tid] = got
        for tid, name, df in rows_in(conn, _NAMES, missing, (self.namespace,)):
            out[tid] = (str(name), int(df))
            self._remember(tid, *out[tid])
        return out

    def name_reads(self, tids: Iterable[int]) -> list[tuple[str, tuple[Any, ...]]]:
        """The statements :meth:`names` would run for ``tids`` (to send them ahead)."""
        return in_reads(_NAMES, [t for t in tids if t not in self.info], (self.namespace,))

    def _remember(self, tid: int, name: str, df: int) -> None:
        if not self.keeping:
            return
        if tid not in self.info:
            self._bytes += _INFO_BYTES
        self.info[tid] = (name, df)
        if len(self.info) > 4 * self.capacity:
            self._trim(self.info)

    def _put(self, table: dict[int, Any], tid: int, rows: Edges | Members) -> None:
        if not self.keeping:  # caching off, or a small namespace: every read goes to SQLite
            return
        old = table.get(tid)
        if old is not None:
            self._bytes -= _size(old)
        table[tid] = rows
        self._bytes += _size(rows)
        if len(table) > self.capacity:
            self._trim(table)

    def _cached(self, table: dict[int, _Rows], tid: int, limit: int) -> _Rows | None:
        """The cached rows of ``tid`` if at least ``limit`` of them were read; counts hits."""
        cached = table.get(tid)
        if cached is not None and cached.limit >= limit:
            self.hits += 1
            return cached
        self.misses += 1
        return None

    def _trim(self, table: dict[int, Any]) -> None:
        """Drop the oldest half (dicts keep insertion order)."""
        for tid in list(table)[: len(table) // 2]:
            self._bytes -= _size(table.pop(tid))


# What an entry costs in memory besides its data, measured with tracemalloc: Edges hold two
# numpy arrays over two array.array buffers; Members two lists of Python ints and floats.
_EDGES_BYTES = 520
_MEMBERS_BYTES = 300
_MEMBER_BYTES = 68  # an int, a float and their two list slots
_INFO_BYTES = 250  # a (name, df) tuple, the name and the dict slot


def _size(rows: Edges | Members | tuple[str, int]) -> int:
    if isinstance(rows, Edges):
        return _EDGES_BYTES + int(rows.ids.nbytes + rows.weights.nbytes)
    if isinstance(rows, Members):
        return _MEMBERS_BYTES + _MEMBER_BYTES * len(rows.ids)
    return _INFO_BYTES


_NAMES = "SELECT tid, name, df FROM tags WHERE namespace = ? AND tid IN ({marks})"
# A tag's top rows of each kind ({tag}: where its id comes from), best first, ties broken by
# key: the cached rows are exactly what this read gives, whoever plans it.
_READS = {
    "edges": "SELECT dst, weight FROM tag_edges WHERE namespace = ? AND src = {tag} "
             "ORDER BY weight DESC, dst LIMIT ?",
    "members": "SELECT rid, weight FROM node_tags WHERE namespace = ? AND tid = {tag} "
               "AND live = 1 ORDER BY weight DESC, rid DESC LIMIT ?",
}


def _entry(kind: str, ids: array.array[int], weights: array.array[float],
           limit: int) -> Edges | Members:
    """A cache entry of ``kind`` from the rows read (edges: numpy over the buffers)."""
    if kind == "edges":
        return Edges(np.frombuffer(ids, np.int64), np.frombuffer(weights, np.float64), limit)
    return Members(ids.tolist(), weights.tolist(), limit)


def _rows(conn: Connection, sql: str, params: Sequence[object]
          ) -> tuple[array.array[int], array.array[float]]:
    ids: array.array[int] = array.array("q")
    weights: array.array[float] = array.array("d")
    for a, w in conn.execute(sql, params):
        ids.append(a)
        weights.append(w)
    return ids, weights
