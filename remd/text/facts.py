"""Facts that change over time: "my city is Bangalore", later "my city has changed to Mumbai".

A fact is a (subject, attribute) key with a value. Saving a fact whose key already has a live
value supersedes the old one, so recognising the *same* key across phrasings matters more than
recognising every phrasing: "I moved to Pune", "my location is Pune" and "my current city is Pune"
all file under ``user/city``. A wrong fact would retire a true one, so the recogniser is
deliberately conservative: questions, negations and hypotheticals never yield a fact.

Attribute aliases (decided here, in one place):

- ``city``: location, current city, current location, home city, city of residence, residence,
  and "I live in / moved to / relocated to X". Where the user lives now.
- ``hometown``: hometown, home town, birthplace, place of birth, "I'm from X", "I grew up in X".
  Kept apart from ``city`` because moving does not change where one grew up.
- ``job``: job, occupation, profession, role, job title, position, "I work as a X".
- ``employer``: company, workplace, employer, "I work at/for X", "I joined X".
- ``favorite X``: favourite/fave/fav X (British spellings are folded to American).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remd.errors import InvalidInput
from remd.text.words import sentences

__all__ = ["FactStatement", "canonical_attribute", "parse_facts"]

MAX_VALUE_LEN = 80
FIRST_PERSON = "user"


@dataclass(frozen=True, kw_only=True)
class FactStatement:
    """One recognised fact. ``value`` keeps the user's casing; compare it case-insensitively."""

    subject: str
    attribute: str
    value: str
    change: bool  # the text says the value changed ("has changed to", "moved to", "now")

    def __post_init__(self) -> None:
        for name in ("subject", "attribute", "value"):
            if not getattr(self, name).strip():
                raise InvalidInput(f"fact {name} must not be empty")

    @property
    def key(self) -> str:
        """``subject/attribute``, lower-case with single spaces: the identity a fact supersedes."""
        subject = " ".join(self.subject.lower().split())
        attribute = " ".join(self.attribute.lower().split())
        return f"{subject}/{attribute}"


# --- attribute vocabulary ----------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SPELLING = {"favourite": "favorite", "fave": "favorite", "fav": "favorite", "colour": "color",
             "flavour": "flavor", "neighbourhood": "neighborhood", "theatre": "theater"}
_ALIASES = {
    "location": "city", "current city": "city", "current location": "city",
    "home city": "city", "city of residence": "city", "residence": "city",
    "place of residence": "city",
    "home town": "hometown", "birthplace": "hometown", "place of birth": "hometown",
    "occupation": "job", "profession": "job", "role": "job", "job title": "job",
    "position": "job", "current job": "job",
    "company": "employer", "workplace": "employer", "work place": "employer",
    "first name": "name", "full name": "name",
    "surname": "last name", "family name": "last name",
    "email address": "email", "e mail": "email", "mail": "email",
    "phone number": "phone", "cell": "phone", "cell number": "phone", "mobile": "phone",
    "mobile number": "phone", "number": "phone", "telephone number": "phone",
    "date of birth": "birthday", "birth date": "birthday", "bday": "birthday", "dob": "birthday",
}
_ATTR_PREFIXES = ("current ", "present ")
# Words that make "my X is Y" an exclamation or an opinion, not an attribute of the user.
_NOT_ATTRIBUTES = _words(
    """
    god gosh goodness lord bad pleasure guess point question answer fault turn bet advice opinion
    thought thoughts impression feeling feelings hope wish concern worry problem issue excuse
    mistake reason apologies apology condolences gut heart mind head life day week weekend morning
    night time experience understanding take view suggestion recommendation favorite
    legs leg feet foot back arms arm hands hand knees knee eyes eye ears stomach tummy belly
    throat neck shoulders shoulder body muscles skin brain nerves patience energy mood hair
    voice nose toes fingers
    """
)
_FUNCTION_WORDS = _words(
    """
    a an the to for of in on at with about from by and or but i you he she it we they me him her
    us them this that these those is are was were be been not no so very really just also only
    my your his its our their what who which where when why how
    """
)

# --- values ------------------------------------------------------------------------------------

# A value ends where the next clause starts ("Mumbai because ...", "Bob and I live ...").
_CUT_RE = re.compile(
    r"\s+(?:because|but|so|since|though|although|while|whereas|unless|until|which|who|whom"
    r"|where|when|whose)\b"
    r"|\s+and\s+(?:i|i'm|i've|i'd|my|we|he|she|they|it|it's|now|then)\b"
    r"|,\s*(?:and|but|so|which|who|where|when|i|i'm|my|it|it's|not|though|because|since|as"
    r"|while|although|if|then|now|thanks|lol|haha)\b"
    r"|[;!?(\[{]|\s+[-–—]+\s+|\.{2,}"
    r"|(?<!\bst)(?<!\bdr)(?<!\bmr)(?<!\bmrs)(?<!\bms)(?<!\bmt)(?<!\bjr)(?<!\bsr)\.(?:\s|$)",
    re.IGNORECASE,
)
# Places, employers and names also end at a preposition: "Mumbai with my wife", "Google as a dev".
_CUT_PLACE_RE = re.compile(
    r",?\s+(?:with|for|since|as|near|after|before|from|at|in|on|to|because|last|this|next"
    r"|about|around|until|till)\b",
    re.IGNORECASE,
)
_TRAILING_TIME_RE = re.compile(
    r"(?:\s+|,\s*)(?:now|anymore|any more|currently|nowadays|these days|today|yesterday|tonight"
    r"|recently|lately|again|already|too|as well|for now|at the moment|right now|finally|actually"
    r"|(?:last|this|next) (?:week|month|year|weekend|summer|winter|spring|fall|autumn)"
    r"|in (?:19|20)\d\d|(?:a |one |two |three |four |five |a few |a couple of |several )?"
    r"(?:days?|weeks?|months?|years?) ago)$",
    re.IGNORECASE,
)
_NEGATION_START_RE = re.compile(
    r"(?:(?:definitely|certainly|really|actually|still|also|just|officially|currently)\s+)*"
    r"(?:not|no|never|none|nothing|nobody|neither|nor|n't|hardly)\b",
    re.IGNORECASE,
)
_HEDGE_START_RE = re.compile(
    r"(?:probably|maybe|perhaps|possibly|likely|unlikely|supposedly|apparently|kind of|sort of"
    r"|kinda|sorta|like)\b",
    re.IGNORECASE,
)
# Whole values that describe an opinion of the attribute rather than its value.
_OPINION_VALUES = _words(
    """
    good great fine ok okay bad awesome amazing nice terrible horrible big small huge tiny boring
    fun beautiful cool hard easy busy tough crazy weird important special perfect interesting
    stressful exhausting lovely wonderful ugly expensive cheap different same unknown secret
    it that this there here what which who something anything nothing everything him her them
    """
)
_LEADING_ADVERB_RE = re.compile(
    r"^(?:(?:still|also|actually|currently|officially)\s+)+(?=\S)", re.IGNORECASE)
_INTENSIFIERS = _words("so very really pretty quite too super extremely kinda totally")
_ARTICLES = ("a", "an", "the")
_NOT_PLACE_FIRST = _words(
    "new another different bigger smaller larger nicer cheaper my our his her their this that "
    "some here there together"
)
_NOT_PLACE_LAST = _words(
    "home house apartment flat place room area neighborhood neighbourhood city town village "
    "country countryside suburbs suburb building dorm studio condo street region downtown office "
    "space unit hotel basement hostel"
)
# Lower-case objects of "live in", "work for", "I'm from" that are not places or employers.
_NOT_PLACE_WORDS = _words(
    "fear hope peace denial moment present past future bubble hell heaven harmony poverty luxury "
    "comfort sin love misery dread pain style shame silence chaos debt darkness paradise reality "
    "dreams fantasy hiding living myself yourself free fun money night nights hours weekends work "
    "home food nothing someone somebody people"
)
_NOT_COMPANY_LAST = _words(
    "group club gym team class course community choir band league church program programme army "
    "navy party movement protest meeting call chat conversation discussion game server channel "
    "trip tour walk run hike session workshop"
)
_NOT_NAMES = _words(
    """
    it that this there here what who where when why how which everyone everybody someone somebody
    nobody anyone one today tomorrow yesterday tonight the a an he she we they let i you world
    mom dad mum mother father sister brother wife husband
    """
)
# Sentences opened by one of these are questions even without a "?" ("is my city Mumbai").
_QUESTION_OPENERS = _words(
    "what when where who whom whose why how which is are am was were do does did can could would "
    "will should shall have has had may might"
)
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|assuming|assume|whether|wish|would|could|might"
    r"|maybe|perhaps|hopefully|hypothetically|pretend|in case|someday|one day|dream|dreamt"
    r"|dreamed|wonder|plan to|planning|want to|wanna|going to|gonna|hope|should)\b",
    re.IGNORECASE,
)
_NEGATION_RE = re.compile(r"\b(?:not|never|no longer|no one|nobody)\b|n't\b", re.IGNORECASE)
_CLAUSE_BOUNDARY_RE = re.compile(r"[,;:]|\b(?:but|and|so|because)\b", re.IGNORECASE)

# --- patterns ----------------------------------------------------------------------------------

# "my", a relative's possessive ("my sister's"), or a capitalised name's possessive.
_SUBJ = (r"(?:\b(?:(?P<my>my)(?: (?P<rel>[a-z]+)'s)?)"
         r"|(?P<name>(?-i:\b[A-Z][\w]*(?: [A-Z][\w]*)?))'s)")
_VERBS = r"(?:is|are|was|were|has|have|had|changed|updated|switched|now|no)"
_ATTR = rf"(?P<attr>(?!{_VERBS}\b)[a-z]+(?: (?!{_VERBS}\b)[a-z]+){{0,3}})"
_VALUE = r"(?P<value>.+)"
_ADVERBS = r"(?: (?:have|just|recently|finally|also|now|currently|still|already|actually))*"
_I = rf"\bi(?:'ve)?{_ADVERBS}"
# "we moved to X": the user's household moved, so the user did ("we live in" is left out:
# "we live in a bubble" is a figure of speech far more often than a move).
_I_OR_WE = rf"(?:{_I}|\bwe(?:'ve)?{_ADVERBS})"
_IM = rf"(?:\b(?:i'm|i am|im){_ADVERBS}|{_I} been)"


@dataclass(frozen=True)
class _Pattern:
    needs: tuple[str, ...]  # one of these must occur in the lower-cased sentence: a cheap pre-check
    regex: re.Pattern[str]
    attribute: str | None  # None: the attribute is the matched <attr>
    change: bool
    owner: bool = False  # "my dog is called X": <attr> names what the subject owns; key .../name


def _p(needs: str, src: str, attribute: str | None = None, change: bool = False,
       owner: bool = False) -> _Pattern:
    return _Pattern(tuple(needs.split("|")), re.compile(src, re.IGNORECASE), attribute, change,
                    owner)


# Tried in order; at each subject position the first pattern that yields a valid fact wins.
_PATTERNS = (
    _p("no longer",
       rf"{_SUBJ} {_ATTR} (?:is|are) no longer [^,;]+?\s*(?:,|;|\bbut\b|\band\b)\s*(?:but |and )?"
       rf"(?:now )?(?:it's|it is|its|they're|they are|now)(?: now)?\s+{_VALUE}", change=True),
    _p("changed from",
       rf"{_SUBJ} {_ATTR} (?:(?:has|have) )?(?:been )?changed from .+? to {_VALUE}", change=True),
    _p("changed to|updated to|switched to",
       rf"{_SUBJ} {_ATTR} (?:(?:has|have|had) been |(?:has|have|had|was|were|got|is|just) )?"
       rf"(?:changed|updated|switched) to {_VALUE}", change=True),
    _p("new ", rf"{_SUBJ} new {_ATTR} (?:is|are) {_VALUE}", change=True),
    # "my dog is called Pepper" files under "user's dog/name", as "my dog's name is Pepper" does.
    _p("called|named",
       rf"{_SUBJ} {_ATTR} (?:is|are|was) (?:now |still )?(?:called|named) {_VALUE}",
       "name", owner=True),
    _p(" now ", rf"{_SUBJ} {_ATTR} (?:is|are) now {_VALUE}", change=True),
    _p(" is | are ", rf"{_SUBJ} {_ATTR} (?:is|are) {_VALUE}"),
    # "my name's Bob", but not "my sister's dog is ...": no verb may follow.
    _p("'s ", rf"\b(?P<my>my) {_ATTR}'s (?P<value>(?:(?!\b(?:is|are|was|were|has|have|had)\b)"
       r"[^\n])+)$"),
    _p("changed my|updated my|switched my",
       rf"{_I} (?:changed|updated|switched) my {_ATTR} (?:from .+? )?to {_VALUE}", change=True),
    _p("moved|relocated",
       rf"{_I_OR_WE} (?:moved|relocated)(?: back| over| out| away)? to {_VALUE}", "city", True),
    # "I traded my car for a Kia": the thing replaced keeps its key, the new one is its value.
    _p("traded my|swapped my|exchanged my",
       rf"{_I} (?:traded|swapped|exchanged) my {_ATTR} (?:in )?for {_VALUE}", change=True),
    _p("replaced my", rf"{_I} replaced my {_ATTR} with {_VALUE}", change=True),
    _p("live in", rf"{_I} live in {_VALUE}", "city"),
    _p("living in|based in|settled in",
       rf"{_IM} (?:living|based|settled) in {_VALUE}", "city"),
    _p("work as", rf"{_I} work as (?:an? )?{_VALUE}", "job"),
    _p("working as|employed as", rf"{_IM} (?:working|employed) as (?:an? )?{_VALUE}", "job"),
    _p("work at|work for", rf"{_I} work (?:at|for) {_VALUE}", "employer"),
    _p("working at|working for|employed at|employed by",
       rf"{_IM} (?:working (?:at|for)|employed (?:at|by)) {_VALUE}", "employer"),
    _p("joined", rf"{_I} joined {_VALUE}", "employer", True),
    _p("started",
       rf"{_I} started (?:(?:a |my )?(?:new )?job|work|working) (?:at|for) {_VALUE}",
       "employer", True),
    # Only a capitalised make or model: "I drive a lot" is not a car.
    _p("drive a|drive an",
       rf"{_I} drive (?:a|an) (?-i:(?P<value>[A-Z][\w-]*(?: [A-Z0-9][\w-]*){{0,3}}))", "car"),
    _p(" old", rf"{_IM} (?P<value>\d{{1,3}}) (?:years?|yrs?) old\b", "age"),
    _p("turned",
       rf"{_I} turned (?P<value>\d{{1,3}})(?: years old)?(?:\s|$|[.,!])", "age", True),
    _p("call me",
       r"\bcall me (?-i:(?P<value>[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}))", "name"),
    _p("from", rf"{_IM} (?:originally )?from {_VALUE}", "hometown"),
    _p("grew up in", rf"{_I} grew up in {_VALUE}", "hometown"),
)
_NOW_RE = re.compile(r"\bnow\b", re.IGNORECASE)
_TRIGGER_RE = re.compile(r"\b(?:my|i|i'm|im|we|we've|call me)\b|'s\b", re.IGNORECASE)


def parse_facts(text: str) -> list[FactStatement]:
    """Recognise the facts a text states about the user or a named person, in text order.

    Recognised: "my <attr> is <value>", "my <attr> has changed to / is now / was updated to",
    "my new <attr> is", "my <attr> is no longer A, it's B", "my <attr> changed from A to B",
    "I changed my <attr> to", "I traded my <attr> for X", "I/we moved to / I live in X"
    (``city``), "I work at/for X", "I joined X" and "I started a new job at X" (``employer``),
    "I work as a X" (``job``), "I drive a <Make>" (``car``), "my dog is called X" (``user's
    dog/name``), "I'm N years old" (``age``), "call me X" (``name``), "I'm from X"
    (``hometown``), and "<Name>'s <attr> is <value>". The
    subject is ``user`` for the first person, the lower-cased name otherwise. Questions,
    negations and hypotheticals yield nothing. Never raises.
    """
    facts: list[FactStatement] = []
    seen: set[tuple[str, str]] = set()
    for sentence in sentences(text.replace("\u2019", "'")):
        for fact in _parse_sentence(sentence):
            ident = (fact.key, fact.value.casefold())
            if ident not in seen:
                seen.add(ident)
                facts.append(fact)
    return facts


def _is_question(sentence: str) -> bool:
    if sentence.rstrip(" \"')").endswith("?"):
        return True
    first = sentence.split(None, 1)[0].lower() if sentence.split() else ""
    return first in _QUESTION_OPENERS


def _parse_sentence(sentence: str) -> list[FactStatement]:
    if _is_question(sentence) or not _TRIGGER_RE.search(sentence):
        return []
    cased = _is_cased(sentence)
    lowered = sentence.lower()
    used: set[int] = set()
    found: list[tuple[int, FactStatement]] = []
    for pattern in _PATTERNS:
        if not any(need in lowered for need in pattern.needs):
            continue
        for m in pattern.regex.finditer(sentence):
            anchor = m.start()
            if anchor in used or _blocked(sentence, anchor):
                continue
            fact = _build(pattern, m, cased)
            if fact is not None:
                used.add(anchor)
                found.append((anchor, fact))
    found.sort(key=lambda item: item[0])
    return [fact for _, fact in found]


def _is_cased(sentence: str) -> bool:
    """Does the text use capitals (beyond "I" and its first letter)? Then names are capitalised."""
    rest = re.sub(r"\bI\b|\bI'", "", sentence[1:])
    return any(c.isupper() for c in rest)


def _blocked(sentence: str, anchor: int) -> bool:
    """A hypothetical anywhere before the match, or a negation in its own clause."""
    prefix = sentence[:anchor]
    if _HYPOTHETICAL_RE.search(prefix):
        return True
    clause = _CLAUSE_BOUNDARY_RE.split(prefix)[-1]
    return _NEGATION_RE.search(clause) is not None


def _build(pattern: _Pattern, m: re.Match[str], cased: bool) -> FactStatement | None:
    groups = m.groupdict()
    subject = _subject(groups) if "my" in groups else FIRST_PERSON
    attribute = pattern.attribute or canonical_attribute(groups.get("attr"))
    if subject is None or attribute is None:
        return None
    if pattern.owner:
        owned = canonical_attribute(groups.get("attr"))
        if owned is None or " " in owned:
            return None
        subject = f"{subject}'s {owned}"
    change = pattern.change or _NOW_RE.search(m.group()[: m.start("value") - m.start()]) is not None
    raw = groups["value"]
    cleaned = _clean_value(raw, attribute, cased)
    if cleaned is None:
        return None
    value, trailing_now = cleaned
    if pattern.needs in (("joined",), ("started",)) and not _plausible_company(value, raw):
        return None  # "I joined Caroline for lunch" is not a new employer
    if attribute == "age" and not 0 < int(value) < 130:
        return None
    return FactStatement(subject=subject, attribute=attribute, value=value,
                         change=change or trailing_now)


def _subject(groups: dict[str, str | None]) -> str | None:
    if groups.get("my"):
        rel = groups.get("rel")
        if rel is None:
            return FIRST_PERSON
        rel = rel.lower()
        return None if rel in _FUNCTION_WORDS else f"{FIRST_PERSON}'s {rel}"
    name = groups.get("name")
    if not name:
        return None
    words = name.split()
    while words and words[0].lower() in _NOT_NAMES:
        words = words[1:]  # "Yesterday Caroline's city" is Caroline's
    if not words or words[-1].lower() in _NOT_NAMES:
        return None
    return " ".join(words).lower()


def canonical_attribute(raw: str | None) -> str | None:
    """The attribute a phrase files under, or None if it is not an attribute ("my god")."""
    if not raw:
        return None
    words = [_SPELLING.get(w, w) for w in raw.lower().split()]
    attr = " ".join(words)
    for prefix in _ATTR_PREFIXES:
        if attr.startswith(prefix) and attr not in _ALIASES:
            attr = attr[len(prefix):]
    attr = _ALIASES.get(attr, attr)
    words = attr.split()
    if not 1 <= len(words) <= 3 or attr in _NOT_ATTRIBUTES:
        return None
    if any(w in _FUNCTION_WORDS for w in words):
        return None
    return attr


def _clean_value(raw: str, attribute: str, cased: bool) -> tuple[str, bool] | None:
    """Cut *raw* down to the value itself; None if nothing usable is left.

    Also says whether a trailing "now" was dropped ("my city is Mumbai now" is a change).
    """
    value = raw
    cut = _CUT_RE.search(value)
    if cut:
        value = value[: cut.start()]
    if attribute in ("city", "hometown", "employer", "name", "age"):
        cut = _CUT_PLACE_RE.search(value)
        if cut:
            value = value[: cut.start()]
        if attribute in ("name", "age"):
            value = value.split(",", 1)[0]
    value = " ".join(value.split())
    trailing_now = False
    while True:
        value = value.rstrip(" .,!;:…")
        m = _TRAILING_TIME_RE.search(value)
        if not m:
            break
        trailing_now = trailing_now or m.group().strip(" ,").lower() in ("now", "right now")
        value = value[: m.start()]
    value = _strip_quotes(value).strip(" .,!;:…")
    value = _LEADING_ADVERB_RE.sub("", value)  # "my car is still the Civic": a restatement
    value = _strip_article(value)
    if not value or len(value) > MAX_VALUE_LEN or not any(c.isalnum() for c in value):
        return None
    if _NEGATION_START_RE.match(value) or _HEDGE_START_RE.match(value):
        return None
    if re.search(r"\bor\b", value, re.IGNORECASE):
        return None  # "Mumbai or Pune" is a doubt, not a fact
    words = value.lower().split()
    if words[0] in _INTENSIFIERS or " ".join(words) in _OPINION_VALUES:
        return None
    if attribute in ("city", "hometown", "employer"):
        if words[0] == "the" and len(words) > 1:  # "the Netherlands", "the BBC"
            name, words = value[4:], words[1:]
        else:
            name = value
        if cased and not name[0].isupper():
            return None  # "I live in an apartment"; proper places are capitalised
        if words[0] in _NOT_PLACE_FIRST and not name[0].isupper():
            return None
        if words[-1] in _NOT_PLACE_LAST and not value.split()[-1][0].isupper():
            return None
        if words[0] in _NOT_NAMES or words[0] in _NOT_PLACE_WORDS:
            return None
    if attribute == "age" and not value.isdecimal():  # isdigit() would let "²" reach int()
        return None
    return value, trailing_now


def _strip_quotes(value: str) -> str:
    if len(value) >= 2 and value[0] in "\"'“‘" and value[-1] in "\"'”’":
        return value[1:-1].strip()
    return value


def _strip_article(value: str) -> str:
    """Drop a leading article unless it belongs to a proper name ("The Hobbit", "the Beatles")."""
    parts = value.split(None, 1)
    if len(parts) < 2 or parts[0].lower() not in _ARTICLES:
        return value
    article, rest = parts
    next_is_capital = rest[0].isupper()
    if article.islower() and (article != "the" or not next_is_capital):
        return rest
    if not article.islower() and not next_is_capital:
        return rest
    return value


def _plausible_company(value: str, raw: str) -> bool:
    """Guard the "I joined X" pattern: X must read as an organisation, not a friend or a club."""
    if not value[0].isupper() or value.lower().split()[-1] in _NOT_COMPANY_LAST:
        return False
    rest = raw[len(value):] if raw.startswith(value) else raw[raw.find(value) + len(value):]
    return re.match(r"\s*(?:for|on|at|with|and|in the)\b", rest, re.IGNORECASE) is None
