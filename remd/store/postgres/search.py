"""PostgreSQL's side of the dialect differences (:class:`remd.store.seam.Connection`): what
:class:`remd.store.postgres.connection.PgConnection` and :class:`remd.store.postgres.store.PgStore`
run where SQLite's FTS5, sqlite-vec and file-wide change logs have no translation.

- Lexical search: PostgreSQL has no FTS5, so each namespace keeps its own term index
  (``node_terms``, ``node_terms_len``) and statistics (``fts_stats``), tokenised by the same
  FTS5 tokenizer (of a private in-memory SQLite connection), and bm25 is computed as FTS5 does.
- Vectors: read with ``= ANY(?)`` (one statement text whatever the count) in binary; the exact
  scan compares here, batch by batch, as sqlite-vec's ``vec_distance_cosine`` does.
- Change logs: each row carries its namespace, and a reader reads only its own.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from remd.store.quantisation import to_int8
from remd.store.seam import Connection, Match, Store
from remd.store.tokenizer import tokens

# bm25 as FTS5 computes it (its defaults), for the term index.
_K1 = 1.2
_B = 0.75
# A stem's postings in a namespace, up to a cap.
COUNT = ("SELECT count(*) FROM (SELECT 1 FROM node_terms WHERE namespace = ? AND stem = ? "
         "LIMIT ?) AS t")

_local: apsw.Connection | None = None
_local_lock = threading.Lock()


def tokenize(utf8: bytes, *, query: bool) -> list[tuple[Any, ...]]:
    """The index's tokens of ``utf8``, by the FTS5 tokenizer of a private in-memory SQLite
    connection (the one SQLite's node_fts uses)."""
    global _local
    with _local_lock:
        if _local is None:
            _local = apsw.Connection(":memory:")
        owner = _local
    return tokens(owner, utf8, query=query)


def index_text(conn: Connection, rid: int, namespace: str, content: str) -> None:
    """A new memory's stems in the namespace's term index and statistics."""
    counts = Counter(str(t[2]) for t in tokenize(content.encode("utf-8"), query=False))
    length = sum(counts.values())
    conn.execute(INDEX_TEXT, (namespace, rid, length, list(counts), list(counts.values()),
                              rid, namespace, length, namespace, length))


# One statement (one round trip) for a memory's postings, its length and the statistics.
INDEX_TEXT = (
    "WITH terms AS (INSERT INTO node_terms (namespace, stem, rid, tf, len) "
    "SELECT ?, u.stem, ?, u.tf, ? FROM unnest(CAST(? AS text[]), CAST(? AS integer[])) "
    "AS u(stem, tf)), "
    "length AS (INSERT INTO node_terms_len (rid, namespace, len) VALUES (?, ?, ?)) "
    "INSERT INTO fts_stats (namespace, docs, terms) VALUES (?, 1, ?) "
    "ON CONFLICT (namespace) DO UPDATE SET docs = fts_stats.docs + 1, "
    "terms = fts_stats.terms + excluded.terms")


def unindex_text(conn: Connection, rid: int, namespace: str) -> None:
    """A memory's stems out of the namespace's term index and statistics."""
    row = conn.execute("DELETE FROM node_terms_len WHERE namespace = ? AND rid = ? RETURNING len",
                       (namespace, rid)).fetchone()
    conn.execute("DELETE FROM node_terms WHERE namespace = ? AND rid = ?", (namespace, rid))
    if row is not None:
        conn.execute("UPDATE fts_stats SET docs = docs - 1, terms = terms - ? "
                     "WHERE namespace = ?", (row[0], namespace))


def bm25_read(match: Match, limit: int, namespace: str, *, filtered: bool = False
              ) -> tuple[str, tuple[Any, ...]]:
    """The search's statement: FTS5's bm25 (formula and defaults) over the namespace's term
    index and statistics, for the stems of ``match`` with their document frequencies as
    counted (TermCounts: exact in the snapshot here, where the counts are the namespace's and
    its injects are serialised by its view), scored where the postings are so only the best
    ``limit`` rows come back. Floats are float8 (constants bound as such), as Python's
    arithmetic is; the stems and counts are two arrays: one statement text, prepared once."""
    keep = ("JOIN nodes n ON n.namespace = ? AND n.rid = t.rid "
            "AND n.status IN ('live', 'deprecated', 'superseded') " if filtered else "")
    stems = sorted(match.postings)
    return (
        "SELECT t.rid, sum(GREATEST(ln((s.docs - d.n + 0.5) / (d.n + 0.5)), 1e-6) * t.tf "
        "* (? + 1) / (t.tf + ? * (1 - ? + ? * t.len / GREATEST(s.avgdl, 1e-9)))) AS score "
        "FROM unnest(CAST(? AS text[]), CAST(? AS float8[])) AS d(stem, n) "
        "JOIN node_terms t ON t.namespace = ? AND t.stem = d.stem "
        "CROSS JOIN (SELECT CAST(docs AS float8) AS docs, CASE WHEN docs > 0 "
        "THEN CAST(terms AS float8) / docs ELSE 1.0 END AS avgdl FROM fts_stats "
        f"WHERE namespace = ?) AS s {keep}GROUP BY t.rid ORDER BY score DESC, t.rid LIMIT ?",
        (_K1, _K1, _B, _B, stems, [float(match.postings[x]) for x in stems], namespace,
         namespace, *((namespace,) if filtered else ()), limit))


def vector_read(namespace: str, keys: Sequence[int], table: str = "node_vec_bit"
                ) -> tuple[str, tuple[Any, ...], bool]:
    """The read of stored vectors (binary rows: PgConnection.blobs): one statement text
    whatever the count, prepared once and reused."""
    key = "rid" if table == "node_vec_bit" else "sid"
    return (f"SELECT rid, vec FROM {table} WHERE namespace = ? AND {key} = ANY(?)",
            (namespace, [int(r) for r in keys]), True)


def rows_per_tag(conn: Connection, read: str, tids: Sequence[int], namespace: str,
                 limit: int, *, named: bool) -> Any:
    """Every tag's rows of ``read`` in one statement (a LATERAL join over the tags)."""
    each = (f"FROM unnest(?) WITH ORDINALITY AS s(tid, n) CROSS JOIN "
            f"LATERAL ({read.format(tag='s.tid')}) AS e")  # the per-tag read
    if named:
        return conn.execute(
            f"SELECT s.tid, e.dst, e.weight, t.name, t.df {each} LEFT JOIN tags t "
            "ON t.namespace = ? AND t.tid = e.dst ORDER BY s.n, e.weight DESC, e.dst",
            (tids, namespace, limit, namespace))
    return conn.execute(f"SELECT s.tid, e.* {each} ORDER BY s.n", (tids, namespace, limit))


def log_intact(conn: Connection, table: str, namespace: str, seen: int) -> bool:
    """Pruning drops a prefix of the whole log, so the namespace's entries after ``seen`` are
    all there if entry ``seen`` is (a reader that saw none, ``seen`` 0, cannot tell: no)."""
    return seen > 0 and conn.execute(
        f"SELECT 1 FROM {table} WHERE namespace = ? AND seq = ?", (namespace, seen)
    ).fetchone() is not None


_SCAN_BATCH = 8192


def exact_scan(store: Store, namespace: str, query: npt.ArrayLike, k: int
               ) -> list[tuple[int, float]]:
    """The exact scan where the database has no vector functions (PostgreSQL without
    pgvector): the namespace's int8 vectors read in rid order, batch by batch, and compared
    here, as vec_distance_cosine does (the query in the stored int8 form, ties by rid; only
    vectors of the query's dimension)."""
    q = to_int8(query)[0].astype(np.float32)
    qn = float(np.linalg.norm(q)) or 1.0
    best: list[tuple[float, int]] = []
    after = -1
    while True:
        rows = store.query("SELECT rid, vec FROM node_vec_bit WHERE namespace = ? AND rid > ? "
                           "ORDER BY rid LIMIT ?", (namespace, after, _SCAN_BATCH))
        if not rows:
            break
        after = int(rows[-1][0])
        rows = [r for r in rows if len(r[1]) == len(q)]
        if not rows:
            continue
        mat = np.frombuffer(b"".join(bytes(r[1]) for r in rows), np.int8).reshape(
            len(rows), -1).astype(np.float32)
        norms = np.linalg.norm(mat, axis=1)
        norms[norms == 0] = 1.0
        dist = 1.0 - (mat @ q) / (norms * qn)
        best.extend((float(d), int(r[0])) for d, r in zip(dist, rows, strict=True))
        best = sorted(best)[:k]
    return [(rid, d) for d, rid in best]
