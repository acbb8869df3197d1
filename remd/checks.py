"""Input checks: what every front end and engine entry point refuses, in one set of words.

The base layer: these read only their arguments, and raise :class:`~remd.errors.InvalidInput`
naming what was wrong. (A tag list is checked and made canonical by
:func:`remd.text.tagnames.check_tags`, since its canonical form is a matter of text.)
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from remd.errors import InvalidInput, quote
from remd.models import MAX_SQL_INTEGER

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SOURCE_MAX = 256
MAX_BUDGET = MAX_SQL_INTEGER  # the packs row stores it
FUTURE_SLACK = 86_400.0  # clocks differ: a created_at a day ahead of ours is still believable


def check_namespace(namespace: object) -> str:
    """Return the namespace if valid. Raises InvalidInput otherwise."""
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise InvalidInput(
            f"invalid namespace {quote(namespace)}: use 1-64 letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    return namespace


def check_text(text: object, max_chars: int, what: str = "memory text") -> str:
    """Return the text stripped of surrounding white space. Raises InvalidInput if unusable;
    ``what`` names the text in the message ("memory text", "query")."""
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string, not {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise InvalidInput(f"{what} is empty")
    if len(stripped) > max_chars:
        raise InvalidInput(
            f"{what} is {len(stripped)} characters; the limit is {max_chars}"
        )
    check_storable(stripped, what)
    return stripped


def check_storable(text: str, what: str) -> None:
    """Refuse what no store can hold, in the words every front end shows: a NUL (PostgreSQL
    text can't hold one) and a lone surrogate (invalid UTF-8 read from argv with
    surrogateescape, or a JSON ``"\\ud800"``). Raises InvalidInput naming ``what``."""
    if "\x00" in text:
        raise InvalidInput(f"{what} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid UTF-8") from exc


def check_field(value: object, what: str, limit: int) -> str | None:
    """None, or a string of at most ``limit`` characters a store can hold (an optional field:
    a source, a fact key, an edge's end). Raises InvalidInput naming ``what``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")
    check_storable(value, what)
    return value


def check_source(source: object) -> str | None:
    """None or the source. Raises InvalidInput."""
    return check_field(source, "source", _SOURCE_MAX)


def check_budget(budget: object) -> int:
    """Return the budget if it is a non-negative integer. Raises InvalidInput otherwise."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise InvalidInput(f"token budget must be an integer, not {type(budget).__name__}")
    if budget < 0:
        raise InvalidInput(f"token budget must be >= 0, not {budget}")
    if budget > MAX_BUDGET:  # the packs row stores it as a SQLite integer
        raise InvalidInput(f"token budget must be at most {MAX_BUDGET}, not {budget}")
    return budget


def check_time(value: object, field: str, now: float | None = None) -> float | None:
    """POSIX seconds of a time given for ``field`` (an import line's, a dated save's), or None
    for None.

    An ISO 8601 string, as an export writes it (a date alone is midnight UTC; no offset means
    UTC), a timezone-aware ``datetime``, or a ``date`` (midnight UTC). Raises InvalidInput for
    anything else: a number (12345 would be 1970: an export writes strings), a naive
    ``datetime`` (Python's are local time by convention, so reading one as UTC would move the
    memory by the host's offset), and a ``created_at`` more than a day after ``now`` (the year
    3000 is a typo, not a memory).
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise InvalidInput(f"{field} {quote(value.isoformat())} has no time zone: give "
                               "one (tzinfo=datetime.UTC) or an ISO 8601 string")
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(f"{field} {quote(value)} is not ISO 8601") from exc
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
    else:
        raise InvalidInput(f"{field} must be an ISO 8601 string such as "
                           f"\"2025-03-14T09:30:00Z\" (in Python, or a timezone-aware "
                           f"datetime), not {type(value).__name__}")
    ts = dt.timestamp()
    if field == "created_at" and now is not None and ts > now + FUTURE_SLACK:
        raise InvalidInput(f"{field} {quote(value if isinstance(value, str) else dt.isoformat())}"
                           " is more than a day in the future")
    return ts
