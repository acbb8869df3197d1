"""An in-process mirror of one namespace's node metadata, exact by construction.

inject loads a few hundred candidates per query (is it live, unexpired, this namespace's;
when was it saved; its importance, kind and token count) and looks at the memories saved just
before and after the best ones. Read row by row from SQLite that is a few milliseconds per
query; this mirror keeps those columns as numpy arrays in rid order, per open store and
namespace, so the same work is a few array lookups. It is never the source of truth:

- The first use loads the namespace. After that, every insert, deletion or change of a
  mirrored column appends the rid to ``node_log`` (triggers of migration 0006, whoever
  writes); before each use the mirror re-reads the rids logged since its last look, in the
  caller's read snapshot, so it answers exactly what SQL would in that snapshot.
- Entries already pruned from the log, or more changes than are worth re-reading one by one
  (a REM run rescoring every memory), make it reload the namespace.

Callers hold the namespace's view (:mod:`remd.index.caches`), which serialises its use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from remd.index import changelog
from remd.store import rows_in
from remd.store.seam import Connection

STATUS = {"live": 0, "deprecated": 1, "superseded": 2, "forgotten": 3}
GONE = -1  # deleted, or moved to another namespace
FAR = -2  # neighbour(): no live row among the next _NEAR
_NEAR = 64
_TAGS_KEEP = 65_536  # memories whose tags are kept (~0.5 KB each)
_TAG_ENTRY_BYTES = 1024  # a memory's (tid, weight) pairs and tag-id set (tracemalloc)
_ARRAY_BYTES = 112  # a numpy array object's own size
_Tagged = tuple[tuple[tuple[int, float], ...], frozenset[int]]
KINDS = {"episodic": 0, "fact": 1, "synthesis": 2}
SYNTHESIS = KINDS["synthesis"]

# When a memory's content starts: a synthesis spans its members, from the earliest one's
# valid_from to the latest one's created_at; any other memory is of the moment it was saved.
# (valid_from is written with the row and never updated, so node_log's triggers need not watch
# it.)
_SINCE = "CASE WHEN kind = 'synthesis' THEN coalesce(valid_from, created_at) ELSE created_at END"
_COLUMNS = ("rid, namespace, kind, status, created_at, importance, tokens, valid_until, "
            + _SINCE)
_NUMERIC = (
    "SELECT rid, "
    + "CASE kind " + " ".join(f"WHEN '{k}' THEN {v}" for k, v in KINDS.items()) + " ELSE 0 END, "
    + "CASE status " + " ".join(f"WHEN '{k}' THEN {v}" for k, v in STATUS.items())
    + f" ELSE {GONE} END, created_at, importance, tokens, coalesce(valid_until, 9e999), "
    + _SINCE + " FROM nodes WHERE namespace = ? ORDER BY rid")


_ARRAYS = ("rid", "kind", "status", "created", "importance", "tokens", "until", "since")


class NodeMirror:
    """rid-sorted columns of one namespace's nodes (every status)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.n = 0
        self.rid: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self.kind: npt.NDArray[np.int8] = np.zeros(0, np.int8)
        self.status: npt.NDArray[np.int8] = np.zeros(0, np.int8)
        self.created: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self.importance: npt.NDArray[np.float64] = np.zeros(0, np.float64)
        self.tokens: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self.until: npt.NDArray[np.float64] = np.zeros(0, np.float64)  # inf: no expiry
        self.since: npt.NDArray[np.float64] = np.zeros(0, np.float64)  # see _SINCE
        self.seq: int | None = None  # last node_log entry applied; None: not loaded
        self.reloads = 0
        # (tid, weight) pairs of recently used memories, best first, and the set of their tag
        # ids; evicted like the rows.
        self._tags: dict[int, _Tagged] = {}

    # -- coherence ------------------------------------------------------------------------
    def refresh(self, conn: Connection) -> None:
        """Bring the mirror to the caller's read snapshot."""
        ns = self.namespace
        top = changelog.newest(conn, "node_log", ns)
        if top == self.seq:
            return
        if self.seq is None or top < self.seq:
            self._load(conn)
        else:
            limit = max(4096, self.n // 4)  # past this, one scan beats re-reading each rid
            changed = None
            if changelog.intact(conn, "node_log", ns, self.seq):
                changed = [int(r[0]) for r in changelog.since(
                    conn, "node_log", "DISTINCT rid", ns, self.seq, limit + 1)]
            if changed is None or len(changed) > limit:
                self._load(conn)
            else:
                self._reread(conn, changed)
        self.seq = top

    def _load(self, conn: Connection) -> None:
        self.n = 0
        self._tags.clear()
        self.reloads += 1
        # Numbers only, coded in SQL, converted by numpy in C: 1M rows load in ~2 s this way,
        # ~7 s as row tuples with strings.
        rows = conn.execute(_NUMERIC, (self.namespace,)).fetchall()
        if not rows:
            return
        m = np.array(rows, dtype=np.float64)
        n = len(m)
        self._grow(n)
        self.rid[:n] = m[:, 0]
        self.kind[:n] = m[:, 1]
        self.status[:n] = m[:, 2]
        self.created[:n] = m[:, 3]
        self.importance[:n] = m[:, 4]
        self.tokens[:n] = m[:, 5]
        self.until[:n] = m[:, 6]
        self.since[:n] = m[:, 7]
        self.n = n

    def _reread(self, conn: Connection, rids: list[int]) -> None:
        found: dict[int, tuple[Any, ...]] = {
            int(row[0]): row for row in rows_in(
                conn, f"SELECT {_COLUMNS} FROM nodes WHERE namespace = ? AND rid IN ({{marks}})",
                rids, (self.namespace,))}
        fresh: list[tuple[Any, ...]] = []
        for rid in sorted(rids):
            self._tags.pop(rid, None)
            row = found.get(rid)
            mine = row is not None and row[1] == self.namespace
            i = self._find(rid)
            if i >= 0:
                if mine:
                    self._set(i, row)  # type: ignore[arg-type]
                else:
                    self.status[i] = GONE
            elif mine:
                fresh.append(row)  # type: ignore[arg-type]
        if fresh:
            self._append(fresh)

    def _set(self, i: int, row: tuple[Any, ...]) -> None:
        _, _, kind, status, created, importance, tokens, until, since = row
        self.kind[i] = KINDS.get(kind, 0)
        self.status[i] = STATUS.get(status, GONE)
        self.created[i] = created
        self.importance[i] = importance
        self.tokens[i] = tokens
        self.until[i] = math.inf if until is None else until
        self.since[i] = since

    def _append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Add rows (sorted by rid); re-sorts only if one lands below the last rid."""
        if not rows:
            return
        n0, n1 = self.n, self.n + len(rows)
        self._grow(n1)
        cols = list(zip(*rows, strict=True))
        self.rid[n0:n1] = cols[0]
        self.kind[n0:n1] = [KINDS.get(k, 0) for k in cols[2]]
        self.status[n0:n1] = [STATUS.get(s, GONE) for s in cols[3]]
        self.created[n0:n1] = cols[4]
        self.importance[n0:n1] = cols[5]
        self.tokens[n0:n1] = cols[6]
        self.until[n0:n1] = [math.inf if u is None else u for u in cols[7]]
        self.since[n0:n1] = cols[8]
        needs_sort = n0 > 0 and self.rid[n0] < self.rid[n0 - 1]
        self.n = n1
        if needs_sort:
            order = np.argsort(self.rid[:n1], kind="stable")
            for name in _ARRAYS:
                col = getattr(self, name)
                col[:n1] = col[:n1][order]

    def _grow(self, need: int) -> None:
        cap = len(self.rid)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, 8)
        for name in _ARRAYS:
            col = getattr(self, name)
            bigger = np.zeros(new_cap, col.dtype)
            bigger[:self.n] = col[:self.n]
            setattr(self, name, bigger)

    def nbytes(self) -> int:
        """Roughly what the mirror holds in memory (for the cache budget)."""
        arrays: list[npt.NDArray[Any]] = [getattr(self, name) for name in _ARRAYS]
        return (sum(a.nbytes + _ARRAY_BYTES for a in arrays)
                + _TAG_ENTRY_BYTES * len(self._tags))

    def _find(self, rid: int) -> int:
        i = int(np.searchsorted(self.rid[:self.n], rid))
        return i if i < self.n and int(self.rid[i]) == rid else -1

    # -- reads ----------------------------------------------------------------------------
    def positions(self, rids: Iterable[int]) -> tuple[npt.NDArray[np.int64],
                                                      npt.NDArray[np.int64]]:
        """(rids found in this namespace, their positions) for ``rids``, in input order."""
        want = np.fromiter(rids, np.int64)
        if self.n == 0:
            return want[:0], np.zeros(0, np.int64)
        pos = np.searchsorted(self.rid[:self.n], want)
        pos[pos >= self.n] = 0
        hit = (self.rid[pos] == want) & (self.status[pos] != GONE)
        return want[hit], pos[hit]

    def usable(self, pos: npt.NDArray[np.int64], now: float) -> npt.NDArray[np.bool_]:
        """Live and not expired at ``now``: what inject may return."""
        live: npt.NDArray[np.bool_] = (self.status[pos] == STATUS["live"]) & (
            self.until[pos] > now)
        return live

    def tags_of(self, conn: Connection, rids: Sequence[int]
                ) -> dict[int, tuple[tuple[int, float], ...]]:
        """The (tag id, weight) pairs of each memory, best first; SQL only for those not
        cached since their last change."""
        return {rid: entry[0] for rid, entry in self._tagged(conn, rids).items()}

    def tag_sets(self, conn: Connection, rids: Sequence[int]) -> dict[int, frozenset[int]]:
        """The tag ids of each memory, as a set (cached like :meth:`tags_of`)."""
        return {rid: entry[1] for rid, entry in self._tagged(conn, rids).items()}

    def _tagged(self, conn: Connection, rids: Sequence[int]) -> dict[int, _Tagged]:
        out: dict[int, _Tagged] = {}
        missing = []
        for rid in rids:
            got = self._tags.get(rid)
            if got is None:
                missing.append(rid)
            else:
                out[rid] = got
        if missing:
            found: dict[int, list[tuple[int, float]]] = {rid: [] for rid in missing}
            for rid, tid, weight in rows_in(
                    conn, "SELECT rid, tid, weight FROM node_tags WHERE namespace = ? "
                          "AND rid IN ({marks}) ORDER BY rid, weight DESC, tid", missing,
                    (self.namespace,)):
                found[rid].append((tid, weight))
            if len(self._tags) + len(found) > _TAGS_KEEP:
                self._tags.clear()
            for rid, pairs in found.items():
                out[rid] = self._tags[rid] = (tuple(pairs), frozenset(t for t, _ in pairs))
        return out

    def neighbour(self, pos: int, step: int) -> int:
        """Position of the nearest live node before (step -1) or after (+1) ``pos``; -1 if
        there is none, FAR if none is among the next ``_NEAR`` rows (the caller seeks it with
        an index instead of scanning a long run of folded fragments here)."""
        status, live = self.status, STATUS["live"]
        i = pos + step
        for _ in range(_NEAR):  # usually the adjacent row
            if not 0 <= i < self.n:
                return -1
            if status[i] == live:
                return i
            i += step
        return FAR if 0 <= i < self.n else -1
