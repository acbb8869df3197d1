"""The optional LLM tagger: new memories tagged by an OpenAI-compatible model.

On with ``[tags] llm = true`` and an LLM configured (``[llm] base_url``). A save commits first,
with the offline tags (:mod:`remd.text.tagging`), so it is durable and findable when the model is
slow or down; then, as embedding does, the model is asked for tags, shown the namespace's most
used ones so it files the memory under the vocabulary the agent already has. Its answer is
validated (:class:`TagAnswer`), normalised like every tag, a near-duplicate of a known tag
becomes that tag, and the offline tags the saver did not give are replaced in one transaction.

Any failure (the endpoint down, a timeout, an HTTP error, an answer that is not the JSON asked
for, or has no usable tag) keeps the offline tags and is logged; the save never fails because
of it. After an endpoint failure the tagger rests ``llm_cooldown`` seconds, so a dead endpoint
does not make every save wait for its timeout. A process killed between the commit and the
answer leaves the memory with its offline tags.

This module is the model's side (its answer, the client and its rest, the vocabulary rule);
the step after the commit that asks it and writes its tags is :func:`remd.write.saves.tag_with_llm`.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from remd.config import LLMSettings
from remd.errors import InvalidInput, LLMError
from remd.llm.client import LLMClient, Prompt, load_prompt
from remd.text.tagging import Known, normalise_tag

__all__ = ["LLMTagger", "TagAnswer", "reuse_vocabulary"]

TEXT_CHARS = 4000  # the model reads a memory's opening, like the offline tagger


class TagAnswer(BaseModel):
    """The model's answer: ``{"tags": [...]}``, most important first."""

    model_config = ConfigDict(extra="ignore")

    tags: list[Annotated[str, StringConstraints(min_length=1, max_length=200)]] = Field(
        min_length=1, max_length=64)


def _key(tag: str) -> str:
    """What two spellings of one tag share: ``ice-cream`` and ``icecream``."""
    return tag.replace("-", "")


def reuse_vocabulary(raw: Sequence[str], vocabulary: Sequence[str], known: Known,
                     max_tags: int) -> list[str]:
    """The model's tags, normalised (``"Preferences"`` -> ``preference``), a near-duplicate
    of a ``vocabulary`` tag replaced by it, repeats and unusable ones dropped, at most
    ``max_tags``. ``known`` returns those of the normalised tags the namespace has already
    (one of them is never bent onto another tag)."""
    normal: list[str] = []
    for candidate in raw:
        try:
            tag = normalise_tag(candidate)
        except InvalidInput:
            continue
        if tag not in normal:
            normal.append(tag)
    existing = known(normal) | set(vocabulary)
    by_key = {_key(tag): tag for tag in reversed(vocabulary)}  # the most used wins
    out: list[str] = []
    for tag in normal:
        if tag not in existing:
            tag = by_key.get(_key(tag), tag)
        if tag not in out:
            out.append(tag)
        if len(out) == max_tags:
            break
    return out


class LLMTagger:
    """Asks the model for a memory's tags. Thread-safe; the caller closes it."""

    def __init__(self, client: LLMClient, *, max_tags: int, cooldown: float,
                 prompt: Prompt | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._prompt = prompt or load_prompt("tagging")
        self.model = client.model
        self.max_tags = max_tags
        self._cooldown = cooldown
        self._clock = clock
        self._resting_until = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: LLMSettings, *, max_tags: int, timeout: float,
                      cooldown: float) -> LLMTagger:
        """A tagger on its own client: ``timeout`` per answer and one retry at most, since a
        save waits for it."""
        tuned = settings.model_copy(update={"timeout": timeout,
                                            "max_retries": min(settings.max_retries, 1)})
        return cls(LLMClient(tuned), max_tags=max_tags, cooldown=cooldown)

    def close(self) -> None:
        self._client.close()

    def interrupt(self) -> None:
        """Nothing to end: the tagger never waits out its rest (a save skips it meanwhile)."""

    @property
    def resting(self) -> bool:
        with self._lock:
            return self._clock() < self._resting_until

    def ask(self, text: str, vocabulary: Sequence[str]) -> list[str]:
        """The model's raw tags for ``text``. Raises LLMError (the endpoint failed: the tagger
        then rests; or the answer is not a valid :class:`TagAnswer`)."""
        user = self._prompt.fill(
            "user", text=html.escape(text[:TEXT_CHARS], quote=False),
            vocabulary=", ".join(vocabulary) or "(none yet)")
        system = self._prompt.fill("system", max_tags=str(self.max_tags))
        try:
            answer = self._client.complete_json(system, user)
        except LLMError:
            with self._lock:
                self._resting_until = self._clock() + self._cooldown
            raise
        try:
            return TagAnswer.model_validate_json(answer).tags
        except ValidationError as exc:
            raise LLMError(f"LLM tags answer is not valid: {exc.errors()[0]['msg']}") from exc
