"""Update detection: does a newer statement change what an older one says?

People rarely announce a change as "my X has changed to Y". They say "these days I take the
tram to work" weeks after "I cycle to the office", "finished lesson 95" after "I'm on lesson
40", or just state another value. :func:`judge` weighs what the words of a pair show (the older
statement, the newer one, and the cosine of their sentence vectors):

- **one subject**: similar sentences, shared specific words, the same person or thing named
  (never "my brother ..." against "my sister ...", nor two different named people);
- **a change**: a cue in the newer one (no longer, these days, switched, quit, took over,
  finished, ...), another value in the same slot (a number after the same word, another name
  beside the same shared name and word), or the negation of what the older one says;
- **not an addition**: "I also like hip hop" adds to "I like jazz", and "still" keeps what was;
- **not a happening**: a one-off event ("worked from home today", "went to Mira's wedding")
  was true when it happened, so it is never made stale, and a one-off event changes a state
  only with a change cue ("finished lesson 95 last night");
- **not a different detail**: two values of different kinds (a guest count, then a theme; a
  date, then a place) are two details of one thing.

The evidence adds up to a score: ``UPDATE`` (the older one is superseded), ``MAYBE`` (both stay
live; inject ranks the newer first whenever both answer a question, :mod:`remd.newest`) or
nothing, with a reason a person can read. Which of the two is newer (valid time) is the
caller's business. Pure functions of the text; never raises.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from remd import text as tx
from remd.tagging import is_verb_form

__all__ = ["Reading", "Verdict", "VerdictKind", "judge", "read"]


class VerdictKind(StrEnum):
    UPDATE = "update"  # the newer statement supersedes the older one
    MAYBE = "maybe"  # probably: the newer one ranks first when both answer a question


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    confidence: float
    reason: str


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
    | reduced | actually | turns out | since the migration""")
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
    return {_stem(w) for w in tx.content_words(text)
            if w not in _FRAME_STOP and len(_stem(w)) >= 3}


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
_LINK = re.compile(r"\[\[memory:[^\]]*\]\]")  # a typed link (remd.links): not a value
# A numbered item's label ("12.", "- ", "Note 4:", "standup 3:"): not a value of the item.
_ENUMERATION = re.compile(r"^\s*(?:\d{1,5}[.)]|[-*•]|[A-Za-z]+ #?\d{1,5}:)\s+")
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
# Words whose number names a thing rather than measuring one.
_LABELS = tx.word_set(
    "note notes item entry part no number id ticket issue bug case order invoice room flight "
    "bus tram line page table seat gate platform step pr commit build release run batch "
    "project team unit group phase stage sprint memory topic")
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
def _stem(word: str) -> str:
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
    """What one statement shows, for :func:`judge`."""

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


@lru_cache(maxsize=8192)
def read(text: str) -> Reading:
    """Read one statement (cached: the same texts are compared again and again)."""
    stamp, speaker, body = tx.split_header(text.replace("\u2019", "'").replace("\u2018", "'"))
    body = _LINK.sub("", _ENUMERATION.sub("", body))
    low = body.lower()
    cue, cue_words, ended, change_verb = _cues(low)
    runs = [(n, opens) for n, opens in tx.name_runs(body)
            if n.lower() not in _FIRST_PERSON and n.lower() not in _TITLES
            and not tx.is_time_word(n)]
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
    names = frozenset(n for n in names if _stem(n) not in units)
    sure = frozenset(n for n in sure if _stem(n) not in units)
    kinds = set()
    if numbers:
        kinds.add("money" if any("$" in b or "€" in b or "£" in b for _, b, _ in numbers)
                  else "number")
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
        s for s in (_stem(w) for w in tx.content_words(body)
                    if w not in _FRAME_STOP and w not in value_words
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
        one_off=_HABIT_RE.search(low) is None and (_ONE_OFF_RE.search(low) is not None or (
            bool(dates) and _is_past(low))),
        hypothetical=body.rstrip().endswith("?") or _HYPOTHETICAL_RE.search(low) is not None,
        person=_person(body, low, names),
        chat=bool(stamp or speaker),
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
    low = body.lower()
    out = []
    spans = [(d.start, d.end) for d in tx.find_dates(body)]
    for m in tx.NUMBER.finditer(low):
        if any(a <= m.start() < b for a, b in spans):
            continue
        before = re.search(r"([a-z]+)\W{0,3}$", low[max(0, m.start() - 24):m.start()])
        after = re.match(r"\s*-?([a-z%]+)", low[m.end():m.end() + 16])
        unit = _unit(after.group(1)) if after else ""
        if low[max(0, m.start() - 1):m.start()] in ("$", "€", "£"):
            # An amount, per what it is paid for: "$2,340 a month" and "$2,410 a month" are
            # one value changing; "$400 every payday" and "$7,200" are two.
            rate = _RATE.match(low[m.end():m.end() + 20])
            unit = "money" + (f"/{rate.group(1)}" if rate else "")
        out.append((m.group(0), before.group(1) if before else "", unit))
    return out


_RATE = re.compile(r"\s*(?:a|an|per|each|every)\s+(\w+)")


def _unit(word: str) -> str:
    """A unit without its size prefix, so "100 Mbit" and "1 Gbit" are one kind of value;
    "" for what only dresses a number: "80s", "60th", "3rd"."""
    if len(word) < 2 or word in ("th", "st", "nd", "rd", "ish"):
        return ""
    w = _stem(word)
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
    if runs and body.lstrip().startswith(runs[0][0]) and runs[0][0].casefold() in names:
        person = runs[0][0].casefold()
        return person[:-2] if person.endswith("'s") else person
    return "self" if set(tx.words(low)[:10]) & _FIRST_PERSON else ""


def _kind(person: str) -> str:
    if person in ("", "self"):
        return person or "thing"
    return "relation" if person in _RELATIONS else "name"


# -- the judgment -------------------------------------------------------------------------------
# Evidence weights of a logistic model over :func:`evidence`'s features, fitted on the
# development sets (benchmarks/eval/update_pairs.py --fit: everyday, fact_edits, life; the
# everyday_check set is held out) and rounded. A pair scoring at least UPDATE_AT is an update,
# at least MAYBE_AT a probable one.
WEIGHTS = {
    "bias": -3.9, "cos": 2.8, "cue": 0.7, "ended": 1.5, "change_verb": 0.0, "slot": 0.8,
    "shared": 0.9,
    "negation": -0.8, "additive": -2.0, "keeps": -1.0, "one_off_new": 0.0,
    "kinds_disjoint": -0.9, "nearest": 3.2, "margin": 1.3, "same_person": 0.7, "asked": 1.0,
}
UPDATE_AT = 0.9  # probability of a sure update
UNALIKE = 0.3  # sentence cosine under which two memories are about different things
# A statement with this many other memories about as alike (within CROWD_BAND of its nearest)
# is one of a series said in one shape ("The servers behind X sit in Y" for 40 services): a
# different value there is another thing's, unless a sure cue says one replaced another.
CROWD = 3
CROWD_BAND = 0.1
MAYBE_AT = 0.75  # of a probable one


@dataclass(frozen=True)
class Evidence:
    features: dict[str, float]
    reasons: tuple[str, ...]


def evidence(old: Reading, new: Reading, cos: float, *, nearest: bool = False,
             margin: float = 0.0, asked: bool = False, crowd: int = 0) -> Evidence | None:
    """The features of a pair for :func:`judge` (None: blocked, never an update).
    ``nearest``: the older one is the newer one's nearest memory; ``margin``: by how much
    (cosine) it is nearer than the next one; ``asked``: both are among the best answers to
    one question; ``crowd``: how many other live memories are about as alike to the newer
    one as its nearest (see :data:`CROWD`)."""
    if _blocked(old, new, asked):
        return None
    if crowd >= CROWD and new.cue < 1.0 and not asked:
        return None  # one of a series said alike (40 services' "servers sit in ..."), no cue
    if cos <= 0.0:  # no vectors (no embedder): how alike their words are stands in
        cos = _word_cosine(old, new)
    shared = old.words & new.words
    slot = _slot(old, new, shared, asked)
    negation = old.negated != new.negated and len(shared) >= 2 and cos >= 0.8
    ended = _overlap(new.ended, old.words | {_stem(w) for n in old.names for w in n.split()})
    reasons: list[str] = []
    if ended:
        reasons.append(f"says {', '.join(sorted(ended)[:3])} ended ('{new.cue_words}')")
    elif new.cue:
        reasons.append(f"change cue '{new.cue_words}'")
    if slot:
        reasons.append(f"another value in the same place ({slot})")
    if negation:
        reasons.append("says the opposite")
    if not reasons or (asked and not slot and not ended):
        return None  # nothing says anything changed (asked: what ended, or another value)
    if not slot and not ended and not negation and "self" not in (old.person, new.person):
        return None  # a cue alone changes the speaker's habits, not "the Nimbus team"
    if not slot and not ended and _restates(old, new):
        return None  # the same values said again ("moved to Berlin" / "relocated to Berlin")
    if new.one_off and new.cue < 1.0 and not slot and not ended:
        return None  # a happening changes a state only with a clear cue or another value
    if shared:
        reasons.append(f"both about {', '.join(sorted(shared)[:3])}")
    reasons.append(f"similarity {cos:.2f}")
    if asked:
        reasons.append("both answer the question")
    return Evidence({
        "bias": 1.0, "cos": cos, "cue": new.cue, "ended": float(bool(ended)),
        "change_verb": float(new.change_verb),
        "slot": float(bool(slot)), "shared": min(len(shared), 3) / 3,
        "negation": float(negation), "additive": float(new.additive),
        "keeps": float(new.keeps), "one_off_new": float(new.one_off and not new.change_verb),
        "kinds_disjoint": float(bool(old.kinds and new.kinds and not old.kinds & new.kinds)),
        "nearest": float(nearest), "margin": margin,
        "same_person": float(bool(old.person) and old.person == new.person),
        "asked": float(asked),
    }, tuple(reasons))


def judge(old: Reading, new: Reading, cos: float, *, nearest: bool = False,
          margin: float = 0.0, asked: bool = False, crowd: int = 0) -> Verdict | None:
    """Whether ``new`` (the later statement) updates ``old``; ``cos`` is the cosine of their
    sentence vectors (0 when unknown); see :func:`evidence` for the rest. At most a MAYBE
    when ``asked``."""
    ev = evidence(old, new, cos, nearest=nearest, margin=margin, asked=asked, crowd=crowd)
    if ev is None:
        return None
    p = probability(ev.features)
    reason = "; ".join(ev.reasons)
    if asked:  # the question says they are about one thing; another value in its place
        if new.keeps or new.additive or (new.one_off and not new.change_verb):
            return None  # "still ...", "also ...", a happening that changes nothing
        return Verdict(VerdictKind.MAYBE, round(max(p, MAYBE_AT), 3), reason)
    if p >= UPDATE_AT:
        return Verdict(VerdictKind.UPDATE, round(p, 3), reason)
    if p >= MAYBE_AT:
        return Verdict(VerdictKind.MAYBE, round(p, 3), reason)
    return None


# Attributes whose value is a name or a setting, for which a different value is a change
# whatever the wording (remd.facts canonicalises the aliases).
_SETTINGS = tx.word_set("city hometown job employer name age phone email birthday car last")


def fact_changes(attribute: str, old_value: str, new_value: str, old_text: str,
                 new_text: str) -> bool:
    """Whether a fact statement with another value for the same key (remd.facts) updates the
    older one. Not when the values are different kinds of detail ("my party is for 30
    guests" / "my party is 80s themed"), nor, for an attribute that is not a setting, when
    nothing but the wording changed and no cue or value in the same place says so."""
    # A bare value's capital says little ("Shanghai" reads as a name, "Beijing" as a word
    # ending in -ing): names and words are one kind here.
    old_kinds, new_kinds = read(old_value).kinds - {"name"}, read(new_value).kinds - {"name"}
    if old_kinds != new_kinds:
        return False
    if attribute.split()[-1] in _SETTINGS or attribute.startswith("favorite "):
        return True
    if len(old_value.split()) <= 3 and len(new_value.split()) <= 3:
        return True
    return evidence(read(old_text), read(new_text), 0.0, asked=True) is not None


def probability(features: dict[str, float]) -> float:
    z = sum(WEIGHTS[k] * v for k, v in features.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def _word_cosine(old: Reading, new: Reading) -> float:
    """A stand-in for the sentence vectors' cosine: the cosine of their word and name sets,
    scaled to where the vectors of two statements about one thing fall (~0.3-0.8)."""
    a = old.words | {w for n in old.names for w in n.split()}
    b = new.words | {w for n in new.names for w in n.split()}
    if not a or not b:
        return 0.0
    return 0.3 + 0.5 * len(a & b) / math.sqrt(len(a) * len(b))


def _restates(old: Reading, new: Reading) -> bool:
    """Does ``new`` give no value the older one lacks (names, numbers, dates, codes) and
    mostly its words?"""
    values = (new.names - old.names, new.dates - old.dates, new.codes - old.codes,
              {n for n, _, _ in new.numbers} - {n for n, _, _ in old.numbers})
    if any(values):
        return False
    if new.names or new.numbers or new.dates or new.codes:
        return True  # every value it gives, the older one gave
    return not new.words or len(new.words & old.words) >= 0.6 * len(new.words)


def _overlap(a: frozenset[str], b: frozenset[str] | set[str]) -> frozenset[str]:
    """The words of ``a`` that are in ``b``, or part of a longer word of it ("phone" in
    "iphone"; a longer word that only starts with it is another word: "seedlings")."""
    return frozenset(w for w in a if w in b or (len(w) >= 4 and any(
        len(x) > len(w) and x.endswith(w) for x in b)))


def _blocked(old: Reading, new: Reading, asked: bool = False) -> bool:
    """Pairs that are never an update, whatever else they share. A happening stays true, so
    it is never superseded; but asked about, an older happening that names another value
    ("dentist with Dr. Verhoeven" beside "Dr. Amrani says ...") is not the answer now."""
    if old.text.casefold() == new.text.casefold() or old.chat or new.chat:
        return True  # a restatement; turns of a transcript are what was said then
    if new.hypothetical or (old.one_off and not asked):
        return True  # a wish or a question changes nothing; a happening stays true
    kinds = {_kind(old.person), _kind(new.person)}
    if old.person != new.person and len(kinds) == 1 and kinds <= {"relation", "name"} and (
            kinds == {"relation"} or new.cue < 1.0):
        return True  # my brother / my sister; Dana / Mike (but "Aisha took over from Marco")
    if _kind(old.person) == "relation" and new.person == "self" and (
            old.person not in new.text.lower()):
        return True  # my sister lives in Lisbon / I moved to Porto
    if new.additive and new.cue < 1.0:
        return True  # "I also ...": an addition
    if new.cue < 1.0 and _twins(old.text, new.text):
        return True  # one sentence shape, another subject in it: a series, not a change
    # Third-person statements about different named subjects ("Dana's sport is ..." /
    # "Mike's sport is ..."): no shared name, and each names its own.
    return bool(old.names and new.names and not (old.names & new.names) and new.cue < 1.0
                and _kind(old.person) == "name" and _kind(new.person) == "name")


def _twins(old: str, new: str) -> bool:
    """Are they one sentence with words swapped in two or more places, and nothing else?
    "The servers behind Payments sit in Frankfurt." / "The servers behind Search sit in
    Dublin.", "5400 USD/month is the budget line for Payments." / "3100 ... for Search.": a
    series about several things said in one shape. An update changes one place ("My manager
    is Helen." / "My manager is Dmitri.") or is said anew."""
    a, b = tx.words(old.casefold()), tx.words(new.casefold())
    if len(a) != len(b) or len(a) < 4:
        return False
    swapped = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    places = sum(1 for k, i in enumerate(swapped) if k == 0 or swapped[k - 1] != i - 1)
    return places >= 2 and len(swapped) <= len(a) // 2


def _slot(old: Reading, new: Reading, shared: frozenset[str], asked: bool = False,
          ) -> str:
    """A value of the older statement that the newer one gives another of its kind, in the
    same place: a number after the same word or before the same unit ("lesson 40" / "lesson
    95", "50 mg" / "100 mg"), another name beside the same shared name and word ("Strax is
    headquartered in Lindquay" / "the headquarters of Strax are in Orwen Bay"); "" if none.
    When both answer one question (``asked``), the question is the shared place: another
    date, time, code or name is enough."""
    shared = shared or (frozenset(("(the question)",)) if asked else frozenset())
    old_labels = {(b, n) for n, b, _ in old.numbers if b in _LABELS}
    new_labels = {(b, n) for n, b, _ in new.numbers if b in _LABELS}
    if {b for b, _ in old_labels} & {b for b, _ in new_labels} and not old_labels & new_labels:
        return ""  # "Project 3 ..." / "Project 5 ...": two things, whatever else differs
    # Each names something and nothing the other names ("5426 USD is the budget for Galdruqua"
    # / "36110 USD is the budget for Wynqua"): two named things, each with its own value,
    # unless a sure cue says one took the other's place.
    others = bool(old.names and new.names and not old.names & new.names and new.cue < 1.0
                  and not asked)
    if others and (len(old.names) >= 2 or len(new.names) >= 2):
        return ""
    old_n, new_n = {n for n, _, _ in old.numbers}, {n for n, _, _ in new.numbers}
    labelled = len(old_n) >= 2 and len(new_n) >= 2 and not old_n & new_n or others
    for n_old, before_old, after_old in [] if labelled else old.numbers:  # all differ: two things
        for n_new, before_new, after_new in new.numbers:
            if n_old == n_new:
                continue
            if before_old in _LABELS or before_new in _LABELS:
                continue  # "note 3" / "note 4": two things, not one that changed
            if (after_old and after_old == after_new) or (
                    before_old and before_old == before_new and before_old not in tx.STOP_WORDS):
                return f"number {n_old} -> {n_new}"
    for kind in ("dates", "times", "codes"):
        a, b = getattr(old, kind), getattr(new, kind)
        if a and b and not (a & b) and shared and not others:
            return f"{kind[:-1]} {'/'.join(sorted(a))} -> {'/'.join(sorted(b))}"
    # Another name needs the same words around it, the question or not: "a rebuilt V8 from
    # Troy" / "Wimbledon White for the paint" are two details of one Mustang.
    words = old.words & new.words
    old_words = {w for n in old.names for w in n.split()}
    new_words = {w for n in new.names for w in n.split()}
    gone = {w for n in old.sure for w in n.split()} - new_words
    came = {w for n in new.sure for w in n.split()} - old_words
    if gone and came and words and (old_words & new_words or len(words) >= 2):
        return f"name {'/'.join(sorted(gone))} -> {'/'.join(sorted(came))}"
    return ""
