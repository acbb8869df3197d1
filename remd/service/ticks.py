"""What the daemon reports and what it is handed: the report of a tick (what it did in each
namespace), and the shape of the HTTP front end ``remd serve`` hands it (so the daemon never
imports a front end).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from pydantic import SecretStr

from remd.config import Config
from remd.hosting import EngineHost


# -- what a tick did ---------------------------------------------------------------------------
class TickOutcome(StrEnum):
    """What a tick did in one namespace."""

    QUIET = "quiet"  # no trigger fired
    RAN = "ran"  # a REM run completed
    INTERRUPTED = "interrupted"  # a stop was requested mid-cycle
    BUSY = "busy"  # another process is consolidating it
    FAILED = "failed"


@dataclass(frozen=True, kw_only=True)
class NamespaceTick:
    """One namespace at one tick."""

    namespace: str
    fired: tuple[str, ...]
    outcome: TickOutcome
    run_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class TickReport:
    now: float
    namespaces: tuple[NamespaceTick, ...] = ()
    busy: bool = False  # the previous tick was still running
    stopped: bool = False  # a stop was requested before every namespace was seen
    embedded: int = 0  # memories of the embedding backlog embedded by this tick

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(t.run_id for t in self.namespaces if t.run_id is not None)


class HttpFront(Protocol):
    """What the daemon needs of its HTTP front end (:class:`remd.http.app.HttpServer`): start
    it, swap its token on a reload, drain and stop it on SIGTERM."""

    host: str
    port: int

    @property
    def alive(self) -> bool: ...

    def start(self) -> None: ...

    def set_token(self, token: SecretStr | None) -> None: ...

    def drain(self, seconds: float) -> None: ...

    def stop(self) -> None: ...


# The HTTP front end over the engine host, from the config and the default namespace.
HttpFrontFactory = Callable[[EngineHost, Config, str], HttpFront]
