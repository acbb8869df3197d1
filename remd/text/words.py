"""Text: sentences, words, stop words, names, numbers, dates and causes, defined once.

Tagging, fact parsing, synthesis, distillation and the query-date check all read text; they
split it and recognise its names and dates here, so a sentence or a date is the same thing to
each of them. Everything here is regular expressions and word lists: no model, no I/O, and no
function raises on any string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache


def word_set(text: str) -> frozenset[str]:
    """A word list written as whitespace-separated words."""
    return frozenset(text.split())


# Words that carry no topic of their own, and words that only say how much someone likes or
# wants something ("like", "really", "thing"): never tags, never searched for, never steering a
# query. The one stop list: tagging, the FTS5 query (remd/index/lexical.py), synthesis and distil
# all
# start from it.
FUNCTION_WORDS = word_set(
    """
    a an the this that these those there here it its itself i me my mine myself we us our ours
    ourselves you your yours yourself yourselves he him his himself she her hers herself they them
    their theirs themselves one ones someone somebody something anyone anybody anything everyone
    everybody everything nobody nothing none noone other others another each every either neither
    both all any some such own same few many much more most less least lot lots plenty several
    am is are was were be been being have has had having do does did doing done will would shall
    should can could may might must ought need dare
    want wanted wants wanting like likes liked liking changed changing
    about above across after afterwards against along alongside amid among around as at away back
    before behind below beneath beside besides between beyond by down during except for from in
    inside into near next of off on onto out outside over past per since than through throughout
    till to toward towards under underneath unlike until up upon via with within without further
    and but or nor so yet if then else because although though unless whereas while whether also
    too either instead otherwise therefore thus hence however anyway anyways besides meanwhile
    what when where who whom whose why how which whatever whenever wherever whoever however
    not no nor never always often sometimes usually ever again already still even just only very
    really quite rather pretty fairly almost enough maybe perhaps probably actually basically
    literally definitely totally completely absolutely simply certainly surely honestly seriously
    especially particularly exactly kinda sorta somewhat somehow anyhow else once
    yeah yep yup yes nope nah oh ooh ah aah ahh wow whoa hey hi hello hiya bye goodbye thanks thank
    thx ty please pls sorry okay ok alright
    lol lmao rofl haha hahaha hehe omg btw imo imho tbh idk gonna wanna gotta kinda dunno hmm um
    uh umm er erm huh meh yay ugh oops etc
    thing things stuff
    i'm i've i'll i'd you're you've you'll you'd he's he'll he'd she's she'll she'd it's it'll
    it'd we're we've we'll we'd they're they've they'll they'd that's that'll there's there'll
    here's what's what're who's who'll where's when's why's how's let's don't doesn't didn't
    can't cannot couldn't won't wouldn't shan't shouldn't mustn't mightn't needn't isn't aren't
    wasn't weren't haven't hasn't hadn't ain't y'all ya
    """
)
# Words that say little about what a text is about, though a question may hinge on them (time
# words, counts, everyday verbs and nouns): never tags or a synthesis's content, but bm25 still
# searches them, weighed by their rarity ("when did she *first* ...", "how many *days* ...").
VAGUE_WORDS = word_set(
    """
    get gets got gotten getting go goes going went gone make makes made making take takes took
    taken come comes came let lets say says said tell told think thought know knew known see saw
    seen seem seems seemed feel felt keep kept put give gave given find found try tried use used
    using
    now today tonight tomorrow yesterday soon later lately recently currently twice ago
    day days week weeks month months year years time times morning evening night weekend
    first second third last previous final new old recent early late
    two three four five six seven eight nine ten eleven twelve twenty thirty hundred thousand
    million billion dozen couple half
    fine sure cool awesome great amazing nice good bad well
    way ways kind sort bit part place person people guy guys
    note notes memo reminder todo update
    """
)
# Words that never carry what a text is about: never tags, never a synthesis's content.
STOP_WORDS = FUNCTION_WORDS | VAGUE_WORDS
# Words that only carry a question's form ("tell me what you know about ..."): left out of what
# a query searches for, on top of FUNCTION_WORDS.
QUESTION_WORDS = word_set(
    """
    tell remind recall remember know mention mentioned mentions talk talked discuss discussed ask
    asked anything something info information detail details user users current currently
    """
)
# Capitalised only because they open a sentence: not names.
NOT_NAMES = word_set(
    "a an the and or but if then so of to in on at by for with from as is are was were it its "
    "this that these those he she they we i you my your his her our their there here when while "
    "after before since during yesterday today tomorrow however because also once now next last"
)
# A word that turns a statement into its opposite.
NEGATIONS = word_set("not no never none nothing nobody neither nor without cannot")

# -- sentences and words ------------------------------------------------------------------------
WORD = re.compile(r"\w+(?:['’./:-]\w+)*")
_SENTENCE_END = re.compile(r"[.!?…]+(?=\s)|\n+|;")
_ABBREVIATIONS = word_set("mr mrs ms dr st jr sr prof mt vs etc e.g i.e inc co ltd no")


def sentences(text: str) -> list[str]:
    """The sentences of a text, each with its terminator, whitespace collapsed to one space.
    Splits at ``. ! ? …`` before a space, at line breaks and at semicolons; not after an
    abbreviation ("Dr. Smith", "e.g. this")."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.group()[0] == ".":
            before = text[max(start, m.start() - 5):m.start()].rsplit(None, 1)
            if before and before[-1].lower() in _ABBREVIATIONS:
                continue
        out.append(text[start:m.end()])
        start = m.end()
    out.append(text[start:])
    return [" ".join(s.split()) for s in out if s and not s.isspace() and s.strip(";")]


def sentence_pieces(content: str, limit: int) -> list[str]:
    """The sentences of a memory worth a vector of their own: none for a memory of one
    sentence (its own vector is that sentence's), else its sentences of 3+ words, each after
    the memory's chat header ("[8 May, 2023] Caroline: ..."), at most ``limit``."""
    if limit <= 0:
        return []
    stamp, speaker, body = split_header(content)
    found = [x for x in sentences(body) if len(x.split()) >= 3]
    if len(found) < 2:
        return []
    head = " ".join(p for p in (stamp, speaker) if p)
    return [f"{head} {x}" if head else x for x in found[:limit]]


def words(text: str) -> list[str]:
    """The words of a text as written ("Priya", "2025-03-14", "amber-1234", "don't")."""
    return WORD.findall(text)


def is_negation(word: str) -> bool:
    w = word.lower()
    return w in NEGATIONS or w.endswith(("n't", "n’t"))


# "[1:56 pm on 8 May, 2023] Melanie: ..." / "Melanie: ..." / "[2024-03-01] ...": a leading
# bracketed stamp and/or a speaker of one to three capitalised words before a colon.
_HEADER = re.compile(
    r"^\s*(?P<stamp>\[[^\]\n]{1,80}\])?\s*(?P<speaker>(?:[A-Z][\w'’.-]*\s?){1,3}:)?\s*")


def split_header(content: str) -> tuple[str, str, str]:
    """(stamp, speaker, body) of a memory: "[...]" and "Name:" prefixes (either may be empty),
    and the rest."""
    m = _HEADER.match(content)
    if m is None:
        return "", "", content.strip()
    return ((m.group("stamp") or "").strip(), (m.group("speaker") or "").strip(),
            content[m.end():].strip())


# A chat header inside a text: "[stamp] Name:" (a REM synthesis of chat turns keeps theirs).
_INNER_SPEAKER = re.compile(r"\[[^\]\n]{1,80}\]\s*((?:[A-Z][\w'’.-]*\s?){1,3}):")


def speakers(text: str) -> set[str]:
    """The speakers of a memory written as chat turns, lower-cased: the "Name:" of its header
    and of every "[stamp] Name:" inside it."""
    found = {m.group(1).strip().casefold() for m in _INNER_SPEAKER.finditer(text)}
    _, speaker, _ = split_header(text)
    if speaker:
        found.add(speaker.rstrip(":").strip().casefold())
    return found


# -- names and numbers ----------------------------------------------------------------------------
_NAME_WORD = re.compile(r"[^\W\d_][\w-]*(?:['’](?![sS]\b)[\w-]+)*")
NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")


def names(text: str) -> list[str]:
    """Capitalised words and runs of them ("New York", "Acme Corp"), in order of first
    appearance. A sentence's first word counts unless it is in :data:`NOT_NAMES`; "I" and
    month names inside a date are not names. See :func:`name_runs` for which open a
    sentence."""
    return list(dict.fromkeys(name for name, _ in name_runs(text)))


def name_runs(text: str) -> list[tuple[str, bool]]:
    """Every name of :func:`names` where it is written, and whether it is one word opening
    its sentence: capitalised maybe only for that ("Timeouts hit us", "Questions go to Mei"),
    so a name for sure only if the same word is capitalised elsewhere too."""
    found: list[tuple[str, bool]] = []
    for sentence in sentences(text):
        taken = [(d.start, d.end) for d in find_dates(sentence)]
        run: list[str] = []
        start = end = -1
        for m in _NAME_WORD.finditer(sentence):
            word = m.group(0)
            capital = word[0].isupper() and word != "I" and not word.startswith(("I'", "I’"))
            capital = capital and not (m.start() == 0 and word.lower() in NOT_NAMES)
            capital = capital and not any(a <= m.start() < b for a, b in taken)
            if capital and run and sentence[end:m.start()] == " ":
                run.append(word)
            else:
                if run:
                    found.append((" ".join(run), start == 0 and len(run) == 1))
                run, start = ([word], m.start()) if capital else ([], -1)
            end = m.end()
        if run:
            found.append((" ".join(run), start == 0 and len(run) == 1))
    return found


def numbers(text: str) -> list[str]:
    """The numbers written in a text that are not part of a date, as written."""
    spans = [(d.start, d.end) for d in find_dates(text)]
    return list(dict.fromkeys(
        m.group(0) for m in NUMBER.finditer(text)
        if not any(a <= m.start() < b for a, b in spans)))


# -- dates ------------------------------------------------------------------------------------
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_MON = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
        r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_ORD = r"(?:st|nd|rd|th)?"
# One grammar for every date remd reads; a named group per part. Tried in this order.
_DATE = re.compile(
    rf"(?P<iso>\b(?P<iy>\d{{4}})-(?P<im>\d{{2}})-(?P<id>\d{{2}})"
    rf"(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}})?Z?)?\b)"
    rf"|(?P<num>\b\d{{1,2}}/\d{{1,2}}/\d{{2,4}}\b)"
    rf"|(?P<dmy>\b(?P<dd>\d{{1,2}}){_ORD}\s+(?:of\s+)?(?P<dm>{_MON})\.?(?:,?\s+(?P<dy>\d{{4}})\b)?)"
    rf"|(?P<mdy>\b(?P<mm>{_MON})\.?\s+(?P<md>\d{{1,2}}){_ORD}\b(?:,?\s+(?P<my>\d{{4}})\b)?)"
    rf"|(?P<my2>\b(?P<m2>{_MON})\.?,?\s+(?:of\s+)?(?P<y2>\d{{4}})\b)",
    re.IGNORECASE,
)
# A month named alone is a date only after a word that makes it a time ("in June", "last May"):
# "May I ask", "we march on" and "what did June say" name no month.
BARE_MONTH = re.compile(
    r"\b(?:in|on|during|since|until|till|by|before|after|through|throughout|of|last|this|"
    rf"next|early|late|mid|from|between|every)[\s-]+(?P<m>{'|'.join(MONTHS)})\b", re.I)
YEAR = re.compile(r"\b(1[89]\d\d|2\d\d\d)\b")  # a year of 1800-2999
# "12 Jan, 3 Feb and 14 Mar 2025": days of a list that take the year written after the last.
_LIST_SEP = re.compile(r"\s*(?:,|;|and|&|,\s*and)\s*$")
# "6, 16 and 26 Jun": several days of one month.
_DAY_GROUP = re.compile(
    rf"\b(?P<days>\d{{1,2}}(?:(?:,\s*|\s+and\s+)\d{{1,2}})+)\s+(?P<m>{_MON})\.?"
    rf"(?:,?\s+(?P<y>\d{{4}})\b)?", re.IGNORECASE)
_DAY_NUMBER = re.compile(r"\d{1,2}")


@dataclass(frozen=True)
class DateSpan:
    """A date written in a text: where, as written, and what it says (parts it leaves out are
    None: "14 Mar" has no year, "March 2025" no day, "in June" only a month)."""

    start: int
    end: int
    surface: str
    year: int | None
    month: int | None
    day: int | None

    @property
    def day_date(self) -> date | None:
        """The calendar day, when the text names one in full."""
        if self.year is None or self.month is None or self.day is None:
            return None
        try:
            return date(self.year, self.month, self.day)
        except ValueError:
            return None

    @property
    def key(self) -> str:
        """The same for every way of writing one date: ISO for a day, else the parts named."""
        day = self.day_date
        if day is not None:
            return day.isoformat()
        if self.month is not None:
            return f"{self.year or '*'}-{self.month:02d}" + (f"-{self.day:02d}" if self.day
                                                              else "")
        return self.surface.casefold()


def _month(name: str) -> int:
    low = name.lower().rstrip(".")
    return next(i for i, m in enumerate(MONTHS, 1) if m.startswith(low[:3]))


def find_dates(text: str, bare_months: bool = False) -> list[DateSpan]:
    """The dates a text writes (see :func:`_find_dates`; cached, the spans are frozen)."""
    return list(_find_dates(text, bare_months))


@lru_cache(maxsize=4096)
def _find_dates(text: str, bare_months: bool) -> tuple[DateSpan, ...]:
    """The dates a text writes, in order: ISO days, "14 Mar 2025", "March 14th, 2025",
    "14/03/2025" (day and month left out: the order is ambiguous), "March 2025"; with
    ``bare_months``, also a month after a time word ("in June"). A day written without a year
    in a list that ends in one ("12 Jan, 3 Feb and 14 Mar 2025") takes that year."""
    out: list[DateSpan] = []
    grouped: list[tuple[int, int]] = []
    for m in _DAY_GROUP.finditer(text):
        month, year = _month(m.group("m")), _int(m.group("y"))
        found = list(_DAY_NUMBER.finditer(m.group("days")))
        for k, d in enumerate(found):
            at = m.start("days") + d.start()
            end = m.end() if k + 1 == len(found) else at + len(d.group(0))  # "26 Jun 2024"
            out.append(DateSpan(at, end, text[at:end], year, month, int(d.group(0))))
        grouped.append((m.start(), m.end()))
    for m in _DATE.finditer(text):
        if any(a <= m.start() < b for a, b in grouped):
            continue
        g = m.groupdict()
        if g["iso"]:
            out.append(DateSpan(m.start(), m.end(), m.group(0), int(g["iy"]), int(g["im"]),
                                int(g["id"])))
        elif g["num"]:
            out.append(DateSpan(m.start(), m.end(), m.group(0), None, None, None))
        elif g["dmy"]:
            out.append(DateSpan(m.start(), m.end(), m.group(0), _int(g["dy"]),
                                _month(g["dm"]), int(g["dd"])))
        elif g["mdy"]:
            out.append(DateSpan(m.start(), m.end(), m.group(0), _int(g["my"]),
                                _month(g["mm"]), int(g["md"])))
        else:
            out.append(DateSpan(m.start(), m.end(), m.group(0), int(g["y2"]), _month(g["m2"]),
                                None))
    if bare_months:
        for m in BARE_MONTH.finditer(text):
            if not any(d.start <= m.start("m") < d.end for d in out) and not any(
                    a <= m.start("m") < b for a, b in grouped):
                out.append(DateSpan(m.start("m"), m.end("m"), m.group("m"), None,
                                    _month(m.group("m")), None))
    out.sort(key=lambda d: d.start)
    # Years carried back along a list: "12 Jan, 3 Feb and 14 Mar 2025".
    for i in range(len(out) - 2, -1, -1):
        cur, nxt = out[i], out[i + 1]
        if (cur.year is None and cur.day is not None and nxt.year is not None
                and _LIST_SEP.fullmatch(text[cur.end:nxt.start]) is not None):
            out[i] = DateSpan(cur.start, cur.end, cur.surface, nxt.year, cur.month, cur.day)
    return tuple(out)


_TIME_WORDS = word_set(
    " ".join(MONTHS) + " " + " ".join(m[:3] for m in MONTHS)
    + " sept monday tuesday wednesday thursday friday saturday sunday"
    " mon tue tues wed thu thur thurs fri sat sun")


def is_time_word(word: str) -> bool:
    """A month, a weekday or a year (a tag such as ``mar``, ``tuesday``, ``2024``): when, not
    what about."""
    low = word.casefold()
    return low in _TIME_WORDS or YEAR.fullmatch(low) is not None


def _int(value: str | None) -> int | None:
    return None if value is None else int(value)


_MON_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_days(days: Iterable[date]) -> str:
    """Days as one short list, oldest first, each year written once after its last day:
    "12 Jan, 3 Feb and 14 Mar 2025", "30 Dec 2024 and 2 Jan 2025" (:func:`find_dates` reads
    every day of it back)."""
    ordered = sorted(set(days))
    parts: list[str] = []
    for i, d in enumerate(ordered):
        text = f"{d.day} {_MON_ABBR[d.month - 1]}"
        if i + 1 == len(ordered) or ordered[i + 1].year != d.year:
            text += f" {d.year}"
        parts.append(text)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def format_span(first: date, last: date) -> str:
    """"2 Feb to 19 Oct 2025", "30 Dec 2024 to 2 Jan 2025", "14 Mar 2025"."""
    if first == last:
        return format_days([first])
    head = f"{first.day} {_MON_ABBR[first.month - 1]}" + (
        f" {first.year}" if first.year != last.year else "")
    return f"{head} to {format_days([last])}"


# -- causes -------------------------------------------------------------------------------------
CAUSAL = re.compile(
    r"\b(because of|because|due to|therefore|so that|so|led to|leads to|caused|causes"
    r"|resulted in)\b", re.IGNORECASE,
)
_EFFECT_FIRST = {"because", "because of", "due to"}


def causal(sentence: str) -> tuple[str, str] | None:
    """(cause, effect) of a sentence with a causal connective, else None."""
    m = CAUSAL.search(sentence)
    if m is None:
        return None
    left, right = sentence[: m.start()], sentence[m.end():]
    if m.group(1).lower() in _EFFECT_FIRST:
        if not left.strip():  # "Because X, Y."
            right, _, left = right.partition(",")
        left, right = right, left
    cause, effect = left.strip(" ,;:.!?"), right.strip(" ,;:.!?")
    return (cause, effect) if cause and effect else None


def content_words(text: str, extra_stop: Sequence[str] | frozenset[str] = ()) -> list[str]:
    """The words of a text that say something: not stop words, casefolded, in order."""
    return [w for w in (x.casefold() for x in WORD.findall(text))
            if w not in STOP_WORDS and w not in extra_stop]
