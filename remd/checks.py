"""Input checks: what every front end and engine entry point refuses, in one set of words.

The base layer: these read only their arguments, and raise :class:`~remd.errors.InvalidInput`
naming what was wrong. (A tag list is checked and made canonical by
:func:`remd.text.tagnames.check_tags`, since its canonical form is a matter of text.)
"""

from __future__ import annotations

import re

from remd.errors import InvalidInput, quote
from remd.models import MAX_SQL_INTEGER

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SOURCE_MAX = 256
MAX_BUDGET = MAX_SQL_INTEGER  # the packs row stores it


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
