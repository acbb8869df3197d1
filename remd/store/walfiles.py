"""The -wal and -shm files beside a SQLite database, and who may create them.

In WAL mode SQLite needs both files to read as well as to write, and whichever process finds
them missing creates them, owned by its user, with the database's mode. A user who may only
read the database would so leave files its owner cannot write: the owner's next save fails
"read-only" until someone deletes them. So the owner keeps them (persistent WAL: they outlive
the last connection, the -wal emptied), a reader never creates them (it is refused, with the
fix), and a write refused for files another user left names them and the fix.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd

import apsw

from remd.errors import ReadOnlyStore, StoreError

SUFFIXES = ("-wal", "-shm")


def sidecars(path: str) -> list[str]:
    """The paths of the -wal and -shm files of the database at ``path``."""
    return [path + suffix for suffix in SUFFIXES]


def _names(paths: list[str]) -> str:
    return ", ".join(os.path.basename(p) for p in paths)


def _may(path: str, mode: int) -> bool:
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def check_reader(path: str) -> None:
    """Before opening ``path``: refuse a user who cannot write the database when opening it
    would create a -wal or -shm file (theirs, blocking the owner) or cannot read one.

    Raises ReadOnlyStore naming the files and the fix.
    """
    if path == ":memory:" or not os.path.exists(path) or _may(path, os.W_OK):
        return
    missing = [p for p in sidecars(path) if not os.path.exists(p)]
    if missing:
        raise ReadOnlyStore(
            f"database {path!r} is read-only for this user and lacks {_names(missing)}: "
            f"reading would create them and block the owner's writes; let the owner open it "
            f"once (any remd command), which keeps them")
    unreadable = [p for p in sidecars(path) if not _may(p, os.R_OK)]
    if unreadable:
        raise ReadOnlyStore(
            f"cannot read database {path!r}: this user cannot read {_names(unreadable)}; "
            f"let the owner open it once, which gives them the database's permissions")


def keep(conn: apsw.Connection, path: str) -> None:
    """Make ``conn`` leave the -wal and -shm files in place when it closes last (the -wal
    emptied), and give the files we own the database's permissions, so that a reader the
    database's mode lets in can open them without creating its own."""
    flag = ctypes.c_int(1)
    conn.file_control("main", apsw.SQLITE_FCNTL_PERSIST_WAL, ctypes.addressof(flag))
    # Any limit >= 0 empties the kept -wal when the last connection closes; this one also
    # trims a -wal that a long read let grow past it.
    conn.execute("PRAGMA journal_size_limit=67108864")
    if path == ":memory:":
        return
    with contextlib.suppress(OSError):  # gone, or not ours: nothing to align
        mode = os.stat(path).st_mode & 0o777
        for side in sidecars(path):
            info = os.stat(side)
            if info.st_uid == os.geteuid() and info.st_mode & 0o777 != mode:
                os.chmod(side, mode)


def why_read_only(path: str) -> StoreError:
    """The error of a write SQLite refused as read-only: it names a -wal or -shm file another
    user left that this one cannot write, and how to get rid of it."""
    blocking = [p for p in sidecars(path) if os.path.exists(p) and not _may(p, os.W_OK)]
    if not blocking or not _may(path, os.W_OK):
        return ReadOnlyStore(f"database {path!r} is read-only")
    owner = _owner(blocking[0])
    return ReadOnlyStore(
        f"database {path!r} is read-only: {_names(blocking)} beside it belong to {owner}; "
        f"delete them while no process has the database open")


def _owner(path: str) -> str:
    try:
        uid = os.stat(path).st_uid
    except OSError:
        return "another user"
    try:
        return f"user {pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"uid {uid}"
