"""Logging set-up, in one place: structlog events, JSON lines by default.

``configure_logging`` is called once by the long-running front ends (``remd serve``,
``remd mcp``). It renders structlog events *and* the standard-library records of the libraries
underneath (uvicorn, APScheduler, the MCP SDK) with one renderer on one stream, so a journal or
a log shipper sees one JSON object per line.

Two rules hold whatever the level: secrets are never written (keys such as ``api_key`` or
``token`` are replaced, and the configured secret *values* are masked wherever they appear,
e.g. in a URL the HTTP library logs or an error message a server echoed), and memory contents
(``content``, ``query``, ...) appear only at debug level — at info and above they are dropped
from the event, so a production journal never holds what the agents remember.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
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
    """Route structlog and stdlib logging to ``stream`` (default stdout) as JSON lines, or as
    console text when ``fmt`` is "console" (or "auto" and the stream is a terminal).
    ``secrets`` are values (API key, bearer token, ...) masked wherever they would appear.

    Safe to call again (SIGHUP reload): the previous handler is replaced, not duplicated.
    """
    out = sys.stdout if stream is None else stream
    threshold = _LEVELS[level]
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    renderer = _renderer(fmt, out)
    scrub = Scrub(secrets)
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, scrub, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    # Standard-library records (uvicorn, apscheduler, mcp) go through the same processors.
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, scrub, renderer],
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

