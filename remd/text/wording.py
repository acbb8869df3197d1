"""Wording: the words of a sentence that say how it is told, not what happened.

A note of a recurring event is told many ways: "Heads up, the VPN dropped again on 3 May",
"Saw that the VPN dropped on 2025-05-03", "2025-05-03: VPN dropped", "On 3 May the VPN dropped
once more, same as before". What happened is the same ("the VPN dropped", with a day); the
rest is wording of three kinds:

- a **discourse opener**: "Heads up,", "FYI", "Btw", "Update:", "Again", "Also";
- a **reporting frame**: "Saw that ...", "Noted on 3 May that ...", "Heard that ..." (a verb
  of noticing or telling, then "that");
- a **recurrence word**: "again", "once more", "yet again", "as before", "same as before",
  "as usual": a merged list of days says it better.

:func:`told` gives where the told part of a sentence starts (after its openers and frame);
:func:`plain` writes a sentence of one date as a person writes a recurring event, the
subject first and the days after "on" ("The VPN dropped on {days}"). Pure functions; never
raise.
"""

from __future__ import annotations

import re

from remd.text.words import DateSpan

__all__ = ["DAYS", "opened", "plain", "settles", "told", "unworded"]

DAYS = "{days}"  # where :func:`plain` leaves the days of a recurring event

_OPENERS = (
    r"(?:(?:(?:heads[ -]up|fyi|f\.y\.i\.|btw|by the way|psa|for the record|just so you know"
    r"|anyway|again|also|once again|yet again|as usual|as expected|sadly|unfortunately"
    r"|apparently|annoyingly)\b[,:!\-\u2014]*|(?:update|reminder|quick note|note|ok|okay|so"
    r"|well)[,:!\-\u2014]+)\s+)+")
_OPENER = re.compile(r"\s*" + _OPENERS, re.IGNORECASE)
_VERB = (r"(?:i\s+|we\s+)?(?:saw|see|seen|noticed|noted|notice|note|heard|hear|found|learned|"
         r"learnt|read|confirmed|observed|spotted|logged|recorded|reported|realised|realized|"
         r"checked)")
_FRAME = re.compile(r"\s*" + _VERB + r"\s+(?:on\s+\S+(?:\s+\S+){0,2}\s+)?that\s+",
                    re.IGNORECASE)
_FRAME_ON = re.compile(r"^\s*" + _VERB + r"\s+(?:on\s+)?$", re.IGNORECASE)
_RECUR = re.compile(
    r"(?:,\s*)?\b(?:same as (?:before|ever|always|last time)|as (?:before|usual|always)|"
    r"once (?:more|again)|yet again|again)\b", re.IGNORECASE)
_DAY_BEFORE = re.compile(r"(?:\b(?:on|dated)\s*|\(\s*)$", re.IGNORECASE)
_HEADING = re.compile(r"^\s*[:\u2014-]\s*")


def opened(sentence: str) -> int:
    """Where ``sentence`` starts after its discourse openers ("Heads up, the VPN ..." -> at
    "the VPN"); 0 when it has none or nothing would be left."""
    m = _OPENER.match(sentence)
    return m.end() if m is not None and sentence[m.end():].strip(" .!?;,") else 0


_SENTENCE_WORDING = re.compile(
    r"(^|[.!?;\n]\s*)(?:" + _OPENERS + r"|" + _VERB + r"\s+(?=on\b|that\b)(?:that\s+)?)+",
    re.IGNORECASE)


def unworded(text: str) -> str:
    """``text`` without the openers and reporting verbs that start its sentences ("Heads up,
    the VPN dropped. Noted on 3 May that ..." -> "the VPN dropped. on 3 May that ..."): what
    a tagger should read. Dates, names and the rest are left as they are."""
    return _SENTENCE_WORDING.sub(r"\1", text)


def told(sentence: str) -> int:
    """Where the told part of ``sentence`` starts: after its discourse openers and a
    reporting frame ("Heads up, saw that the VPN ..." -> at "the VPN"); 0 when it has none,
    and 0 when nothing would be left."""
    at = 0
    for _ in range(3):
        m = _OPENER.match(sentence, at) or _FRAME.match(sentence, at)
        if m is None or m.end() == at:
            break
        at = m.end()
    return at if sentence[at:].strip(" .!?;,") else 0


def plain(sentence: str, span: DateSpan) -> str | None:
    """``sentence`` (whose one date is ``span``) as a recurring event is written: without
    openers, frame and recurrence words, its date taken out and :data:`DAYS` put after it
    ("Again the VPN dropped (3 May 2025)." -> "The VPN dropped on {days}"). None when the date
    is not at the sentence's start or end (its place says something: "the fix from 3 May
    broke it") or nothing is left."""
    text = sentence.strip().rstrip(".!?;, ")
    start, end = span.start, min(span.end, len(text))
    if start >= end:
        return None
    before, after = text[:start], text[end:]
    if not before.strip(" (") or _OPENER.fullmatch(before + " ") or _on_only(before):
        # "3 May: the VPN dropped", "On 3 May the VPN dropped", "Again, on 3 May, ..."
        body = _HEADING.sub("", after.lstrip(" ),"))
    elif (not after.strip(" ).,;") or _RECUR.fullmatch(after.strip(" ).")
                                           )) and _DAY_BEFORE.search(before):
        body = _DAY_BEFORE.sub("", before).rstrip()
    elif _FRAME_ON.match(before) and after.lstrip().lower().startswith("that "):
        body = after.lstrip()[5:]  # "Noted on 3 May that the VPN dropped"
    else:
        return None
    body = body[told(body):]
    body = _RECUR.sub("", body)
    body = re.sub(r"\s{2,}", " ", body).strip(" ,;:.")
    if len(body.split()) < 2:
        return None
    return f"{body[:1].upper()}{body[1:]} on {DAYS}"


def _on_only(before: str) -> bool:
    """Is what comes before a date only wording and "on" ("Again, on", "On")?"""
    rest = before[told(before + " x"):] if told(before + " x") else before
    return rest.strip(" ,").lower() in ("on", "")


# A later note that ends what an earlier one said: a problem fixed, a plan called off, a
# state that is over ("the spare room is warm now"). Past forms and set phrases; a settling
# note and an earlier one about the same thing are never one synthesis (remd.sleep.remplan),
# so no synthesis states as current what stopped being true.
_SETTLES = re.compile(
    r"\b(?:fixed|repaired|resolved|solved|sorted(?: out)?|cleared|unblocked|patched|bled|"
    r"replaced|restored|recovered|healed|cured|mended|cancell?ed|called off|scrapped|"
    r"dropped out|pulled out|gave up|given up|paid off|closed|ended|finished|quit|stopped|"
    r"no longer|not any ?more|(?:works?|working|running|up|online) again|back (?:up|online|"
    r"to normal|on track)|is over|all good now|fine now|(?:is|are|'s|'re) \w+ now)\b",
    re.IGNORECASE)


def settles(text: str) -> bool:
    """Does ``text`` say that something stopped being so (fixed, called off, over, "warm
    now")?"""
    return _SETTLES.search(text) is not None
