"""The optional LLM update judge: a model decides whether a new memory updates older ones.

On with ``[updates] llm = true`` and an LLM configured (``[llm] base_url``). The offline
detector (:mod:`remd.supersede`) decides first, in the save, as always. Then, in the
background (the save never waits on it), the model is shown the new statement and its
``llm_candidates`` nearest live memories and answers, for each, "update", "add" or "same"
(:class:`UpdateAnswer`). Its answer replaces the offline decisions for those pairs
(:func:`remd.supersede.apply_judgement`): an update supersedes the older memory, "add" or
"same" undoes an offline decision about it. A decision the user undid (``restore``) stays
undone.

Any failure (the endpoint down, a timeout, an HTTP error, an answer that is not the JSON asked
for or names memories it was not shown) keeps the offline decisions and is logged. After an
endpoint failure the judge rests ``llm_cooldown`` seconds. A process that stops before the
answer keeps the offline decisions.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from remd.errors import LLMError, StoreError
from remd.llm import LLMClient, LLMSettings, Prompt, load_prompt
from remd.logs import get_logger
from remd.supersede import Fresh, apply_judgement, decided_by, nearest_live
from remd.vectors import stored

if TYPE_CHECKING:
    from remd.engine import Engine

__all__ = ["LLMUpdateJudge", "UpdateAnswer", "judge_with_llm"]

_log = get_logger("remd.llm_updates")

TEXT_CHARS = 2000  # of each statement shown to the model


def iso_date(posix: float) -> str:
    return datetime.fromtimestamp(posix, UTC).date().isoformat()


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


def judge_with_llm(engine: Engine, namespace: str, ids: Sequence[str]) -> int:
    """Ask the model about memories just saved (their ids) and apply its decisions; returns
    how many pairs it decided. Never raises for a model or store failure: the offline
    decisions stay."""
    judge = engine.update_judge
    if judge is None:
        return 0
    decided = 0
    for node_id in ids:
        if judge.resting:
            _log.info("updates.llm_resting", namespace=namespace, id=node_id)
            continue
        try:
            with engine.caches.use(namespace) as view, engine.store.snapshot() as conn:
                view.bits.refresh(conn)
                row = conn.execute("SELECT rid, content, created_at FROM nodes "
                                   "WHERE namespace = ? AND id = ? AND status = 'live'",
                                   (namespace, node_id)).fetchone()
                if row is None:
                    continue  # forgotten or superseded meanwhile
                rid, content, created = int(row[0]), str(row[1]), float(row[2])
                vector = stored(conn, namespace, [rid]).get(rid)
                fresh = Fresh(rid=rid, id=node_id, content=content, created_at=created,
                              vector=vector)
                near = nearest_live(conn, namespace, fresh, view.bits)
                older = ([(o, 1.0) for o in decided_by(conn, namespace, node_id)]
                         + [(o, cos) for o, cos in near if o.created_at <= created])
                older = list({o.id: (o, c) for o, c in reversed(older)}.values())[::-1]
                older = older[:engine.config.updates.llm_candidates]
            if not older:
                continue
            relations = judge.ask(content, iso_date(created), [
                (o.id, o.content, iso_date(o.created_at)) for o, _ in older])
            with engine.store.transaction() as conn:
                decided += apply_judgement(conn, namespace, node_id, relations,
                                           engine.clock(), judge.model)
        except LLMError as exc:
            _log.warning("updates.llm_failed", namespace=namespace, id=node_id,
                         error=str(exc), model=judge.model)
        except StoreError as exc:
            _log.warning("updates.llm_not_written", namespace=namespace, id=node_id,
                         error=str(exc))
    return decided
