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
from typing import Any

from remd.index import changelog
from remd.store import rows_in
from remd.store.seam import Connection, Match
from remd.text.words import FUNCTION_WORDS, QUESTION_WORDS

# remd/text/words.py's one stop list plus the words that only make a question: left out of the FTS5
# query (bm25 would give them a little weight each, and a long query of them costs postings for
# nothing). The vague words (time words, counts, everyday verbs) stay: a question can hinge on
# them and bm25 weighs them by rarity. The last few are what the tokenizer leaves of
# contractions ("don't" -> don, t).
STOP = FUNCTION_WORDS | QUESTION_WORDS | frozenset(("s", "t", "don", "ll", "m", "re", "ve", "d"))
_KEEP = 65_536  # counts kept per store
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

    def sync(self, conn: Connection, namespace: str) -> None:
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

    def _sync(self, conn: Connection, scope: str) -> None:
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

    def _add(self, conn: Connection, scope: str, rids: list[int]) -> None:
        own, params = ("namespace = ? AND ", (scope,)) if scope else ("", ())
        for (content,) in rows_in(conn, f"SELECT content FROM nodes WHERE {own}rid IN ({{marks}})",
                                  rids, params):
            stems = set(stem_counts(conn, str(content)))
            for key, n in self.counts.items():
                at, stem, cap = key
                if at == scope and stem in stems and n <= cap:  # past the cap stays past it
                    self.counts[key] = n + 1

    def prefetch(self, conn: Connection, namespace: str, stems: Iterable[str], cap: int) -> None:
        """On PostgreSQL, count the ``stems`` not counted yet in one round trip (their reads
        are kept by the snapshot for :meth:`count`)."""
        todo = self.probes(conn, namespace, stems, cap)
        if len(todo) > 1:
            conn.prefetch(todo)

    def probes(self, conn: Connection, namespace: str, stems: Iterable[str], cap: int
               ) -> list[tuple[str, tuple[Any, ...]]]:
        """On PostgreSQL, the reads :meth:`count` would make for the ``stems`` not counted
        yet (to send them ahead: PgConnection.prefetch); on SQLite none."""
        at = scope(conn, namespace)
        if not at:
            return []
        with self.lock:  # (without the quoted word: only SQLite's FTS5 counts by it)
            return [conn.count_read(at, stem, "", cap + 1) for stem in stems
                    if (at, stem, cap) not in self.counts]

    def count(self, conn: Connection, namespace: str, stem: str, quoted: str,
              cap: int) -> int:
        """How many indexed memories hold the word (of the file on SQLite, of ``namespace``
        on PostgreSQL), counted up to ``cap + 1``."""
        with self.lock:
            return self._count(conn, scope(conn, namespace), stem, quoted, cap)

    def _count(self, conn: Connection, at: str, stem: str, quoted: str, cap: int) -> int:
        key = (at, stem, cap)
        n = self.counts.get(key)
        if n is not None:
            self.hits += 1
            return n
        self.misses += 1
        row = conn.execute(*conn.count_read(at, stem, quoted, cap + 1)).fetchone()
        n = int(row[0]) if row else 0
        if len(self.counts) >= _KEEP:
            self.counts.clear()
            self.words.clear()
        self.counts[key] = n
        self.words[key] = quoted
        return n


def scope(conn: Connection, namespace: str) -> str:
    """Whose term statistics a namespace's search uses: the file's on SQLite (FTS5's are
    file-wide: ""), the namespace's own on PostgreSQL."""
    return conn.scope(namespace)


def query_terms(conn: Connection, query: str, max_terms: int) -> dict[str, str]:
    """stem -> word of the query's words worth searching (stop words left out), at most
    ``max_terms``, in query order."""
    raw = query.encode("utf-8")
    terms: dict[str, str] = {}
    for start, end, stem, *_ in conn.tokenize(raw, query=True):
        word = raw[start:end].decode("utf-8", "replace")
        if word.lower() in STOP or stem in STOP or stem in terms:
            continue
        terms[stem] = word
        if len(terms) >= max_terms:
            break
    return terms


def stems(conn: Connection, text: str) -> set[str]:
    """The index's stems of ``text`` (what a MATCH on it would see)."""
    return set(stem_counts(conn, text))


def stem_counts(conn: Connection, text: str) -> Counter[str]:
    """Each stem of ``text`` as the index tokenises a document, with its count."""
    return Counter(str(t[2]) for t in conn.tokenize(text.encode("utf-8"), query=False))


def match_expression(conn: Connection, namespace: str, terms: dict[str, str],
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


def search(conn: Connection, match: Match, limit: int, namespace: str, *,
           filtered: bool = False) -> list[tuple[int, float]]:
    """(rid, bm25 score, higher is better) of the best ``limit`` matches, any status, of the
    file on SQLite, of ``namespace`` on PostgreSQL (bm25 as FTS5 computes it, over the
    namespace's term index: remd/store/postgres/search.py); ``filtered``: only ``namespace``'s live,
    deprecated and superseded nodes (a join per matching posting: for when most matches are
    others' or dead)."""
    return conn.search(match, limit, namespace, filtered=filtered)
