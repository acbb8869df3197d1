"""The seam between the engine and its store: what engine code may ask of a store and of the
connection it holds, whichever database is behind them.

Two stores implement it: the SQLite file (:class:`remd.store.sqlite.store.Store`, whose connections
are :class:`remd.store.sqlite.dialect.SqliteConnection`) and the PostgreSQL database
(:class:`remd.store.postgres.store.PgStore`, connections
:class:`remd.store.postgres.connection.PgConnection`). Both satisfy these protocols structurally
(mypy checks it where :func:`remd.store.backends.open_store` returns one), so engine code
annotated with them is checked for both.

The engine's SQL is written once, in SQLite's dialect (the PostgreSQL connection translates it).
Where the two databases differ in more than spelling, the connection (or the store) offers a
method, so that no engine module asks which database it is on:

- lexical search: the index's tokens, whose term statistics a namespace reads (:meth:`scope`),
  a word's capped postings count, adding and removing a memory's text, bm25 search;
- vectors: the stored int8 vectors of some keys, and the exact scan of a namespace;
- the change logs: whose rows a reader reads (:meth:`scope`) and whether they are all still there;
- reading ahead: :meth:`Connection.prefetch` and :meth:`Connection.rows_per_tag` save a server
  its round trips; on SQLite they do nothing (a read there costs microseconds, not a round trip).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from remd.config import StoreConfig

# A read to send ahead (Connection.prefetch): (SQL, parameters), or (SQL, parameters, binary):
# binary for vectors (bytea rows returned as bytes).
Read = tuple[str, Sequence[Any]] | tuple[str, Sequence[Any], bool]


@dataclass(frozen=True)
class Match:
    """The words a lexical search looks for: ``expr``, a safe FTS5 MATCH string (each word
    quoted, OR-ed), and ``postings``, each word's stem -> its postings (of the file on SQLite,
    of the namespace on PostgreSQL, counted in the caller's snapshot: its document
    frequency)."""

    expr: str
    postings: dict[str, int]


class Cursor(Protocol):
    """The rows of a statement: fetched all at once, one at a time, or iterated."""

    def fetchall(self) -> list[tuple[Any, ...]]: ...

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The connection a thread holds inside a store's block: SQL in SQLite's dialect, and the
    dialect's differences as methods."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Any = (), /) -> Cursor: ...

    def executemany(self, sql: str, seq: Any, /) -> object: ...

    def total_changes(self) -> int: ...

    def settle(self) -> None:
        """Send the writes the connection holds back (PostgreSQL defers writes that return
        nothing to the next read or the COMMIT; a no-op on SQLite): their errors raise here."""
        ...

    # -- reading ahead (a no-op on SQLite) -------------------------------------------------
    def prefetch(self, statements: Sequence[Read] | Callable[[], Sequence[Read]],
                 then: Callable[[], Sequence[Read]] | None = None) -> None:
        """Inside a read snapshot, send ``statements`` (or what the callable gives, asked only
        when it will be sent) in one round trip, keeping their rows for when they are read;
        ``then`` gives more once those are on their way. On SQLite, nothing."""
        ...

    def rows_per_tag(self, read: str, tids: Sequence[int], namespace: str, limit: int, *,
                     named: bool) -> Cursor | None:
        """The rows of ``read`` (one tag's rows, ``{tag}`` where its id goes, parameters the
        namespace and ``limit``) for every tag of ``tids`` in one statement, each row led by
        its tag, in ``tids``' order; ``named``: each row followed by its target tag's name and
        df. None where a read per tag costs no round trip (SQLite)."""
        ...

    # -- lexical search --------------------------------------------------------------------
    def tokenize(self, utf8: bytes, *, query: bool) -> list[tuple[Any, ...]]:
        """The index's tokens of ``utf8`` (a query's or a document's): (start, end, stem, ...)."""
        ...

    def scope(self, namespace: str) -> str:
        """Whose term statistics and change-log rows a reader of ``namespace`` reads: the
        file's on SQLite (""), the namespace's own on PostgreSQL."""
        ...

    def count_read(self, scope: str, stem: str, quoted: str, limit: int
                   ) -> tuple[str, tuple[Any, ...]]:
        """The statement counting a word's postings (``stem``, ``quoted`` as FTS5 wants it)
        in ``scope``, up to ``limit``."""
        ...

    def index_text(self, rid: int, namespace: str, content: str) -> None:
        """Add a new memory's text to the lexical index (inside the caller's transaction)."""
        ...

    def unindex_text(self, rid: int, namespace: str, content: str) -> None:
        """Remove a memory's text from the lexical index."""
        ...

    def search_read(self, match: Match, limit: int, namespace: str, *, filtered: bool
                    ) -> tuple[str, tuple[Any, ...]]:
        """:meth:`search`'s statement (to send it ahead)."""
        ...

    def search(self, match: Match, limit: int, namespace: str, *, filtered: bool
               ) -> list[tuple[int, float]]:
        """(rid, bm25 score, higher is better) of the best ``limit`` matches."""
        ...

    # -- vectors ---------------------------------------------------------------------------
    def vector_read(self, namespace: str, keys: Sequence[int], table: str) -> Read:
        """:meth:`vector_rows`'s statement (to send it ahead)."""
        ...

    def vector_rows(self, namespace: str, keys: Sequence[int], table: str
                    ) -> list[tuple[Any, ...]]:
        """(rid, int8 vector bytes) of ``keys`` (rids of ``node_vec_bit``, sids of
        ``sentence_vec``) that ``table`` holds for ``namespace``."""
        ...

    # -- change logs -----------------------------------------------------------------------
    def log_filter(self, namespace: str) -> tuple[str, list[Any]]:
        """The condition (followed by ``AND``) that keeps the change-log rows a reader of
        ``namespace`` reads, and its parameters: none on SQLite (the file's log holds only
        ids), its own rows on PostgreSQL."""
        ...

    def log_intact(self, table: str, namespace: str, seen: int) -> bool:
        """Does change log ``table`` still hold every entry a reader of ``namespace`` needs
        after ``seen`` (the newest entry at its last look)?"""
        ...


class Store(Protocol):
    """A store: a bounded pool of connections leased to threads, transactions, reads."""

    path: str
    config: StoreConfig

    @property
    def where(self) -> str:
        """Where the store is, as messages and logs may show it (a URL without its
        password): what a front end prints, without importing a backend."""
        ...

    @property
    def conn(self) -> Connection: ...

    def connection(self) -> contextlib.AbstractContextManager[Connection]: ...

    def transaction(self, namespace: str | Iterable[str] | None = None
                    ) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction (a savepoint when nested). ``namespace``: the namespaces it
        writes; on PostgreSQL it is serialised with the write transactions of those only
        (None, the default: with every write transaction). SQLite ignores it (one writer)."""
        ...

    def snapshot(self) -> contextlib.AbstractContextManager[Connection]: ...

    def write_all(self, statements: Sequence[tuple[str, Sequence[Any]]],
                  namespace: str | Iterable[str] | None = None) -> None: ...

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    def one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    def scalar(self, sql: str, params: Any = ()) -> Any: ...

    def applied(self) -> list[str]: ...

    def schema_version(self) -> int: ...

    def pending_migrations(self) -> list[str]: ...

    def pool_waits(self) -> tuple[int, int]: ...

    def compact(self) -> tuple[int, int]:
        """Rewrite the database tightly; (bytes before, bytes after). SQLite only: StoreError
        on PostgreSQL, whose own VACUUM (autovacuum) reclaims space."""
        ...

    def check_writable(self) -> None:
        """Raise StoreError (ReadOnlyStore when it can be read) naming why a write would be
        refused now; cheap, and takes no write lock (a readiness probe polls it)."""
        ...

    def migrate(self) -> None: ...

    def close(self) -> None: ...

    def exact_scan(self, namespace: str, query: Any, k: int) -> list[tuple[int, float]]:
        """(rid, cosine distance) of the k nearest of every stored vector of the namespace
        (every status), nearest first, ties by rid (the query in the stored int8 form)."""
        ...
