"""Reading the change logs (``tag_log``, ``node_log``) for an in-process cache of one namespace.

The logs are filled by triggers whoever writes, and read in the reader's own snapshot
(remd/index/graphcache.py, remd/index/nodemirror.py, remd/index/lexical.py). On SQLite they are the
file's: one
log for every namespace, its rows only ids, and a reader skips the other namespaces' ids. On
PostgreSQL each row also carries its namespace and a reader reads only its own, so that every
statement names one namespace (a sharded database routes it to one shard); a SQLite file does
not pay the column's bytes on every logged change.

Pruning drops the oldest rows of the whole log (remd/store/sqlite.py): a reader whose last look is
older than the oldest row left reloads.
"""

from __future__ import annotations

from typing import Any

from remd.store.postgres import is_postgres
from remd.store.sqlite import int_scalar


def _own(conn: Any, namespace: str) -> tuple[str, list[Any]]:
    """The condition that keeps ``namespace``'s rows, and its parameters."""
    if is_postgres(conn):
        return "namespace = ? AND ", [namespace]
    return "", []


def newest_probe(conn: Any, table: str, namespace: str) -> tuple[str, list[Any]]:
    """The statement :func:`newest` runs (a reader's first question at each look)."""
    own, params = _own(conn, namespace)
    return f"SELECT max(seq) FROM {table} WHERE {own}1 = 1", params


def newest(conn: Any, table: str, namespace: str) -> int:
    """The newest entry a reader of ``namespace`` must have seen (0: none)."""
    return int_scalar(conn, *newest_probe(conn, table, namespace))


def intact(conn: Any, table: str, namespace: str, seen: int) -> bool:
    """Does the log still hold every entry after ``seen`` (the newest entry at the reader's
    last look)? Pruning drops a prefix of the whole log, so on PostgreSQL they are all there
    if entry ``seen`` is (a reader that saw none, ``seen`` 0, cannot tell: no)."""
    if is_postgres(conn):
        return seen > 0 and conn.execute(
            f"SELECT 1 FROM {table} WHERE namespace = ? AND seq = ?", (namespace, seen)
        ).fetchone() is not None
    return int_scalar(conn, f"SELECT min(seq) FROM {table}") <= seen + 1


def since(conn: Any, table: str, columns: str, namespace: str, seen: int, limit: int,
          where: str = "") -> list[tuple[Any, ...]]:
    """``columns`` of the entries after ``seen`` (at most ``limit``), ``where`` also holding."""
    own, params = _own(conn, namespace)
    return list(conn.execute(
        f"SELECT {columns} FROM {table} WHERE {own}seq > ? {where} LIMIT ?",
        (*params, seen, limit)))
