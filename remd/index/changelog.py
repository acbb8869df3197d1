"""Reading the change logs (``tag_log``, ``node_log``) for an in-process cache of one namespace.

The logs are filled by triggers whoever writes, and read in the reader's own snapshot
(remd/index/graphcache.py, remd/index/nodemirror.py, remd/index/lexical.py). On SQLite they are the
file's: one
log for every namespace, its rows only ids, and a reader skips the other namespaces' ids. On
PostgreSQL each row also carries its namespace and a reader reads only its own, so that every
statement names one namespace (a sharded database routes it to one shard); a SQLite file does
not pay the column's bytes on every logged change.

Pruning drops the oldest rows of the whole log (remd/store/sqlite/store.py): a reader whose last
look is older than the oldest row left reloads.
"""

from __future__ import annotations

from typing import Any

from remd.store import int_scalar
from remd.store.seam import Connection


def _own(conn: Connection, namespace: str) -> tuple[str, list[Any]]:
    """The condition that keeps ``namespace``'s rows, and its parameters."""
    return conn.log_filter(namespace)


def newest_probe(conn: Connection, table: str, namespace: str) -> tuple[str, list[Any]]:
    """The statement :func:`newest` runs (a reader's first question at each look)."""
    own, params = _own(conn, namespace)
    return f"SELECT max(seq) FROM {table} WHERE {own}1 = 1", params


def newest(conn: Connection, table: str, namespace: str) -> int:
    """The newest entry a reader of ``namespace`` must have seen (0: none)."""
    return int_scalar(conn, *newest_probe(conn, table, namespace))


def intact(conn: Connection, table: str, namespace: str, seen: int) -> bool:
    """Does the log still hold every entry after ``seen`` (the newest entry at the reader's
    last look)? Pruning drops a prefix of the whole log: on SQLite its oldest entry tells, on
    PostgreSQL (whose sequence may skip numbers) entry ``seen`` of the namespace (a reader
    that saw none, ``seen`` 0, cannot tell: no)."""
    return conn.log_intact(table, namespace, seen)


def since(conn: Connection, table: str, columns: str, namespace: str, seen: int, limit: int,
          where: str = "") -> list[tuple[Any, ...]]:
    """``columns`` of the entries after ``seen`` (at most ``limit``), ``where`` also holding."""
    own, params = _own(conn, namespace)
    return list(conn.execute(
        f"SELECT {columns} FROM {table} WHERE {own}seq > ? {where} LIMIT ?",
        (*params, seen, limit)))
