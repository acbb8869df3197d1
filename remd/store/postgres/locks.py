"""The write locks of a PostgreSQL write transaction, and the change-log pruning at its commit.

Writes are serialised per namespace, not per database: a write transaction that names its
namespaces takes, at BEGIN, the database-wide lock ``WRITE_LOCK`` *shared* and then each
namespace's lock (``WRITE_LOCK_CLASS``, a 32-bit hash of the name) exclusive, in the order of
their keys, so two transactions on different namespaces never wait for each other and two
on the same namespace (or on namespaces whose hashes collide: more waiting, never less) take
turns. A write transaction that names none (migrations, whatever may touch every namespace)
takes ``WRITE_LOCK`` exclusive: it waits for every writer and every writer waits for it, as
every write transaction did before namespaces had their own locks.

The change logs (tag_log, node_log) stay exact for a reader of one namespace: its rows are
written only under its lock (or the exclusive one), so their ``seq`` (one sequence for the
whole table) grows in commit order within the namespace, which is all a reader of it reads
(remd/index/changelog.py). Pruning at commit keeps to the namespaces the transaction holds,
so two writers never delete the same rows (the exclusive transaction prunes the whole log).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable

WRITE_LOCK = 0x72656D64  # "remd": the database-wide lock (exclusive: every namespace)
WRITE_LOCK_CLASS = 0x72656D6E  # "remn": the class of the per-namespace locks (two-key form)
LOGS = ("tag_log", "node_log")

# What a write transaction locks: None for every namespace, else the namespaces' names.
Scope = tuple[str, ...] | None


def scope(namespace: str | Iterable[str] | None) -> Scope:
    """The namespaces a write transaction names, sorted and once each (None: all)."""
    if namespace is None:
        return None
    if isinstance(namespace, str):
        return (namespace,)
    return tuple(sorted(set(namespace)))


def key(namespace: str) -> int:
    """The namespace lock's second key: a signed 32-bit hash of its name, the same in every
    process and on every host."""
    digest = hashlib.blake2b(namespace.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"  # standard_conforming_strings is on


def lock_sql(names: Scope) -> str:
    """The statement that takes a transaction's locks (after BEGIN)."""
    if names is None:
        return f"SELECT pg_advisory_xact_lock({WRITE_LOCK:d})"
    keys = sorted({key(ns) for ns in names})
    return "SELECT " + ", ".join([f"pg_advisory_xact_lock_shared({WRITE_LOCK:d})",
                                  *(f"pg_advisory_xact_lock({WRITE_LOCK_CLASS:d}, {k:d})"
                                    for k in keys)])


def more_sql(held: Scope, names: Scope) -> str | None:
    """The statement that takes what a nested transaction on ``names`` needs beyond what its
    outer one holds (``held``), or None. Locks taken late may meet another transaction's in
    the other order: PostgreSQL then ends one of them (deadlock detected, DatabaseLocked)."""
    if held is None:
        return None
    if names is None:
        return f"SELECT pg_advisory_xact_lock({WRITE_LOCK:d})"  # from shared: waits for all
    extra = sorted({key(ns) for ns in names} - {key(ns) for ns in held})
    if not extra:
        return None
    return "SELECT " + ", ".join(f"pg_advisory_xact_lock({WRITE_LOCK_CLASS:d}, {k:d})"
                                 for k in extra)


def commit_sql(names: Scope, keep: int, step: int) -> tuple[str, ...]:
    """COMMIT, after pruning the change logs as the SQLite store does (its ``_prune_logs``:
    the oldest rows of a log once it holds shared.LOG_KEEP + a step), of the namespaces the
    transaction holds (None: the whole log), sent together. Each prune is one statement, its
    condition evaluated once before any row is looked at."""
    return _commit_sql(names, keep, step)


@functools.lru_cache(maxsize=1024)
def _commit_sql(names: Scope, keep: int, step: int) -> tuple[str, ...]:
    if names is None:
        return (*(f"DELETE FROM {log} WHERE (SELECT max(seq) - min(seq) FROM {log}) >= "
                  f"{keep + step:d} AND seq < (SELECT max(seq) FROM {log}) - {keep:d}"
                  for log in LOGS), "COMMIT")
    prunes = []
    for log in LOGS:
        for ns in names:
            own = f"namespace = {_literal(ns)}"
            prunes.append(
                f"DELETE FROM {log} WHERE {own} AND (SELECT max(seq) - min(seq) FROM {log} "
                f"WHERE {own}) >= {keep + step:d} AND seq < (SELECT max(seq) FROM {log} "
                f"WHERE {own}) - {keep:d}")
    return (*prunes, "COMMIT")
