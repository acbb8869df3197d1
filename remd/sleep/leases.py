"""The REM lease: one run per namespace at a time.

A row of ``remd_meta`` (key ``rem_lease:<namespace>``: run id, pid, host, heartbeat) is taken
inside ``BEGIN IMMEDIATE`` when a run starts (:func:`remd.sleep.remruns.start_run`), its heartbeat
renewed with each committed cluster, and deleted when the run finishes or is rolled back. A
lease whose process is gone, or whose heartbeat is older than ``rem.lease_seconds``, is dead.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any

from remd.store.seam import Connection


def lease_key(namespace: str) -> str:
    return f"rem_lease:{namespace}"


def alive(lease: dict[str, Any], now: float, lease_seconds: float) -> bool:
    """Whether the process holding a lease may still be running its REM run."""
    if now - float(lease.get("heartbeat", 0.0)) > lease_seconds:
        return False
    if lease.get("host") != socket.gethostname():
        return True  # can't see its processes: trust the heartbeat
    try:
        os.kill(int(lease.get("pid", 0)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def read_lease(conn: Connection, namespace: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM remd_meta WHERE key = ?",
                       (lease_key(namespace),)).fetchone()
    return json.loads(row[0]) if row else None


def write_lease(conn: Connection, namespace: str, run_id: str, at: float) -> None:
    value = json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(),
                        "heartbeat": at})
    conn.execute("INSERT INTO remd_meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                 "DO UPDATE SET value = excluded.value", (lease_key(namespace), value))
