"""Fusion: statements about one subject, each adding a detail, said as one.

"The podcast project records on Wednesdays." / "For the podcast I'm using a Shure SM7B now." /
"Dana is co-hosting the podcast with me." / "We publish the podcast every two weeks." are four
facts about one thing. Written back one after the other they are as long as they were; said
once, the subject is named once and each statement keeps only what it adds:
"The podcast project — records on Wednesdays; using a Shure SM7B; Dana is co-hosting the
podcast; We publish the podcast every two weeks."

:func:`fuse` finds the subject (a specific word every statement has, the rarest such, never
one they use as a verb: "I ride my bike" is not about a ride), writes its phrase as the first
statement writes it (without a possessive: "Dad", not "Dad's"), then each statement without
it: a mention that opens the statement, or follows a preposition that opens it ("For the
podcast ..."), is dropped; a statement that names it inside is kept as said (a person never
becomes "it"); its speaker's "I'm"/"we" and words that only frame it ("honestly", "so far",
"with me") go; articles stay ("has a date", not "has date"). Every word that carries a
detail (:mod:`remd.text.details`) stays; the merging synthesiser checks that before it keeps a
fusion (:mod:`remd.sleep.merge`), and that it reads well (:mod:`remd.text.readability`). Pure
functions; never raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from remd.text import words as tx
from remd.text.lexicon import lemma
from remd.text.tagging import is_verb_form

__all__ = ["fuse", "subject"]

_DETERMINERS = r"(?:the|a|an|my|our|your|his|her|their|this|that)"
# Words that only frame a statement: dropped from a fused one.
_FRAME = re.compile(
    r"\b(?:honestly|basically|actually|really|just|for now|by the way|btw|anyway"
    r"|i think|i guess|i'd say|pretty much|kind of|sort of)\b,?\s*", re.IGNORECASE)
_SPEAKER = re.compile(
    r"^(?:i'm|i am|i've|i have|we're|we are|we've|we have|i|we|i'll|we'll)\s+(?=\w)",
    re.IGNORECASE)
_PRONOUN_OBJECT = re.compile(r"\s+(?:for|on|into|to|with|about|at|in|from|of) it\b(?!')",
                             re.IGNORECASE)
_COPULA = re.compile(r"^(?:is|are|was|were|will be|'ll be|it's|it is|it'll be)\s+",
                     re.IGNORECASE)
_TRAILING = re.compile(r"(?:,?\s+(?:with me|for me|for us|with us|now|too|!+))+\s*$",
                       re.IGNORECASE)


def subject(sentences: Sequence[str]) -> str | None:
    """The word every sentence is about: a content word (dictionary form) that all of them
    have and that is not a verb form, the one the first sentence names first; None if
    none."""
    sets = [{lemma(w) for w in tx.content_words(s)} for s in sentences]
    common = set.intersection(*sets) if sets else set()
    common = {w for w in common if len(w) >= 3 and not any(c.isdigit() for c in w)
              and not is_verb_form(w)}
    if not common:
        return None
    first = [lemma(w.lower()) for w in tx.words(sentences[0])]
    return min(common, key=lambda w: (first.index(w) if w in first else len(first), w))


def _tokens(sentence: str) -> list[re.Match[str]]:
    return list(tx.WORD.finditer(sentence))


def _is(token: str, word: str) -> bool:
    low = token.lower()
    return lemma(low) == word or (low.endswith("'s") and lemma(low[:-2]) == word)


def _neighbours(sentences: Sequence[str], word: str) -> tuple[set[str], set[str]]:
    """The words right before and right after the subject in at least half the sentences:
    part of its phrase ("vegetable garden", "Iceland trip")."""
    before: dict[str, int] = {}
    after: dict[str, int] = {}
    for s in sentences:
        toks = _tokens(s)
        seen_b, seen_a = set(), set()
        for i, t in enumerate(toks):
            if _is(t.group(0), word):
                if i > 0:
                    seen_b.add(toks[i - 1].group(0).lower())
                if i + 1 < len(toks):
                    seen_a.add(toks[i + 1].group(0).lower())
        for w in seen_b:
            before[w] = before.get(w, 0) + 1
        for w in seen_a:
            after[w] = after.get(w, 0) + 1
    half = max(2, (len(sentences) + 1) // 2)
    keep = {w for w, n in before.items() if n >= half and w not in tx.STOP_WORDS}
    keep_after = {w for w, n in after.items() if n >= half and w not in tx.STOP_WORDS
                  and not is_verb_form(w)}
    return keep, keep_after


def _phrase(sentence: str, word: str, left: set[str], right: set[str]) -> tuple[int, int] | None:
    """Where the subject is named in ``sentence``: with the words that go with it
    (:func:`_neighbours`) and a determiner or possessive before them."""
    toks = _tokens(sentence)
    for i, t in enumerate(toks):
        if not _is(t.group(0), word):
            continue
        a, b = i, i
        while a > 0 and toks[a - 1].group(0).lower() in left:
            a -= 1
        while b + 1 < len(toks) and toks[b + 1].group(0).lower() in right:
            b += 1
        if a > 0 and re.fullmatch(_DETERMINERS + r"|[\w-]+'s", toks[a - 1].group(0),
                                  re.IGNORECASE) and not _is(toks[a - 1].group(0), word):
            a -= 1
        return toks[a].start(), toks[b].end()
    return None


def _without(sentence: str, span: tuple[int, int], person: bool = False) -> str:
    """``sentence`` without its mention of the subject (see the module docstring);
    ``person``: the subject is someone, never written "it"."""
    s = sentence.strip()
    before = s[:span[0]].strip()
    after = s[span[1]:].strip(" ,:-\u2014").rstrip(".!?;")  # "X — a; b": fused before
    follower = re.match(r"\s*([\w'-]+)", s[span[1]:])
    if before and follower and follower.group(1).lower() not in tx.STOP_WORDS and (
            s[span[1]:span[1] + 1] == " ") and not is_verb_form(follower.group(1)):
        out = s.rstrip(".!?;")  # "new kitchen countertops": the subject qualifies a noun
    elif not before:  # "The podcast project records on Wednesdays"
        out = after
    elif re.fullmatch(r"(?:for|about|on|with|regarding|re|in|at|to)", before, re.IGNORECASE):
        out = after  # "For the podcast I'm using ..."
    elif person:  # someone named inside it: kept as said (a person never becomes "it")
        out = s.rstrip(".!?;")
    else:  # a thing named inside it: "Dana co-hosts it"
        out = f"{before} it {after}".strip() if after else f"{before} it"
    out = _TRAILING.sub("", _FRAME.sub("", out)).strip(" ,")
    out = _SPEAKER.sub("", out)
    out = _PRONOUN_OBJECT.sub("", out)  # "opened an account for it": the subject is named
    out = _COPULA.sub("", out)  # "is planned for July" -> "planned for July"
    out = " ".join(out.split()).strip(" ,;")
    first = out.split(None, 1)[0] if out else ""
    return out[:1].lower() + out[1:] if first.lower() in tx.STOP_WORDS and first != "I" else out


_DOER = re.compile(r"\b(?:i|we|you|they|he|she|i'll|we'll|to|will|can|usually|always|never|"
                   r"often)\s+(\w+)", re.IGNORECASE)


def _as_verb(sentences: Sequence[str], word: str) -> bool:
    """Is the shared word a verb in one of them ("I ride my bike", "we'll ride out"): what
    they do, not what they are about?"""
    return any(lemma(m.group(1).lower()) == word for s in sentences for m in _DOER.finditer(s))


def _two_subjects(sentences: Sequence[str], word: str) -> bool:
    """Do two sentences open with different names the cluster is sure of ("Sulren went live
    ..." / "Sulmiren went live ..."), while what they share is not a name? Then they are about
    two things, not one."""
    sure = {n.casefold() for s in sentences for n, opens in tx.name_runs(s)
            if not opens or " " in n}
    openers = set()
    for s in sentences:
        runs = tx.name_runs(s)
        if runs and s.lstrip().startswith(runs[0][0]) and runs[0][0].casefold() in sure:
            openers.add(runs[0][0].casefold())
    return len(openers) > 1 and word not in {lemma(w) for n in sure for w in n.split()}


def fuse(sentences: Sequence[str]) -> str | None:
    """One statement for several about one subject, or None (fewer than two, or no subject
    all of them name)."""
    if len(sentences) < 2:
        return None
    word = subject(sentences)
    if word is None or _two_subjects(sentences, word) or _as_verb(sentences, word):
        return None
    left, right = _neighbours(sentences, word)
    spans = [_phrase(s, word, left, right) for s in sentences]
    if any(span is None for span in spans):
        return None
    first = spans[0]
    assert first is not None
    name = re.sub(r"['\u2019]s$", "", sentences[0][first[0]:first[1]])  # "Dad's" -> "Dad"
    name = name[:1].upper() + name[1:]
    # A subject written with a capital is someone (or a named thing): never "it".
    person = any(w[:1].isupper() for w in tx.words(name)[1:] or tx.words(name)) and (
        name.split()[0].lower() not in ("the", "a", "an", "my", "our"))
    parts = [p for p in (_without(s, span, person)
                         for s, span in zip(sentences, spans, strict=True)
                         if span is not None) if p]
    if not parts:
        return None
    # Not "Name: ...": that reads as a chat turn's speaker (remd.text.words.split_header).
    return f"{name} \u2014 {'; '.join(parts)}."
