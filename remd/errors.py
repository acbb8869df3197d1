"""The one error tree of remd.

Every error a caller can act on is a :class:`RemdError`; each subclass also derives from the
builtin that best describes it, so ``except LookupError`` keeps working for callers that do not
know remd.
"""

from __future__ import annotations

QUOTE_LIMIT = 80  # characters of user input an error message quotes


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of user input for an error message, cut to ``limit`` characters plus "…"
    (a 10,000-character id is not echoed whole)."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[:limit] + "…")
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, or its type's name when it has none: what every
    front end shows a user (a CLI line, an HTTP error message, an MCP tool error)."""
    lines = str(exc).splitlines()
    return lines[0] if lines else type(exc).__name__


class RemdError(Exception):
    """Base class of every error remd raises on purpose."""


class InvalidInput(RemdError, ValueError):
    """A caller passed a value remd refuses (empty text, bad namespace, bad budget, ...)."""


class NotFound(RemdError, LookupError):
    """An id (memory, pack, run, tag) that does not exist in the namespace."""

    def __init__(self, what: str, ident: object, namespace: str | None = None) -> None:
        self.what = what
        self.ident = ident
        self.namespace = namespace
        where = f" in namespace {quote(namespace)}" if namespace is not None else ""
        super().__init__(f"no {what} {quote(ident)}{where}")


class StoreError(RemdError):
    """The database file cannot be used (not SQLite, corrupt, read-only, full)."""


class ReadOnlyStore(StoreError):
    """The database file can be read but not written (permissions, a read-only mount)."""


class DatabaseLocked(StoreError, TimeoutError):
    """Another process held the write lock past the busy timeout."""


class PoolExhausted(DatabaseLocked):
    """Every connection of the process's pool stayed leased past ``store.pool_wait_ms``:
    the process is overloaded; retry later."""


class ConnectionLost(StoreError, ConnectionError):
    """The connection to a database server broke (the server restarted, the network failed):
    what the transaction had not committed is not stored; retry. (A statement that is safe to
    send again, the first of a transaction or of a read, is sent again on a new connection
    before this is raised.)"""


class SchemaVersionError(StoreError):
    """The database was written by a newer remd than this one."""


class ConfigError(RemdError, ValueError):
    """The configuration file, environment or flags hold an invalid value."""


class LLMError(RemdError):
    """The LLM endpoint failed or answered with something unusable."""


class RollbackRefused(RemdError):
    """A REM run cannot be rolled back (a later run built on it, or it was already undone)."""


class Conflict(RemdError):
    """The operation conflicts with the graph's current state (e.g. a tag hierarchy cycle)."""


class NotDenser(RemdError):
    """A cluster can't be written as a synthesis denser than its members without losing what
    they say: it is left as it was (the REM run records it as skipped)."""


class BackupError(RemdError):
    """A backup cannot be made, or a copy fails its check (remd/store/sqlite/backup.py)."""


class DestinationExists(BackupError, FileExistsError):
    """The backup's destination exists already (and ``force`` was not given)."""


class BackupUnsupported(BackupError):
    """A backup of (or to) a PostgreSQL database: the server's own ``pg_dump`` makes it."""
