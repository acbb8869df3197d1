"""Which fact a question asks for: "where do I live?" asks for ``user/city``.

:mod:`remd.text.facts` files statements under ``subject/attribute`` keys ("I moved to Pune" is
``user/city``) and never reads a question. Inject asks this module for the keys a question
names, so the live memory of that key (never a superseded one) can come first: "where do I
live?" shares no word with "I moved to Pune", and a memory that does ("my mother lives in
Pune") is about someone else.

Recognised, case-insensitively, with the attribute filed as :mod:`remd.text.facts` files it
(aliases and spellings folded):

- "where do/did I live", "where am I living/based/located/staying", "which city/town am I
  (based/living) in", "where is my home": ``city``; "where am I from", "where did I grow up",
  "where was I born": ``hometown``; "where do I work", "who do I work for", "which company do
  I work at/for": ``employer``; "what do I do for a living", "what do I work as": ``job``.
- "what/who/when/where/which is my X" and "what's my X": ``user/X`` ("who is my manager?"),
  "what is my dog's name" and "what is my dog called": ``user's dog/name``.
- "what X do I have/use/own/drive": ``user/X`` ("what phone do I have?").
- The same about a named person: "where does Caroline live", "what is Caroline's job".

A question can name no key; that is the common case and costs a few regex searches.
"""

from __future__ import annotations

import re

from remd.text.facts import FIRST_PERSON, canonical_attribute

__all__ = ["question_keys"]

_WHO = r"(?P<who>i|we|(?-i:[A-Z][\w'-]*))"
_FIXED: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(src, re.IGNORECASE), attribute) for src, attribute in (
        (rf"\bwhere (?:do|does|did) {_WHO} (?:currently |now |actually )?live\b", "city"),
        (rf"\bwhere (?:am|is|are) {_WHO} (?:currently |now )?"
         r"(?:living|based|located|staying|settled|residing)\b", "city"),
        (rf"\b(?:which|what) (?:city|town|place|country) (?:do|does|did|am|is|are) {_WHO}\b"
         r"(?: \w+)? (?:live|living|based|located|staying|settled|residing|in)\b", "city"),
        (r"\bwhere(?:'s| is) (?P<who>my|(?-i:[A-Z][\w'-]*)'s) (?:home|residence)\b", "city"),
        (rf"\bwhere (?:am|is|are) {_WHO} (?:originally )?from\b", "hometown"),
        (rf"\bwhere (?:did|was|were) {_WHO} (?:grow up|born|raised)\b", "hometown"),
        (rf"\bwhere (?:do|does|did) {_WHO} (?:currently |now )?work\b", "employer"),
        (rf"\bwho (?:do|does|did) {_WHO} (?:currently |now )?work for\b", "employer"),
        (rf"\b(?:which|what) (?:company|firm|employer) (?:do|does|did) {_WHO} work\b",
         "employer"),
        (rf"\bwhat (?:do|does|did) {_WHO} do for (?:a living|work)\b", "job"),
        (rf"\bwhat (?:do|does|did) {_WHO} work as\b", "job"),
    ))
# "what is my X", "who's Caroline's X", "what is my dog's name", "what is my dog called".
_OF = re.compile(
    r"\b(?:what|who|when|where|which)(?:'s|\s+is|\s+are|\s+was|\s+were)\s+"
    r"(?P<who>my|(?-i:[A-Z][\w'-]*)'s)\s+(?P<attr>[a-z]+(?:\s+[a-z]+){0,2}?)"
    r"(?:'s\s+(?P<owned>name)|\s+(?P<called>called|named))?\s*[?.!]*$",
    re.IGNORECASE)
# "what phone do I have?", "which car does Caroline drive?"
_HAVE = re.compile(
    rf"\b(?:what|which) (?P<attr>[a-z]+(?: [a-z]+)?) (?:do|does|did) {_WHO} "
    r"(?:currently |now )?(?:have|use|own|drive|ride)\b", re.IGNORECASE)


def _subject(who: str) -> str | None:
    w = who.strip().lower()
    if w in ("i", "we", "my"):
        return FIRST_PERSON
    if w.endswith("'s"):
        w = w[:-2]
    return w if w.isalpha() else None


def question_keys(question: str) -> list[str]:
    """The fact keys (``subject/attribute``) ``question`` asks for, best first; [] for most
    questions. Never raises."""
    keys: list[str] = []

    def add(who: str, raw: str | None, owned: bool = False) -> None:
        subject = _subject(who)
        attribute = canonical_attribute(raw)
        if subject is None or attribute is None:
            return
        key = (f"{subject}'s {attribute}/name" if owned
               else f"{subject}/{attribute}")
        if key not in keys:
            keys.append(key)

    text = " ".join(question.split())
    for regex, attribute in _FIXED:
        m = regex.search(text)
        if m:
            add(m.group("who"), attribute)
    m = _OF.search(text)
    if m:
        add(m.group("who"), m.group("attr"), bool(m.group("owned") or m.group("called")))
    m = _HAVE.search(text)
    if m:
        add(m.group("who"), m.group("attr"))
    return keys
