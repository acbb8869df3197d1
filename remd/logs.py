"""Logging set-up, in one place: structlog events carried by standard-library logging.

The library never configures logging. Each module takes its logger from :func:`get_logger`: a
structlog logger whose events become records of the stdlib logger of the same name (under
``remd``), and ``remd`` has a ``NullHandler``, so a host that configures nothing sees nothing and
a host that does decides where remd's events go and at which level.

``configure_logging`` is for the front ends, which own their process (the CLI, ``remd serve``,
``remd mcp``). It renders remd's events *and* the standard-library records of the libraries
underneath (uvicorn, APScheduler, the MCP SDK) with one renderer on one stream, so a journal or
a log shipper sees one JSON object per line.

In what ``configure_logging`` writes, two rules hold whatever the level: secrets are never
written (keys such as ``api_key`` or ``token`` are replaced, and the configured secret *values*
are masked wherever they appear, e.g. in a URL the HTTP library logs or an error message a
server echoed), and memory contents (``content``, ``query``, ...) appear only at debug level —
at info and above they are dropped from the event, so a production journal never holds what
the agents remember.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

LogFormat = Literal["auto", "json", "console"]
LogLevel = Literal["debug", "info", "warning", "error"]

SECRET_KEYS = frozenset({
    "api_key", "apikey", "token", "http_token", "authorization", "password", "secret",
    "bearer",
})
CONTENT_KEYS = frozenset({
    "content", "text", "query", "prompt", "answer", "synthesis", "memory", "memories",
    "items", "body",
})
REDACTED = "[redacted]"
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}

# What a remd logger does when called: drop the event unless stdlib logging wants its level
# (before any other work), add the context variables while still in the caller's thread, and
# hand the event dict to the stdlib logger for a ProcessorFormatter to render.
_CHAIN: list[Processor] = [
    structlog.stdlib.filter_by_level,
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
]

# Without a handler of its own, stdlib's last-resort handler would print remd's warnings on
# stderr of a host that configured no logging. The same for the pool of remd's PostgreSQL
# store (psycopg_pool logs each failed reconnection on "psycopg.pool"): a host that configures
# logging still gets those records (they propagate), and remd's own "pgstore.unreachable".
for _quiet in ("remd", "psycopg.pool"):
    logging.getLogger(_quiet).addHandler(logging.NullHandler())


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """The structlog logger of module ``name`` (``"remd.xxx"``), routed to the stdlib logger
    of that name. It ignores structlog's global configuration, which belongs to the host."""
    return structlog.stdlib.BoundLogger(logging.getLogger(name), processors=_CHAIN, context={})


class _Collect(logging.Handler):
    def __init__(self, events: list[EventDict]) -> None:
        super().__init__(logging.DEBUG)
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        event = dict(record.msg) if isinstance(record.msg, dict) else {"event": record.getMessage()}
        event["log_level"] = record.levelname.lower()
        self.events.append(event)


@contextlib.contextmanager
def capture_events() -> Iterator[list[EventDict]]:
    """Collect remd's events of every level, from every thread, while the block runs.

    Each event is its dict as logged, plus ``log_level`` — the shape of
    ``structlog.testing.capture_logs()``, which cannot see remd's events (its loggers have
    their own processors). Like capture_logs, the events are kept from the handlers outside
    ``remd`` meanwhile. Meant for tests.
    """
    events: list[EventDict] = []
    handler = _Collect(events)
    logger = logging.getLogger("remd")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield events
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def redact(_logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
    """Replace secrets always; drop memory contents unless the event is at debug level."""
    debug = method == "debug" or event.get("level") == "debug"
    for key in list(event):
        lowered = key.lower()
        if lowered in SECRET_KEYS:
            event[key] = REDACTED
        elif lowered in CONTENT_KEYS and not debug:
            del event[key]
    return event


class Scrub:
    """Masks every occurrence of the given secret values in an event, whatever its key.

    Runs last before rendering (after tracebacks are formatted), on structlog events and on the
    records of the libraries underneath alike: a key-based rule cannot see a password inside a
    URL that httpx logs, or an API key that a server repeated in its error message.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def clean(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def __call__(self, _logger: WrappedLogger, _method: str, event: EventDict) -> EventDict:
        if self.secrets:
            for key, value in event.items():
                event[key] = self._value(value)
        return event

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, bool | int | float) or value is None:
            return value
        text = str(value)  # lists, dicts, exceptions: rendered as text only if they hold one
        cleaned = self.clean(text)
        return value if cleaned == text else cleaned


def _renderer(fmt: LogFormat, stream: TextIO) -> Processor:
    use_console = fmt == "console" or (fmt == "auto" and stream.isatty())
    if use_console:
        return structlog.dev.ConsoleRenderer(colors=stream.isatty())
    return structlog.processors.JSONRenderer(sort_keys=False)


def configure_logging(fmt: LogFormat = "auto", level: LogLevel = "info",
                      stream: TextIO | None = None, secrets: Iterable[str] = ()) -> None:
    """Render remd's events and stdlib logging on ``stream`` (default stdout) as JSON lines, or
    as console text when ``fmt`` is "console" (or "auto" and the stream is a terminal).
    ``secrets`` are values (API key, bearer token, ...) masked wherever they would appear.

    For front ends only: it sets up the root logger (and structlog's defaults) of the process.
    Safe to call again (SIGHUP reload): the previous handler is replaced, not duplicated.
    """
    out = sys.stdout if stream is None else stream
    threshold = _LEVELS[level]
    renderer = _renderer(fmt, out)
    scrub = Scrub(secrets)
    # remd's events arrive as event dicts (see get_logger); the records of the libraries
    # underneath (uvicorn, apscheduler, mcp) are turned into one first, then all of them go
    # through the same processors.
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name,
                           structlog.contextvars.merge_contextvars],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.add_log_level,
                    structlog.processors.TimeStamper(fmt="iso", utc=True),
                    redact, structlog.processors.format_exc_info, scrub, renderer],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    handler.set_name("remd")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "remd"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(threshold)
    # APScheduler logs every job execution at info; only its problems are worth a line.
    logging.getLogger("apscheduler").setLevel(max(threshold, logging.WARNING))
    # remd's loggers don't need this. Any other structlog logger of the process takes the same
    # road instead of structlog's default, which prints on stdout: the MCP protocol's channel.
    structlog.configure(
        processors=_CHAIN,
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
