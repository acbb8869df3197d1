"""The connection the engine holds on a SQLite file: apsw's, with SQLite's side of the dialect
differences as methods (:class:`remd.store.seam.Connection`).

SQLite has FTS5 (the lexical index is ``node_fts``, its statistics the file's), a change log
that is the file's, and no round trips: reading ahead does nothing here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import apsw

from remd.store.seam import Match, Read
from remd.store.tokenizer import tokens


class SqliteConnection(apsw.Connection):
    """An apsw connection to a remd file (opened by :func:`remd.store.sqlite.store.connect`)."""

    # -- reading ahead: nothing to save without round trips -------------------------------
    def settle(self) -> None:
        return None  # every statement runs when it is executed

    def prefetch(self, statements: Sequence[Read] | Callable[[], Sequence[Read]],
                 then: Callable[[], Sequence[Read]] | None = None) -> None:
        return None

    def rows_per_tag(self, read: str, tids: Sequence[int], namespace: str, limit: int, *,
                     named: bool) -> None:
        return None  # a tag's rows cost microseconds to read: nothing to gain

    # -- lexical search: FTS5, the file's statistics --------------------------------------
    def tokenize(self, utf8: bytes, *, query: bool) -> list[tuple[Any, ...]]:
        return tokens(self, utf8, query=query)

    def scope(self, namespace: str) -> str:
        return ""  # FTS5's statistics are file-wide

    def count_read(self, scope: str, stem: str, quoted: str, limit: int
                   ) -> tuple[str, tuple[Any, ...]]:
        return ("SELECT count(*) FROM (SELECT 1 FROM node_fts WHERE node_fts MATCH ? LIMIT ?)",
                (quoted, limit))

    def index_text(self, rid: int, namespace: str, content: str) -> None:
        self.execute("INSERT INTO node_fts (rowid, content) VALUES (?, ?)", (rid, content))

    def unindex_text(self, rid: int, namespace: str, content: str) -> None:
        self.execute("INSERT INTO node_fts (node_fts, rowid, content) VALUES ('delete', ?, ?)",
                     (rid, content))

    def search_read(self, match: Match, limit: int, namespace: str, *, filtered: bool
                    ) -> tuple[str, tuple[Any, ...]]:
        """FTS5 alone, or (``filtered``) joined with the namespace's live, deprecated and
        superseded nodes; bm25 as FTS5 gives it (lower is better)."""
        if not filtered:
            return ("SELECT rowid, bm25(node_fts) AS s FROM node_fts "
                    "WHERE node_fts MATCH ? ORDER BY s LIMIT ?", (match.expr, limit))
        return ("SELECT n.rid, bm25(node_fts) AS s FROM node_fts "
                "JOIN nodes n ON n.rid = node_fts.rowid "
                "WHERE node_fts MATCH ? AND n.namespace = ? "
                "AND n.status IN ('live', 'deprecated', 'superseded') "
                "ORDER BY s LIMIT ?",
                (match.expr, namespace, limit))

    def search(self, match: Match, limit: int, namespace: str, *, filtered: bool
               ) -> list[tuple[int, float]]:
        rows = self.execute(*self.search_read(match, limit, namespace, filtered=filtered))
        return [(int(rid), -float(s)) for rid, s in rows]

    # -- vectors --------------------------------------------------------------------------
    def vector_read(self, namespace: str, keys: Sequence[int], table: str) -> Read:
        ids = [int(r) for r in keys]
        marks = ",".join("?" * len(ids))
        key = "rid" if table == "node_vec_bit" else "sid"
        return (f"SELECT rid, vec FROM {table} WHERE namespace = ? AND {key} IN ({marks})",
                (namespace, *ids))

    def vector_rows(self, namespace: str, keys: Sequence[int], table: str
                    ) -> list[tuple[Any, ...]]:
        sql, params, *_ = self.vector_read(namespace, keys, table)
        return list(self.execute(sql, params))

    # -- change logs: the file's ----------------------------------------------------------
    def log_filter(self, namespace: str) -> tuple[str, list[Any]]:
        return "", []

    def log_intact(self, table: str, namespace: str, seen: int) -> bool:
        """Pruning drops a prefix of the log, whose seq has no gaps: all there if its oldest
        entry is at most the one after ``seen``."""
        row = self.execute(f"SELECT min(seq) FROM {table}").fetchone()
        oldest = int(row[0]) if row is not None and row[0] is not None else 0
        return oldest <= seen + 1
