"""sd_notify without a library: one datagram to ``$NOTIFY_SOCKET`` per state change.

systemd (``Type=notify``) passes the socket path in ``NOTIFY_SOCKET``; a leading ``@`` means
an abstract-namespace socket. When the variable is unset (not under systemd, or
``Type=simple``) every call is a no-op, so the daemon runs the same everywhere.
``WATCHDOG_USEC`` (set when the unit has ``WatchdogSec=``) asks for ``WATCHDOG=1`` at least
that often; we ping at half the period, as sd_watchdog_enabled(3) recommends.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from remd.logs import get_logger

log = get_logger("remd.notify")


class Notifier:
    """Sends sd_notify states. Never raises: a lost notification must not stop the daemon
    (systemd then times the unit out, which is the visible failure)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        environ = os.environ if env is None else env
        raw = environ.get("NOTIFY_SOCKET") or None
        self.address: bytes | None = None
        if raw is not None:
            # Abstract sockets are spelt with a leading '@' and addressed with a NUL byte.
            path = os.fsencode(raw)
            self.address = b"\0" + path[1:] if path.startswith(b"@") else path
        self.watchdog_seconds = _watchdog_interval(environ)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *states: str) -> bool:
        """Send ``KEY=VALUE`` lines in one datagram; True if it was sent."""
        if self.address is None or not states:
            return False
        payload = "\n".join(states).encode("utf-8")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.connect(self.address)
                sock.sendall(payload)
        except OSError as exc:
            log.warning("notify.failed", error=str(exc))
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []),
                         f"MAINPID={os.getpid()}")

    def reloading(self) -> bool:
        return self.send("RELOADING=1")

    def stopping(self) -> bool:
        return self.send("STOPPING=1")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={text}")


def _watchdog_interval(env: Mapping[str, str]) -> float | None:
    """Seconds between watchdog pings, or None when no watchdog is asked of this process."""
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None  # the watchdog is meant for another process (we were forked off it)
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 2e6 if value > 0 else None
