"""Details: what a memory says that a consolidation must not lose.

A REM run may deprecate a memory only if each of its details is in the synthesis that stands
for it (:mod:`remd.sleep.consolidate`). The details of a text are

- its **names** (capitalised words and runs, :func:`remd.text.words.name_runs`), word by word;
- its **numbers**, each with the unit or noun after it ("two weeks", "30 guests", "$18,000"),
  numbers written as words included;
- its **dates** (:func:`remd.text.words.find_dates`: "14 June", "2024-03-02") and weekdays;
- its **content words**: not stop words and not verb forms (how something is said changes
  between restatements, "hit timeouts" / "had timeouts"; what it is about does not), each
  reduced to its dictionary form, so "tomatoes" is kept by "tomato".

Comparison is case-insensitive and by form: a detail is kept when the synthesis has it, and a
number with its unit when the synthesis writes the number before the same unit. Pure
functions; never raises.
"""

from __future__ import annotations

import re
from functools import lru_cache

from remd.text import words as tx
from remd.text.lexicon import lemma
from remd.text.tagging import is_verb_form
from remd.text.wording import opened

__all__ = ["details", "is_detail_word", "missing"]

_NUMBER_WORDS = tx.word_set(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred thousand million billion dozen half")
_QUANTITY = re.compile(
    r"(?<![\w.])(?P<n>[$€£]?\d+(?:[.,:/]\d+)*%?|" + "|".join(sorted(_NUMBER_WORDS, key=len,
                                                                       reverse=True))
    + r")(?:[ -](?P<unit>[a-z]+))?\b", re.IGNORECASE)
# Common verbs is_verb_form cannot tell from their form: a restatement may say them otherwise.
_VERBS = tx.word_set(
    "hit hits put puts set sets cut cuts run runs ran let lets keep keeps kept hold holds held "
    "bring brings brought send sends sent pay pays paid win wins won lose loses lost meet meets "
    "met sit sits sat stand stands stood spend spends spent buy buys bought sell sells sold "
    "leave leaves left fall falls fell feel feels felt hear hears heard read reads")
# Nouns that only say what kind of thing something is ("the Onyx service", "the booking
# system"): the name or the rest of the statement says which.
_GENERIC = tx.word_set("service services system systems thing things stuff app apps tool tools")
# Vague words that are units after a number ("two weeks", "three times").
_UNITS = tx.word_set("day days week weeks month months year years time times night nights "
                     "morning mornings evening evenings people person")
# Money said in words is money: "85 quid" is "£85", "40 bucks" "$40", "1,200 euros" "€1200".
_CURRENCY = {**dict.fromkeys(("quid", "pound", "pounds", "gbp", "sterling"), "£"),
             **dict.fromkeys(("dollar", "dollars", "buck", "bucks", "usd"), "$"),
             **dict.fromkeys(("euro", "euros", "eur"), "€")}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b",
                      re.IGNORECASE)


@lru_cache(maxsize=8192)
def details(text: str) -> frozenset[str]:
    """The details of a text (see the module docstring), as comparable keys."""
    _, _, body = tx.split_header(text)
    body = body.replace("&", " and ")  # "B&Q" is "B and Q"
    # A discourse opener ("Heads up, ...", "FYI: ...") says how a note is told, not what.
    for sentence in tx.sentences(body):
        if cut := opened(sentence):
            body = body.replace(sentence, sentence[cut:], 1)
    out: set[str] = set()
    for name, opens in tx.name_runs(body):
        if opens or tx.is_time_word(name) or tx.is_time_word(name.rstrip("s")):
            continue  # a word that opens its sentence alone: read below as a word, if one
        out.update(f"name:{_base(w)}" for w in name.split()
                   if w.lower() not in tx.FUNCTION_WORDS and not tx.is_time_word(w))
    spans = []
    for d in tx.find_dates(body, bare_months=True):  # "in February" is a date too
        out.add(f"date:{d.key}")
        spans.append((d.start, d.end))
    out.update(f"date:{m.group(1).lower()}" for m in _WEEKDAY.finditer(body))
    for m in _QUANTITY.finditer(body):
        if any(a <= m.start() < b for a, b in spans):
            continue  # part of a date
        unit = (m.group("unit") or "").lower()
        number = _THOUSANDS.sub("", m.group("n").lower())
        if unit in _CURRENCY and number[:1].isdigit():
            out.add(f"number:{_CURRENCY[unit]}{number}")
            continue
        unit = lemma(unit) if unit and unit not in tx.FUNCTION_WORDS and (
            unit not in tx.VAGUE_WORDS or unit in _UNITS) else ""
        out.add(f"number:{number}" + (f" {unit}" if unit else ""))
    names = {k.split(":", 1)[1] for k in out if k.startswith("name:")}
    for word in tx.content_words(body):
        if (word in names or word in _NUMBER_WORDS or word in _CURRENCY
                or any(c.isdigit() for c in word)):
            continue
        if (is_verb_form(word) or word in _VERBS or word in _GENERIC or len(word) < 3
                or tx.is_time_word(word)):
            continue
        out.add(f"word:{lemma(_base(word))}")
    return frozenset(out)


def is_detail_word(word: str) -> bool:
    """Is this word, as a content word, one of a text's details?"""
    w = word.casefold()
    return not (w in tx.STOP_WORDS or is_verb_form(w) or w in _VERBS or w in _GENERIC
                or len(w) < 3
                or tx.is_time_word(w) or any(c.isdigit() for c in w) or w in _NUMBER_WORDS)


def _base(word: str) -> str:
    """A word without its possessive: "Mom's" is Mom."""
    w = word.casefold().replace("\u2019", "'")
    return w[:-2] if w.endswith("'s") else w


def missing(member: str, kept_by: str) -> frozenset[str]:
    """The details of ``member`` that ``kept_by`` (a synthesis) does not keep, as readable
    strings ("two weeks", "Shure", "gluten")."""
    mine, theirs = details(member), details(kept_by)
    words = {k.split(":", 1)[1] for k in theirs}
    words |= {lemma(w) for w in words}
    lost = set()
    for key in mine - theirs:
        kind, value = key.split(":", 1)
        if kind == "number":
            number, _, unit = value.partition(" ")
            # "30 guests" is kept by "30 guests" and by "30 people coming" only as 30: a
            # number's unit must come with it, unless the member gave none.
            if not unit and any(k == f"number:{number}" or k.startswith(f"number:{number} ")
                                for k in theirs):
                continue
        elif kind == "date" and _date_kept(value, theirs):
            continue
        elif kind == "word" and value in words:
            continue  # a word kept as a name ("the Park" / "park") or the other way round
        elif kind == "name" and (value in words or lemma(value) in words):
            continue
        lost.add(value)
    return frozenset(lost)


def _date_kept(key: str, theirs: frozenset[str]) -> bool:
    """Is the date ``key`` (:attr:`remd.text.words.DateSpan.key`) kept by some date of
    ``theirs`` in another form: a day without its year ("*-02-03") by that day in any year, a
    month ("2025-02", "*-02") by a day in it, a day of a year by that day written without the
    year when the year is written elsewhere ("3 and 10 Feb" ... "2025")."""
    dates = [_parts(k[5:]) for k in theirs if k.startswith("date:")]
    year, month, day = _parts(key)
    if month is None:
        return False
    if day is None:  # a month: any date in it
        return any(m == month and (year is None or y in (year, None)) for y, m, _ in dates)
    if year is None:  # a day without its year
        return any((m, d) == (month, day) for _, m, d in dates)
    return any((m, d) == (month, day) and y is None for y, m, d in dates) and (
        any(y == year for y, _, _ in dates) or f"number:{year}" in theirs)


def _parts(key: str) -> tuple[str | None, str | None, str | None]:
    """(year, month, day) of a date key, None for a part it leaves out ("*-02" -> (None,
    "02", None)); (None, None, None) for a key of another shape."""
    bits = key.split("-")
    if len(bits) not in (2, 3) or not all(b == "*" or b.isdigit() for b in bits):
        return None, None, None
    year = None if bits[0] == "*" else bits[0]
    return year, bits[1], bits[2] if len(bits) == 3 else None
