"""Dates a query names, as time ranges to check memories' save times against.

A dialogue turn rarely carries its date in its words or its vector ("I went to the support
group yesterday"), yet agents ask "what did she do on 1 May, 2022?". Memories are dated by
when they were saved (``created_at``, UTC), so :func:`query_period` turns the query's dates into
ranges and :meth:`Period.covers` is a cheap test on candidates already found, never a scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from remd.text.words import YEAR, find_dates

DAY = 86400.0

# Dates a query names, read with remd.text.words's date grammar (the one memories are read with):
# "on 1 May, 2022", "on May 1st, 2022" or "2022-05-01" is a day, "in October 2023" a month,
# "in 2023" a year, "in June" that month of any year. A month named alone counts only after a
# word that makes it a time ("in", "during", "last", ...): "May I ask", "we march on" and
# "what did June say" name no month.


@dataclass(frozen=True)
class Period:
    """When a query says something happened: time ranges, or months of any year."""

    ranges: tuple[tuple[float, float], ...] = ()  # [start, end) POSIX seconds, UTC
    months: frozenset[int] = frozenset()  # 1-12, any year

    def covers(self, at: float, pad: float) -> bool:
        """Is ``at`` inside a range (widened by ``pad`` seconds each way) or a named month?"""
        if any(start - pad <= at < end + pad for start, end in self.ranges):
            return True
        if not self.months:
            return False
        try:
            return datetime.fromtimestamp(at, UTC).month in self.months
        except (OverflowError, OSError, ValueError):  # a clock far outside the calendar
            return False

    def covers_many(self, at: npt.NDArray[np.float64], pad: float) -> npt.NDArray[np.bool_]:
        """:meth:`covers` for an array of times."""
        return self.overlaps_many(at, at, pad)

    def overlaps_many(self, start: npt.NDArray[np.float64], end: npt.NDArray[np.float64],
                      pad: float) -> npt.NDArray[np.bool_]:
        """Does each span ``[start, end]`` (a synthesis: from its earliest member to its latest)
        meet a range widened by ``pad``, or contain a day of a named month?"""
        hit = np.zeros(len(start), bool)
        for lo, hi in self.ranges:
            hit |= (end >= lo - pad) & (start < hi + pad)
        if self.months:
            sane = (start >= _FIRST) & (end < _LAST) & (start <= end)
            first = np.zeros(len(start), np.int64)
            span = np.zeros(len(start), np.int64)
            first[sane] = _month_index(start[sane])
            span[sane] = _month_index(end[sane]) - first[sane]
            for month in self.months:  # some month of the span is this calendar month
                hit |= sane & ((month - 1 - first) % 12 <= span)
        return hit


# datetime's range (years 1-9999) in POSIX seconds: covers() finds no month outside it.
_FIRST, _LAST = -62_135_596_800.0, 253_402_300_800.0


def _month_index(at: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Months since January 1970 (UTC) of each POSIX time (``% 12 + 1`` is its calendar month),
    rounded to the microsecond as ``datetime.fromtimestamp`` rounds."""
    us = np.round(at * 1e6).astype(np.int64).astype("datetime64[us]")
    index: npt.NDArray[np.int64] = us.astype("datetime64[M]").astype(np.int64)
    return index


def _utc(year: int, month: int, day: int = 1) -> float | None:
    try:
        return datetime(year, month, day, tzinfo=UTC).timestamp()
    except (ValueError, OverflowError):  # "31 February", year 0
        return None


def query_period(query: str) -> Period | None:
    """The most precise dates the query names (days, else months, else years), or None.

    Memories are dated by when they were saved (``created_at``, UTC), so this is a cheap
    check on candidates already found, never a scan of the namespace.
    """
    spans = find_dates(query, bare_months=True)
    days = [(start, start + DAY) for d in spans
            if (day := d.day_date) is not None
            and (start := _utc(day.year, day.month, day.day)) is not None]
    if days:
        return Period(ranges=tuple(days))
    months = [(start, end) for d in spans  # a month, or a day that can't be ("31 February")
              if d.year is not None and d.month is not None and d.day_date is None
              and (start := _utc(d.year, d.month)) is not None
              and (end := _utc(d.year + d.month // 12, d.month % 12 + 1)) is not None]
    if months:
        return Period(ranges=tuple(months))
    bare = frozenset(d.month for d in spans
                     if d.month is not None and d.year is None and d.day is None)
    if bare:
        return Period(months=bare)
    years = [(a, b) for m in YEAR.finditer(query)
             if (a := _utc(int(m.group(1)), 1)) is not None
             and (b := _utc(int(m.group(1)) + 1, 1)) is not None]
    return Period(ranges=tuple(years)) if years else None
