"""What an item's text is in a pack: its saved text, and its date when the caller asks.

Every item carries its date (:func:`item_date`: when it was said; a synthesis, the span of
its members). With ``dated`` the date is written before the text ("[2025-03-05] ...") and each
relative date in it ("yesterday", "next Friday") gets its day after it
(:func:`remd.text.relative.annotate`), resolved against when the memory was said: read months
later, "yesterday" still says when. The date counts in the budget like the rest of the text.
Pure functions.
"""

from __future__ import annotations

from datetime import UTC, datetime

from remd.text.relative import annotate
from remd.text.words import split_header

__all__ = ["DATE_SAMPLE", "dated_text", "item_date", "prefix", "stamped"]

DATE_SAMPLE = "[2025-03-05] "  # what the packer counts for a date before it reads the texts


def _iso(at: float) -> str:
    try:
        return datetime.fromtimestamp(at, UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return ""


def item_date(created_at: float, since: float | None = None) -> str:
    """The ISO day it was said, or "FIRST/LAST" (ISO 8601 interval) for a span of days (a
    synthesis, from its earliest member's)."""
    last = _iso(created_at)
    first = _iso(since) if since is not None else last
    return last if not first or first == last else f"{first}/{last}"


def prefix(date: str) -> str:
    """The text written before a dated item: "[2025-03-05] " or "[2025-01-12 to 2025-03-05] "."""
    return f"[{date.replace('/', ' to ')}] " if date else ""


def dated_text(content: str, date: str, said_at: float) -> str:
    """``content`` with its date before it and its relative dates resolved; a chat turn that
    starts with its own stamp ("[8 May, 2023] Caroline: ...") keeps only that."""
    stamp, _, _ = split_header(content)
    body = annotate(content, said_at)
    return body if stamp else prefix(date) + body


def stamped(content: str) -> bool:
    """Does ``content`` begin with its own date stamp (a transcript turn, "[8 May, 2023] ...")?"""
    return bool(split_header(content)[0])
