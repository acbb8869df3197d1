"""Tag names: the canonical form of a tag (``"Dark Chocolates"`` -> ``dark-chocolate``).

Every tag a memory or a query gets, from the saver, the extractor (:mod:`remd.text.tagging`) or
the LLM tagger, goes through :func:`normalise_tag`, so one thing has one tag however it is
written.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sized
from functools import lru_cache

from remd.checks import check_storable
from remd.errors import InvalidInput, quote
from remd.text.lexicon import lemma

MAX_TAG_LEN = 64
# What one memory may be given: its tags are linked pairwise by co-occurrence edges, so their
# number bounds what a save writes (64 tags: at most 64 * 63 edge rows); the characters bound
# the work of normalising them (64 tags of 64 characters).
MAX_TAGS = 64
MAX_TAG_CHARS = 4096
_SPLIT_TAG_RE = re.compile(r"[\s_\-\u2010-\u2015\x00-\x1f\x7f]+")


def _strip_ends(word: str) -> str:
    """Drop leading/trailing characters that are not letters, digits or marks."""
    start, end = 0, len(word)
    while start < end and unicodedata.category(word[start])[0] not in "LNM":
        start += 1
    while end > start and unicodedata.category(word[end - 1])[0] not in "LNM":
        end -= 1
    return word[start:end]


# --- lemmatising -------------------------------------------------------------------------------


def _normalise_once(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = unicodedata.normalize("NFKC", text)  # lower() can undo NFKC on rare letters
    words = []
    for word in _SPLIT_TAG_RE.split(text):
        word = _strip_ends(word)
        while word:  # "boxes's" -> "boxes" -> "box": lemmatise until nothing changes
            nxt = _strip_ends(lemma(word))
            if nxt == word:
                break
            word = nxt
        if word:
            words.append(word)
    return "-".join(words)


def normalise_tag(raw: str) -> str:
    """Return the canonical form of a tag name: ``"Dark Chocolates"`` -> ``dark-chocolate``.

    NFKC, lower-case, words split on whitespace, underscores and hyphens, punctuation stripped from
    each word's ends, each word lemmatised, words joined by ``-``. Idempotent.

    Raises:
        InvalidInput: the result is empty, longer than 64 characters, or holds a lone surrogate
            (it could not be stored).
    """
    tag = _normalise_once(raw)
    for _ in range(3):  # exotic Unicode can need a second pass to reach the fixed point
        again = _normalise_once(tag)
        if again == tag:
            break
        tag = again
    if not tag:
        raise InvalidInput(f"tag {quote(raw)} is empty once normalised")
    if len(tag) > MAX_TAG_LEN:
        raise InvalidInput(f"tag {quote(tag[:20])}... is longer than {MAX_TAG_LEN} characters")
    if not tag.isascii():
        try:
            tag.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"tag {quote(raw)} is not valid UTF-8") from exc
    return tag


@lru_cache(maxsize=16384)
def checked_tag(candidate: str) -> str | None:
    """Normalised form of a non-ASCII candidate, or None if it normalises to nothing usable."""
    try:
        return normalise_tag(candidate)
    except InvalidInput:
        return None


def check_tags(tags: Iterable[str] | None) -> list[str]:
    """The canonical forms of the tags a memory is given, in order, each once.

    Raises:
        InvalidInput: not a list of strings; more than :data:`MAX_TAGS` tags or more than
            :data:`MAX_TAG_CHARS` characters of them (counted as given, before anything else is
            read); a tag :func:`normalise_tag` refuses, or one holding a NUL.
    """
    if tags is None:
        return []
    if isinstance(tags, str):
        raise InvalidInput("tags must be a list of strings, not one string")
    given = list(itertools.islice(tags, MAX_TAGS + 1))  # never more is read
    if len(given) > MAX_TAGS:
        count = len(tags) if isinstance(tags, Sized) else f"more than {MAX_TAGS}"
        raise InvalidInput(f"{count} tags; the limit is {MAX_TAGS} tags a memory")
    for raw in given:
        if not isinstance(raw, str):
            raise InvalidInput(f"tag must be a string, not {type(raw).__name__}")
    chars = sum(len(raw) for raw in given)
    if chars > MAX_TAG_CHARS:
        raise InvalidInput(f"the tags are {chars} characters; the limit is {MAX_TAG_CHARS} "
                           "characters of tags a memory")
    out: list[str] = []
    for raw in given:
        check_storable(raw, "tag")
        tag = normalise_tag(raw)
        if tag not in out:
            out.append(tag)
    return out
