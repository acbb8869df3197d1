"""Reaching a PostgreSQL server: one connection attempt that fails with libpq's reason (the
URL shown without its password: :func:`remd.store.where.redact`).

The store's pool (remd.store.postgres.store) connects in the background and retries; a URL that can
never connect would only show as a busy pool after ``store.pool_wait_ms``. :func:`reach` asks once,
up front, so a server that is down or a wrong database, role or sslmode is a StoreError that
names the cause, and not a PoolExhausted that tells the caller to retry.
"""

from __future__ import annotations

import contextlib
import math
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from remd.errors import StoreError, first_line, quote
from remd.store.where import redact

if TYPE_CHECKING:
    from remd.config import StoreConfig


def reach(url: str, config: StoreConfig) -> None:
    """Open and close one connection outside the pool, waiting at most ``pool_wait_ms``
    (2 s at least) unless the URL sets ``connect_timeout``. Raises StoreError naming the
    cause when it can't connect."""
    import psycopg.conninfo

    try:  # libpq would wait for ever on a host that drops packets
        wait = ({} if "connect_timeout" in psycopg.conninfo.conninfo_to_dict(url)
                else {"connect_timeout": max(2, math.ceil(config.pool_wait_ms / 1000))})
        psycopg.connect(psycopg.conninfo.make_conninfo(url, **wait)).close()
    except psycopg.Error as exc:
        raise _unreachable(exc, url) from exc


def _unreachable(exc: Exception, url: str) -> StoreError:
    """The StoreError of a connection that failed: where to (no password) and libpq's reason
    (its first line, without psycopg's prefix; the password scrubbed should libpq quote it)."""
    reason = first_line(exc).strip().replace("FATAL:  ", "")
    for prefix in ("connection failed: ", "connection is bad: "):
        reason = reason.removeprefix(prefix)
    with contextlib.suppress(ValueError):
        password = urlsplit(url).password
        if password:
            reason = reason.replace(password, "***")
    return StoreError(f"cannot connect to {quote(redact(url))}: {reason}")
