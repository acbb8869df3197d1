"""Tag names: the canonical form of a tag (``"Dark Chocolates"`` -> ``dark-chocolate``).

Every tag a memory or a query gets, from the saver, the extractor (:mod:`remd.text.tagging`) or
the LLM tagger, goes through :func:`normalise_tag`, so one thing has one tag however it is
written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from remd.checks import check_storable
from remd.errors import InvalidInput, quote
from remd.text.lexicon import lemma

MAX_TAG_LEN = 64
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


def check_tags(tags: Sequence[str] | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        raise InvalidInput("tags must be a list of strings, not one string")
    out: list[str] = []
    for raw in tags:
        if not isinstance(raw, str):
            raise InvalidInput(f"tag must be a string, not {type(raw).__name__}")
        check_storable(raw, "tag")
        tag = normalise_tag(raw)
        if tag not in out:
            out.append(tag)
    return out
