"""Reading one statement for update detection (:mod:`remd.text.updates`).

:func:`read` turns a statement into a :class:`Reading`: what it is about (the stems of its
content words, the names it gives, the person it is about), the values it gives (numbers with
the word before and the unit after them, dates, times of day, codes), and its cues: of a new
state ("these days", "switched to"), of what ended ("gave up the driving"), of an addition
("also"), of what still holds ("still"), of a one-off happening ("today"), of a wish or a
question. Pure functions of the text, cached; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from remd.text import frames as fr
from remd.text import words as tx
from remd.text.numbers import plain_numbers
from remd.text.tagging import is_verb_form

__all__ = ["Reading", "asked_person", "gives_self_away", "person_kind", "read", "speaks_as_self",
           "stem"]


def _phrases(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("|") if p.strip()]


# -- cues ----------------------------------------------------------------------------------------
# Cues that name what ended: the words after them ("gave up *the driving*", "instead of
# *running*", "my old *phone*"), or before them ("*the reporting service* was shut down"). They
# count only when those words are in the older statement: "deploys take 4 minutes instead of
# 11" ends nothing that "deploys need the replica" says.
_ENDED_AFTER = _phrases("""
    no longer | stopped | quit | quitting | gave up | given up | instead of | replaced
    | got rid of | sold | cancelled | canceled | ditched | dropped | moved out of | broke up with
    | split up with | switched from | moved from | swapped | the old | my old | our old
    | the previous | my previous | our previous | former | no more | got a new | bought a new
    | new | lost | rather than""")
_ENDED_BEFORE = _phrases("""
    was shut down | got shut down | is shut down | shut down | retired | is gone | are gone
    | was cancelled | was canceled | died | passed away | broke down | stopped working
    | is over | are over | was sold | was replaced | got replaced | split up | broke up""")
# Cues that a state is new: sure ones, and ones that say so only sometimes ("now", "started").
_NEW_SURE = _phrases("""
    switched to | switching to | switched | moved to | moved into | moved us | relocated to
    | relocated | these days | nowadays | from now on | took over | taken over | takes over
    | handed over | became | become | has become | upgraded to | upgraded | downgraded
    | is now | are now | am now
    | rescheduled | postponed | pushed back | pushed it back | brought forward | correction
    | this replaces | as of | migrated | rotated | renamed | instead | reverted | went back to
    | since then | ended up | turned into | not anymore | anymore | any more | any longer
    | has since | not since | used to | down to | up to | changed""")
_NEW_MILD = _phrases("""
    now | started | starting | began | begun | finished | completed | done with | picked up
    | took up | taken up | joined | hired | currently | at the moment | right now | lately
    | recently | update | updated | bumped | adopted | signed up | increased | decreased
    | reduced | actually | turns out | since the migration | since the reorg | after the reorg
    | since the restructure | after the restructure | since the merger | after the merger
    | since the move | after the move | since the promotion""")
_CHANGE_VERBS = frozenset(_phrases("""
    switched | swapped | replaced | quit | gave up | stopped | moved | relocated | changed
    | took over | retired | rotated | renamed | upgraded | downgraded | cancelled | canceled
    | sold | ditched | broke up | split up | rescheduled | postponed | pushed back | migrated
    | became | got a new | bought a new | picked up | started | began | finished | completed
    | took up | joined | adopted | signed up | got rid of | ended up | down to | up to
    | instead of | the old | my old | no longer | not anymore | new | lost"""))
_CUES = ({p: 1.0 for p in _NEW_SURE} | {p: 0.6 for p in _NEW_MILD if p not in _NEW_SURE})


def _alternation(phrases: list[str]) -> str:
    return "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))


_NEW_RE = re.compile(rf"\b(?:{_alternation(list(_CUES))})\b(?! of\b)"
                     r"|\b(?:pushed|moved|bumped|put) (?:[\w'-]+ ){1,4}(?:back|forward|up|to)\b"
                     r"|\bi've been \w+ing\b")
_ENDED_AFTER_RE = re.compile(
    rf"\b(?P<cue>{_alternation(_ENDED_AFTER)})\b(?P<what>(?:\W+[\w'-]+){{1,4}})"
    r"|\b(?P<cue2>not|don't|doesn't|didn't|no)\b(?P<what2>(?:\W+[\w'-]+){1,5}?)"
    r"\W+(?:anymore|any more|any longer)\b")
# The noun a "new" qualifies: the last word before a preposition or the end ("a new *phone*
# from ...", "new tomato *seeds* for ...").
_HEAD = re.compile(r"\W*(?:[\w'-]+\s+){0,2}?([\w'-]+)(?=\s+(?:for|from|at|in|on|with|to|of|"
                   r"and|that|which)\b|\W*$|[.,;!])")
_ENDED_BEFORE_RE = re.compile(
    rf"(?P<what>(?:[\w'-]+\W+){{1,4}})(?P<cue>{_alternation(_ENDED_BEFORE)})\b")


def _cues(low: str) -> tuple[float, str, frozenset[str], bool]:
    """(how sure the change cues make us, the cues as written, the words of what they say
    ended, whether one is a change of state)."""
    found = [m.group(0) for m in _NEW_RE.finditer(low)]
    strength = max((_CUES.get(c, 1.0 if c.split()[0] in ("pushed", "moved", "bumped") else 0.6)
                    for c in found), default=0.0)
    ended: set[str] = set()
    for m in _ENDED_AFTER_RE.finditer(low):
        cue = m.group("cue") or f"{m.group('cue2')} ... anymore"
        found.append(cue)
        what = _stems(m.group("what") or m.group("what2") or "")
        if cue.endswith("new"):  # "a new phone" replaces a phone; "new tomato seeds" nothing
            head = _HEAD.match(m.group("what") or "")
            what = _stems(head.group(1)) if head else set()
        ended.update(what)
    for m in _ENDED_BEFORE_RE.finditer(low):
        found.append(m.group("cue"))
        ended.update(_stems(m.group("what")))
    return (strength, ", ".join(dict.fromkeys(found)), frozenset(ended),
            any(c in _CHANGE_VERBS or c.endswith("anymore") for c in found))


def _stems(text: str) -> set[str]:
    return {stem(w) for w in tx.content_words(text)
            if w not in _FRAME_STOP and len(stem(w)) >= 3}


# Words that add to what was said rather than change it, or say it still holds.
_ADDITIVE_RE = re.compile(
    r"\b(?:also|as well|another|in addition|additionally|besides|on top of|plus"
    r"|a second|one more|added|both)\b|\btoo\b(?=\s*(?:[.!,;)]|$))")
_KEEPS_RE = re.compile(
    r"\b(?:still|this time|for once|as usual|as always|just for today|for now|temporarily"
    r"|though|anyway|nothing beats|all the way)\b")
# One-off happenings: a day it happened on.
_ONE_OFF_RE = re.compile(
    r"\b(?:today|tonight|this (?:morning|afternoon|evening)|yesterday|last night"
    r"|the other day|earlier today|just now|on (?:monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)|over the weekend|this weekend|last weekend|this week|last week)\b")
_HABIT_RE = re.compile(
    r"\b(?:every|each|always|usually|normally|often|daily|weekly|monthly|nightly|mostly"
    r"|on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends))\b")
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|maybe|perhaps|might|should i|thinking about|thinking of|considering|wondering"
    r"|plan to|planning to|want to|wanna|would like to|hope to|hoping to|someday|one day"
    r"|not sure|in case)\b")
_LINK = re.compile(r"\[\[memory:[^\]]*\]\]")  # a typed link (remd.text.links): not a value
# A numbered item's label ("12.", "- ", "Note 4:", "standup 3:"): not a value of the item.
_ENUMERATION = re.compile(
    r"^\s*(?:\d{1,5}[.)]|[-*•]|(?:[A-Za-z][\w'-]* ){0,3}[A-Za-z]+,? #?\d{1,5}:)\s+")
# People and pets a statement can be about, besides its speaker.
_RELATIONS = tx.word_set(
    """
    mother mom mum mama dad father papa parents parent sister brother sibling siblings wife
    husband partner girlfriend boyfriend fiance fiancee spouse son daughter kid kids child
    children baby grandma grandmother granny grandpa grandfather grandparents aunt uncle cousin
    niece nephew friend friends buddy roommate flatmate housemate neighbour neighbor neighbours
    neighbors boss colleague colleagues coworker coworkers teammate landlord landlady cat dog
    puppy kitten pet pets stepmom stepdad stepson stepdaughter
    """)
_FIRST_PERSON = tx.word_set("i i'm i've i'd i'll me my mine myself we we're we've our ours us")
# Words that only carry a change, a time or a frequency: not what two statements are about.
_FRAME_STOP = tx.word_set(
    """
    now anymore longer these nowadays instead switched switch swapped replaced quit stopped
    gave given moved changed started starting began finished completed took taken over new
    again actually lately recently currently moment every each always usually normally often
    daily weekly monthly morning mornings evening evenings days week weeks today tonight
    yesterday since then used back went going go got get gets getting pretty much only
    correction replaces update fact anyway still though
    """)
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b")
_MONTH = re.compile(r"\b(?:" + "|".join(tx.MONTHS) + r")\b")
_TITLES = tx.word_set("dr dr. mr mr. mrs mrs. ms ms. prof")
# A word mixing letters and digits: a password, a key, a region, a version ("sunflower88",
# "4f9a", "eu-west-1", "staging-db-2023").
_ORDINAL = re.compile(r"\d+(?:s|th|st|nd|rd|am|pm|k|m|h|min|kg|km|mg|ml|cm|mm|x)")  # "80s"
_CODE = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[a-zA-Z])[\w]+(?:-[\w]+)*\b")
_TIME = re.compile(r"\b\d{1,2}(?::\d\d)?\s*(?:am|pm)\b|\b\d{1,2}:\d\d\b|\bnoon\b|\bmidnight\b")
_UNIT_AFTER = re.compile(r"\d+(?:[.,:]\d+)*\s*([a-z%$€£]+)")
_WORD_BEFORE = re.compile(r"([a-z]+)\s+[$€£]?\d")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: what "headquartered"/"headquarters", "manages"/"manager",
    "publishes"/"publish" share."""
    w = word.lower().strip("'")
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ers", ""), ("er", ""), ("ed", ""),
                         ("es", ""), ("s", ""), ("ly", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
            w = w[: len(w) - len(suffix)] + keep
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # "stopp" -> "stop"
    return w[:-1] if len(w) >= 4 and w.endswith("e") else w


@dataclass(frozen=True)
class Reading:
    """What one statement shows, for :func:`remd.text.updates.judge`."""

    text: str
    words: frozenset[str]  # stems of its content words (values and change words aside)
    names: frozenset[str]  # casefolded names (not one opening the sentence alone)
    sure: frozenset[str]  # of the names, those not only opening a sentence
    codes: frozenset[str]  # words of letters and digits: passwords, keys, versions, regions
    times: frozenset[str]  # times of day
    numbers: tuple[tuple[str, str, str], ...]  # (number, word before, unit after)
    dates: frozenset[str]
    kinds: frozenset[str]  # kinds of value it gives: number, money, date, name, time
    cue: float  # 0, or how sure its cues of a new state make us
    cue_words: str
    ended: frozenset[str]  # stems of what its cues say ended ("gave up the driving")
    change_verb: bool  # its cue is a change of state ("switched", "picked up", "finished")
    additive: bool
    keeps: bool  # "still", "this time", "though": the old state holds
    negated: bool
    one_off: bool  # a happening of one day, not a state
    hypothetical: bool  # a question, a wish, a plan being weighed
    person: str  # "self", a relation ("sister"), a name, or "" (a thing)
    chat: bool  # a turn of a conversation transcript ("[date] Name: ..."): an utterance
    frames: frozenset[str] = frozenset()  # the attributes it speaks of (remd.text.frames)
    habit: str = ""  # a standing habit's slot ("saturday morning"), remd.text.frames.habit_slot


@lru_cache(maxsize=8192)
def read(text: str) -> Reading:
    """Read one statement (cached: the same texts are compared again and again)."""
    stamp, speaker, body = tx.split_header(text.replace("\u2019", "'").replace("\u2018", "'"))
    body = _LINK.sub("", _ENUMERATION.sub("", body))
    low = body.lower()
    habit = fr.habit_slot(low)
    cue, cue_words, ended, change_verb = _cues(low)
    runs = [(n, opens) for n, opens in tx.name_runs(body)
            if n.lower() not in _FIRST_PERSON and n.lower() not in _TITLES
            and not tx.is_time_word(n) and not tx.is_time_word(n.rstrip("s"))]
    names = frozenset(n.casefold() for n, opens in runs
                      if not opens or not (n.lower() in tx.STOP_WORDS or is_verb_form(n)))
    # The names it is sure of: a word that only opens its sentence ("Physio three times a
    # week", "Dentist at 2") is capitalised for that, not because it names someone.
    sure = frozenset(n.casefold() for n, opens in runs if not opens)
    codes = frozenset(m.group(0).lower() for m in _CODE.finditer(body)
                      if not _ORDINAL.fullmatch(m.group(0).lower()))
    dates = frozenset({d.key for d in tx.find_dates(body)}
                      | {m.group(1) for m in _WEEKDAY.finditer(low)}
                      | {m.group(0) for m in _MONTH.finditer(low)})
    numbers = tuple(_numbers(body))
    units = {u for _, _, u in numbers if u}  # "5426 USD": a unit, not a name
    names = frozenset(n for n in names if stem(n) not in units)
    sure = frozenset(n for n in sure if stem(n) not in units)
    kinds = set()
    if numbers:
        kinds.add("money" if any(u.startswith("money") for _, _, u in numbers) else "number")
    if dates:
        kinds.add("date")
    times = frozenset(m.group(0).replace(" ", "") for m in _TIME.finditer(low))
    if times:
        kinds.add("time")
    if names:
        kinds.add("name")
    if codes:
        kinds.add("code")
    value_words = {w for n in names for w in n.split()}
    words = frozenset(
        s for s in (stem(w) for w in tx.content_words(body)
                    if w not in _FRAME_STOP and w not in value_words
                    and w.removesuffix("'s") not in value_words
                    and not any(c.isdigit() for c in w))
        if len(s) >= 3)
    return Reading(
        text=body, words=words, names=names, sure=sure, codes=codes, times=times, numbers=numbers,
        dates=dates,
        kinds=frozenset(kinds),
        cue=cue, cue_words=cue_words, ended=ended, change_verb=change_verb,
        additive=_ADDITIVE_RE.search(low) is not None,
        keeps=_KEEPS_RE.search(low) is not None,
        negated=any(tx.is_negation(w) for w in tx.words(low)),
        one_off=not habit and _HABIT_RE.search(low) is None and (
            _ONE_OFF_RE.search(low) is not None or (bool(dates) and _is_past(low))),
        hypothetical=body.rstrip().endswith("?") or _HYPOTHETICAL_RE.search(low) is not None,
        person=_person(body, low, names),
        chat=bool(stamp or speaker),
        frames=fr.frames(plain_numbers(low)),
        habit=habit,
    )


_PAST = tx.word_set(
    """
    had was were went saw did got made took came met ran broke found gave left lost paid said
    told sent spent wrote won ate drank drove flew fell felt heard hit kept knew led read rode
    sat slept sold spoke stood swam taught thought threw wore bought brought caught fought
    written done gone seen taken given broken chosen driven eaten fallen forgotten hidden
    known ridden shown spoken stolen thrown woken worn begun drunk sung swum been
    """)


def _is_past(low: str) -> bool:
    """Does it tell something that happened (a past verb: "had", "shipped", "timed out")?"""
    return any(w in _PAST or (len(w) >= 5 and w.endswith("ed")) for w in tx.words(low))


def _numbers(body: str) -> list[tuple[str, str, str]]:
    """(number, the word before it, the unit after it) of each number not in a date."""
    low = plain_numbers(body.lower())
    out = []
    spans = [(d.start, d.end) for d in tx.find_dates(low)]
    for m in tx.NUMBER.finditer(low):
        if any(a <= m.start() < b for a, b in spans):
            continue
        before = re.search(r"([a-z]+)\W{0,3}$", low[max(0, m.start() - 24):m.start()])
        after = re.match(r"\s*-?([a-z%]+)", low[m.end():m.end() + 16])
        unit = _unit(after.group(1)) if after else ""
        if low[max(0, m.start() - 1):m.start()] in ("$", "€", "£"):
            # An amount, per what it is paid for: "$2,340 a month" and "$2,410 a month" are
            # one value changing; "$400 every payday" and "$7,200" are two.
            rate = _RATE.match(low[m.end():m.end() + 20]) or _RATE_BEFORE.search(
                low[max(0, m.start() - 24):m.start() - 1])  # "every payday $400"
            unit = "money" + (f"/{rate.group(1)}" if rate else "")
        out.append((m.group(0), before.group(1) if before else "", unit))
    return out


_RATE = re.compile(r"\s*(?:a|an|per|each|every)\s+(\w+)")
_RATE_BEFORE = re.compile(r"\b(?:per|each|every)\s+(\w+)\W*$")


def _unit(word: str) -> str:
    """A unit without its size prefix, so "100 Mbit" and "1 Gbit" are one kind of value;
    "" for what only dresses a number: "80s", "60th", "3rd"."""
    if len(word) < 2 or word in ("th", "st", "nd", "rd", "ish"):
        return ""
    w = stem(word)
    if len(w) >= 3 and w[0] in "kmgt" and w[1:] in ("bit", "bps", "byte", "hz", "wh", "w"):
        return w[1:]
    return w


def _person(body: str, low: str, names: frozenset[str]) -> str:
    """Who a statement is about: a relation after "my"/"our" ("sister"), a name that opens it,
    else the speaker ("self") when it speaks in the first person, else "" (a thing)."""
    m = re.match(r"\s*(?:my|our)\s+(?:\w+\s+)?(\w+)", low)
    if m and m.group(1) in _RELATIONS:
        return m.group(1)
    m = re.match(r"\s*(?:my|our)\s+(\w+)", low)
    if m and m.group(1) in _RELATIONS:
        return m.group(1)
    runs = tx.name_runs(body)
    first_person = speaks_as_self(low)
    if runs and body.lstrip().startswith(runs[0][0]) and runs[0][0].casefold() in names:
        person = runs[0][0].casefold()
        after = body.lstrip()[len(runs[0][0]):len(runs[0][0]) + 2]
        # A name that opens a statement in the speaker's own words ("Jira is where our tickets
        # live", "Garmin Connect has all my runs") is what the speaker uses, not whom it is
        # about; "Ada's in Year 5", "Callum's sous chef at ..." are about them.
        if not first_person or after.startswith(("'s", "'")):
            return person[:-2] if person.endswith("'s") else person
    return "self" if set(tx.words(low)[:10]) & _FIRST_PERSON else ""


_ASKED_RELATION = re.compile(r"\b(?:my|our)\s+(\w+)(?:\s+(\w+))?")


def speaks_as_self(text: str) -> bool:
    """Does ``text`` speak in the first person ("I", "my", "we", "our", ...)?"""
    return bool(set(tx.words(text.lower().replace("\u2019", "'"))) & _FIRST_PERSON)


_THIRD_PERSON = tx.word_set("he she his her him hers himself herself")


def gives_self_away(members: list[str], synthesis: str) -> bool:
    """Does ``synthesis`` give what its ``members`` said as "I" (or "we") to someone else: it
    speaks not in the first person and names a person the members don't ("I passed my exam"
    became "Maya passed her exam")? An account with no subject ("the auth module had expired
    tokens on ...") or in the members' own names does not."""
    if speaks_as_self(synthesis) or not any(speaks_as_self(t) for t in members):
        return False
    said = " ".join(members).replace("\u2019", "'")
    low = said.lower()
    if set(tx.words(synthesis.lower())) & _THIRD_PERSON and not set(tx.words(low)) & _THIRD_PERSON:
        return True
    return any(n.casefold() not in low for n, opens in tx.name_runs(synthesis)
               if not opens or n.lower() not in tx.STOP_WORDS)


def asked_person(question: str) -> str:
    """Whom a question asks about: a relation it names ("where does my mother live?"), a name
    it writes inside it ("where does Claire live?"), else the speaker ("self") or "" ."""
    low = question.lower().replace("\u2019", "'")
    for m in _ASKED_RELATION.finditer(low):
        for word in m.groups():
            if word in _RELATIONS:
                return word
    named = [n.casefold() for n, opens in tx.name_runs(question) if not opens
             and n.lower() not in _FIRST_PERSON and not tx.is_time_word(n)]
    if named:
        return named[0].removesuffix("'s")
    if re.search(r"\b(?:the|our|my) user(?:'s)?\b", low):  # an agent's word for the speaker
        return "self"
    return "self" if speaks_as_self(low) else ""


def person_kind(person: str) -> str:
    """What a reading's ``person`` is: "self", "thing" (no one), a "relation" or a "name"."""
    if person in ("", "self"):
        return person or "thing"
    return "relation" if person in _RELATIONS else "name"
