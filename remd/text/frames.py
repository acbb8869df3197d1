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
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["FRAMES", "Frame", "asked", "frames", "habit_slot", "is_bound", "is_single", "values",
           "words"]


@dataclass(frozen=True)
class Frame:
    name: str
    single: bool  # one value at a time
    bound: bool  # an attribute of a thing the statement names, not of a person
    triggers: tuple[str, ...]  # regular expressions (lower case, word-bounded by the reader)
    values: tuple[str, ...]  # of the triggers, those that are a value ("spotify", "vegan")
    search: tuple[str, ...]  # words the full-text index can find it by


def _f(name: str, single: bool, triggers: str, search: str, bound: bool = False) -> Frame:
    parts = [t.strip() for t in _split(triggers)]
    return Frame(name, single, bound, tuple(t.lstrip("=") for t in parts if t),
                 tuple(t[1:] for t in parts if t.startswith("=")), tuple(search.split()))


def _split(triggers: str) -> list[str]:
    """Split on the ``|`` between triggers, not on one inside a group ("(?:a|b)")."""
    out, depth, cur = [], 0, []
    for ch in triggers:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


_WD = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONEY = r"(?:[£$€]\s?\d|\d+(?:[.,]\d+)?\s?(?:k|quid|pounds?|euros?|dollars?|bucks)\b|\bfiver\b|\btenner\b)"

FRAMES: tuple[Frame, ...] = (
    # -- who and where --------------------------------------------------------------------------
    _f("boss", True, r"(?:my|our|new|line|the) (?:line )?manager | boss | supervisor | report(?:s|ing)? (?:directly )?to | manages me | team lead | my lead",
       "manager boss report supervisor lead"),
    _f("job", True, r"work(?:s|ing)? (?:at|for) | job | employer | joined | hired | handed (?:in )?my notice | handed my notice | first (?:day|week|month) (?:at|with|in) | (?:started|starting|start) at | career | employed | redundan\w* | (?:new|old) (?:company|firm)",
       "job work employer company joined notice hired career"),
    _f("role", True, r"role | job title | title | =treasurer | =secretary | =chair(?:man|woman|person)? | =captain | =president | =coordinator | organi[sz]er | =head chef | =sous chef | promoted | promotion | =band \d | heading up | heads up | head of | in charge of | runs the | leads the | took over",
       "role title treasurer secretary chair captain president coordinator promoted"),
    _f("home", True, r"live[sd]? (?:in|at|on|near) | living (?:in|at|on|near) | (?:we|i) rent (?:a|an|the) | (?<!from )(?<!get )home(?:'s| is) | moved (?:to|into|house) | moving (?:to|into|house) | address | neighbou?rhood | settled in | based in | relocat\w+ | headquarter\w* | head office | our (?:flat|house|place|apartment) | my (?:flat|house|place|apartment)",
       "live home flat house apartment moved rent address"),
    _f("housemate", True, r"live with | living with | flat ?mate | house ?mate | room ?mate | share (?:a|the|my) (?:flat|house|place) | spare room | moved in(?! to)",
       "flatmate housemate roommate share live moved"),
    _f("partner", True, r"boyfriend | girlfriend | husband | wife | fianc[ée]e? | dating | seeing (?:someone|somebody|a guy|a girl|a man|a woman) | going out with | split up | broke up | (?:my|our) partner(?! at)",
       "partner boyfriend girlfriend husband wife dating seeing"),
    _f("doctor", True, r"\bgp\b | doctor | \bdr\b | surgery | (?:medical|doctors'?|gp) practice | registered (?:at|with)",
       "gp doctor dr surgery practice registered"),
    _f("dentist", True, r"dentist | dental", "dentist dental"),
    _f("hair", True, r"hair ?dresser | barber | (?:my|her|his) hair (?:done|cut) | does (?:my )?hair | haircut | salon",
       "hair hairdresser barber haircut salon"),
    _f("team", True, r"(?:my|our|the) team | on the \w+ team | squad | department | ward | \bunit\b",
       "team squad department ward unit"),
    _f("office", True, r"(?:the|our|my) office (?:is|moved) | office (?:is|was) (?:on|in|at) | (?:new|old) building | desk (?:is|moved)",
       "office building desk"),
    _f("school", True, r"school | year \d | nursery | primary | secondary | \bclass\b | teacher",
       "school year class teacher nursery primary"),
    # -- money ----------------------------------------------------------------------------------
    _f("schedule", True, r"stand-?up | meeting | practice | rehearsal | \bdemo\b | retro | lessons? | \bclass\b | session | training | five.a.side | 5-a-side | choir | appointment | \bslot\b | kick-?off",
       "standup meeting practice rehearsal demo lesson class session training appointment", bound=True),
    _f("pay", True, r"salary | wages? | income | earn(?:s|ing)? | (?:new|my) pay | pay rise | payrise | before tax | after tax | per annum | \d+k\b",
       "salary pay earn wage income"),
    _f("rent", True, r"\brent(?:'s| is)\b | (?:my|our|the) rent | rent (?:went|goes|is going|has gone) | mortgage | indexation | landlord",
       "rent mortgage landlord"),
    _f("price", True, r"costs? | price[sd]? | charges? | fees? | (?:a|per) (?:month|week|visit|hour|year|session|lesson) | monthly | subscription | put (?:his|her|their|the) prices? up | going up to | gone up to",
       "cost price charge fee month monthly subscription", bound=True),
    _f("allowance", True, r"pocket money | allowance", "pocket money allowance"),
    _f("insurance", True, r"insurance | cover for | policy | premium | renewal", "insurance cover policy premium renewal",
       bound=True),
    _f("bank", True, r"(?:my|our) bank | bank is | bank account | current account | moved my salary | account (?:with|at)",
       "bank account"),
    _f("savings", False, r"savings? | \bisas?\b | pension | invest\w*", "savings isa pension"),
    # -- health ---------------------------------------------------------------------------------
    _f("dose", True, r"\d+\s?(?:mg|mcg|µg|iu|ml|units?)\b | dose | dosage | tablets? | pills? | prescri\w+ | inhaler",
       "dose mg tablet pill prescription units", bound=True),
    _f("diet", True, r"=vegetarian | =vegan | =pescatarian | =plant-based | =eat(?:ing)? meat | =gluten-free | =dairy-free | =keto | \bdiet\b",
       "vegetarian vegan pescatarian diet meat"),
    # -- things ---------------------------------------------------------------------------------
    _f("car", True, r"\bcar\b | (?:i|we) drive a | driving a | part-exchanged | hatchback | \bsuv\b | old banger",
       "car drive"),
    _f("phone", True, r"\bphone\b | mobile | =iphone | =android | =pixel \d | =galaxy \w", "phone mobile"),
    _f("computer", True, r"laptop | computer | =macbook | =thinkpad | desktop | \bpc\b", "laptop computer"),
    _f("editor", True, r"editor | \bide\b | =\bvim\b | =nvim | =neovim | =emacs | =vs ?code | =sublime | =intellij | =pycharm",
       "editor ide vim emacs"),
    _f("tickets", True, r"tickets? | ticketing | issue tracker | \bboard\b | backlog | =jira | =\blinear\b | =trello | =asana",
       "tickets board backlog tracker"),
    _f("notes", True, r"\bnotes\b | note-taking | =notion | =obsidian | =evernote | =onenote", "notes notebook"),
    _f("music_service", True, r"=spotify | =apple music | =youtube music | =tidal | =deezer | music app | streaming",
       "music spotify streaming"),
    _f("tv_service", True, r"=netflix | =disney\+ | =prime video | =hbo | =now tv | =iplayer", "netflix streaming"),
    _f("newspaper", True, r"newspaper | \bthe \w+ paper\b | =the guardian | =the times | =telegraph | =the i\b | =the observer | =the independent", "paper newspaper"),
    _f("groceries", True, r"groceries | grocery | food shop | big shop | supermarket | =tesco | =sainsbury'?s? | =asda | =aldi | =lidl | =ocado | =waitrose | =morrisons",
       "groceries shop supermarket"),
    _f("internet", True, r"broadband | internet | fibre | fiber | wifi | wi-fi | router", "internet broadband wifi"),
    _f("password", True, r"password | passcode | \bpin\b | credentials | api key | secret", "password key"),
    _f("gym", True, r"\bgym\b | membership | leisure centre | =fitness first | =puregym", "gym membership"),
    _f("commute", True, r"commute | get to work | =(?:cycle|bike|drive|walk) (?:to|in to|into) (?:work|the office) | drove me in | =(?:the|a) (?:bus|tram|train) to work",
       "commute work bus tram train cycle"),
    _f("sleep", True, r"go to bed | bedtime | lights out | asleep | wake up | alarm", "bed sleep"),
    # -- several at once ------------------------------------------------------------------------
    _f("language", False, r"speak | fluent | duolingo | learning (?:polish|italian|spanish|french|german|dutch|portuguese|japanese|mandarin|chinese|arabic|welsh|irish|greek|russian|korean) | (?:polish|italian|spanish|french|german|dutch|portuguese|japanese|mandarin|chinese|arabic|welsh|greek|russian|korean)\b(?! food| wine| restaurant)",
       "speak language learning fluent"),
    _f("instrument", False, r"piano | guitar | bass\b | drums? | violin | cello | ukulele | recorder | keyboard | flute | sax\w* | trumpet | clarinet | harp",
       "play piano guitar violin instrument"),
    _f("pet", False, r"\bdog\b | \bcat\b | kitten | puppy | greyhound | lurcher | rabbit | tortoise | hamster | guinea pig | parrot | \bpets?\b",
       "dog cat pet kitten puppy"),
    _f("exercise", False, r"\brun(?:s|ning)?\b | swim\w* | yoga | pilates | climbing | bouldering | cycling | parkrun | \bgym\b | workout | tennis | football | five-a-side | 5-a-side | netball | gymnastics | rides? with",
       "run swim yoga climbing cycling exercise"),
    _f("reading", False, r"\bread(?:ing)?\b | book | novel | audiobook | kindle", "read book"),
    _f("music_taste", False, r"\bband\b | album | on repeat | listen\w* to", "band music listen"),
    _f("cooking", False, r"\bcook\w* | bake\w* | recipe | make (?:jollof|curry|bread)", "cook make recipe"),
    _f("allergy", False, r"allerg\w* | reacts? to | epipen", "allergic allergy"),
    _f("qualification", False, r"qualifi\w+ | degree | chartered | passed (?:the|my) \w+ exam | certificat\w+ | diploma",
       "qualification degree exam"),
    _f("crafts", False, r"\bknit\w* | crochet\w* | sew\w* | embroider\w* | quilt\w* | pottery", "knit crochet sew"),
)

_BY_NAME = {f.name: f for f in FRAMES}
_PATTERNS = tuple((f.name, re.compile(r"\b(?:" + "|".join(f.triggers) + r")(?!\w)",
                                       re.IGNORECASE)) for f in FRAMES)
_VALUES = {f.name: re.compile(r"\b(?:" + "|".join(f.values) + r")(?!\w)", re.IGNORECASE)
           for f in FRAMES if f.values}
# A question names a frame by any of its search words too ("how much is my rent?").
_ASKED = tuple((f.name, re.compile(r"\b(?:" + "|".join(map(re.escape, f.search)) + r")s?\b",
                                   re.IGNORECASE)) for f in FRAMES)
_MONEY_RE = re.compile(_MONEY, re.IGNORECASE)
# A standing habit's slot: a weekday with a part of the day, or a weekday said in the plural.
_HABIT = re.compile(
    rf"\b(?P<wd>{_WD})s?\s+(?P<part>morning|afternoon|evening|night|lunch(?:time)?)s?\b"
    rf"|\b(?P<plural>{_WD})s\b|\bevery (?P<every>{_WD})\b|\bweekend (?P<wpart>morning|afternoon|evening)s\b",
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
        return f"{m.group('wd').lower()} {'lunch' if part.startswith('lunch') else part}"
    if m.group("plural"):
        return m.group("plural").lower()
    if m.group("every"):
        return m.group("every").lower()
    return f"weekend {m.group('wpart').lower()}"
