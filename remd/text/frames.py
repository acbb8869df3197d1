"""Attribute frames: what a statement says something about, whatever words it uses.

"My manager is Helen" and "I report to Dmitri now" share no content word, yet both say who the
speaker's boss is; "rent's €1,150 a month" and "landlord did the yearly indexation, €1,210"
both give the rent. A frame is such an attribute: a name, the phrases that say it (with their
common synonyms), and whether it holds one value at a time (``single``: one boss, one home,
one price of a thing) or several (pets, languages, instruments: a new one adds to the rest).
``bound`` frames are attributes of a thing the statement names (a price, a dose, a meeting's
time): two statements give values of one such frame only when they also share that thing.

:func:`frames` reads the frames of a statement or a question; :func:`words` gives a frame's
search words (update detection looks for the live memories of a new statement's frames with
them, inject widens a question with them); :func:`habit_slot` reads a standing habit's slot
("saturday morning", "tuesdays"). Pure table look-ups; never raises.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from remd.text.numbers import plain_numbers
from remd.text.words import split_header

__all__ = ["FRAMES", "KEYS_VERSION", "Frame", "asked", "frames", "habit_slot", "is_bound",
           "is_single", "subject_keys", "update_keys", "values", "words"]


@dataclass(frozen=True)
class Frame:
    name: str
    single: bool  # one value at a time
    bound: bool  # an attribute of a thing the statement names, not of a person
    triggers: tuple[str, ...]  # regular expressions (lower case, word-bounded by the reader)
    values: tuple[str, ...]  # of the triggers, those that are a value ("spotify", "vegan")
    search: tuple[str, ...]  # words the full-text index can find it by


def _load() -> tuple[Frame, ...]:
    """The frames of ``frames.toml`` (beside this module; its header says what each key is)."""
    data = tomllib.loads((resources.files("remd.text") / "frames.toml").read_text("utf-8"))
    return tuple(
        Frame(name, bool(f["single"]), bool(f.get("bound", False)),
              tuple(t.removeprefix("=") for t in f["triggers"]),
              tuple(t[1:] for t in f["triggers"] if t.startswith("=")),
              tuple(str(f["search"]).split()))
        for name, f in data.items())


_WD = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONEY = (r"(?:[£$€]\s?\d|\d+(?:[.,]\d+)?\s?(?:k|quid|pounds?|euros?|dollars?|bucks)\b"
          r"|\bfiver\b|\btenner\b)")
FRAMES: tuple[Frame, ...] = _load()

_BY_NAME = {f.name: f for f in FRAMES}
_PATTERNS = tuple((f.name, re.compile(r"\b(?:" + "|".join(f.triggers) + r")(?!\w)",
                                       re.IGNORECASE)) for f in FRAMES)
_VALUES = {f.name: re.compile(r"\b(?:" + "|".join(f.values) + r")(?!\w)", re.IGNORECASE)
           for f in FRAMES if f.values}
# A question names a frame by any of its search words too ("how much is my rent?").
_ASKED = tuple((f.name, re.compile(r"\b(?:" + "|".join(map(re.escape, f.search)) + r")s?\b",
                                   re.IGNORECASE)) for f in FRAMES)
_MONEY_RE = re.compile(_MONEY, re.IGNORECASE)
# A standing habit's slot: a weekday with a part of the day ("saturday mornings", "tuesday
# nights"); a weekday said in the plural alone ("on Mondays") is a habit, but a day holds many.
_HABIT = re.compile(
    rf"\b(?P<wd>{_WD})s?\s+(?P<part>morning|afternoon|evening|night|lunch(?:time)?)s?\b"
    rf"|\b(?P<plural>{_WD})s\b|\bevery (?P<every>{_WD})\b"
    r"|\bweekend (?P<wpart>morning|afternoon|evening)s\b",
    re.IGNORECASE)


@lru_cache(maxsize=16384)
def frames(text: str) -> frozenset[str]:
    """The frames ``text`` says something of (a statement)."""
    low = text.lower().replace("\u2019", "'")
    found = {name for name, pattern in _PATTERNS if pattern.search(low)}
    if "price" in found and _MONEY_RE.search(low) is None:
        found.discard("price")  # "a month" with no amount is a time, not a price
    return frozenset(found)


@lru_cache(maxsize=4096)
def asked(question: str) -> frozenset[str]:
    """The frames a question asks about: its statement frames and those whose search words
    it uses ("how much is my rent?" asks the rent)."""
    low = question.lower().replace("\u2019", "'")
    return frames(question) | {name for name, pattern in _ASKED if pattern.search(low)}


@lru_cache(maxsize=16384)
def values(text: str, frame: str) -> frozenset[str]:
    """The values of ``frame`` that ``text`` names by its own words ("spotify", "vegan")."""
    pattern = _VALUES.get(frame)
    if pattern is None:
        return frozenset()
    return frozenset(" ".join(m.group(0).lower().split()) for m in pattern.finditer(text))


# The version of what subject_keys reads: stored keys of another version are read anew
# (remd.write.keys). Bump it whenever the frames or the habit slots change.
KEYS_VERSION = 3


def subject_keys(text: str) -> tuple[str, ...]:
    """The keys update detection and inject find a statement by, whatever its words: each
    frame that holds one value at a time ("f:boss"), a standing habit's slot ("h:saturday
    morning"), and each frame of several values ("m:pet": an answer of "what pets have we
    got?" beside the others). Sorted; at most 8."""
    stamp, speaker, _ = split_header(text)
    if stamp or speaker:
        return ()  # a turn of a transcript is what was said then, not a standing attribute
    low = plain_numbers(text.lower())
    keys = {f"f:{f}" if is_single(f) else f"m:{f}" for f in frames(low)}
    slot = habit_slot(low)
    if slot:
        keys.add(f"h:{slot}")
    return tuple(sorted(keys))[:8]


def update_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    """Of a statement's keys, those whose memories an update may replace (one value at a time,
    a habit's slot): not a frame of several values."""
    return tuple(k for k in keys if not k.startswith("m:"))


def question_keys(question: str) -> tuple[str, ...]:
    """The keys of the frames a question asks about (of a person: not a bound one, whose
    memories are each of another thing) and its habit slot."""
    keys = {f"f:{f}" if is_single(f) else f"m:{f}" for f in asked(question) if not is_bound(f)}
    slot = habit_slot(question.lower())
    if slot:
        keys.add(f"h:{slot}")
    return tuple(sorted(keys))[:8]


def words(frame: str) -> tuple[str, ...]:
    """The search words of a frame (empty for an unknown one)."""
    f = _BY_NAME.get(frame)
    return f.search if f else ()


def is_single(frame: str) -> bool:
    f = _BY_NAME.get(frame)
    return bool(f and f.single)


def is_bound(frame: str) -> bool:
    f = _BY_NAME.get(frame)
    return bool(f and f.bound)


def habit_slot(text: str) -> str:
    """The slot of a standing habit ("saturday morning", "tuesdays", "every friday"), "" if it
    names none."""
    m = _HABIT.search(text)
    if m is None:
        return ""
    if m.group("wd"):
        part = m.group("part").lower()
        part = "lunch" if part.startswith("lunch") else "evening" if part == "night" else part
        return f"{m.group('wd').lower()} {part}"
    if m.group("plural"):
        return m.group("plural").lower()
    if m.group("every"):
        return m.group("every").lower()
    return f"weekend {m.group('wpart').lower()}"
