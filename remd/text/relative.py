"""Relative dates: "yesterday", "last Friday", "next month", resolved against when it was said.

A memory saved on 5 March that says "went to the dentist yesterday" happened on 4 March; read
in June, "yesterday" says nothing. :func:`resolve` finds each relative expression of a text and
the days it means, given the moment the text was said (UTC days, as everywhere in remd);
:func:`annotate` writes the day after each one ("yesterday (4 Mar 2025)"), which is how a
synthesis keeps them (:mod:`remd.sleep.merge`) and how a dated pack shows them
(:mod:`remd.query.inject`). Pure functions; never raises.

What is read: today, tonight, this morning/afternoon/evening; yesterday, last night, the day
before yesterday; tomorrow, the day after tomorrow; last/this/next WEEKDAY and "on WEEKDAY"
(the coming one when the verb says will/going to/is, else the last one); last/this/next
week, weekend, month, year; N days/weeks/months ago, in N days/weeks; a week/month ago.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

__all__ = ["Resolved", "annotate", "resolve"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
                 "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2,
                 "a couple of": 2, "few": 3, "a few": 3}
_MONTH_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_WD = "|".join(_WEEKDAYS)
_N = r"(?P<n>\d{1,3}|a couple of|a few|couple of|few|an?|one|two|three|four|five|six|seven" \
     r"|eight|nine|ten)"
_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<dbby>the day before yesterday)"
    r"|(?P<data>the day after tomorrow)"
    r"|(?P<today>today|tonight|this (?:morning|afternoon|evening)|earlier today)"
    r"|(?P<yday>yesterday(?: (?:morning|afternoon|evening))?|last night)"
    r"|(?P<tmrw>tomorrow(?: (?:morning|afternoon|evening|night))?)"
    rf"|(?P<rel>last|this|next|this coming|coming) (?P<wd>{_WD})"
    rf"|(?P<prep>on|for|by|until|till) (?P<onwd>{_WD})(?!s)"
    r"|(?P<rel2>last|this|next) (?P<unit>week|weekend|month|year)"
    rf"|{_N} (?P<agounit>days?|weeks?|months?|years?) ago"
    rf"|in {_N.replace('?P<n>', '?P<n2>')} (?P<inunit>days?|weeks?)"
    r")\b", re.IGNORECASE)
_FUTURE = re.compile(r"(?:\b(?:will|going to|gonna|shall|planning|plan|booked for|scheduled"
                     r"|starting|starts|from|until|till)\b|'ll\b)", re.IGNORECASE)
_PAST = re.compile(
    r"\b(?:was|were|had|did|went|got|came|met|saw|ran|took|made|ate|found|broke|fell|left|lost"
    r"|paid|said|told|sent|spent|won|drank|drove|flew|felt|heard|kept|knew|rode|sat|slept|sold"
    r"|spoke|stood|swam|taught|thought|wore|bought|brought|caught|began|gave|wrote|\w{3,}ed)\b",
    re.IGNORECASE)


@dataclass(frozen=True)
class Resolved:
    """One relative expression: where it is, what it says, and the days it means."""

    start: int
    end: int
    surface: str
    first: date
    last: date

    def label(self) -> str:
        """"4 Mar 2025", or "3–9 Mar 2025" / "Mar 2025" / "2025" for a span."""
        a, b = self.first, self.last
        if a == b:
            return _day(a)
        if a.day == 1 and a.month == 1 and b.month == 12 and b.day == 31 and a.year == b.year:
            return str(a.year)
        if a.day == 1 and (b + timedelta(days=1)).day == 1 and a.month == b.month:
            return f"{_MONTH_ABBR[a.month - 1]} {a.year}"
        if a.year == b.year and a.month == b.month:
            return f"{a.day}\u2013{b.day} {_MONTH_ABBR[a.month - 1]} {a.year}"
        return f"{_day(a)} \u2013 {_day(b)}"


def _day(d: date) -> str:
    return f"{d.day} {_MONTH_ABBR[d.month - 1]} {d.year}"


def _count(word: str | None) -> int:
    if not word:
        return 1
    w = word.lower()
    return int(w) if w.isdigit() else _NUMBER_WORDS.get(w, 1)


def _month_span(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    nxt = date(year + (month == 12), month % 12 + 1, 1)
    return first, nxt - timedelta(days=1)


def _add_months(d: date, months: int) -> tuple[int, int]:
    index = d.year * 12 + d.month - 1 + months
    return index // 12, index % 12 + 1


def _span(m: re.Match[str], said: date, text: str) -> tuple[date, date] | None:
    g = m.groupdict()
    if g["dbby"]:
        d = said - timedelta(days=2)
        return d, d
    if g["data"]:
        d = said + timedelta(days=2)
        return d, d
    if g["today"]:
        return said, said
    if g["yday"]:
        d = said - timedelta(days=1)
        return d, d
    if g["tmrw"]:
        d = said + timedelta(days=1)
        return d, d
    wd = g["wd"] or g["onwd"]
    if wd:
        target = _WEEKDAYS.index(wd.lower())
        rel = (g["rel"] or "").lower()
        ahead = (target - said.weekday()) % 7
        behind = (said.weekday() - target) % 7
        if rel == "last":
            d = said - timedelta(days=behind or 7)
        elif rel == "next" or rel in ("this coming", "coming"):
            d = said + timedelta(days=ahead or 7)
        elif (g["prep"] or "on").lower() == "on" and _past(text, m):
            # "this Monday" / "on Monday", told as past: the last one ("for Monday": coming)
            d = said - timedelta(days=behind)
        else:  # the coming one (that day itself when said on it)
            d = said + timedelta(days=ahead)
        return d, d
    if g["unit"]:
        step = {"last": -1, "this": 0, "next": 1}[g["rel2"].lower()]
        unit = g["unit"].lower()
        if unit in ("week", "weekend"):
            monday = said - timedelta(days=said.weekday()) + timedelta(weeks=step)
            if unit == "weekend":
                return monday + timedelta(days=5), monday + timedelta(days=6)
            return monday, monday + timedelta(days=6)
        if unit == "month":
            return _month_span(*_add_months(said, step))
        year = said.year + step
        return date(year, 1, 1), date(year, 12, 31)
    if g["agounit"]:
        n, unit = _count(g["n"]), g["agounit"].lower().rstrip("s")
        if unit == "day":
            d = said - timedelta(days=n)
            return d, d
        if unit == "week":
            d = said - timedelta(weeks=n)
            return d - timedelta(days=d.weekday()), d - timedelta(days=d.weekday()) + \
                timedelta(days=6)
        if unit == "month":
            return _month_span(*_add_months(said, -n))
        return date(said.year - n, 1, 1), date(said.year - n, 12, 31)
    if g["inunit"]:
        n, unit = _count(g["n2"]), g["inunit"].lower().rstrip("s")
        d = said + (timedelta(days=n) if unit == "day" else timedelta(weeks=n))
        return d, d
    return None


def _sentence(text: str, m: re.Match[str]) -> str:
    start = max(text.rfind(c, 0, m.start()) for c in ".!?\n") + 1
    ends = [i for c in ".!?\n" if (i := text.find(c, m.end())) >= 0]
    return text[start:min(ends, default=len(text))]


def _past(text: str, m: re.Match[str]) -> bool:
    """Is the sentence around ``m`` told in the past ("had", "went", "was") and not of what
    will be ("will", "going to", "is booked")?"""
    sentence = _sentence(text, m)
    return _PAST.search(sentence) is not None and _FUTURE.search(sentence) is None


def resolve(text: str, said_at: float) -> list[Resolved]:
    """Each relative date expression of ``text`` and the days it means, ``said_at`` being
    when it was said (POSIX seconds; days are UTC)."""
    if not text:
        return []
    try:
        said = datetime.fromtimestamp(said_at, UTC).date()
    except (OverflowError, OSError, ValueError):
        return []
    out = []
    for m in _PATTERN.finditer(text):
        try:
            span = _span(m, said, text)
        except (OverflowError, ValueError):  # a date outside the calendar
            continue
        if span is not None:
            out.append(Resolved(m.start(), m.end(), m.group(0), span[0], span[1]))
    return out


def annotate(text: str, said_at: float) -> str:
    """``text`` with the day of each relative expression written after it ("yesterday (4 Mar
    2025)"); the text unchanged when it has none."""
    found = resolve(text, said_at)
    if not found:
        return text
    out, at = [], 0
    for r in found:
        out += [text[at:r.end], f" ({r.label()})"]
        at = r.end
    out.append(text[at:])
    return "".join(out)
