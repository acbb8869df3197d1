"""The optional LLM update judge: a model decides whether a new memory updates older ones.

On with ``[updates] llm = true`` and an LLM configured (``[llm] base_url``). The offline
detector (:mod:`remd.write.supersede`) decides first, in the save, as always. Then, in the
background (the save never waits on it), the model is shown the new statement and its
``llm_candidates`` nearest live memories and answers, for each, "update", "add" or "same"
(:class:`UpdateAnswer`). Its answer replaces the offline decisions for those pairs
(:func:`remd.write.supersede.apply_judgement`): an update supersedes the older memory, "add" or
"same" undoes an offline decision about it. A decision the user undid (``restore``) stays
undone.

Any failure (the endpoint down, a timeout, an HTTP error, an answer that is not the JSON asked
for or names memories it was not shown) keeps the offline decisions and is logged. After an
endpoint failure the judge rests ``llm_cooldown`` seconds. A process that stops before the
answer keeps the offline decisions.

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

__all__ = ["LLMUpdateJudge", "UpdateAnswer"]

TEXT_CHARS = 2000  # of each statement shown to the model


class Decision(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=200)
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

    @classmethod
    def from_settings(cls, settings: LLMSettings, *, timeout: float,
                      cooldown: float) -> LLMUpdateJudge:
        tuned = settings.model_copy(update={"timeout": timeout,
                                            "max_retries": min(settings.max_retries, 1)})
        return cls(LLMClient(tuned), cooldown=cooldown)

    def close(self) -> None:
        self._client.close()

    @property
    def resting(self) -> bool:
        with self._lock:
            return self._clock() < self._resting_until

    def ask(self, new: str, date: str, older: Sequence[tuple[str, str, str]]
            ) -> dict[str, str]:
        """id -> "update" / "add" / "same" for each of ``older`` (id, text, date). Raises
        LLMError (the endpoint failed: the judge then rests; or the answer is not valid, or
        names a memory it was not shown)."""
        listed = "\n".join(
            f'<memory id="{html.escape(i)}" date="{d}">\n'
            f"{html.escape(t[:TEXT_CHARS], quote=False)}\n</memory>" for i, t, d in older)
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
        shown = {i for i, _, _ in older}
        unknown = [d.id for d in parsed.decisions if d.id not in shown]
        if unknown:
            raise LLMError(f"LLM update answer names memories it was not shown: {unknown[:3]}")
        return {d.id: d.relation for d in parsed.decisions}
