"""The WAL checkpoint of a SQLite file, on a thread of its own (remd.store.sqlite.Store sets its
hook on every connection it opens)."""

from __future__ import annotations

import contextlib
import threading

import apsw

from remd.config import StoreConfig
from remd.logs import get_logger
from remd.store.sqlite.walfiles import keep

log = get_logger("remd.store")  # the store's logger, as before the checkpointer had a module


class Checkpointer:
    """Copies the WAL back into the database file on a thread of its own.

    SQLite's automatic checkpoint runs inside the commit that takes the WAL past its threshold,
    so one caller in a few dozen (an inject recording its pack, a save) paid for copying
    ~1000 pages and the fsyncs: 10-30 ms on this project's VM, the inject's slowest
    percentile. This hook replaces it (``sqlite3_wal_hook`` turns the automatic one off): a
    commit that leaves ``pages`` or more in the WAL only wakes the thread, which runs a
    PASSIVE checkpoint on its own connection (it never waits for readers or writers; what it
    cannot copy yet is copied next time). Durability is unchanged: in WAL mode a commit is on
    disk in the WAL before the checkpoint. The thread and its connection start with the first
    checkpoint, so a Store that never writes much has neither.
    """

    def __init__(self, path: str, config: StoreConfig) -> None:
        self.path = path
        self.config = config
        self.pages = config.checkpoint_pages
        self.runs = 0  # checkpoints done (tests look)
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()

    def hook(self, conn: apsw.Connection, name: str, pages: int) -> int:
        """The WAL hook: cheap, called after every commit with the WAL's size in pages."""
        if pages >= self.pages and not self._stop:
            with self._guard:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, daemon=True,
                                                    name=f"remd-checkpoint:{self.path}")
                    self._thread.start()
            self._wake.set()
        return apsw.SQLITE_OK

    def _run(self) -> None:
        conn: apsw.Connection | None = None
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    if conn is None:
                        conn = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READWRITE)
                        conn.set_busy_timeout(self.config.busy_timeout_ms)
                        keep(conn, self.path)  # it may be the last to close
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.runs += 1
                except apsw.Error as exc:  # the next commit past the threshold tries again
                    log.warning("store.checkpoint_failed", path=self.path, error=str(exc))
        finally:
            if conn is not None:
                with contextlib.suppress(apsw.Error):
                    conn.close()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection."""
        with self._guard:
            self._stop = True
            thread, self._thread = self._thread, None
        self._wake.set()
        if thread is not None:
            thread.join()
