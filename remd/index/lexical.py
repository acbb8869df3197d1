"""Lexical search for inject: the query's rarer words against SQLite's FTS5 index, by bm25.

The query is tokenised with the index's own tokenizer (porter over unicode61); stop words go;
each remaining word is quoted (so FTS5 syntax in a query can never reach the parser) and
counted in the index up to ``fts_max_postings``; words are kept rarest first while their
postings stay within that budget, so bm25's work is bounded whatever the index size.

Counting is the expensive part (one capped FTS5 scan per word), and agents reuse their words,
so :class:`TermCounts` keeps the counts per process and keeps them exact (per file on SQLite,
whose FTS5 index and statistics are file-wide; per namespace on PostgreSQL, whose term index
and statistics are each namespace's own, so that every statement names one): the index
changes only when a node is inserted or deleted (content is never updated), both logged in
``node_log`` (migration 0006); an insert's words are tokenised and the counts it changes are
adjusted, a deletion (a REM rollback) drops them all.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import apsw

from remd.index import changelog
from remd.store.postgres import is_postgres
from remd.store.sqlite import rows_in
from remd.text.words import FUNCTION_WORDS, QUESTION_WORDS

_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])  # as schema.sql's node_fts
# remd/text/words.py's one stop list plus the words that only make a question: left out of the FTS5
# query (bm25 would give them a little weight each, and a long query of them costs postings for
# nothing). The vague words (time words, counts, everyday verbs) stay: a question can hinge on
# them and bm25 weighs them by rarity. The last few are what the tokenizer leaves of
# contractions ("don't" -> don, t).
STOP = FUNCTION_WORDS | QUESTION_WORDS | frozenset(("s", "t", "don", "ll", "m", "re", "ve", "d"))
_KEEP = 65_536  # counts kept per store
# bm25 as FTS5 computes it (its defaults), for the PostgreSQL store's term index.
_K1 = 1.2
_B = 0.75


_local: apsw.Connection | None = None
_local_lock = threading.Lock()


def tokenizer(conn: Any) -> Any:
    """The index's tokenizer (porter over unicode61): the file's own on SQLite; on
    PostgreSQL, the same FTS5 tokenizer of a private in-memory SQLite connection."""
    if not is_postgres(conn):
        return conn.fts5_tokenizer(*_TOKENIZER)
    global _local
    with _local_lock:
        if _local is None:
            _local = apsw.Connection(":memory:")
        return _local.fts5_tokenizer(*_TOKENIZER)
_PG_COUNT = ("SELECT count(*) FROM (SELECT 1 FROM node_terms WHERE namespace = ? AND stem = ? "
             "LIMIT ?) AS t")  # a stem's postings in a namespace, up to a cap
_ADJUST_MAX = 256  # inserts past this since the last look: drop the counts instead


class TermCounts:
    """Capped FTS5 posting counts per (stem, cap), exact in the caller's snapshot."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # shared by every namespace's injects
        # (scope, stem, cap) -> count; scope: the namespace on PostgreSQL, "" on SQLite
        self.counts: dict[tuple[str, str, int], int] = {}
        self.words: dict[tuple[str, str, int], str] = {}  # the quoted word each count is for
        self.seq: dict[str, int] = {}  # per scope, its last node_log entry applied
        self.hits = 0
        self.misses = 0

    def nbytes(self) -> int:
        return 200 * len(self.counts)

    def sync(self, conn: apsw.Connection, namespace: str) -> None:
        """Adjust the counts for the nodes inserted since the last look (in this snapshot).

        A snapshot older than the last look (another namespace's inject, on another thread,
        synced to a newer one) leaves the counts as they are: they are then counts of a
        slightly newer index, which only steers the choice of query words.
        """
        with self.lock:
            self._sync(conn, scope(conn, namespace))

    def _drop(self, scope: str) -> None:
        for key in [key for key in self.counts if key[0] == scope]:
            del self.counts[key]
            del self.words[key]

    def _sync(self, conn: apsw.Connection, scope: str) -> None:
        top = changelog.newest(conn, "node_log", scope)
        seen = self.seq.get(scope)
        mine = any(key[0] == scope for key in self.counts)
        if top == seen or (seen is not None and top < seen and mine):
            return
        if seen is None or top < seen or not mine:
            self._drop(scope)
        elif not changelog.intact(conn, "node_log", scope, seen):
            self._drop(scope)  # entries we had not seen were pruned
        else:
            rows = changelog.since(conn, "node_log", "rid, op", scope, seen, _ADJUST_MAX + 1,
                                   "AND op != 'u'")
            if len(rows) > _ADJUST_MAX or any(op == "d" for _, op in rows):
                self._drop(scope)
            elif rows:
                self._add(conn, scope, [int(rid) for rid, _ in rows])
        self.seq[scope] = top

    def _add(self, conn: apsw.Connection, scope: str, rids: list[int]) -> None:
        own, params = ("namespace = ? AND ", (scope,)) if scope else ("", ())
        for (content,) in rows_in(conn, f"SELECT content FROM nodes WHERE {own}rid IN ({{marks}})",
                                  rids, params):
            stems = set(stem_counts(conn, str(content)))
            for key, n in self.counts.items():
                at, stem, cap = key
                if at == scope and stem in stems and n <= cap:  # past the cap stays past it
                    self.counts[key] = n + 1

    def prefetch(self, conn: Any, namespace: str, stems: Iterable[str], cap: int) -> None:
        """On PostgreSQL, count the ``stems`` not counted yet in one round trip (their reads
        are kept by the snapshot for :meth:`count`)."""
        todo = self.probes(conn, namespace, stems, cap)
        if len(todo) > 1:
            conn.prefetch(todo)

    def probes(self, conn: Any, namespace: str, stems: Iterable[str], cap: int
               ) -> list[tuple[str, tuple[Any, ...]]]:
        """On PostgreSQL, the reads :meth:`count` would make for the ``stems`` not counted
        yet (to send them ahead: PgConnection.prefetch); on SQLite none."""
        at = scope(conn, namespace)
        if not at:
            return []
        with self.lock:
            return [(_PG_COUNT, (at, stem, cap + 1)) for stem in stems
                    if (at, stem, cap) not in self.counts]

    def count(self, conn: apsw.Connection, namespace: str, stem: str, quoted: str,
              cap: int) -> int:
        """How many indexed memories hold the word (of the file on SQLite, of ``namespace``
        on PostgreSQL), counted up to ``cap + 1``."""
        with self.lock:
            return self._count(conn, scope(conn, namespace), stem, quoted, cap)

    def _count(self, conn: apsw.Connection, at: str, stem: str, quoted: str, cap: int) -> int:
        key = (at, stem, cap)
        n = self.counts.get(key)
        if n is not None:
            self.hits += 1
            return n
        self.misses += 1
        if at:
            row = conn.execute(_PG_COUNT, (at, stem, cap + 1)).fetchone()
        else:
            row = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM node_fts WHERE node_fts MATCH ? LIMIT ?)",
                (quoted, cap + 1)).fetchone()
        n = int(row[0]) if row else 0
        if len(self.counts) >= _KEEP:
            self.counts.clear()
            self.words.clear()
        self.counts[key] = n
        self.words[key] = quoted
        return n


def scope(conn: Any, namespace: str) -> str:
    """Whose term statistics a namespace's search uses: the file's on SQLite (FTS5's are
    file-wide: ""), the namespace's own on PostgreSQL."""
    return namespace if is_postgres(conn) else ""


def query_terms(conn: apsw.Connection, query: str, max_terms: int) -> dict[str, str]:
    """stem -> word of the query's words worth searching (stop words left out), at most
    ``max_terms``, in query order."""
    raw = query.encode("utf-8")
    terms: dict[str, str] = {}
    tokens: list[Any] = list(tokenizer(conn)(raw, apsw.FTS5_TOKENIZE_QUERY, None))
    for start, end, stem, *_ in tokens:
        word = raw[start:end].decode("utf-8", "replace")
        if word.lower() in STOP or stem in STOP or stem in terms:
            continue
        terms[stem] = word
        if len(terms) >= max_terms:
            break
    return terms


def stems(conn: apsw.Connection, text: str) -> set[str]:
    """The index's stems of ``text`` (what a MATCH on it would see)."""
    return set(stem_counts(conn, text))


def stem_counts(conn: Any, text: str) -> Counter[str]:
    """Each stem of ``text`` as the index tokenises a document, with its count."""
    tokens: list[Any] = list(tokenizer(conn)(text.encode("utf-8"),
                                            apsw.FTS5_TOKENIZE_DOCUMENT, None))
    return Counter(str(t[2]) for t in tokens)


def index_text(conn: apsw.Connection, rid: int, namespace: str, content: str) -> None:
    """Add a new memory's text to the lexical index (inside the caller's transaction)."""
    if not is_postgres(conn):
        conn.execute("INSERT INTO node_fts (rowid, content) VALUES (?, ?)", (rid, content))
        return
    counts = stem_counts(conn, content)
    length = sum(counts.values())
    conn.executemany("INSERT INTO node_terms (namespace, stem, rid, tf, len) "
                     "VALUES (?, ?, ?, ?, ?)",
                     [(namespace, stem, rid, n, length) for stem, n in counts.items()])
    conn.execute("INSERT INTO node_terms_len (rid, namespace, len) VALUES (?, ?, ?)",
                 (rid, namespace, length))
    conn.execute("INSERT INTO fts_stats (namespace, docs, terms) VALUES (?, 1, ?) "
                 "ON CONFLICT (namespace) DO UPDATE SET docs = fts_stats.docs + 1, "
                 "terms = fts_stats.terms + excluded.terms", (namespace, length))


def unindex_text(conn: apsw.Connection, rid: int, namespace: str, content: str) -> None:
    """Remove a memory's text from the lexical index (a REM rollback deleting a synthesis)."""
    if not is_postgres(conn):
        conn.execute("INSERT INTO node_fts (node_fts, rowid, content) VALUES ('delete', ?, ?)",
                     (rid, content))
        return
    row = conn.execute("DELETE FROM node_terms_len WHERE namespace = ? AND rid = ? RETURNING len",
                       (namespace, rid)).fetchone()
    conn.execute("DELETE FROM node_terms WHERE namespace = ? AND rid = ?", (namespace, rid))
    if row is not None:
        conn.execute("UPDATE fts_stats SET docs = docs - 1, terms = terms - ? "
                     "WHERE namespace = ?", (row[0], namespace))


@dataclass(frozen=True)
class Match:
    """The words a lexical search looks for: ``expr``, a safe FTS5 MATCH string (each word
    quoted, OR-ed), and ``postings``, each word's stem -> its postings (of the file on SQLite,
    of the namespace on PostgreSQL, counted in the caller's snapshot: its document
    frequency)."""

    expr: str
    postings: dict[str, int]


def match_expression(conn: apsw.Connection, namespace: str, terms: dict[str, str],
                     counts: TermCounts, *, max_postings: int) -> Match | None:
    """The rarer of ``terms`` (:func:`query_terms`) while their postings stay within
    ``max_postings`` (None: no word worth searching).

    Never raw user text: quoting makes every word a plain string token, so FTS5 syntax in the
    query ("AND", "NEAR(", '"', "*", "col:") cannot reach the parser.
    """
    docs = []
    counts.prefetch(conn, namespace, terms, max_postings)
    for stem, word in terms.items():
        quoted = '"' + word.replace('"', '""') + '"'
        n = counts.count(conn, namespace, stem, quoted, max_postings)
        if 0 < n <= max_postings:
            docs.append((n, quoted, stem))
    docs.sort()
    chosen: list[str] = []
    postings: dict[str, int] = {}
    total = 0
    for n, quoted, stem in docs:  # rarest first: a common word adds little to bm25, costs much
        if total + n > max_postings:
            break
        chosen.append(quoted)
        postings[stem] = n
        total += n
    return Match(" OR ".join(chosen), postings) if chosen else None


def search(conn: apsw.Connection, match: Match, limit: int, namespace: str, *,
           filtered: bool = False) -> list[tuple[int, float]]:
    """(rid, bm25 score, higher is better) of the best ``limit`` matches, any status, of the
    file on SQLite, of ``namespace`` on PostgreSQL; ``filtered``: only ``namespace``'s live,
    deprecated and superseded nodes (a join per matching posting: for when most matches are
    others' or dead)."""
    if is_postgres(conn):
        scored = conn.execute(*bm25_read(match, limit, namespace, filtered=filtered))
        return [(int(rid), float(score)) for rid, score in scored]
    expr = match.expr
    if not filtered:
        rows = conn.execute("SELECT rowid, bm25(node_fts) AS s FROM node_fts "
                            "WHERE node_fts MATCH ? ORDER BY s LIMIT ?", (expr, limit))
    else:
        rows = conn.execute("SELECT n.rid, bm25(node_fts) AS s FROM node_fts "
                            "JOIN nodes n ON n.rid = node_fts.rowid "
                            "WHERE node_fts MATCH ? AND n.namespace = ? "
                            "AND n.status IN ('live', 'deprecated', 'superseded') "
                            "ORDER BY s LIMIT ?",
                            (expr, namespace, limit))
    return [(int(rid), -float(s)) for rid, s in rows]


def bm25_read(match: Match, limit: int, namespace: str, *, filtered: bool = False
              ) -> tuple[str, tuple[Any, ...]]:
    """:func:`search`'s statement on PostgreSQL: FTS5's bm25 (formula and defaults) over the
    namespace's term index and statistics, for the stems of ``match`` with their document
    frequencies as counted (TermCounts: exact in the snapshot here, where the counts are the
    namespace's and its injects are serialised by its view), scored where the postings are
    so only the best ``limit`` rows come back. Floats are float8 (constants bound as such),
    as Python's arithmetic is; the stems and counts are two arrays: one statement text,
    prepared once. Sent ahead with other reads by inject (PgConnection.prefetch)."""
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
