"""The optional LLM update judge: a model decides whether a new memory updates older ones.

On with ``[updates] llm = true`` and an LLM configured (``[llm] base_url``). The offline
detector (:mod:`remd.write.supersede`) decides first, in the save, as always. Then, in the
background (the save never waits on it), the model is shown the new statement and its
``llm_candidates`` nearest live memories and answers, for each, "update", "add" or "same"
(:class:`UpdateAnswer`). Its answer replaces the offline decisions for those pairs
(:func:`remd.write.supersede.apply_judgement`): an update supersedes the older memory, "add" or
"same" undoes an offline decision about it. A decision the user undid (``restore``) stays
undone.

A small local model answers "update" for pairs that have nothing in common (a 1.5B model
superseded "I have two cats" by "I live in Leeds"), so the model's word is evidence, not a
verdict: its "update" supersedes only where the offline reading finds one attribute of one
subject, makes at most a CONTRADICTS edge where it finds one subject and shared words, and
does nothing otherwise (:func:`remd.text.updates.model_support`). An answer that calls every
one of several memories an update is distrusted whole (``updates.llm_distrusted``). The
memories are numbered in the prompt, never named by their ids (a small model garbles
sixteen characters that share a prefix).

Any failure (the endpoint down, a timeout, an HTTP error, an answer that is not the JSON asked
for or numbers memories it was not shown) keeps the offline decisions and is logged. After an
endpoint failure the judge rests ``llm_cooldown`` seconds (a warning); the memories saved
meanwhile wait for the rest to end and are judged then, and the one that failed is asked once
more. A process that stops before the answer keeps the offline decisions.

This module is the model's side (its answer, the client and its rest); the background step
that asks it and applies its decisions is :func:`remd.write.saves.judge_with_llm`.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from remd.config import LLMSettings
from remd.errors import LLMError
from remd.llm.client import LLMClient, Prompt, load_prompt

__all__ = ["DistrustedAnswer", "LLMUpdateJudge", "UpdateAnswer"]

TEXT_CHARS = 2000  # of each statement shown to the model


class Decision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    n: int = Field(ge=1, le=64)  # the memory's number in the prompt
    relation: Literal["update", "add", "same"]


class UpdateAnswer(BaseModel):
    """The model's answer: one decision per memory it was shown."""

    model_config = ConfigDict(extra="ignore")

    decisions: list[Decision] = Field(max_length=64)


class LLMUpdateJudge:
    """Asks the model how a new statement relates to older ones. Thread-safe; the caller
    closes it."""

    def __init__(self, client: LLMClient, *, cooldown: float, prompt: Prompt | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._prompt = prompt or load_prompt("update")
        self.model = client.model
        self._cooldown = cooldown
        self._clock = clock
        self._resting_until = 0.0
        self._lock = threading.Lock()
        self._closed = threading.Event()

    @classmethod
    def from_settings(cls, settings: LLMSettings, *, timeout: float,
                      cooldown: float) -> LLMUpdateJudge:
        tuned = settings.model_copy(update={"timeout": timeout,
                                            "max_retries": min(settings.max_retries, 1)})
        return cls(LLMClient(tuned), cooldown=cooldown)

    def close(self) -> None:
        self.interrupt()
        self._client.close()

    def interrupt(self) -> None:
        """End any wait for the end of a rest now (the judge is being closed)."""
        self._closed.set()

    @property
    def resting(self) -> bool:
        return self.rest_left() > 0

    def rest_left(self) -> float:
        """Seconds until the rest after an endpoint failure ends (0: not resting)."""
        with self._lock:
            return max(0.0, self._resting_until - self._clock())

    def wait_rest(self) -> bool:
        """Wait for the rest to end; False when the judge was closed meanwhile."""
        while (left := self.rest_left()) > 0:
            if self._closed.wait(left):
                return False
        return not self._closed.is_set()

    def ask(self, new: str, date: str, older: Sequence[tuple[str, str, str]]
            ) -> dict[str, str]:
        """id -> "update" / "add" / "same" for each of ``older`` (id, text, date), shown to the
        model numbered from 1. Raises LLMError (the endpoint failed: the judge then rests; the
        answer is not valid, numbers a memory it was not shown, or calls every one of several
        memories an update)."""
        listed = "\n".join(
            f'<memory n="{k}" date="{d}">\n'
            f"{html.escape(t[:TEXT_CHARS], quote=False)}\n</memory>"
            for k, (_, t, d) in enumerate(older, start=1))
        user = self._prompt.fill("user", new=html.escape(new[:TEXT_CHARS], quote=False),
                                 date=date, candidates=listed)
        try:
            answer = self._client.complete_json(self._prompt.fill("system"), user)
        except LLMError:
            with self._lock:
                self._resting_until = self._clock() + self._cooldown
            raise
        try:
            parsed = UpdateAnswer.model_validate_json(answer)
        except ValidationError as exc:
            raise LLMError(f"LLM update answer is not valid: {exc.errors()[0]['msg']}") from exc
        unknown = [d.n for d in parsed.decisions if d.n > len(older)]
        if unknown:
            raise LLMError(f"LLM update answer numbers memories it was not shown: {unknown[:3]}")
        relations: dict[str, str] = {older[d.n - 1][0]: d.relation for d in parsed.decisions}
        if len(older) >= 2 and len(relations) == len(older) and all(
                r == "update" for r in relations.values()):
            raise DistrustedAnswer(
                f"LLM update answer calls all {len(older)} memories it was shown updated")
        return relations


class DistrustedAnswer(LLMError):
    """An answer remd does not act on: every one of several memories called updated."""
