"""Numbers as digits, however a person writes them: "four thousand units", "28k", "three quid",
"a fiver". Update detection compares amounts (:mod:`remd.text.reading`) and the frames read
them (:mod:`remd.text.frames`). Pure functions; never raises.
"""

from __future__ import annotations

import re

__all__ = ["plain_numbers"]

_UNITS_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
                "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
                "eighteen": 18, "nineteen": 19}
_TENS_WORDS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
               "eighty": 80, "ninety": 90}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "grand": 1000}
_SPELLED = re.compile(
    r"\b(?:(?:" + "|".join([*_UNITS_WORDS, *_TENS_WORDS]) + r")(?:[ -](?:"
    + "|".join([*_UNITS_WORDS, *_TENS_WORDS, *_SCALES]) + r"))*)\b(?![ -]?(?:thirty|fifteen)\b)")
_CURRENCY_WORDS = re.compile(r"\b(\d+(?:[.,]\d+)?)\s*(quid|pounds?|quid|euros?|dollars?|bucks)\b")
_SLANG_MONEY = {"fiver": "£5", "tenner": "£10"}
_THOUSANDS = re.compile(r"\b(\d+(?:\.\d+)?)k\b")


def _spelled(match: re.Match[str]) -> str:
    total, part = 0, 0
    for w in re.split(r"[ -]", match.group(0)):
        if w in _UNITS_WORDS:
            part += _UNITS_WORDS[w]
        elif w in _TENS_WORDS:
            part += _TENS_WORDS[w]
        elif w in _SCALES:
            part = max(part, 1) * _SCALES[w]
            if _SCALES[w] >= 1000:
                total, part = total + part, 0
    return str(total + part)


def plain_numbers(low: str) -> str:
    """Numbers as digits: "four thousand units" -> "4000 units", "28k" -> "28000", "three
    quid" -> "£3", "a fiver" -> "£5" (lower-case text; sizes of other words kept apart)."""
    low = _SPELLED.sub(_spelled, low)
    low = _THOUSANDS.sub(lambda m: str(round(float(m.group(1)) * 1000)), low)
    low = _CURRENCY_WORDS.sub(lambda m: ("€" if m.group(2).startswith("euro") else "$"
                                          if m.group(2)[0] in "db" else "£") + m.group(1), low)
    return re.sub(r"\b(?:a )?(fiver|tenner)\b", lambda m: _SLANG_MONEY[m.group(1)], low)
