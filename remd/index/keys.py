"""Subject keys: the live memories about an attribute, whatever words they use.

``node_keys`` holds each memory's keys (:func:`remd.text.frames.subject_keys`: "f:boss",
"h:saturday morning"), written with the memory by the graph writer. Update detection judges a
new memory against the live memories of its keys (:mod:`remd.write.supersede`); inject reaches
the live memories of a question's keys (:mod:`remd.query.newest`). Reads are bounded by
:data:`SCANNED` index rows per key, never the namespace.

The rows are derived from the text, so what reads them may change: :func:`refresh` rebuilds
them (every namespace, in batches) when the version recorded in ``remd_meta`` ('node_keys') is
not :data:`remd.text.frames.KEYS_VERSION`, when an engine opens the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remd.errors import StoreError
from remd.logs import get_logger
from remd.store.seam import Connection, Store
from remd.text.frames import KEYS_VERSION, subject_keys

log = get_logger("remd.keys")

SCANNED = 64  # newest index rows read per key (dead ones are skipped)
_BATCH = 2000  # memories re-keyed per transaction
_META = "node_keys"


def live_keyed(conn: Connection, namespace: str, keys: Sequence[str], *,
               exclude: Sequence[int] = (), limit: int = 8, synthesis: bool = False) -> list[int]:
    """The newest live memories (rids, newest first) that share one of ``keys``, at most
    ``limit``, ``exclude`` left out; syntheses only when ``synthesis``."""
    if limit <= 0:
        return []
    found: set[int] = set()
    for key in keys:
        rows: Any = conn.execute(
            "SELECT n.rid FROM (SELECT rid FROM node_keys WHERE namespace = ? AND key = ? "
            "ORDER BY rid DESC LIMIT ?) AS k JOIN nodes n ON n.namespace = ? AND n.rid = k.rid "
            "WHERE n.status = 'live' AND (? = 1 OR n.kind != 'synthesis')",
            (namespace, key, SCANNED, namespace, int(synthesis))).fetchall()
        found.update(int(r[0]) for r in rows)
    found.difference_update(exclude)
    return sorted(found, reverse=True)[:limit]


def refresh(store: Store) -> int:
    """Rebuild every memory's keys when they were read by another version of
    :func:`remd.text.frames.subject_keys` (or never); returns how many memories were read. A
    read-only file is left as it is."""
    row = store.one("SELECT value FROM remd_meta WHERE key = ?", (_META,))
    if row is not None and str(row[0]) == str(KEYS_VERSION):
        return 0
    if row is None and store.one("SELECT 1 FROM nodes LIMIT 1") is None:
        _record(store)  # a new file: nothing to read
        return 0
    done, last = 0, -1
    try:
        with store.transaction() as conn:
            conn.execute("DELETE FROM node_keys")
        while True:
            batch = store.query("SELECT rid, namespace, content FROM nodes WHERE rid > ? "
                                "ORDER BY rid LIMIT ?", (last, _BATCH))
            if not batch:
                break
            rows = [(str(ns), k, int(rid)) for rid, ns, content in batch
                    for k in subject_keys(str(content))]
            with store.transaction() as conn:
                if rows:
                    conn.executemany("INSERT INTO node_keys (namespace, key, rid) VALUES "
                                     "(?, ?, ?) ON CONFLICT (namespace, key, rid) DO NOTHING",
                                     rows)
            done += len(batch)
            last = int(batch[-1][0])
        _record(store)
    except StoreError as exc:  # read-only, or another process is at it: next open
        log.info("keys.not_refreshed", error=str(exc))
        return done
    log.info("keys.refreshed", memories=done, version=KEYS_VERSION)
    return done


def _record(store: Store) -> None:
    try:
        with store.transaction() as conn:
            conn.execute("INSERT INTO remd_meta (key, value) VALUES (?, ?) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                         (_META, str(KEYS_VERSION)))
    except StoreError:
        pass
