"""A synthesis as a bundle of dated clauses: which clause came from which member, and when.

A REM synthesis is one text ("The podcast project — records on Wednesdays; using a Shure
SM7B; Dana co-hosts it", or "12 Jan to 3 Mar 2025: The payments service had timeouts on 12
Jan, 3 Feb and 14 Mar 2025. It runs on Go."). Packed whole, it costs a small pack most of its
budget for one needed clause. :func:`split` reads it as a *subject* (what a fusion is about,
before its dash; "" for a merge) and *clauses* (the parts after the dash, else its sentences);
:func:`attribute` gives each clause the members whose details it carries (names, numbers,
dates, content words: :mod:`remd.text.details`) and the latest of their days. The result is
stored with the synthesis (``nodes.clauses``, :class:`Clauses` as JSON); inject packs the
subject plus the clauses a question needs (:func:`render`), and a later update of one value
retires the clause that holds it (``live`` false) instead of the whole synthesis.
Pure functions; never raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from remd.text import words as tx
from remd.text.details import details

__all__ = ["Clause", "Clauses", "Member", "attribute", "few_days", "parse", "render", "split",
           "statement"]

DASH = " \u2014 "  # a fusion's subject and its parts (remd.sleep.fuse)
_SPAN = re.compile(r"^\s*([^:]{3,60}?\d{4}):\s+")  # a merge's opening span of days


@dataclass(frozen=True)
class Member:
    """A member of a synthesis: its id, rid, text and when it was saved."""

    id: str
    rid: int
    content: str
    created_at: float


@dataclass(frozen=True)
class Clause:
    text: str
    members: tuple[str, ...] = ()  # ids of the members it came from
    rids: tuple[int, ...] = ()
    at: float = 0.0  # the latest of its members' days (0: unknown)
    live: bool = True  # False: a later update retired the value it held
    by: str | None = None  # the memory that retired it


@dataclass(frozen=True)
class Clauses:
    subject: str
    clauses: tuple[Clause, ...] = field(default_factory=tuple)
    joiner: str = "; "  # between clauses: "; " after a subject, " " between sentences

    def live(self) -> tuple[Clause, ...]:
        return tuple(c for c in self.clauses if c.live)

    def to_json(self) -> str:
        return json.dumps({"v": 1, "subject": self.subject, "joiner": self.joiner, "clauses": [
            {"t": c.text, "m": list(c.members), "r": list(c.rids), "at": c.at, "live": c.live,
             "by": c.by} for c in self.clauses]}, ensure_ascii=False, separators=(",", ":"))

    def retire(self, index: int, by: str) -> Clauses:
        """These clauses with clause ``index`` retired by ``by``."""
        out = list(self.clauses)
        out[index] = replace(out[index], live=False, by=by)
        return replace(self, clauses=tuple(out))


def parse(raw: str | None) -> Clauses | None:
    """The clauses stored as JSON (None for none or a malformed value)."""
    if not raw:
        return None
    try:
        data = json.loads(raw)
        return Clauses(str(data["subject"]), tuple(
            Clause(str(c["t"]), tuple(str(m) for m in c.get("m", ())),
                   tuple(int(r) for r in c.get("r", ())), float(c.get("at", 0.0)),
                   bool(c.get("live", True)), c.get("by")) for c in data["clauses"]),
            str(data.get("joiner", "; ")))
    except (ValueError, KeyError, TypeError):
        return None


def split(text: str) -> Clauses:
    """A synthesis's subject and clauses (see the module docstring)."""
    body = " ".join(text.split())
    if DASH in body:
        subject, rest = body.split(DASH, 1)
        parts = [p.strip(" .;") for p in rest.split("; ")]
        return Clauses(subject.strip(), tuple(Clause(p) for p in parts if p), "; ")
    subject = ""
    m = _SPAN.match(body)
    if m:
        subject, body = m.group(1), body[m.end():]
    parts = [_sentence_end(s) for s in _sentences(body)]
    return Clauses(subject, tuple(Clause(p) for p in parts if p), " ")


def _sentences(body: str) -> list[str]:
    """Sentences, "; also ..." kept with the sentence it adds to."""
    out: list[str] = []
    for piece in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])", body):
        if piece.strip():
            out.append(piece.strip())
    return out


def _sentence_end(text: str) -> str:
    text = text.strip()
    return text if not text or text[-1] in ".!?" else text + "."


def attribute(clauses: Clauses, members: Sequence[Member]) -> Clauses:
    """Each clause with the members whose details it carries most (ties: all of them), and
    the latest of their days."""
    keys = [details(m.content) for m in members]
    out = []
    for clause in clauses.clauses:
        mine = details(f"{clauses.subject} {clause.text}")
        scores = [len(mine & k) / max(1, len(k)) ** 0.5 for k in keys]
        best = max(scores, default=0.0)
        if best <= 0:
            out.append(clause)
            continue
        chosen = [m for m, s in zip(members, scores, strict=True) if s >= best * 0.999]
        out.append(replace(clause, members=tuple(m.id for m in chosen),
                           rids=tuple(m.rid for m in chosen),
                           at=max(m.created_at for m in chosen)))
    return replace(clauses, clauses=tuple(out))


def statement(clauses: Clauses, index: int) -> str:
    """Clause ``index`` as a statement of its own: after its subject ("Nougat only eats Royal
    Canin"), or the sentence it is."""
    text = clauses.clauses[index].text
    if clauses.joiner == "; " and clauses.subject:
        return f"{clauses.subject} {text}"
    return text


def render(clauses: Clauses, chosen: Sequence[int]) -> str:
    """The subject with the clauses at ``chosen`` (indices, in the synthesis's order):
    "The podcast project — records on Wednesdays; Dana co-hosts it."."""
    parts = [clauses.clauses[i].text for i in sorted(set(chosen))
             if 0 <= i < len(clauses.clauses)]
    if not parts:
        return clauses.subject
    if clauses.joiner == "; ":
        body = "; ".join(p.rstrip(".") for p in parts) + "."
        return f"{clauses.subject}{DASH}{body}" if clauses.subject else body[:1].upper() + body[1:]
    body = " ".join(_sentence_end(p) for p in parts)
    return f"{clauses.subject}: {body}" if clauses.subject else body


def words_of(text: str) -> frozenset[str]:
    """Content words of a clause, casefolded (for matching a question's words)."""
    return frozenset(tx.content_words(text))


_LIST_GAP = re.compile(r"^(?:,\s*|\s*,?\s*and\s+|\s*&\s*)$")
_LATEST = 1  # days a shortened list keeps besides the asked ones


def few_days(text: str, keep: set[str]) -> str:
    """``text`` with each list of four or more days ("on 1 Sep, 9 Sep, ... and 27 Apr 2025")
    cut to the days in ``keep`` (ISO keys) and the latest, with how many there were ("on 9 Sep
    2024 and 27 Apr 2025, 10 days in all"): a recurring event in a small pack."""
    spans = [d for d in tx.find_dates(text) if d.day_date is not None]
    runs: list[list[tx.DateSpan]] = []
    for d in spans:
        if runs and _LIST_GAP.match(text[runs[-1][-1].end:d.start]):
            runs[-1].append(d)
        else:
            runs.append([d])
    out, at = [], 0
    for run in runs:
        if len(run) < 4:
            continue
        days = sorted({d.day_date for d in run if d.day_date is not None})
        chosen = {d for d in days if d.isoformat() in keep} | set(days[-_LATEST:])
        if len(chosen) >= len(days):
            continue
        end = run[-1].end
        while end > run[-1].start and not text[end - 1].isalnum():
            end -= 1  # find_dates may take the full stop after a date
        out += [text[at:run[0].start], tx.format_days(chosen), f", {len(days)} days in all"]
        at = end
    return "".join(out) + text[at:] if out else text
