"""The SQLite database file, the -wal and -shm files beside it, and who may write them.

The file a store opened must stay the file at its path: one deleted (or moved away) or replaced
by another while the store has it open still takes writes, into a file nobody will open again,
lost when the store closes. :class:`Identity` remembers which file was opened (device, inode)
and refuses, naming the path, once the path holds another file or none.

Whether a write would be refused (a read-only mount, a file this user may not write or marked
immutable, a directory where a missing -wal or -shm cannot be made) is :func:`check_writable`:
syscalls only, for a readiness probe that is polled.

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
import fcntl
import os
import pwd
import struct
import sys
from dataclasses import dataclass

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

    Raises StoreError for a directory or a file this user may not read, ReadOnlyStore naming
    the files and the fix.
    """
    if path == ":memory:" or not os.path.exists(path):
        return
    if os.path.isdir(path):
        raise StoreError(f"database {path!r} is a directory, not a file")
    if not _may(path, os.R_OK):
        info = os.stat(path)
        raise StoreError(f"cannot read database {path!r}: this user may not (mode "
                         f"{info.st_mode & 0o777:04o}, owned by {_owner(path)})")
    if _may(path, os.W_OK):
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


SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite(path: str) -> bool:
    """Whether the file at ``path`` starts with SQLite's header (False if it can't be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def holders(path: str) -> list[int] | None:
    """The processes holding a lock on the file at ``path`` or on its -shm: a SQLite database
    open anywhere (a connection in WAL mode locks its -shm for as long as it is open). Read from
    /proc/locks, without opening the files (closing a descriptor would drop this process's own
    SQLite locks on them); None where there is no such list (not Linux)."""
    inodes = set()
    for candidate in (path, path + "-shm"):
        with contextlib.suppress(OSError):
            info = os.stat(candidate)
            inodes.add(f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}")
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    pids: list[int] = []
    for line in lines:  # "1: POSIX  ADVISORY  READ 22215 fe:00:2228771 128 128"
        fields = line.split()
        for i, field in enumerate(fields[1:], start=1):
            if field.count(":") == 2 and field in inodes:
                with contextlib.suppress(ValueError):
                    pid = int(fields[i - 1])
                    if pid not in pids:
                        pids.append(pid)
    return pids


@dataclass(frozen=True)
class Identity:
    """The file a store opened: its device and inode then, and its path (as the store names
    it, and absolute: a later chdir moves nothing)."""

    path: str
    where: str
    dev: int
    ino: int

    @classmethod
    def of(cls, path: str) -> Identity:
        """The file at ``path`` now. Raises StoreError when there is none."""
        where = os.path.abspath(path)
        try:
            info = os.stat(where)
        except OSError as exc:
            raise StoreError(f"cannot stat database {path!r}: {exc.strerror}") from exc
        return cls(path, where, info.st_dev, info.st_ino)

    def check(self) -> None:
        """Raise StoreError when the file at the path is no longer the one opened: deleted
        (or moved away), or replaced by another. One ``stat``."""
        try:
            info = os.stat(self.where)
        except FileNotFoundError:
            raise StoreError(
                f"database {self.path!r} was deleted (or moved away) while open: nothing more "
                f"is written to it; put the file back and reopen it") from None
        except OSError as exc:
            raise StoreError(f"cannot stat database {self.path!r}: {exc.strerror}") from exc
        if (info.st_dev, info.st_ino) != (self.dev, self.ino):
            raise StoreError(
                f"database {self.path!r} was replaced by another file while open: nothing "
                f"more is written to the one opened; reopen the database")

    def settle(self, conn: apsw.Connection) -> None:
        """Before the store closes: when the path no longer holds the file opened, copy the WAL
        into that file (where it is now) and empty the WAL. SQLite's own close skips the
        checkpoint of a file moved or deleted, and would leave frames in a -wal still at the
        path, to be read as pages of whatever file is there now."""
        with contextlib.suppress(StoreError, apsw.Error):
            try:
                self.check()
            except StoreError:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def check_writable(path: str) -> None:
    """Raise ReadOnlyStore naming why SQLite would refuse a write to the database at ``path``:
    a read-only file system, a file this user may not write (mode, owner, immutable), a -wal
    or -shm beside it this user may not write, or a missing one the directory cannot take."""
    if path == ":memory:":
        return
    if not _may(path, os.W_OK):
        raise ReadOnlyStore(f"database {path!r} is read-only: {_why_not(path)}")
    folder = os.path.dirname(os.path.abspath(path))
    for side in sidecars(path):
        if os.path.exists(side):
            if not _may(side, os.W_OK):
                raise ReadOnlyStore(f"database {path!r} is read-only: "
                                    f"{os.path.basename(side)} {_why_not(side)}")
        elif not _may(folder, os.W_OK | os.X_OK):
            raise ReadOnlyStore(
                f"database {path!r} is read-only: {os.path.basename(side)} is missing and "
                f"its directory {folder!r} {_why_not(folder)}")


_FS_IOC_GETFLAGS = 0x80086601  # linux/fs.h (64-bit); the kernel reads and writes an int
_FS_IMMUTABLE_FL = 0x10


def _why_not(path: str) -> str:
    """Why this user may not write ``path`` (known not writable), in a few words."""
    with contextlib.suppress(OSError):
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "is on a file system mounted read-only"
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                flags = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, struct.pack("i", 0))
            finally:
                os.close(fd)
            if struct.unpack("i", flags)[0] & _FS_IMMUTABLE_FL:
                return "is marked immutable (chattr +i)"
    try:
        info = os.stat(path)
    except OSError:
        return "cannot be written by this user"
    return (f"cannot be written by this user (mode {info.st_mode & 0o777:04o}, "
            f"owned by {_owner(path)})")
