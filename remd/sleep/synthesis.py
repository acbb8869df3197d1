"""Synthesis: distil a cluster of memory fragments into one denser memory.

Two synthesisers share one contract (:class:`Synthesiser`): :class:`LLMSynthesiser` asks an
OpenAI-compatible endpoint with the versioned prompt in ``prompts/synthesis.md`` and validates
the answer with :class:`SynthesisAnswer`; :class:`OfflineSynthesiser` is extractive and
deterministic, so ``run-rem`` works with no LLM at all and never loses a fact.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from remd.config import Config
from remd.errors import InvalidInput, LLMError, NotDenser
from remd.llm.client import LLMClient, Role
from remd.llm.client import Prompt as Prompt  # re-exported: the synthesis prompt lives here
from remd.llm.client import load_prompt as load_prompt
from remd.logs import get_logger
from remd.sleep.distil import distil
from remd.sleep.merge import Embed, merge
from remd.text import words as tx
from remd.text.tokens import TokenCounter

_log = get_logger("remd.synthesis")

MAX_SYNTHESIS_CHARS = 8000
MAX_LIST_ITEMS = 256
MAX_ITEM_CHARS = 1000
_REASK_ECHO_CHARS = 4000  # how much of an invalid answer is shown back to the model
_NO_TARGET = 4000  # tokens stated to the model when the caller gives no target

Edge = tuple[str, str, str]  # (src_fragment_id, dst_fragment_id, edge_type)


class SynthesisAnswer(BaseModel):
    """A validated synthesis. Lists hold strings (numbers are turned into strings, blanks and
    repeats dropped). ``importance`` outside 0..1 is clamped rather than rejected: a model that
    says 1.2 means "very", and rejecting it would cost a re-ask for nothing; NaN is rejected."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    synthesis: str
    key_entities: list[str] = []
    causal_chains: list[str] = []
    temporal_anchors: list[str] = []
    importance: float | None = None
    # The ids of the fragments the synthesis replaces when it is not all of them (the offline
    # merge splits a cluster that can't be merged whole). Never read from an LLM's answer.
    replaces: tuple[str, ...] = ()

    @field_validator("synthesis")
    @classmethod
    def _synthesis(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("synthesis is empty")
        if len(value) > MAX_SYNTHESIS_CHARS:
            raise ValueError(f"synthesis has {len(value)} characters, over {MAX_SYNTHESIS_CHARS}")
        return value

    @field_validator("key_entities", "causal_chains", "temporal_anchors", mode="before")
    @classmethod
    def _string_list(cls, value: object) -> object:
        if value is None:
            return []
        if not isinstance(value, list):
            return value  # pydantic reports the wrong type
        # Numbers are fine as entities ("2024", 42); other non-strings are left for pydantic.
        items = [str(v).strip() if type(v) in (int, float, str) else v for v in value]
        if not all(isinstance(v, str) for v in items):
            return items
        if len(items) > MAX_LIST_ITEMS or any(len(str(v)) > MAX_ITEM_CHARS for v in items):
            raise ValueError(f"at most {MAX_LIST_ITEMS} items of {MAX_ITEM_CHARS} characters")
        return list(dict.fromkeys(v for v in items if v))

    @field_validator("importance")
    @classmethod
    def _importance(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("importance must be a finite number")
        return None if value is None else min(1.0, max(0.0, value))


@dataclass(frozen=True, kw_only=True)
class Fragment:
    """One cluster member as the synthesiser sees it. ``created_at`` is POSIX seconds (UTC);
    ``vector``: its unit embedding when it has one."""

    id: str
    content: str
    importance: float
    created_at: float
    vector: npt.NDArray[np.float32] | None = field(default=None, compare=False, repr=False)


class Synthesiser(Protocol):
    name: str
    model: str
    prompt_version: str

    def synthesise(
        self, fragments: Sequence[Fragment], causal_edges: Sequence[Edge] = (),
        target_tokens: int | None = None,
    ) -> SynthesisAnswer:
        """Raises LLMError when no valid answer can be produced (the cluster is then skipped).
        ``target_tokens``: the length the synthesis should keep to (see
        :func:`remd.sleep.consolidate.target_tokens`)."""
        ...


def iso_date(posix: float) -> str:
    """``created_at`` as a UTC calendar date, e.g. ``2024-03-05``."""
    try:
        return datetime.fromtimestamp(posix, UTC).date().isoformat()
    except (OverflowError, OSError, ValueError) as exc:
        raise InvalidInput(f"bad fragment timestamp {posix!r}") from exc


def _chronological(fragments: Sequence[Fragment]) -> list[Fragment]:
    if not fragments:
        raise InvalidInput("cannot synthesise an empty cluster")
    if all(not f.content.strip() for f in fragments):
        raise InvalidInput("cannot synthesise fragments that are all blank")
    return sorted(fragments, key=lambda f: (f.created_at, f.id))


def render_fragments(fragments: Sequence[Fragment]) -> str:
    """Fragments as delimited data, oldest first; the content is escaped, so it cannot close
    its element or forge another one."""
    return "\n".join(
        f'<fragment id="{html.escape(f.id)}" date="{iso_date(f.created_at)}" '
        f'importance="{f.importance:.2f}">\n{html.escape(f.content, quote=False)}\n</fragment>'
        for f in _chronological(fragments)
    )


def render_edges(edges: Sequence[Edge]) -> str:
    lines = [  # an EdgeType member formats as "EdgeType.X", hence the .value
        f'<edge from="{html.escape(src)}" to="{html.escape(dst)}" '
        f'type="{html.escape(str(getattr(kind, "value", kind)))}"/>'
        for src, dst, kind in edges
    ]
    return "\n".join(lines) or "(none)"


class LLMSynthesiser:
    """Synthesis by an LLM; an invalid answer is re-asked once, then it is an LLMError."""

    name = "llm"

    def __init__(self, client: LLMClient, prompt: Prompt | None = None,
                 count: Callable[[str], int] | None = None) -> None:
        self._client = client
        self._prompt = prompt or load_prompt("synthesis")
        self._count = count  # tokens of a text; None: answers are not held to a length
        for section in ("reask", "too_long"):
            if section not in self._prompt.sections:
                raise InvalidInput(f"prompt {self._prompt.name!r} has no '## {section}' section")
        self.model = client.model
        self.prompt_version = self._prompt.ident

    def close(self) -> None:
        """Close the client this synthesiser owns (its pool of HTTP connections)."""
        self._client.close()

    def synthesise(
        self, fragments: Sequence[Fragment], causal_edges: Sequence[Edge] = (),
        target_tokens: int | None = None,
    ) -> SynthesisAnswer:
        """The model's synthesis. The prompt states ``target_tokens``; an answer that is not
        valid JSON of the right shape is re-asked once. One longer than the target (measured
        with the counter given at construction) is kept when it is still shorter than its
        members together (the run's checks judge it as any other), else re-asked once.

        Raises LLMError (endpoint failure, an invalid answer twice, a too-long answer twice),
        InvalidInput.
        """
        target = target_tokens if target_tokens is not None else _NO_TARGET
        system = self._prompt.fill("system")
        user = self._prompt.fill(
            "user", count=str(len(fragments)), fragments=render_fragments(fragments),
            edges=render_edges(causal_edges), target=str(target),
        )
        turns: list[tuple[Role, str]] = []
        invalid = too_long = 0
        while True:
            answer = self._client.complete_json(system, user, turns=turns)
            try:
                parsed = _parse(answer)
            except ValidationError as exc:
                invalid += 1
                error = _brief(exc)
                _log.warning("synthesis.invalid_answer", attempt=invalid, error=error,
                             chars=len(answer), model=self.model,
                             prompt_version=self.prompt_version)
                if invalid == 2:
                    raise LLMError(
                        f"LLM answered with an invalid synthesis twice: {error}") from exc
                follow = self._prompt.fill("reask", error=error)
            else:
                tokens = self._count(parsed.synthesis) if self._count is not None else 0
                if target_tokens is None or tokens <= target_tokens:
                    return parsed
                if self._count is not None and tokens < sum(
                        self._count(f.content) for f in fragments):
                    # over the target, yet shorter than its members: a faithful merge of short
                    # fragments (asking again returns the same text; the checks judge it)
                    _log.info("synthesis.over_target_kept", tokens=tokens,
                              target=target_tokens, model=self.model)
                    return parsed
                too_long += 1
                _log.warning("synthesis.too_long", attempt=too_long, tokens=tokens,
                             target=target_tokens, model=self.model,
                             prompt_version=self.prompt_version)
                if too_long == 2:
                    raise LLMError(f"LLM synthesis is {tokens} tokens, over the target of "
                                   f"{target_tokens} and not shorter than its members, "
                                   "after a re-ask")
                follow = self._prompt.fill("too_long", tokens=str(tokens),
                                           target=str(target_tokens))
            turns = [("assistant", _clip(answer, _REASK_ECHO_CHARS)), ("user", follow)]


def make_synthesiser(config: Config, embed: Embed | None = None,
                     ) -> LLMSynthesiser | OfflineSynthesiser:
    """The one way a synthesiser is made (by :func:`remd.sleep.rem.run_rem` for a run, and once
    by the daemon for all its runs): the LLM one when ``config.llm.base_url`` is set (its
    answers held to each cluster's token target, counted in ``config.store.encoding``), else the
    offline merging one (``config.rem.offline_density``, ``embed``: see
    :class:`OfflineSynthesiser`).

    The caller owns the result and calls ``close()`` when done: the LLM one holds an HTTP
    client whose connections a long-lived process (the daemon) keeps for run after run instead
    of leaving one unclosed client behind per run.
    """
    count = TokenCounter(config.store.encoding).count
    if config.llm.base_url is None:
        return OfflineSynthesiser(config.rem.offline_density, count=count, embed=embed)
    return LLMSynthesiser(LLMClient(config.llm), count=count)


def _parse(answer: str) -> SynthesisAnswer:
    text = answer.strip()
    # Some local servers wrap JSON mode answers in a Markdown fence anyway.
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    parsed = SynthesisAnswer.model_validate_json(fenced.group(1) if fenced else text)
    # The fragments reach the model escaped as XML (render_fragments): "B&amp;Q" back to "B&Q".
    return parsed.model_copy(update={
        "replaces": (),  # an LLM folds the whole cluster
        "synthesis": html.unescape(parsed.synthesis),
        "key_entities": [html.unescape(t) for t in parsed.key_entities],
        "causal_chains": [html.unescape(t) for t in parsed.causal_chains],
        "temporal_anchors": [html.unescape(t) for t in parsed.temporal_anchors]})


def _brief(exc: ValidationError) -> str:
    """The first problems of a validation error, without echoing the answer's content."""
    parts = [
        f"{'.'.join(str(p) for p in err['loc']) or 'answer'}: {err['msg']}"
        for err in exc.errors()[:3]
    ]
    return _clip("; ".join(parts), 300)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# Words whose presence never makes a sentence say something new (for near-duplicates).
_FILLERS = frozenset({"a", "an", "the", "and", "also", "just", "very", "really", "actually",
                      "indeed", "quite"})
_NEAR_DUPLICATE = 0.8  # token-set Jaccard
split_header = tx.split_header  # where it always was for callers
NOT_NAMES = tx.NOT_NAMES


@dataclass
class _Sentence:
    text: str
    date: str
    norm: frozenset[str]  # lower-cased tokens, for the similarity
    content: frozenset[str]  # the same minus filler words, for "adds nothing new"
    turn: int = 0  # the fragment it is written under
    head: tuple[str, str] = ("", "")  # that fragment's (stamp, speaker), see split_header


class OfflineSynthesiser:
    """Synthesis without an LLM. Given a token target (a REM run always gives one), it merges
    (:func:`remd.sleep.merge.merge`): each fact once, with every date, name and number it was given,
    within the target, or :class:`NotDenser`. Without a target it is extractive: every sentence
    of the cluster, oldest first, near-duplicates dropped.

    A sentence is dropped as a near-duplicate of a kept one only when their token sets have
    Jaccard >= 0.8 AND the dropped one has no word the kept one lacks (articles and fillers
    aside) and no negation tells them apart, so "broken on Tuesday" / "broken on Thursday" and
    "is on call" / "is not on call" both survive: no name, date, number or negation is lost.
    Of two sentences that cover each other the longer wording is kept, in the place of the
    first mention.
    """

    name = "offline"
    model = "extractive-v1"
    prompt_version = "offline-1"

    def __init__(self, density: float = 1.0, *, count: Callable[[str], int] | None = None,
                 embed: Embed | None = None) -> None:
        """``density`` < 1 makes the synthesis a budgeted extract (:mod:`remd.sleep.distil`) of at
        most that share of the members' length instead of a merge. ``count``: tokens of a
        text (default o200k); ``embed``: sentence vectors for telling restatements apart
        (without it, fragments of several sentences are compared by their words)."""
        if not 0 < density <= 1:
            raise InvalidInput(f"offline synthesis density must be in (0, 1], not {density!r}")
        self.density = density
        self._count = count
        self._embed = embed
        if density < 1:
            self.model = f"extractive-dense-{density:g}"
            self.prompt_version = "offline-2"

    def synthesise(
        self, fragments: Sequence[Fragment], causal_edges: Sequence[Edge] = (),
        target_tokens: int | None = None,
    ) -> SynthesisAnswer:
        """Raises InvalidInput (empty cluster), LLMError (result over the synthesis cap),
        NotDenser (no merge within ``target_tokens`` keeps the cluster's facts)."""
        ordered = _chronological(fragments)
        if self.density < 1:
            return self._dense(ordered)
        if target_tokens is not None:  # the merge works the target out itself (it may split)
            return self._merged(ordered)
        kept: list[_Sentence] = []
        for turn, frag in enumerate(ordered):
            date = iso_date(frag.created_at)
            stamp, speaker, body = split_header(frag.content)
            for text in tx.sentences(body):
                norm = frozenset(w.lower() for w in tx.WORD.findall(text))
                _keep(kept, _Sentence(text, date, norm, norm - _FILLERS, turn,
                                      (stamp, speaker)))
        first, last = iso_date(ordered[0].created_at), iso_date(ordered[-1].created_at)
        parts = [f"{first} to {last}:" if first != last else f"{first}:"]
        current, stamped, turn_now = first, "", -1
        for sentence in kept:
            stamp, speaker = sentence.head
            if sentence.turn != turn_now:
                # A turn's stamp carries its date: written when it changes (the turns of one
                # session share it); a turn without one gets a date marker when the day does.
                if stamp and stamp != stamped:
                    parts.append(stamp)
                    stamped, current = stamp, sentence.date
                elif not stamp and sentence.date != current:
                    parts.append(f"({sentence.date})")
                    current = sentence.date
                if speaker:
                    parts.append(speaker)
                turn_now = sentence.turn
            parts.append(sentence.text if sentence.text[-1] in ".!?" else sentence.text + ".")
        synthesis = " ".join(parts)
        if len(synthesis) > MAX_SYNTHESIS_CHARS:
            raise LLMError(f"offline synthesis of {len(fragments)} fragments has "
                           f"{len(synthesis)} characters, over {MAX_SYNTHESIS_CHARS}")
        return self._answer(synthesis, ordered)

    def _merged(self, ordered: Sequence[Fragment]) -> SynthesisAnswer:
        count = self._count or TokenCounter().count
        merged = merge([f.content for f in ordered], [f.created_at for f in ordered],
                       count=count, vectors=[f.vector for f in ordered], embed=self._embed)
        if len(merged.text) > MAX_SYNTHESIS_CHARS:
            raise NotDenser(f"merged synthesis of {len(ordered)} fragments has "
                            f"{len(merged.text)} characters, over {MAX_SYNTHESIS_CHARS}")
        folded = [ordered[i] for i in merged.fragments]
        answer = self._answer(merged.text, folded)
        if len(folded) == len(ordered):
            return answer
        return answer.model_copy(update={"replaces": tuple(f.id for f in folded)})

    def _dense(self, ordered: Sequence[Fragment]) -> SynthesisAnswer:
        synthesis = distil([f.content for f in ordered], [f.created_at for f in ordered],
                           self.density)
        if len(synthesis) > MAX_SYNTHESIS_CHARS:
            raise LLMError(f"offline synthesis of {len(ordered)} fragments has "
                           f"{len(synthesis)} characters, over {MAX_SYNTHESIS_CHARS}")
        return self._answer(synthesis, ordered)

    @staticmethod
    def _answer(synthesis: str, ordered: Sequence[Fragment]) -> SynthesisAnswer:
        """The answer for a text: the lists keep every name, cause and date of the members
        (they tag the synthesis and are checked for coverage), whatever the text kept."""
        every = [t for f in ordered for t in tx.sentences(f.content)]
        return SynthesisAnswer(
            synthesis=synthesis,
            key_entities=_entities(every)[:MAX_LIST_ITEMS],
            causal_chains=[c for t in every if (c := _causal(t))][:MAX_LIST_ITEMS],
            temporal_anchors=_temporal(ordered, every),
            importance=None,  # the REM cycle derives it from the cluster members
        )

    def close(self) -> None:
        """Nothing to release; here so either synthesiser can be closed the same way."""


def _keep(kept: list[_Sentence], new: _Sentence) -> None:
    for i, old in enumerate(kept):
        union = old.norm | new.norm
        similar = old.text == new.text or (
            bool(union) and len(old.norm & new.norm) / len(union) >= _NEAR_DUPLICATE
        )
        if not similar or any(tx.is_negation(w) for w in old.norm ^ new.norm):
            continue
        new_covered, old_covered = new.content <= old.norm, old.content <= new.norm
        if new_covered and (not old_covered or len(old.text) >= len(new.text)):
            return  # the kept sentence already says it
        if old_covered:
            # keep the longer wording in the place (and date) of the first mention
            kept[i] = _Sentence(new.text, old.date, new.norm, new.content, old.turn, old.head)
            return
    kept.append(new)


def _entities(sentences: Sequence[str]) -> list[str]:
    """Names and numbers, in order of first appearance."""
    return list(dict.fromkeys(
        x for t in sentences for x in (*tx.names(t), *tx.NUMBER.findall(t))))


def _causal(sentence: str) -> str | None:
    """"cause → effect" for a sentence with a causal connective, else None."""
    pair = tx.causal(sentence)
    return f"{pair[0]} → {pair[1]}" if pair else None


def _temporal(ordered: Sequence[Fragment], sentences: Sequence[str]) -> list[str]:
    first, last = iso_date(ordered[0].created_at), iso_date(ordered[-1].created_at)
    written = [d.surface for t in sentences for d in tx.find_dates(t)]
    return list(dict.fromkeys([first, last, *written]))[:MAX_LIST_ITEMS]
