"""Offline tagging: the tags a memory or a query is filed under in the tag graph.

Tags are the nodes that inject walks from a query to memories, so the same concept must meet the
same tag whether it was saved as "I'm allergic to peanuts" or asked as "what are my allergies?".
Three cheap, deterministic devices do that work instead of an NLP model: one lemmatiser applied to
every tag word, a small derivational map for the words memories are made of (prefer/preferences ->
``preference``), and a hand-written category lexicon that adds a broader tag (peanut -> ``food``);
the three live in :mod:`remd.text.lexicon`.

Tagging runs on the bulk-save hot path, so everything here is table look-ups and one regex pass.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

from remd.errors import InvalidInput
from remd.text.lexicon import CATEGORIES, CATEGORY_OF, TABLE, lemma
from remd.text.tagnames import MAX_TAG_LEN, checked_tag, normalise_tag
from remd.text.wording import unworded
from remd.text.words import QUESTION_WORDS, STOP_WORDS, name_runs

__all__ = ["extract_entities", "extract_query_tags", "extract_tags", "is_verb_form", "lemma",
           "name_tags", "normalise_tag"]

# The namespace vocabulary: given candidate tags, returns those that exist already.
Known = Callable[[list[str]], set[str]]

# Huge texts are tagged from their opening only: tags are a summary, and scanning 1 MB of text on
# every save would dominate bulk-save time.
SCAN_CHARS = 4000
# Tokens longer than this are hashes, URLs or unsegmented CJK sentences, not concepts.
_MAX_WORD_LEN = 32

# Kind weights: entities (names, places, years) identify a memory best; a broad category tag
# alone would pull in every food memory, so it ranks below any word actually written.
_W_ENTITY = 1.0
_W_YEAR = 0.9
_W_KEYWORD = 0.8
_W_BIGRAM = 0.75
_W_CATEGORY = 0.5
_KNOWN_BOOST = 1.3  # reuse the namespace vocabulary: a tag that exists already links memories
_BIGRAM_MIN_CONTENT = 4  # shorter texts get their words only; a bigram would just echo them
_CATEGORY_SLOT_FROM = 4  # with at least this many slots, one is kept for a category tag

# --- word lists --------------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())



_QUERY_STOP_WORDS = STOP_WORDS | QUESTION_WORDS

# Words that are never names, so a capitalised sentence opener made of one is not an entity.
_COMMON_ADJ = _words(
    """
    big small little large huge tiny long short tall young good bad best better worse worst happy
    sad angry tired busy hot cold warm dark light bright red blue green yellow black white brown
    pink purple grey gray easy hard difficult simple fun funny beautiful pretty ugly cute sweet
    delicious healthy fresh free full empty rich poor strong weak fast slow quick quiet loud
    wonderful terrible horrible important interesting boring exciting excited scared afraid proud
    glad lucky single local public private special different whole real true false main major
    """
)
# Verb forms that cannot open a noun phrase ("visit Paris", "watch movies").
_VERBISH = _words(
    """
    eat drink drank play played playing watch watched watching visit visited visiting buy bought
    read write wrote writing meet met call called ask asked help helped learn learned learnt teach
    taught bring brought become became begin began leave left run ran spend spent show showed
    turn turned happen happened hope hoped wish wished start started finish finished decide
    decided adopt adopted join joined attend attended plan planned planning cook cooked bake baked
    built sent held paid lost won broke broken chose chosen fell fallen hitting drove driven
    flew flown grew grown heard sold sat stood understood forgot forgotten fixed looked checked
    noted observe observed investigate investigated noticed written
    """
)
_NOT_A_NAME = frozenset(
    set(CATEGORY_OF) | set(TABLE) | set(TABLE.values()) | _COMMON_ADJ | _VERBISH
    | set(CATEGORIES)
)
# Capitalised stop-words that may open a multi-word name ("New York", "San Diego", "Great Britain").
_NAME_OPENERS = _words(
    "new old great little big good first last next one saint san santa los las el la le de du "
    "north south east west upper lower"
)
_NAME_SUFFIXES = ("ing", "ed", "ly", "tion", "sion", "ness", "ment", "able", "ible", "ful",
                  "less", "ous", "ive", "ity", "ism", "ance", "ence")

# --- tokenising --------------------------------------------------------------------------------

_SENTENCE_END = frozenset(".!?…\n")
_BREAK_PUNCT = ",;:()[]{}\"“”«»/|&+=*<>~#@\t\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\r\x7f"
_ASCII_TOKEN_RE = re.compile(
    r"[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*|[.!?\n" + re.escape(_BREAK_PUNCT) + "]"
)
_I_FORMS = frozenset(("i", "i'm", "i've", "i'll", "i'd"))
_YEAR_RE = re.compile(r"(?:1[5-9]|20)\d\d")
_LINK_MARKUP_RE = re.compile(r"\[\[memory:[^\]\n]{0,200}\]\]")


@cache
def _unicode_token_re() -> re.Pattern[str]:
    """The tokeniser for non-ASCII text, built on first use (a BMP scan costs ~25 ms).

    ``\\w`` in ``re`` excludes combining marks, which would cut Devanagari or vowelled Arabic words
    into pieces, so every BMP mark is added to the word class.
    """
    ranges: list[str] = []
    start = -1
    for cp in range(0x10000):
        is_mark = unicodedata.category(chr(cp))[0] == "M"
        if is_mark and start < 0:
            start = cp
        elif not is_mark and start >= 0:
            ranges.append(f"\\u{start:04x}-\\u{cp - 1:04x}")
            start = -1
    marks = "".join(ranges)
    word = rf"(?:[^\W_]|[{marks}])+"
    breaks = "".join(_SENTENCE_END) + _BREAK_PUNCT + "、。，！？；：،؛؟"
    return re.compile(rf"{word}(?:'{word})*|[{re.escape(breaks)}]")


# --- extraction --------------------------------------------------------------------------------


def extract_tags(
    text: str, *, known: Known | None = None, max_tags: int = 8, min_tags: int = 3
) -> list[tuple[str, float]]:
    """Return up to *max_tags* ``(tag, weight)`` pairs for a memory, best first.

    Candidates are entities (capitalised names, acronyms, years), keywords (lemmatised content
    words), noun-phrase bigrams (``dark-chocolate``, only for texts of four content words or more,
    at most ``max_tags // 4`` of them) and category tags from the lexicon (``food``; they weigh
    less than any word, but with ``max_tags >= 4`` the best one always gets a slot). Weights are
    in (0, 1], the best is 1.0; ties are broken by the tag string, so the result is deterministic.
    Only the first 4,000 characters are read; ``[[memory:ID]]`` links are not tagged.

    *known* receives every candidate tag and returns those already in the namespace; they are
    preferred, and a new bigram whose two words are both known is demoted behind them. Fewer than
    *min_tags* tags are returned only when the text has fewer candidates.

    Raises:
        InvalidInput: *max_tags* < 1 or *min_tags* < 0.
        Whatever *known* raises.
    """
    return _extract(text, known=known, max_tags=max_tags, min_tags=min_tags, query=False)


def extract_query_tags(
    query: str, *, known: Known | None = None, max_tags: int = 8
) -> list[tuple[str, float]]:
    """Return the seed tags of a query: the :func:`extract_tags` pipeline, minus question words.

    Queries are often lower-case, so they rely on the shared lemmatiser and category lexicon rather
    than capitalisation: "What are my food preferences?" yields ``food`` and ``preference``.

    Raises:
        InvalidInput: *max_tags* < 1.
        Whatever *known* raises.
    """
    if max_tags < 1:
        raise InvalidInput(f"max_tags must be at least 1, not {max_tags}")
    pool, n = _query_pool(query)
    return _rank(pool, known, n, max_tags=max_tags, min_tags=0)


def query_candidates(query: str) -> list[str]:
    """Every name :func:`extract_query_tags` asks *known* about, in the order it asks (so that
    a store can look them up ahead, with the other first reads of an inject)."""
    return sorted(_query_pool(query)[0].cands)


class _Pool:
    """Candidates being collected: tag -> [weight of its best kind, occurrences, first position].

    ``bigrams`` holds the tags that so far come from bigrams only, with their two words;
    ``categories`` the tags that come from the category lexicon only.
    """

    __slots__ = ("bigrams", "cands", "categories", "names")

    def __init__(self) -> None:
        self.cands: dict[str, list[float]] = {}
        self.bigrams: dict[str, tuple[str, str]] = {}
        self.categories: set[str] = set()
        # Entities with evidence beyond "opens a sentence and is no known word": capitalised
        # inside a sentence, several words long, or an acronym.
        self.names: set[str] = set()

    def add(self, tag: str, weight: float, pos: int, parts: tuple[str, str] | None = None) -> None:
        if len(tag) > MAX_TAG_LEN:
            return
        if not tag.isascii():
            checked = checked_tag(tag)
            if checked is None:
                return
            tag = checked
        entry = self.cands.get(tag)
        if entry is None:
            self.cands[tag] = [weight, 1.0, float(pos)]
            if parts is not None:
                self.bigrams[tag] = parts
            if weight == _W_CATEGORY:
                self.categories.add(tag)
        else:
            entry[0] = max(entry[0], weight)
            entry[1] += 1.0
            if parts is None:
                self.bigrams.pop(tag, None)
            if weight != _W_CATEGORY:
                self.categories.discard(tag)


def _is_capitalised(raw: str) -> bool:
    return raw[0].isupper()


def _caps_are_meaningful(words: list[tuple[str, str, bool, int]], stop: frozenset[str]) -> bool:
    """False for SHOUTED or Title Case text, where capitals do not mark names."""
    shouted = sum(1 for w in words if len(w[0]) > 1 and w[0].isupper())
    lettered = [w for w in words if w[0][0].isalpha() and w[1] not in _I_FORMS]
    if shouted >= 3 and shouted >= 0.6 * len(lettered):
        return False
    # Title Case capitalises function words too ("Is", "And"); a list of names does not.
    inner_stops = [w for w in lettered if not w[2] and w[1] in stop and w[1] not in _NAME_OPENERS]
    capital_stops = sum(_is_capitalised(w[0]) for w in inner_stops)
    if capital_stops and capital_stops >= 0.5 * len(inner_stops):
        return False
    content = [w for w in lettered if w[1] not in stop]
    return not (len(content) >= 6
                and sum(_is_capitalised(w[0]) for w in content) >= 0.9 * len(content))


def _looks_like_name(low: str) -> bool:
    """Could a capitalised sentence opener be a name? Known common words and suffixes say no."""
    return low not in _NOT_A_NAME and not low.endswith(_NAME_SUFFIXES)


def _bigram_head_ok(low: str) -> bool:
    """The first word of a noun phrase is an adjective or noun, not a verb or adverb."""
    return (low not in TABLE and low not in _VERBISH
            and not low.endswith(("ly", "ed", "ing")) and low.isalpha())


def _extract(
    text: str, *, known: Known | None, max_tags: int, min_tags: int, query: bool
) -> list[tuple[str, float]]:
    if max_tags < 1:
        raise InvalidInput(f"max_tags must be at least 1, not {max_tags}")
    if min_tags < 0:
        raise InvalidInput(f"min_tags must be at least 0, not {min_tags}")
    pool, n = _collect(text, query=query)
    return _rank(pool, known, n, max_tags=max_tags, min_tags=min_tags)


@lru_cache(maxsize=64)
def _query_pool(query: str) -> tuple[_Pool, int]:
    """A query's candidates (read, never changed, by :func:`_rank`), kept for the few calls
    an inject makes on one query."""
    return _collect(query, query=True)


def _collect(text: str, *, query: bool) -> tuple[_Pool, int]:
    """Every candidate tag of a text, and its number of words."""
    sample = text[:SCAN_CHARS].replace("\u2019", "'")  # NFKC keeps the typographic apostrophe
    if not query:  # "Heads up, ...", "Noted on 3 May that ...": how it is told is no subject
        sample = unworded(sample)
    if "[[" in sample:  # [[memory:ID]] links become edges, not tags
        sample = _LINK_MARKUP_RE.sub(" , ", sample)
    if sample.isascii():
        tokens = _ASCII_TOKEN_RE.findall(sample)
    else:
        sample = unicodedata.normalize("NFKC", sample)
        tokens = _unicode_token_re().findall(sample)
    stop = _QUERY_STOP_WORDS if query else STOP_WORDS

    # Words as (raw, lower, sentence-initial, segment); punctuation only separates segments.
    words: list[tuple[str, str, bool, int]] = []
    segment, initial = 0, True
    for tok in tokens:
        first = tok[0]
        if first in _SENTENCE_END or (len(tok) == 1 and not first.isalnum()):
            segment += 1
            initial = initial or first in _SENTENCE_END
            continue
        if len(tok) > _MAX_WORD_LEN:
            segment += 1
            continue
        words.append((tok, tok.lower(), initial, segment))
        initial = False

    use_caps = _caps_are_meaningful(words, stop)
    caps_inside = {w[1] for w in words if use_caps and not w[2] and _is_capitalised(w[0])}

    pool = _Pool()
    n = len(words)
    content = 0
    prev_word: str | None = None  # previous content word of the segment, for bigrams
    i = 0
    while i < n:
        raw, low, initial, seg = words[i]
        opener = (low in _NAME_OPENERS and i + 1 < n and words[i + 1][3] == seg
                  and _is_capitalised(words[i + 1][0]) and words[i + 1][1] not in stop)
        if use_caps and _is_capitalised(raw) and (low not in stop or opener) and len(low) >= 2:
            # An entity: a run of capitalised words ("New York", "University of Texas").
            j = i + 1
            while j < n and words[j][3] == seg:
                nraw, nlow = words[j][0], words[j][1]
                if _is_capitalised(nraw) and nlow not in stop:
                    j += 1
                elif (nlow == "of" and j + 1 < n and words[j + 1][3] == seg
                      and _is_capitalised(words[j + 1][0]) and words[j + 1][1] not in stop):
                    j += 2
                else:
                    break
            evidence = (not initial or j > i + 1 or (raw.isupper() and len(raw) >= 2)
                        or low in caps_inside)
            if evidence or _looks_like_name(low):
                run = [w[1] for w in words[i:j]]
                if len(run) > 4:  # a title or a heading, not a name: keep its words
                    for k, part in enumerate(run):
                        if part not in stop and len(part) >= 2:
                            pool.add(lemma(part), _W_ENTITY, i + k)
                else:
                    name = "-".join(lemma(part) for part in run)
                    pool.add(name, _W_ENTITY, i)
                    if evidence:
                        pool.names.add(name)
                content += j - i
                prev_word = None
                i = j
                continue
        if low.isdigit():
            if low.isascii() and len(low) == 4 and _YEAR_RE.fullmatch(low):
                pool.add(low, _W_YEAR, i)
            prev_word = None
        elif len(low) >= 3 and low not in stop and not low.isdigit():
            lem = lemma(low)
            if lem in stop:
                prev_word = None
            else:
                content += 1
                pool.add(lem, _W_KEYWORD, i)
                for cat in CATEGORY_OF.get(lem, ()):
                    pool.add(cat, _W_CATEGORY, i)
                if (prev_word is not None and words[i - 1][3] == seg and _bigram_head_ok(prev_word)
                        and low.isalpha() and not low.endswith(("ly", "ed"))):
                    head = lemma(prev_word)
                    pool.add(f"{head}-{lem}", _W_BIGRAM, i - 1, (head, lem))
                prev_word = low
        else:
            prev_word = None
        i += 1

    if content < _BIGRAM_MIN_CONTENT:
        for bigram in pool.bigrams:
            pool.cands.pop(bigram, None)
    return pool, n


def extract_entities(text: str) -> set[str]:
    """The names a text is sure of, as tags: runs of capitalised words inside a sentence, names
    of several words and acronyms (``"Priya Sharma"`` -> ``priya-sharma``). A lone capitalised
    word that only opens a sentence ("Investigated the outage.") is not one. Never raises."""
    pool, _ = _collect(text, query=False)
    return {name for name in pool.names if name in pool.cands}


def name_tags(text: str) -> set[str]:
    """The names a text writes (:func:`remd.text.words.name_runs`; a word opening a sentence too,
    unless it is a stop word or a verb form: "Risris launched" names Risris, "Saw it" and
    "Investigated" name no one), as tags. Never raises."""
    out: set[str] = set()
    for name, opens in name_runs(text[:SCAN_CHARS]):
        if opens and (name.lower() in STOP_WORDS or is_verb_form(name)):
            continue
        try:
            out.add(normalise_tag(name))
        except InvalidInput:
            continue
    return out


def is_verb_form(word: str) -> bool:
    """Is this word a verb form rather than a thing: a common verb, a past tense or participle
    ("investigated"), a gerund ("hitting")? Words of the category lexicon and the lemmatiser's
    tables that end like verbs (``hiking``, ``wedding``) are things. A guess from the word
    alone, without its sentence: "meeting" and "building" count as verbs too. The commonest
    verbs (``made``, ``found``) are in :data:`STOP_WORDS` instead. Never raises."""
    w = word.lower()
    if w in _VERBISH:
        return True
    if w in CATEGORY_OF or w in CATEGORIES or w in TABLE or not w.isalpha():
        return False
    return (len(w) >= 5 and w.endswith("ed") and not w.endswith("eed")) or (
        len(w) >= 6 and w.endswith("ing"))


def _rank(
    pool: _Pool, known: Known | None, n_words: int, *, max_tags: int, min_tags: int
) -> list[tuple[str, float]]:
    """Score, order and cut the candidates; normalise the weights so the best is 1.0."""
    if not pool.cands:
        return []
    names = sorted(pool.cands)
    known_set = known(names) if known is not None else set()
    span = max(n_words, 1)
    scored: list[tuple[float, str]] = []
    for tag in names:
        weight, count, first = pool.cands[tag]
        # Repetition and an early first mention both say "this is what the text is about".
        score = weight * (1.0 + 0.2 * min(count - 1.0, 3.0)) * (1.0 + 0.15 * (1.0 - first / span))
        if tag in known_set:
            score *= _KNOWN_BOOST
        else:
            parts = pool.bigrams.get(tag)
            if parts is not None and parts[0] in known_set and parts[1] in known_set:
                score *= 0.5  # the vocabulary already says this with two tags
        scored.append((score, tag))
    scored.sort(key=lambda st: (-st[0], st[1]))

    bigram_cap = max(1, max_tags // 4)
    chosen: list[tuple[float, str]] = []
    overflow: list[tuple[float, str]] = []
    bigrams = 0
    for item in scored:
        if len(chosen) >= max_tags:
            break
        if item[1] in pool.bigrams:
            if bigrams >= bigram_cap:
                overflow.append(item)
                continue
            bigrams += 1
        chosen.append(item)
    # The bigram cap keeps bigrams from crowding out words, not from filling an empty result.
    for item in overflow:
        if len(chosen) >= min(min_tags, max_tags):
            break
        chosen.append(item)
    # A long text has more words than slots, and categories rank last; but a category is what
    # joins "dark chocolate" to a question about food, so the best one always gets a slot.
    if max_tags >= _CATEGORY_SLOT_FROM and not any(tag in CATEGORIES for _, tag in chosen):
        best = next((item for item in scored if item[1] in pool.categories), None)
        if best is not None:
            if len(chosen) >= max_tags:
                chosen.pop()
            chosen.append(best)
    top = max(score for score, _ in chosen)
    result = [(tag, max(round(score / top, 4), 0.0001)) for score, tag in chosen]
    result.sort(key=lambda tw: (-tw[1], tw[0]))  # ties (after rounding) by the tag string
    return result
