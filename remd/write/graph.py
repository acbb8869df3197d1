"""The one graph writer: a node with its tags, tag counts (df), edges, full-text row, vectors and
status.

Every statement that inserts or deletes a node, tags or untags one, moves a tag's count, writes
or retires an edge between nodes, writes or removes a node's full-text row or vectors, or
changes a node's status is a method of
:class:`GraphWriter`; save (:mod:`remd.write.ingest`), update detection
(:mod:`remd.write.supersede`), the embedding backlog, the tag tools, forget, consolidation
(:mod:`remd.sleep.consolidate`) and rollback (:mod:`remd.sleep.rollback`) call it. A memory and a
REM synthesis are inserted by the same :meth:`GraphWriter.insert_node`, their kind and
provenance (``rem_run``) being fields of the :class:`NodeRow`. Everything runs inside the
caller's transaction; nothing here opens or commits one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy.typing as npt

from remd.index.vectors import delete_vectors, write_sentence_vectors, write_vectors
from remd.models import EdgeType, Judged
from remd.store.seam import Connection
from remd.text.clauses import parse
from remd.text.frames import subject_keys

NEW_EDGE_WEIGHT = 0.5  # initial propagation weight of a tag co-occurrence edge
COOCCUR_STEP = 0.1  # each further co-occurrence moves the weight this far towards 1
ROWS_PER_STATEMENT = 200  # rows of one multi-row statement (SQLite's bound parameters: 32766)


@dataclass(frozen=True, kw_only=True)
class NodeRow:
    """The columns of a new node (a memory or a synthesis)."""

    id: str
    kind: str
    content: str
    source: str | None
    status: str
    created_at: float
    last_access: float
    access_count: int
    confidence: float
    importance: float
    tokens: int
    valid_from: float | None = None
    valid_until: float | None = None
    deprecated_by: str | None = None
    fact_key: str | None = None
    fact_value: str | None = None
    judged: int = 1  # a remd.models.Judged: 0 pending (a fresh save), 1 (the default), 2 exact
    rem_run: str | None = None  # the REM run that wrote it (a synthesis)
    clauses: str | None = None  # a synthesis's dated clauses, JSON (remd.text.clauses)


def mark_embedded(conn: Connection, keys: Sequence[tuple[str, int]]) -> None:
    """Record that the nodes ``(namespace, rid)`` have their vectors (any namespaces)."""
    conn.executemany("UPDATE nodes SET embedded = 1 WHERE namespace = ? AND rid = ?", keys)


class GraphWriter:
    """The graph of one namespace, written through one connection in the caller's transaction."""

    def __init__(self, conn: Connection, namespace: str) -> None:
        self.conn = conn
        self.ns = namespace
        self._tids: dict[str, int] = {}

    # -- nodes ------------------------------------------------------------------------------------
    def insert_node(self, row: NodeRow) -> int:
        """Insert a node and its full-text row; returns its rid."""
        got = self.conn.execute(
            "INSERT INTO nodes (id, namespace, kind, content, source, status, created_at, "
            "last_access, access_count, confidence, importance, tokens, valid_from, "
            "valid_until, deprecated_by, fact_key, fact_value, judged, rem_run, clauses) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid",
            (row.id, self.ns, row.kind, row.content, row.source, row.status, row.created_at,
             row.last_access, row.access_count, row.confidence, row.importance, row.tokens,
             row.valid_from, row.valid_until, row.deprecated_by, row.fact_key, row.fact_value,
             row.judged, row.rem_run, row.clauses),
        ).fetchone()
        assert got is not None
        rid = int(got[0])
        self.conn.index_text(rid, self.ns, row.content)  # the lexical index (FTS5 / terms)
        self.key(rid, subject_keys(row.content))
        return rid

    def key(self, rid: int, keys: Sequence[str]) -> None:
        """Record what a node is about (remd.text.frames.subject_keys; node_keys)."""
        if keys:
            self.conn.executemany(
                "INSERT INTO node_keys (namespace, key, rid) VALUES (?, ?, ?) "
                "ON CONFLICT (namespace, key, rid) DO NOTHING",
                [(self.ns, k, rid) for k in keys])

    def remove_node(self, rid: int, content: str) -> None:
        """Delete a node (a synthesis a rollback takes back) with its tags (their counts go
        down), full-text row, vectors and access-log rows."""
        conn, ns = self.conn, self.ns
        conn.execute("UPDATE tags SET df = max(df - 1, 0) WHERE namespace = ? AND tid IN "
                     "(SELECT tid FROM node_tags WHERE namespace = ? AND rid = ?)",
                     (ns, ns, rid))
        conn.unindex_text(rid, ns, content)
        for table in ("node_tags", "node_keys", "node_vec_bit", "sentence_vec", "access_log",
                      "nodes"):
            conn.execute(f"DELETE FROM {table} WHERE namespace = ? AND rid = ?", (ns, rid))

    # -- vectors ----------------------------------------------------------------------------------
    def write_vector(self, rid: int, vector: npt.ArrayLike,
                     sentences: npt.ArrayLike | None = None) -> None:
        """Store a node's embedding (and its sentences' when given); :func:`mark_embedded`
        records it."""
        write_vectors(self.conn, self.ns, [rid], vector)
        if sentences is not None:
            write_sentence_vectors(self.conn, self.ns, rid, sentences)

    def drop_vectors(self) -> None:
        """Every vector of the namespace gone and every memory back in the embedding backlog
        (a file moved to another embedder: :mod:`remd.write.reembed`)."""
        delete_vectors(self.conn, self.ns)
        self.conn.execute("UPDATE nodes SET embedded = 0 WHERE namespace = ? AND embedded <> 0",
                          (self.ns,))

    # -- tags -------------------------------------------------------------------------------------
    def tag_id(self, name: str, now: float) -> int:
        """The tag's id, the tag created (df 0) if the namespace has none of that name."""
        tid = self._tids.get(name)
        if tid is None:
            row = self.conn.execute(
                "INSERT INTO tags (namespace, name, df, created_at) VALUES (?, ?, 0, ?) "
                "ON CONFLICT (namespace, name) DO UPDATE SET df = tags.df RETURNING tid",
                (self.ns, name, now),
            ).fetchone()
            assert row is not None
            tid = int(row[0])
            self._tids[name] = tid
        return tid

    def tag_ids(self, names: Sequence[str], now: float) -> list[int]:
        """The tags' ids, in ``names``' order, those the namespace lacks created (df 0) in
        that order: one statement for the names not seen yet."""
        todo = list(dict.fromkeys(n for n in names if n not in self._tids))
        for at in range(0, len(todo), ROWS_PER_STATEMENT):
            part = todo[at:at + ROWS_PER_STATEMENT]
            rows = self.conn.execute(
                "INSERT INTO tags (namespace, name, df, created_at) VALUES "
                + ", ".join(["(?, ?, 0, ?)"] * len(part))
                + " ON CONFLICT (namespace, name) DO UPDATE SET df = tags.df RETURNING name, tid",
                [v for name in part for v in (self.ns, name, now)]).fetchall()
            self._tids.update((str(name), int(tid)) for name, tid in rows)
        return [self._tids[n] for n in names]

    def tag(self, rid: int, tids: Sequence[tuple[int, float]]) -> None:
        """Tag ``rid`` with ``(tid, weight)`` pairs new to it; each tag's count goes up (one
        statement for ``ROWS_PER_STATEMENT`` tags: a server's round trips)."""
        self.conn.executemany(  # one statement on PostgreSQL (over arrays)
            "INSERT INTO node_tags (namespace, tid, rid, weight) VALUES (?, ?, ?, ?)",
            [(self.ns, tid, rid, w) for tid, w in tids],
        )
        for at in range(0, len(tids), ROWS_PER_STATEMENT):
            part = tids[at:at + ROWS_PER_STATEMENT]
            self.conn.execute(
                "UPDATE tags SET df = df + 1 WHERE namespace = ? AND tid IN ("
                + ",".join("?" * len(part)) + ")", (self.ns, *(tid for tid, _ in part)))

    def tag_with(self, rid: int, weights: dict[str, float], now: float,
                 others: Sequence[int]) -> None:
        """Tag ``rid`` with ``weights`` (names new to it) beside the tags ``others`` it keeps:
        the tags (created if new), their counts and their co-occurrence edges."""
        tids = list(zip(self.tag_ids(list(weights), now), weights.values(), strict=True))
        self.tag(rid, tids)
        pairs = [(a, b) for a, _ in tids for b, _ in tids if a != b]
        pairs += [p for a, _ in tids for b in others for p in ((a, b), (b, a))]
        if pairs:  # each pair once: one statement on PostgreSQL (over arrays)
            self.conn.executemany(
                "INSERT INTO tag_edges (namespace, src, dst, count, weight) VALUES (?, ?, ?, 1, ?) "
                "ON CONFLICT (src, dst) DO UPDATE SET count = tag_edges.count + 1, "
                "weight = tag_edges.weight + (1.0 - tag_edges.weight) * ?",
                [(self.ns, a, b, NEW_EDGE_WEIGHT, COOCCUR_STEP) for a, b in pairs],
            )

    def untag(self, rid: int, drop: Sequence[int], current: Sequence[int]) -> None:
        """Take the tags ``drop`` off ``rid`` (which carries ``current``): their counts go
        down, and the co-occurrence edges of the pairs that end lose a count (gone at zero)."""
        conn, ns = self.conn, self.ns
        stay = [tid for tid in current if tid not in drop]
        conn.executemany("DELETE FROM node_tags WHERE namespace = ? AND rid = ? AND tid = ?",
                         [(ns, rid, tid) for tid in drop])
        conn.executemany("UPDATE tags SET df = max(df - 1, 0) WHERE namespace = ? AND tid = ?",
                         [(ns, tid) for tid in drop])
        gone = [(a, b) for a in drop for b in current if a != b]
        gone += [(b, a) for a in drop for b in stay]
        pairs = [(ns, a, b) for a, b in gone]
        conn.executemany("UPDATE tag_edges SET count = count - 1 "
                         "WHERE namespace = ? AND src = ? AND dst = ?", pairs)
        conn.executemany("DELETE FROM tag_edges "
                         "WHERE namespace = ? AND src = ? AND dst = ? AND count <= 0", pairs)

    def reweigh(self, rid: int, tid: int, weight: float) -> None:
        """Change the weight of a tag ``rid`` carries."""
        self.conn.execute("UPDATE node_tags SET weight = ? "
                          "WHERE namespace = ? AND rid = ? AND tid = ?",
                          (weight, self.ns, rid, tid))

    def move_tag(self, src: int, dst: int) -> None:
        """Every memory carrying tag ``src`` carries ``dst`` instead (the higher weight kept);
        :meth:`recount` then sets dst's count."""
        self.conn.execute(
            "INSERT INTO node_tags (namespace, tid, rid, weight) SELECT namespace, ?, rid, weight "
            "FROM node_tags WHERE namespace = ? AND tid = ? ON CONFLICT (tid, rid) DO UPDATE SET "
            "weight = max(node_tags.weight, excluded.weight)", (dst, self.ns, src))
        self.conn.execute("DELETE FROM node_tags WHERE namespace = ? AND tid = ?", (self.ns, src))

    def recount(self, tid: int) -> None:
        """Set a tag's count to the memories carrying it."""
        self.conn.execute("UPDATE tags SET df = (SELECT count(*) FROM node_tags "
                          "WHERE namespace = ? AND tid = ?) WHERE namespace = ? AND tid = ?",
                          (self.ns, tid, self.ns, tid))

    # -- edges ------------------------------------------------------------------------------------
    def add_edge(self, src: str, dst: str, type_: EdgeType, at: float, *,
                 weight: float = 1.0, context: str | None = None) -> None:
        self.conn.execute(
            "INSERT INTO edges (namespace, src, dst, type, weight, context, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self.ns, src, dst, type_.value, weight, context, at),
        )

    def derive(self, sid: str, ids: Sequence[str], at: float, run: str) -> None:
        """The synthesis ``sid`` of REM run ``run`` DERIVED_FROM each of ``ids``."""
        self.conn.executemany(
            "INSERT INTO edges (namespace, src, dst, type, weight, created_at, rem_run) "
            "VALUES (?, ?, ?, 'DERIVED_FROM', 1.0, ?, ?)",
            [(self.ns, sid, m, at, run) for m in ids])

    def copy_edges(self, rows: Sequence[tuple[str, str, str, float, str | None, float]],
                   run: str) -> None:
        """Insert edges ``(src, dst, type, weight, context, created_at)`` written by REM run
        ``run`` (members' edges re-pointed to their synthesis)."""
        self.conn.executemany(
            "INSERT INTO edges (namespace, src, dst, type, weight, context, created_at, "
            "rem_run) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(self.ns, src, dst, type_, w, ctx, created, run)
             for src, dst, type_, w, ctx, created in rows])

    def retire_edges(self, eids: Sequence[Any], by: str) -> None:
        """The edges ``eids`` are no longer live, retired by ``by`` (a REM run, the user, the
        model): kept, so what retired them can be undone."""
        self.conn.executemany("UPDATE edges SET live = 0, retired_by = ? "
                              "WHERE namespace = ? AND eid = ?", [(by, self.ns, e) for e in eids])

    def drop_run_edges(self, run: str) -> list[Any]:
        """Delete the edges REM run ``run`` inserted; returns their rows (eid)."""
        return list(self.conn.execute("DELETE FROM edges WHERE namespace = ? AND rem_run = ? "
                                      "RETURNING eid", (self.ns, run)).fetchall())

    def revive_edges(self, run: str) -> list[Any]:
        """Make live again the edges REM run ``run`` retired; returns their rows (eid)."""
        return list(self.conn.execute("UPDATE edges SET live = 1, retired_by = NULL "
                                      "WHERE namespace = ? AND retired_by = ? RETURNING eid",
                                      (self.ns, run)).fetchall())

    # -- status -----------------------------------------------------------------------------------
    def supersede(self, node_id: str, at: float) -> None:
        """A newer value of the same fact replaces ``node_id`` from ``at``."""
        self.conn.execute(
            "UPDATE nodes SET status = 'superseded', valid_until = ? "
            "WHERE namespace = ? AND id = ?",
            (at, self.ns, node_id),
        )

    def supersede_linked(self, node_id: str, at: float) -> None:
        """A ``[[memory:id]] supersedes`` link replaces ``node_id`` if it is live and not a
        value kept exact (a store item, which only its key's ``put`` replaces)."""
        self.conn.execute(
            "UPDATE nodes SET status = 'superseded', valid_until = ? "
            "WHERE id = ? AND namespace = ? AND status = 'live' AND judged != ?",
            (at, node_id, self.ns, int(Judged.EXACT)),
        )

    def supersede_live(self, node_id: str, at: float) -> None:
        """Update detection decided ``node_id`` is updated: superseded from ``at`` if live."""
        self.conn.execute("UPDATE nodes SET status = 'superseded', valid_until = ? "
                          "WHERE namespace = ? AND id = ? AND status = 'live'",
                          (at, self.ns, node_id))

    def retire_clause(self, node_id: str, index: int, by: str, at: float) -> None:
        """Update detection decided that ``by`` updates clause ``index`` of synthesis
        ``node_id`` (remd.text.clauses): the clause is retired, the synthesis keeps the others;
        with none left it is superseded by ``by``."""
        row = self.conn.execute("SELECT clauses FROM nodes WHERE namespace = ? AND id = ? "
                                "AND status = 'live'", (self.ns, node_id)).fetchone()
        bundle = parse(str(row[0])) if row is not None and row[0] else None
        if bundle is None or not 0 <= index < len(bundle.clauses):
            return
        bundle = bundle.retire(index, by)
        self.conn.execute("UPDATE nodes SET clauses = ? WHERE namespace = ? AND id = ?",
                          (bundle.to_json(), self.ns, node_id))
        if not bundle.live():
            self.supersede_live(node_id, at)
            self.add_edge(by, node_id, EdgeType.SUPERSEDES, at, weight=1.0,
                          context="update: every clause of the synthesis was updated")

    def unsupersede(self, node_id: str) -> None:
        """Live again, with no end (an update decision undone)."""
        self.conn.execute("UPDATE nodes SET status = 'live', valid_until = NULL "
                          "WHERE namespace = ? AND id = ?", (self.ns, node_id))

    def forget(self, rid: int) -> None:
        """Soft-delete: status forgotten."""
        self.conn.execute("UPDATE nodes SET status = 'forgotten' WHERE namespace = ? AND rid = ?",
                          (self.ns, rid))

    def deprecate(self, rids: Sequence[int], by: str) -> None:
        """The synthesis ``by`` absorbed these nodes."""
        self.conn.executemany("UPDATE nodes SET status = 'deprecated', deprecated_by = ? "
                              "WHERE namespace = ? AND rid = ?", [(by, self.ns, r) for r in rids])

    def restore(self, node_id: str, status: Any, importance: Any, deprecated_by: Any) -> None:
        """Put back a node's status, importance and deprecated_by as a rollback recorded them."""
        self.conn.execute(
            "UPDATE nodes SET status = ?, importance = ?, deprecated_by = ? "
            "WHERE id = ? AND namespace = ?",
            (status, importance, deprecated_by, node_id, self.ns))
