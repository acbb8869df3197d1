"""Merging synthesis: a cluster's statements, each fact once with every value it was given.

The offline synthesiser's core. A cluster of old fragments is mostly the same few facts said
again and again: "the payments service had timeouts again on 2025-03-14", "saw timeouts in the
payments service on 2025-05-02". Writing every sentence back makes memory bigger; dropping
sentences loses the dates. :func:`merge` instead

1. splits the fragments into statements (sentences, with their speaker and save day) and reads
   each one's *anchors*: names, numbers, dates and causes (:mod:`remd.text.words`);
2. groups restatements: two statements are one fact when they name the same things, or one a
   subset of the other's (names and numbers; dates may differ), and say it alike (sentence
   vectors from the packaged embedder, or shared words without one); statements naming
   different things are never one fact, however alike their wording (steps 1 and 2:
   :mod:`remd.sleep.restatements`);
3. writes each group once: its most typical statement, the days of its restatements merged
   into its date ("had timeouts on 12 Jan, 3 Feb and 14 Mar 2025"), and what the others add (a
   name, a number, a cause; the words of one that is not a paraphrase) after it;
4. holds the result to :func:`target_tokens`, dropping the span of save days if it must.

Every statement of a folded fragment is written: when the whole cluster does not fit, the
fragment that others restate least is left out (it stays live as it was), again and again
while two or more remain. The first text within the target that keeps 95% of its fragments'
anchors is the answer; when none does, :class:`remd.errors.NotDenser` is raised and the
cluster is left as it was.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

import numpy as np

from remd.errors import NotDenser
from remd.sleep.fuse import fuse
from remd.sleep.restatements import (
    Count,
    Group,
    Statement,
    Vectors,
    group,
    plain_words,
    similarity,
    statements,
    sure_names,
    typical,
)
from remd.text import words as tx
from remd.text.details import is_detail_word, missing
from remd.text.readability import problems
from remd.text.tagging import is_verb_form
from remd.text.wording import DAYS, plain

Embed = Callable[[list[str]], Vectors | None]  # None: no embedder after all

MIN_COVERAGE = 0.95  # share of the members' anchors a synthesis keeps
# A restatement this alike its group's statement (cosine) says the same thing: its other words
# are wording ("hit timeouts" / "had timeouts", 0.91). Below, they may be what differs ("failed
# with slow queries" / "had timeouts", 0.60; "had a memory leak", 0.77) and stay with its days.
_PARAPHRASE = 0.8


@dataclass(frozen=True)
class Anchors:
    """What a cluster's text must keep: names, numbers, dates (by key) and causes."""

    names: frozenset[str]
    numbers: frozenset[str]
    dates: frozenset[str]
    causes: tuple[frozenset[str], ...]

    def total(self) -> int:
        return len(self.names) + len(self.numbers) + len(self.dates) + len(self.causes)

    def kept_by(self, text: str) -> float:
        """Share of these anchors the text holds (a cause: all its content words)."""
        if not self.total():
            return 1.0
        low = text.casefold()
        nums = set(tx.NUMBER.findall(text))
        keys = {d.key for d in tx.find_dates(text)}
        words = set(tx.content_words(text))
        found = sum(1 for n in self.names if n in low) + sum(1 for n in self.numbers if n in nums)
        found += sum(1 for d in self.dates if d in keys or d in low)
        found += sum(1 for c in self.causes if c <= words)
        return found / self.total()


def anchors_of(texts: Sequence[str]) -> Anchors:
    names = set(sure_names(texts))
    numbers: set[str] = set()
    dates: set[str] = set()
    causes: list[frozenset[str]] = []
    for text in texts:
        numbers.update(tx.numbers(text))
        dates.update(d.key for d in tx.find_dates(text))
        for sentence in tx.sentences(text):
            pair = tx.causal(sentence)
            if pair is not None and (words := plain_words(pair[0])):
                causes.append(words)
    return Anchors(frozenset(names), frozenset(numbers), frozenset(dates),
                   tuple(dict.fromkeys(causes)))


def _residual(m: Statement, rep: Statement, seen: set[str]) -> list[tuple[str, str]]:
    """What ``m`` says that its group's statement does not, in its own order, as (kind,
    text): ``"day"`` (ISO) and ``"anchor"`` (a name or number, another date, a cause's word)
    not in ``seen`` either; ``"word"``: a content word the statement lacks that is not a verb
    form (what differs in substance, such as the symptom of an incident: "slow queries";
    "hit", "saw", "timed" are wording)."""
    out: list[tuple[str, str]] = []
    cause = plain_words(m.cause) if m.cause else frozenset()
    taken: set[str] = set()
    tokens = list(tx.WORD.finditer(m.text))
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        span = next((s for s in m.spans if s.start <= tok.start() < s.end), None)
        if span is not None:
            day = span.day_date
            key = day.isoformat() if day is not None else span.key
            if key not in seen and key not in taken:
                taken.add(key)
                out.append(("day", key) if day is not None else ("anchor", span.surface))
            while i < len(tokens) and tokens[i].start() < span.end:
                i += 1
            continue
        word = tok.group(0)
        low = word.casefold()
        i += 1
        if _opens(m.text, tok.start()) and word[:1].isupper() and (
                not any(low in name.split() for name in m.sure)):
            continue  # a sentence's opener ("Heads up, ...", "Again the ...") is wording
        if low in taken or low in rep.content or any(low in n.split() for n in rep.ids) or (
                not low.isalpha() and low in rep.text.casefold()):  # a link, a code: written
            continue
        taken.add(low)
        if any(low in name.split() and name not in rep.ids for name in m.sure) or low in cause:
            if low not in seen:
                out.append(("anchor", word))
        elif low not in tx.STOP_WORDS and not is_verb_form(low):
            out.append(("word", word))
    return out


def _opens(text: str, at: int) -> bool:
    """Does the word at ``at`` open a sentence of ``text``?"""
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?;:"


def _write_group(g: Group, written: frozenset[str] = frozenset()) -> str:
    """The group's statement, with the days of the restatements that say nothing else merged
    into its date ("had timeouts on 12 Jan, 3 Feb and 14 Mar 2025"): those that add only a
    name or number (written after it) or are paraphrases (:data:`_PARAPHRASE`). After it,
    what the others add: the words that differ in substance, with their days ("also slow
    queries 7 Sep 2023"). A restatement with no new day, name or number that differs only in
    other words is the same fact said otherwise: not written. A name or number ``written`` by
    another group's statement is not repeated."""
    rep = g.rep
    seen: set[str] = set(rep.ids) | {s.key for s in rep.spans} | written
    plain_days: list[date] = []
    with_days: dict[str, list[date]] = {}
    extras: list[str] = []
    whole: list[str] = []
    for m in sorted((m for m in g.members if m is not rep),
                    key=lambda m: (m.day, m.fragment, m.order)):
        parts = _residual(m, rep, seen)
        if similarity(m, rep) >= _PARAPHRASE:  # the same thing said: its other words are
            # wording, but a detail among them is written (remd.text.details)
            parts = [("anchor" if kind == "word" else kind, t) for kind, t in parts
                     if kind != "word" or (is_detail_word(t) and t.casefold() not in seen)]
        # (the day a copy was said, written as a heading of an earlier synthesis "16 Mar
        # 2024: ...", is the day its group's statement was said: nothing to add)
        parts = [(kind, t) for kind, t in parts
                 if not (kind == "day" and not rep.spans and date.fromisoformat(t) == rep.day)]
        days = [date.fromisoformat(t) for kind, t in parts if kind == "day"]
        rest = [t for kind, t in parts if kind != "day"]
        seen.update(t.casefold() for kind, t in parts if kind != "word")
        if all(kind != "word" for kind, _ in parts):
            if rest and _bare(rest):  # "also service" reads as nothing: said as it was said
                whole.append(_sentence(m.text))
                continue
            plain_days.extend(days)  # the same fact on other days (a new name: an attribute)
            if rest:
                extras.append(" ".join(rest))
        elif days:
            with_days.setdefault(" ".join(rest), []).extend(days)
        elif rest and _bare(rest):
            whole.append(_sentence(m.text))  # a bare word ("also service") reads as nothing:
            # the statement that says it is written as said
        elif rest:  # a new name, cause or word, in context: every detail is kept
            extras.append(" ".join(rest))
    extras += [f"{what} {tx.format_days(days)}" for what, days in with_days.items()]
    body = rep.text.rstrip(".!?;, ")
    if plain_days and len(rep.days) == 1 and len(rep.spans) == 1:
        span = rep.spans[0]
        listed = tx.format_days([*rep.days, *plain_days])
        form = _recurring(g)
        body = (form.replace(DAYS, listed) if form is not None else
                (body[:span.start] + listed + body[span.end:]).rstrip(".!?;, "))
    elif plain_days:
        extras.insert(0, tx.format_days(plain_days))
    if extras:
        body += "; also " + "; ".join(extras)
    return " ".join([body + ".", *whole])


def _recurring(g: Group) -> str | None:
    """How the group's event is written with its days (:func:`remd.text.wording.plain`):
    the form most of its restatements naming what its statement names share ("The VPN
    dropped on {days}"), the statement's own on a tie; None when its own has none."""
    own = plain(g.rep.text, g.rep.spans[0])
    if own is None:
        return None
    forms = Counter(f for m in g.members if m.ids == g.rep.ids and len(m.spans) == 1
                    and m.days and (f := plain(m.text, m.spans[0])) is not None)
    return max(forms, key=lambda f: (forms[f], f == own))


def _bare(rest: Sequence[str]) -> bool:
    """One or two lower-case words with no digit: what a restatement adds, out of context."""
    return len(rest) <= 2 and all(t[:1].islower() and not any(c.isdigit() for c in t)
                                  for t in rest)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?" else text + "."


def render(groups: Sequence[Group], first: date, last: date, keep_span: bool = True) -> str:
    parts: list[str] = []
    if keep_span:
        parts.append(f"{tx.format_span(first, last)}:")
    stamped = ""
    speaker_now = ""
    turn_now = -1
    written = frozenset().union(*(g.rep.ids for g in groups))
    for g in groups:
        rep = g.rep
        if rep.fragment != turn_now:
            if rep.stamp and rep.stamp != stamped:
                parts.append(rep.stamp)
                stamped = rep.stamp
                speaker_now = ""
            if rep.speaker and rep.speaker != speaker_now:
                parts.append(rep.speaker)
                speaker_now = rep.speaker
            turn_now = rep.fragment
        text = _write_group(g, written)
        parts.append(text[:1].upper() + text[1:])  # a statement cut at ";" starts a sentence
    return " ".join(parts)


TARGET_LARGEST = 1.5  # a synthesis may be 1.5x its largest member...
TARGET_SHARE = 0.4  # ...or 40% of its members together, whichever is larger


def target_tokens(member_tokens: Sequence[int]) -> int:
    """The length a synthesis must keep to: the larger of 1.5x its largest member and 35% of
    its members' total, and always shorter than the members together."""
    if not member_tokens:
        return 0
    target = max(math.ceil(TARGET_LARGEST * max(member_tokens)),
                 math.ceil(TARGET_SHARE * sum(member_tokens)))
    return min(target, sum(member_tokens) - 1)


def synthesis_limit(member_tokens: Sequence[int]) -> int:
    """The most tokens any synthesiser may write for these members: the density target of
    restatements (:func:`target_tokens`), or, for statements of one subject fused, a little
    less than the members together (:data:`FUSE_SHARE`, at most :data:`FUSE_MAX`)."""
    if not member_tokens:
        return 0
    fused = min(FUSE_MAX, math.floor(FUSE_SHARE * sum(member_tokens)))
    return max(target_tokens(member_tokens), fused)


@dataclass(frozen=True)
class Merged:
    """A merge: its text and which fragments (positions in the input) it replaces."""

    text: str
    fragments: tuple[int, ...]


def merge(contents: Sequence[str], created_at: Sequence[float], *, count: Count,
          vectors: Sequence[Vectors | None] = (), embed: Embed | None = None) -> Merged:
    """The merged synthesis of fragments (oldest first) within :func:`target_tokens` of the
    fragments it replaces, keeping :data:`MIN_COVERAGE` of their anchors.

    All of them when that fits. Otherwise the cluster is split: the fragment saying least that
    another one also says (a fact stated once cannot be merged away) is left out, again and
    again, while two or more remain; what is left out stays as it was. ``vectors``: each
    fragment's own unit vector, used for a fragment of one sentence; ``embed`` embeds the
    sentences of longer ones (without either, similarity is shared words). Raises NotDenser.
    """
    days = [datetime.fromtimestamp(t, UTC).date() for t in created_at]
    stmts = statements(contents, days, count)
    if not stmts:
        raise NotDenser("the fragments hold no sentence")
    _attach_vectors(stmts, contents, vectors, embed)
    sizes = [count(c) for c in contents]
    everything = group(stmts)
    keep = sorted({s.fragment for s in stmts})
    densest: int | None = None  # of the whole cluster, for the error
    while len(keep) >= 2:
        target = target_tokens([sizes[f] for f in keep])
        text, size = _fit(everything, keep, contents, days, target, count,
                          sum(sizes[f] for f in keep))
        densest = size if densest is None else densest
        if text is not None:
            return Merged(text, tuple(keep))
        keep.remove(_least_restated(everything, keep, sizes))
    whole = target_tokens(sizes)
    raise NotDenser(f"{len(contents)} fragments can't be merged into {whole} tokens keeping "
                    f"{MIN_COVERAGE:.0%} of their names, numbers and dates (densest: "
                    f"{densest} tokens), nor can two or more of them")


def _least_restated(groups: Sequence[list[Statement]], keep: Sequence[int],
                    sizes: Sequence[int]) -> int:
    """The kept fragment that others restate least: its most restated statement is said by
    the fewest kept fragments (a fragment of facts said once first); then the longest."""
    kept = set(keep)
    restated: dict[int, int] = dict.fromkeys(keep, 0)
    for g in groups:
        frags = {m.fragment for m in g if m.fragment in kept}
        for f in frags:
            restated[f] = max(restated[f], len(frags))
    return min(keep, key=lambda f: (restated[f], -sizes[f], f))


def _fit(everything: Sequence[list[Statement]], keep: Sequence[int], contents: Sequence[str],
         days: Sequence[date], target: int, count: Count, total: int) -> tuple[str | None, int]:
    """The least lossy rendering of the kept fragments within ``target`` (or None), and the
    size of the densest one tried. Every statement of every kept fragment is written: what
    can't be is left out whole, by the caller, and stays as it was. Statements of one
    subject that restate nothing of each other are fused (:mod:`remd.sleep.fuse`) when that is
    within :data:`FUSE_SHARE` of the fragments' ``total`` tokens."""
    kept = set(keep)
    groups = []
    for g in everything:
        members = [m for m in g if m.fragment in kept]
        if members:
            groups.append(Group(members, typical(members)))
    groups.sort(key=lambda g: min((m.fragment, m.order) for m in g.members))
    wanted = anchors_of([contents[f] for f in keep])
    texts = [contents[f] for f in keep]
    first, last = days[keep[0]], days[keep[-1]]
    densest: int | None = None
    # One fact said again and again is merged (with what each saying adds: "...; it uses
    # Redis"); different facts are fused only when they are about one subject (below), never
    # written side by side: a synthesis of unrelated notes ("face mask, tea, bed" + "rooibos
    # every night") is about nothing.
    if _one_fact(groups, kept):
        # As is, else without the span of save days (each statement keeps the dates it writes).
        # (A span of save days says nothing when every statement writes its own days.)
        main = max(groups, key=lambda g: len({m.fragment for m in g.members}))
        spans = (False,) if main.rep.days else (True, False)
        for keep_span in spans:
            text = render(groups, first, last, keep_span)
            size = count(text)
            densest = size if densest is None else min(densest, size)
            if size <= target and wanted.kept_by(text) >= MIN_COVERAGE and _keeps(texts, text):
                return text, size
    fused = _fused(groups)
    if fused is not None:
        size = count(fused)
        densest = size if densest is None else min(densest, size)
        if size <= max(target, min(FUSE_MAX, math.floor(FUSE_SHARE * total))) and (
                wanted.kept_by(fused) >= MIN_COVERAGE) and _keeps(texts, fused):
            return fused, size
    return None, total if densest is None else densest


def _keeps(members: Sequence[str], text: str) -> bool:
    """Does ``text`` keep every detail of every member (:mod:`remd.text.details`)?"""
    return not any(missing(m, text) for m in members)


def _one_fact(groups: Sequence[Group], kept: set[int]) -> bool:
    """Does every kept fragment restate one fact (the largest group), so that the other
    groups are only what some of them say besides?"""
    main = max(groups, key=lambda g: len({m.fragment for m in g.members}))
    return {m.fragment for m in main.members} >= kept


FUSE_SHARE = 0.95  # a fusion must save at least a twentieth of its fragments' tokens
# ...and stay short enough for a small pack to hold it beside other things (a larger cluster
# is split: the merge leaves fragments out until it fits).
FUSE_MAX = 64
FUSE_COHERENCE = 0.45  # mean cosine of the fused fragments: alike enough to be one subject
_RELATIVE = re.compile(r"\b(?:today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening"
                       r"|week|weekend|month)|last (?:night|week|weekend|month)|next (?:week"
                       r"|weekend|month)|just now|earlier)\b", re.IGNORECASE)


def _fused(groups: Sequence[Group]) -> str | None:
    """One statement for the kept fragments when they are about one subject
    (:func:`remd.sleep.fuse.fuse`, a fragment's statements kept together); not for chat turns (a
    speaker or a stamp). A statement that says "today" or "this month" gets its save day
    written before it, so the day is not lost."""
    if len(groups) < 2 or any(g.rep.speaker or g.rep.stamp for g in groups):
        return None
    if _coherence(groups) < FUSE_COHERENCE:
        return None  # a name they share ("Joost ...") is not yet one subject
    parts: dict[int, list[str]] = {}
    for g in groups:
        text = _write_group(g)
        if _RELATIVE.search(text):
            text = f"({tx.format_days([g.rep.day])}) {text}"
        parts.setdefault(g.rep.fragment, []).append(text)
    fused = fuse([" ".join(texts) for _, texts in sorted(parts.items())])
    members = [m.text for g in groups for m in g.members]
    if fused is not None and problems(fused, members):
        return None  # it would not read as a person writes (remd.text.readability)
    return fused


def _coherence(groups: Sequence[Group]) -> float:
    """Mean pairwise cosine of the fragments (each the mean of its statements' vectors);
    1.0 without vectors."""
    by_fragment: dict[int, list[Vectors]] = {}
    for g in groups:
        for m in g.members:
            if m.vector is not None:
                by_fragment.setdefault(m.fragment, []).append(m.vector)
    if len(by_fragment) < 2:
        return 1.0
    rows = np.array([np.mean(v, axis=0) for v in by_fragment.values()], np.float64)
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    n = len(rows)
    sims = rows @ rows.T
    return float((sims.sum() - n) / (n * (n - 1)))


def _attach_vectors(stmts: list[Statement], contents: Sequence[str],
                    vectors: Sequence[Vectors | None], embed: Embed | None) -> None:
    per_fragment: dict[int, int] = {}
    for s in stmts:
        per_fragment[s.fragment] = per_fragment.get(s.fragment, 0) + 1
    need: list[Statement] = []
    for s in stmts:
        own = vectors[s.fragment] if s.fragment < len(vectors) else None
        if per_fragment[s.fragment] == 1 and own is not None:
            s.vector = np.asarray(own, np.float32)
        else:
            need.append(s)
    got = embed([s.text for s in need]) if need and embed is not None else None
    if got is not None:
        for s, v in zip(need, got, strict=True):
            norm = float(np.linalg.norm(v))
            s.vector = (v / norm).astype(np.float32) if norm > 0 and math.isfinite(norm) else None
