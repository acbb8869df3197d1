"""The connection the engine holds on PostgreSQL: a pooled psycopg connection that speaks as an
apsw connection does.

The engine's SQL is written once, in SQLite's dialect: :class:`PgConnection` runs each statement
through :func:`remd.store.postgres.translate.translate` and offers the part of apsw's connection
interface the engine uses (``execute`` returning a cursor, ``executemany``, ``total_changes``,
``in_transaction``), plus what saves round trips on a server: a read snapshot's memo,
:meth:`PgConnection.prefetch` and :meth:`PgConnection.pipelined`; and PostgreSQL's side of the
dialect differences of :class:`remd.store.seam.Connection` (the SQL:
remd/store/postgres/search.py). :func:`wrap` turns psycopg's errors into remd's. The pool and
its transactions are :mod:`remd.store.postgres.store`'s."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from remd.errors import (
    ConnectionLost,
    DatabaseLocked,
    InvalidInput,
    ReadOnlyStore,
    StoreError,
    first_line,
)
from remd.store.postgres import search as pgsearch
from remd.store.postgres.translate import as_arrays, as_unnest, group, one_row, translate
from remd.store.seam import Match, Read
from remd.store.where import redact

if TYPE_CHECKING:
    import psycopg


class _Cursor:
    """What apsw's cursor gives the engine: fetchall, fetchone, iteration."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows
        self._at = 0

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows[self._at:], []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while self._at < len(self._rows):
            self._at += 1
            yield self._rows[self._at - 1]


# A statement that writes (and, without RETURNING, returns no rows): deferred in a write
# transaction (PgConnection.deferred).
_WRITE = re.compile(r"\s*(INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def _value(v: Any) -> Any:
    if isinstance(v, bool):  # apsw binds a bool as an integer; PostgreSQL would type it boolean
        return int(v)
    if isinstance(v, str) and "\x00" in v:  # SQLite text can hold NUL, PostgreSQL's can't
        raise InvalidInput("text can't contain a NUL character (U+0000)")
    return v


def _key(sql: str, params: Any) -> tuple[str, tuple[Any, ...]]:
    """A read's key in a snapshot's memo (lists, e.g. an array parameter, as tuples)."""
    return sql, tuple(tuple(p) if isinstance(p, list) else p for p in params)


def _send(cur: Any, sql: str, params: Any, *, binary: bool = False) -> None:
    """Execute a read on a server-side binding cursor, IN lists as arrays: one statement text
    (one prepared plan) for any length."""
    text, spans = as_arrays(translate(sql, bool(params)))
    cur.execute(text, group(_params(params), spans) if params else None, binary=binary)


def _unnest(sql: str, rows: list[Any]) -> tuple[str, list[Any]] | None:
    """``sql`` (a one-row INSERT) for all of ``rows`` as one statement over arrays, and its
    parameters; None where that would not do what the rows one by one do: an upsert whose
    rows share a key (one statement can't update a row twice) or differ in their tail's
    parameters, a column of no type or of mixed types (no array type)."""
    shape = one_row(sql)
    if shape is None or isinstance(rows[0], dict):
        return None
    _, target, n = shape
    if target is not None and len({tuple(r[i] for i in target) for r in rows}) != len(rows):
        return None
    tail = rows[0][n:]
    if any(r[n:] != tail for r in rows):
        return None
    arrays, casts = [], []
    for k in range(n):
        column = [r[k] for r in rows]
        kinds = {type(v) for v in column if v is not None}
        if len(kinds) != 1:
            return None
        casts.append("text" if kinds == {str} else "")
        arrays.append(column)
    return as_unnest(sql, tuple(casts)), [*arrays, *tail]


def _params(params: Any) -> Any:
    if isinstance(params, dict):
        return {k: _value(v) for k, v in params.items()}
    return [_value(v) for v in params]


class PgConnection:
    """A pooled psycopg connection speaking to the engine as an apsw connection does."""

    def __init__(self, conn: psycopg.Connection[Any], url: str) -> None:
        self.raw = conn
        self.url = url
        self.changes = 0
        # Inside a read snapshot (PgStore.snapshot): the rows of each read already made in it.
        # The snapshot sees one state, so the same read gives the same rows: the caches'
        # coherence checks (the same change log asked by two of them) cost one round trip.
        # Any other statement empties it.
        self.memo: dict[tuple[str, tuple[Any, ...]], list[tuple[Any, ...]]] | None = None
        # A snapshot's BEGIN, not sent yet: it goes with the first statement (in the same
        # message when that is a prefetch). PostgreSQL takes the snapshot at the first
        # statement anyway, so the reads see one state all the same.
        self.pending = ""
        # Set by the store: a new pooled connection in place of a broken one (which it takes).
        self.renew: Callable[[Any], Any] | None = None
        # In a write transaction: writes that return nothing, translated and bound, not sent
        # yet. They go in one pipeline with the next statement that returns rows, or with
        # the COMMIT (:meth:`settle`): a save's inserts cost no round trip of their own.
        self.deferred: list[tuple[str, Any]] = []

    @property
    def lost(self) -> bool:
        """Whether the connection broke (the server went away): it can't be used again."""
        return bool(self.raw.broken or self.raw.closed)

    def fail(self, exc: Exception) -> Exception:
        """The error to raise for ``exc``: ConnectionLost when the connection broke."""
        if self.lost:
            return ConnectionLost(
                f"lost the connection to database {redact(self.url)!r} "
                f"({first_line(exc).strip()[:200]}): what was not committed is not stored; "
                "retry")
        return wrap(exc, self.url)

    def begin(self, sql: str) -> None:
        """Send ``sql`` (a transaction's BEGIN, nothing before it on this connection): on a
        connection found broken (an idle one the server's restart closed), again on a new one:
        nothing was done on the broken one."""
        try:
            self.script(sql)
        except ConnectionLost:
            if self.renew is None:
                raise
            self.raw = self.renew(self.raw)
            self.script(sql)

    def _begin(self) -> None:
        if self.pending:
            begin, self.pending = self.pending, ""
            self.begin(begin)

    @property
    def in_transaction(self) -> bool:
        import psycopg.pq

        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def _writing(self) -> bool:
        """In a transaction that has not failed (a write outside one is sent at once)."""
        import psycopg.pq

        return self.raw.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS

    def total_changes(self) -> int:
        self.settle()
        return self.changes

    def settle(self, then: Sequence[str] = ()) -> None:
        """Send the deferred writes, and the statements ``then`` (a COMMIT: no parameters, no
        rows), in one pipeline; an error of any of them is raised here."""
        if self.deferred or then:
            self._send_deferred(None, then)

    def _send_deferred(self, read: tuple[str, Any] | None, then: Sequence[str] = ()
                       ) -> list[tuple[Any, ...]]:
        """The deferred writes, then ``read`` (translated SQL, bound parameters) whose rows
        are returned, then ``then``: one round trip."""
        import psycopg

        pending, self.deferred = self.deferred, []
        try:
            cursors = []
            with self.raw.pipeline():
                for text, params in pending:
                    cursors.append(cur := self.raw.cursor())
                    cur.execute(text, params)
                last = self.raw.cursor()
                if read is not None:
                    last.execute(*read)
                for text in then:
                    self.raw.cursor().execute(cast(Any, text))
            self.changes += sum(max(c.rowcount, 0) for c in cursors)
            if read is None or last.description is None:
                self.changes += max(last.rowcount, 0) if read is not None else 0
                return []
            return last.fetchall()
        except psycopg.Error as exc:
            raise self.fail(exc) from exc
        except UnicodeEncodeError as exc:  # a bound string with a lone surrogate
            raise InvalidInput("value is not valid UTF-8") from exc

    def execute(self, sql: str, params: Any = ()) -> _Cursor:
        import psycopg

        self._begin()
        key = None
        if self.memo is not None:
            if sql.lstrip()[:6].upper() == "SELECT" and not isinstance(params, dict):
                key = _key(sql, params)
                if key in self.memo:
                    return _Cursor(self.memo[key])
            else:
                self.memo.clear()
        if key is None:
            bound = (translate(sql, bool(params)), _params(params) if params else None)
            if (self.memo is None and _WRITE.match(sql) and "RETURNING" not in sql.upper()
                    and self._writing()):
                self.deferred.append(bound)  # sent with the next read or the COMMIT
                return _Cursor([])
            if self.deferred:
                return _Cursor(self._send_deferred(bound))
        try:
            # Reads in a snapshot are bound server-side, so psycopg prepares the ones a
            # connection repeats (their plans are reused); everything else client-side.
            with (psycopg.Cursor(self.raw) if key is not None else self.raw.cursor()) as cur:
                if key is not None:
                    _send(cur, sql, params)
                else:
                    cur.execute(*bound)
                self.changes += max(cur.rowcount, 0) if cur.description is None else 0
                rows = cur.fetchall() if cur.description is not None else []
                if key is not None and self.memo is not None:
                    self.memo[key] = rows
                return _Cursor(rows)
        except psycopg.Error as exc:
            raise self.fail(exc) from exc
        except UnicodeEncodeError as exc:  # a bound string with a lone surrogate
            raise InvalidInput("value is not valid UTF-8") from exc

    def blobs(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """The rows of a read of binary columns (vectors), bound server-side and returned in
        binary: bytea comes back as its bytes, not as hex text twice their size to decode."""
        import psycopg

        if self.memo is not None:
            got = self.memo.get(_key(sql, params))
            if got is not None:
                return got
        self._begin()
        self.settle()
        try:
            with psycopg.Cursor(self.raw) as cur:
                _send(cur, sql, params, binary=True)
                return cur.fetchall()
        except psycopg.Error as exc:
            raise self.fail(exc) from exc

    def executemany(self, sql: str, seq: Any) -> None:
        """Run ``sql`` once per row of ``seq``: a one-row INSERT as one statement over arrays
        (:func:`_unnest`) where that does exactly what the rows one by one would; otherwise
        each row, in one pipeline."""
        import psycopg

        rows = [_params(p) for p in seq]
        if not rows:
            return
        self._begin()
        single = _unnest(sql, rows) if len(rows) > 1 else None
        if single is not None and self.memo is None and self._writing():
            self.deferred.append(single)  # one statement, no rows: with the next read
            return
        self.settle()
        try:
            with self.raw.cursor() as cur:
                if single is not None:
                    cur.execute(*single)
                else:
                    cur.executemany(translate(sql), rows)
                self.changes += max(cur.rowcount, 0)
        except psycopg.Error as exc:
            raise self.fail(exc) from exc
        except UnicodeEncodeError as exc:
            raise InvalidInput("value is not valid UTF-8") from exc

    def prefetch(self, statements: Sequence[Read] | Callable[[], Sequence[Read]],
                 then: Callable[[], Sequence[Read]] | None = None) -> None:
        """Inside a read snapshot: send ``statements`` (reads: SQL and parameters, and
        optionally True for :meth:`blobs`'s binary rows; or the callable that gives them, not
        asked outside a snapshot) in one pipeline, with the snapshot's
        BEGIN when it has not gone yet, keeping their rows for when :meth:`execute` or
        :meth:`blobs` asks them. One round trip instead of one each, each statement bound
        and prepared as those methods do. ``then`` gives more reads once the first are on
        their way: what it waits for (a vector scan on another thread) overlaps the server's
        work on them. Outside a snapshot, nothing."""
        memo = self.memo
        if memo is None:
            return
        if callable(statements):
            statements = statements()

        def unread(reads: Sequence[Read]) -> dict[tuple[str, tuple[Any, ...]], Read]:
            todo: dict[tuple[str, tuple[Any, ...]], Read] = {}
            for read in reads:
                key = _key(read[0], read[1])
                if key not in memo:
                    todo.setdefault(key, read)
            return todo

        first = unread(statements)
        if not first and then is not None:  # nothing to overlap with: one message
            first, then = unread(then()), None
        if not first:
            return
        later: dict[tuple[str, tuple[Any, ...]], Read] = {}

        def more() -> list[Read]:
            assert then is not None
            later.update((k, r) for k, r in unread(then()).items() if k not in first)
            return list(later.values())

        cursors = self._pipeline(list(first.values()), more if then is not None else None)
        for key, cur in zip([*first, *later], cursors, strict=True):
            memo[key] = cur.fetchall()

    def pipelined(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Run ``statements`` (no rows wanted) in one pipeline: one round trip, each bound
        server-side (IN lists as arrays), so the ones repeated are prepared once."""
        self._pipeline(statements)

    def _pipeline(self, first: Sequence[Read], then: Callable[[], Sequence[Read]] | None = None
                  ) -> list[Any]:
        """Send ``first``, then what ``then`` gives, in one pipeline after the pending BEGIN:
        their cursors, rows in."""
        import psycopg

        self.settle()
        begin, self.pending = self.pending, ""
        cursors: list[Any] = []
        later: list[Read] | None = None

        def send(reads: Sequence[Read]) -> None:
            for sql, params, *binary in reads:
                cursors.append(cur := psycopg.Cursor(self.raw))
                _send(cur, sql, params, binary=bool(binary and binary[0]))

        for again in (bool(begin and self.renew), False):
            cursors.clear()
            try:
                with self.raw.pipeline():
                    if begin:
                        psycopg.Cursor(self.raw).execute(cast(Any, begin))
                    send(first)
                    if then is not None:
                        if later is None:
                            later = list(then())
                        send(later)
                return cursors
            except psycopg.Error as exc:
                # A snapshot's first message (reads only) on a connection found broken: again,
                # on a new one.
                if again and self.lost and self.renew is not None:
                    self.raw = self.renew(self.raw)
                    continue
                raise self.fail(exc) from exc
            except UnicodeEncodeError as exc:
                raise InvalidInput("value is not valid UTF-8") from exc
        raise AssertionError("unreachable")

    # -- the dialect's differences (remd/store/seam.py; the SQL: postgres/search.py) -----
    def rows_per_tag(self, read: str, tids: Sequence[int], namespace: str, limit: int, *,
                     named: bool) -> _Cursor:
        cursor: _Cursor = pgsearch.rows_per_tag(self, read, tids, namespace, limit, named=named)
        return cursor

    def tokenize(self, utf8: bytes, *, query: bool) -> list[tuple[Any, ...]]:
        return pgsearch.tokenize(utf8, query=query)

    def scope(self, namespace: str) -> str:
        return namespace  # each namespace's term statistics are its own

    def count_read(self, scope: str, stem: str, quoted: str, limit: int
                   ) -> tuple[str, tuple[Any, ...]]:
        return pgsearch.COUNT, (scope, stem, limit)

    def index_text(self, rid: int, namespace: str, content: str) -> None:
        pgsearch.index_text(self, rid, namespace, content)

    def unindex_text(self, rid: int, namespace: str, content: str) -> None:
        pgsearch.unindex_text(self, rid, namespace)

    def search_read(self, match: Match, limit: int, namespace: str, *, filtered: bool
                    ) -> tuple[str, tuple[Any, ...]]:
        return pgsearch.bm25_read(match, limit, namespace, filtered=filtered)

    def search(self, match: Match, limit: int, namespace: str, *, filtered: bool
               ) -> list[tuple[int, float]]:
        scored = self.execute(*self.search_read(match, limit, namespace, filtered=filtered))
        return [(int(rid), float(score)) for rid, score in scored]

    def vector_read(self, namespace: str, keys: Sequence[int], table: str) -> Read:
        return pgsearch.vector_read(namespace, keys, table)

    def vector_rows(self, namespace: str, keys: Sequence[int], table: str
                    ) -> list[tuple[Any, ...]]:
        sql, params, _ = pgsearch.vector_read(namespace, keys, table)
        return self.blobs(sql, params)

    def log_filter(self, namespace: str) -> tuple[str, list[Any]]:
        return "namespace = ? AND ", [namespace]

    def log_intact(self, table: str, namespace: str, seen: int) -> bool:
        return pgsearch.log_intact(self, table, namespace, seen)

    def script(self, sql: str) -> None:
        """Run several statements as they are (schema files: no translation)."""
        import psycopg

        self.settle()
        try:
            self.raw.execute(cast(Any, sql))
        except psycopg.Error as exc:
            raise self.fail(exc) from exc


def wrap(exc: Exception, url: str) -> Exception:
    """Turn a psycopg error into the StoreError a caller can act on."""
    import psycopg.errors as e

    where = redact(url)
    if isinstance(exc, e.LockNotAvailable | e.DeadlockDetected | e.SerializationFailure):
        return DatabaseLocked(f"database {where!r} is busy: {exc.__class__.__name__}")
    if isinstance(exc, e.ReadOnlySqlTransaction | e.InsufficientPrivilege):
        return ReadOnlyStore(f"database {where!r} is read-only for this user")
    if isinstance(exc, e.UntranslatableCharacter | e.CharacterNotInRepertoire):
        return InvalidInput(f"value can't be stored in {where!r}: {exc}")
    if isinstance(exc, e.DiskFull):
        return StoreError(f"database {where!r}: disk is full")
    if isinstance(exc, e.OperationalError):
        return StoreError(f"cannot use database {where!r}: {first_line(exc).strip()[:200]}")
    return StoreError(f"database {where!r}: {str(exc).strip()[:300]}")
