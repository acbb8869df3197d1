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
live; inject ranks the newer first whenever both answer a question, :mod:`remd.query.newest`) or
nothing, with a reason a person can read. Which of the two is newer (valid time) is the
caller's business. Pure functions of the text; never raises. What one statement shows is read
by :mod:`remd.text.reading` (:func:`read`, re-exported here with :class:`Reading`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

from remd.text import frames as fr
from remd.text import words as tx
from remd.text.reading import Reading, person_kind, read, stem

__all__ = ["FrameSlot", "Reading", "Verdict", "VerdictKind", "frame_slot", "judge",
           "model_support", "one_attribute", "read", "restates"]


class VerdictKind(StrEnum):
    UPDATE = "update"  # the newer statement supersedes the older one
    MAYBE = "maybe"  # probably: the newer one ranks first when both answer a question


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    confidence: float
    reason: str


# Words whose number names a thing rather than measuring one.
_LABELS = tx.word_set(
    "note notes item entry part no number id ticket issue bug case order invoice room flight "
    "bus tram line page table seat gate platform step pr commit build release run batch "
    "project team unit group phase stage sprint memory topic attempt visit round "
    "iteration episode trial")


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
    "frame": 2.6,
}
UPDATE_AT = 0.9  # probability of a sure update
UNALIKE = 0.3  # sentence cosine under which two memories are about different things
# A statement with this many other memories about as alike (within CROWD_BAND of its nearest)
# is one of a series said in one shape ("The servers behind X sit in Y" for 40 services): a
# different value there is another thing's, unless a sure cue says one replaced another.
CROWD = 3
CROWD_BAND = 0.1
CROWD_ALIKE = 0.45  # ...and at least this alike: a series said in one shape, not chit-chat
ALIKE_CUE = 0.5  # a cue alone, with no shared word: only between sentences this alike
NEAREST_ALIKE = 0.45  # "nearest" counts from this cosine: the nearest of unrelated notes is not
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
    framed = frame_slot(old, new, shared, cos)
    slot = _slot(old, new, shared, asked) or (str(framed) if framed else "")
    negation = old.negated != new.negated and len(shared) >= 2 and cos >= 0.8
    ended = _overlap(new.ended, old.words | {stem(w) for n in old.names for w in n.split()})
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
    if not slot and not ended and not negation and not shared and cos < (
            ALIKE_CUE if new.cue < 1.0 else UNALIKE):
        return None  # a cue in a statement about something else ("now my phone lasts ...")
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
        "nearest": float(nearest and (cos >= NEAREST_ALIKE or bool(framed)
                                      or (cos >= UNALIKE and new.cue >= 1.0))), "margin": margin,
        "same_person": float(bool(old.person) and old.person == new.person),
        "asked": float(asked), "frame": framed.sure if framed else 0.0,
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
    f = ev.features
    # A memory is superseded only on a sure sign of change: a cue, what ended, the opposite
    # said, or another value the attribute's frame knows (an amount, a time, its own word).
    # Another number, date or name alone may be another thing's ("date ... -> ...") or a
    # detail beside it: at most a probable update, which inject still ranks after the newer.
    sure = bool(f.get("ended") or f.get("negation") or new.cue >= 0.6 or f.get("frame") == 1.0)
    if p >= UPDATE_AT and sure:
        return Verdict(VerdictKind.UPDATE, round(p, 3), reason)
    if p >= MAYBE_AT:
        return Verdict(VerdictKind.MAYBE, round(p, 3), reason)
    return None


# Attributes whose value is a name or a setting, for which a different value is a change
# whatever the wording (remd.text.facts canonicalises the aliases).
_SETTINGS = tx.word_set("city hometown job employer name age phone email birthday car last")


def fact_changes(attribute: str, old_value: str, new_value: str, old_text: str,
                 new_text: str) -> bool:
    """Whether a fact statement with another value for the same key (remd.text.facts) updates the
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


# Frames whose values are amounts: another amount of the same kind is another value.
_AMOUNTS = frozenset(("pay", "rent", "price", "allowance", "insurance", "dose"))
_BOUND_COS = 0.6  # a bound frame's thing: shared words, names, or sentences this alike


@dataclass(frozen=True)
class FrameSlot:
    """Another value of one attribute: which, the values gone and come, and how sure (1.0 for
    a value the frame knows, an amount, a time or a habit's activity; 0.5 for another name,
    which may be a detail beside the attribute)."""

    frame: str
    gone: frozenset[str]
    came: frozenset[str]
    sure: float

    def __str__(self) -> str:
        gone, came = "/".join(sorted(self.gone)[:3]), "/".join(sorted(self.came)[:3])
        return f"{self.frame} {gone} -> {came}"


def same_subject(old: Reading, new: Reading) -> bool:
    """Are two statements about one person or thing's attributes: the same person, the speaker
    and their things ("I'm vegetarian" / "so I've gone pescatarian"), or one names whom the
    other is about ("Window cleaner is £12" / "The window man's put his prices up")?"""
    if old.person == new.person or {old.person, new.person} <= {"self", ""}:
        return True
    return any(p and p not in ("self",) and p.split()[0] in tx.words(other.text.lower())
               for p, other in ((old.person, new), (new.person, old)))


def frame_slot(old: Reading, new: Reading, shared: frozenset[str], cos: float = 0.0
               ) -> FrameSlot | None:
    """Another value of one attribute that holds one value at a time (:mod:`remd.text.frames`),
    of one subject: "my manager ... Henrik" / "I report to Sanne now", "rent's €1,150" /
    "€1,210 from 1 May", "Saturday mornings I swim" / "saturday morning rides with ...";
    None if none."""
    if not same_subject(old, new):
        return None
    if " " in old.habit and old.habit == new.habit and not (old.one_off or new.one_off):
        gone, came = old.words - new.words, new.words - old.words
        if gone and came and not new.additive:
            # another activity in one slot: sure with a cue or what ended, else it may be one
            # more thing done then ("Saturday mornings I swim" / "signed up for Saturday
            # morning pottery")
            sure = 1.0 if new.cue >= 0.6 or new.ended else 0.5
            return FrameSlot(old.habit, frozenset(gone), frozenset(came), sure)
    # What both name (a word of one may be a name in the other: "Window cleaner is £12" / "the
    # window man's put his prices up"), times aside.
    thing = frozenset(w for w in _all_words(old) & _all_words(new) if not tx.is_time_word(w))
    if old.habit and new.habit and old.habit != new.habit and thing and not new.additive:
        # one thing on another day ("bowling league is Tuesday nights" / "the league moved
        # to Thursday nights")
        return FrameSlot("when", frozenset((old.habit,)), frozenset((new.habit,)), 1.0)
    for f in sorted(old.frames & new.frames):
        if not fr.is_single(f):
            continue
        if fr.is_bound(f) and not (thing - _frame_stems(f) or old.names & new.names
                                   or cos >= _BOUND_COS):
            continue  # the price of one thing, the time of another
        a, b = fr.values(old.text, f), fr.values(new.text, f)
        if a and b and not b <= a:
            return FrameSlot(f, a - b, b - a, 1.0)
        if f in _AMOUNTS:
            na, nb = _amounts(old), _amounts(new)
            if na and nb and not nb & na:
                return FrameSlot(f, frozenset(na), frozenset(nb), 1.0)
            continue
        ta, tb = old.times | (old.dates if f == "schedule" else frozenset()), new.times | (
            new.dates if f == "schedule" else frozenset())
        if ta and tb and not tb <= ta:  # another time of day ("bed around 1am" / "10:30")
            return FrameSlot(f, ta - tb, tb - ta, 1.0)
        if f == "schedule":
            continue
        # Another name in the frame's place: never when both name one thing ("my laptop is a
        # ThinkPad" / "updated the ThinkPad to Fedora": a detail of the same laptop), nor from
        # a happening ("last night").
        a_words = {w for n in _plain(old.names, old.text) for w in n.split()}
        b_words = {w for n in _plain(new.names, new.text) for w in n.split()}
        if (a_words and b_words and not a_words & b_words and not new.one_off
                and (new.cue > 0 or cos >= NEAREST_ALIKE or bool(thing - _frame_stems(f)))):
            # (a name alone, with no cue, nothing else shared, in unalike sentences: "the ICE
            # tickets to Hamburg" beside "we track tickets in Jira")
            return FrameSlot(f, frozenset(a_words), frozenset(b_words), 0.5)
    return None


def _plain(names: frozenset[str], text: str) -> frozenset[str]:
    """Names that may be a value: not an acronym ("the car's MOT", "the NHS")."""
    return frozenset(n for n in names
                     if not (len(n) <= 5 and re.search(rf"\b{re.escape(n.upper())}\b", text)))


def _all_words(r: Reading) -> frozenset[str]:
    return r.words | {stem(w) for n in r.names for w in n.split()}


def _frame_stems(frame: str) -> frozenset[str]:
    return frozenset(stem(w) for w in fr.words(frame))


def _amounts(r: Reading) -> set[str]:
    return {n.replace(",", "") for n, before, unit in r.numbers
            if before not in _LABELS and (unit.startswith("money") or unit or len(n) >= 3)}


def restates(was: Reading, other: Reading, slot: FrameSlot) -> bool:
    """Does ``other`` say again the value ``was`` gave of the attribute that ``slot`` changed
    ("I'm vegetarian" / "Callum made me a mushroom wellington because I'm still vegetarian")?"""
    if not same_subject(was, other) or not slot.gone:
        return False
    if slot.frame == was.habit:
        return other.habit == was.habit and slot.gone <= other.words
    if slot.frame not in other.frames:
        return False
    said = (fr.values(other.text, slot.frame) | other.names | set(_amounts(other))
            | other.times | other.dates)
    return slot.gone <= said


def one_attribute(a: Reading, b: Reading) -> bool:
    """Do two statements speak of one attribute that holds one value at a time (a frame, or a
    standing habit's slot), however unalike their words?"""
    return bool((a.habit and a.habit == b.habit)
                or any(fr.is_single(f) for f in a.frames & b.frames))


def model_support(old: Reading, new: Reading, cos: float) -> str:
    """What the offline reading grants a model's "update" of ``old`` by ``new``: "supersede"
    (an offline verdict, or another value in the place of one attribute of one subject: a
    frame's slot, or two names in one attribute that holds one value),
    "contradict" (one subject, and one attribute, shared words or sentences :data:`UNALIKE`
    alike or more: "my car is a blue Fiat" / "the car needs new tyres" speak of one car, not
    of another) or "" (unrelated: "I live in Leeds" never updates "I have two cats", whatever
    a model says)."""
    if judge(old, new, cos) is not None:
        return "supersede"
    shared = old.words & new.words
    if frame_slot(old, new, shared, cos) is not None:
        return "supersede"
    if not same_subject(old, new):
        return ""
    if one_attribute(old, new) and old.names and new.names and not old.names & new.names:
        return "supersede"  # one attribute that holds one value, each naming another one
    return "contradict" if one_attribute(old, new) or shared or cos >= UNALIKE else ""


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
    if new.hypothetical or old.hypothetical or (old.one_off and not asked):
        return True  # a wish or a question says no value, nor changes one; a happening stays
    kinds = {person_kind(old.person), person_kind(new.person)}
    if old.person != new.person and len(kinds) == 1 and kinds <= {"relation", "name"} and (
            kinds == {"relation"} or new.cue < 1.0):
        return True  # my brother / my sister; Dana / Mike (but "Aisha took over from Marco")
    if person_kind(old.person) == "relation" and new.person == "self" and (
            old.person not in new.text.lower()):
        return True  # my sister lives in Lisbon / I moved to Porto
    if new.additive and new.cue < 1.0:
        return True  # "I also ...": an addition
    if new.cue < 1.0 and _twins(old.text, new.text):
        return True  # one sentence shape, another subject in it: a series, not a change
    # Third-person statements about different named subjects ("Dana's sport is ..." /
    # "Mike's sport is ..."): no shared name, and each names its own.
    return bool(old.names and new.names and not (old.names & new.names) and new.cue < 1.0
                and person_kind(old.person) == "name" and person_kind(new.person) == "name")


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
