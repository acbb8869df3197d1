"""A cluster's statements, and which of them restate one fact (steps 1 and 2 of
:func:`remd.sleep.merge.merge`).

:func:`statements` splits the fragments into sentences, each with its speaker, save day and
what it is about (names and numbers, dates, a cause: :mod:`remd.text.words`); :func:`group` puts
restatements together: statements that name the same things (or one a subset of the other's)
and say it alike (sentence vectors, or shared words without them). Statements naming
different things are never one fact, however alike their wording.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np
import numpy.typing as npt

from remd.text import words as tx
from remd.text.tagging import is_verb_form

Vectors = npt.NDArray[np.float32]
Count = Callable[[str], int]

# How alike two statements must say something to be one fact (cosine of sentence vectors),
# by how much they share: the same two or more names/numbers, the same one, one's a subset of
# the other's, or neither names anything.
_SAME_MANY, _SAME_ONE, _SAME_NONE = 0.5, 0.7, 0.7
_SHARED_WORDS = 0.5  # ...or share this share of their words (Jaccard), dates and numbers aside
_COMPARED = 16  # statements of a group a new one is compared with


@dataclass
class Statement:
    fragment: int
    order: int
    day: date  # the fragment's save day (UTC)
    text: str
    speaker: str
    stamp: str
    spans: list[tx.DateSpan]
    ids: frozenset[str]  # names and numbers, casefolded: what the statement is about
    sure: frozenset[str]  # of those, the cluster's sure names and the numbers (sure_names)
    days: list[date]  # full days it writes
    cause: str | None
    content: frozenset[str]
    negated: bool
    vector: Vectors | None = None


@dataclass
class Group:
    """Restatements of one fact and the one written out (:func:`typical`)."""

    members: list[Statement]
    rep: Statement


def sure_names(texts: Sequence[str]) -> frozenset[str]:
    """The cluster's names, casefolded: every one but a lone word that only ever opens a
    sentence (tx.name_runs)."""
    runs = [r for text in texts for r in tx.name_runs(text)]
    inside = {name.casefold() for name, opens in runs if not opens}
    return frozenset(name.casefold() for name, opens in runs
                     if not opens or name.casefold() in inside)


def _may_be_name(word: str, sure: frozenset[str], count: Count) -> bool:
    """Is a word opening its sentence perhaps a name? Yes when the cluster writes it as one
    elsewhere; no when it is a stop word, a verb form ("Saw", "Paged") or a common word (one
    token of the tokenizer's vocabulary: "Finance", "Questions", "Cost"), which only the
    sentence capitalised; else yes ("Vorqua launched ...")."""
    low = word.casefold()
    if low in sure:
        return True
    return not (low in tx.STOP_WORDS or is_verb_form(low) or count(" " + low) == 1)


def plain_words(text: str) -> frozenset[str]:
    """Content words without digits (dates and numbers are anchors of their own): what a
    statement says, and what of a cause must stay."""
    return frozenset(w for w in tx.content_words(text) if not any(c.isdigit() for c in w))


def statements(contents: Sequence[str], days: Sequence[date], count: Count
               ) -> list[Statement]:
    sure = sure_names(contents)
    out: list[Statement] = []
    for fi, (content, day) in enumerate(zip(contents, days, strict=True)):
        stamp, speaker, body = tx.split_header(content)
        for si, sentence in enumerate(tx.sentences(body)):
            spans = tx.find_dates(sentence)
            runs = tx.name_runs(sentence)
            nums = set(tx.numbers(sentence))
            # What it is about (names and numbers; see _may_be_name for an opening word).
            ids = {n.casefold() for n, opens in runs
                   if not opens or _may_be_name(n, sure, count)} | nums
            pair = tx.causal(sentence)
            out.append(Statement(
                fragment=fi, order=si, day=day, text=sentence.rstrip(";").strip(),
                speaker=speaker, stamp=stamp, spans=spans, ids=frozenset(ids),
                sure=frozenset({n.casefold() for n, _ in runs} & sure | nums),
                days=[d for s in spans if (d := s.day_date) is not None],
                cause=pair[0] if pair else None,
                content=plain_words(sentence),
                negated=any(tx.is_negation(w) for w in tx.words(sentence))))
    return out


def similarity(a: Statement, b: Statement) -> float:
    if a.vector is not None and b.vector is not None:
        return float(np.dot(a.vector, b.vector))
    union = a.content | b.content
    return len(a.content & b.content) / len(union) if union else 0.0


def _compatible(s: Statement, lead: Statement) -> bool:
    """Could ``s`` restate ``lead``? Never across speakers or a negation, nor when they name
    different things ("Sulren opened on 7 Jul" / "Sulmiren opened on 25 Aug"): one's names
    and numbers must be the other's, or a part of them."""
    return (s.negated == lead.negated and s.speaker == lead.speaker
            and (s.ids <= lead.ids or lead.ids <= s.ids))


def _joins(s: Statement, lead: Statement, sim: float) -> bool:
    """Is ``s`` a restatement of ``lead``? When :func:`_compatible`, and alike in meaning
    (``sim``), sharing half their words, or naming something on the same full days."""
    if _compatible(s, lead):
        if s.ids and s.days and set(s.days) == set(lead.days) and len(s.days) == len(s.spans):
            return True  # the same named thing on the same days: "Risris went live on 22 Mar
            # 2021" / "Go-live for Risris was 2021-03-22", however it is worded
        same_many = s.ids == lead.ids and len(s.ids) >= 2
        floor = _SAME_MANY if same_many else _SAME_ONE if s.ids or lead.ids else _SAME_NONE
        union = s.content | lead.content
        shared = len(s.content & lead.content) / len(union) if union else 0.0
        return sim >= floor or shared >= _SHARED_WORDS
    return False


def group(stmts: Sequence[Statement]) -> list[list[Statement]]:
    """Restatements together: each statement joins the group it is most alike, among those
    whose first statement names the same things as it (or a subset, or a superset) and one of
    whose statements it restates (:func:`_joins`). Names are checked against the first
    statement, so a group never drifts from one subject to another through a chain."""
    groups: list[list[Statement]] = []
    for s in stmts:
        best, best_sim = None, -1.0
        for g in groups:
            if not _compatible(s, g[0]):
                continue
            sims = [(similarity(s, m), m) for m in g[:_COMPARED]]
            sim = max(x for x, _ in sims)
            if sim > best_sim and any(_joins(s, m, x) for x, m in sims):
                best, best_sim = g, sim
        if best is None:
            groups.append([s])
        else:
            best.append(s)
    return groups


def typical(members: list[Statement]) -> Statement:
    """The statement most like the others; then the one naming most of what the group names;
    then the shortest."""
    ids = set().union(*(m.ids for m in members))

    def score(m: Statement) -> tuple[float, int, int]:
        central = sum(similarity(m, o) for o in members if o is not m) / max(1, len(members) - 1)
        return round(central, 2), len(m.ids & ids), -len(m.text)

    return max(members, key=score)
