"""The optional LLM tagger: new memories tagged by an OpenAI-compatible model.

On with ``[tags] llm = true`` and an LLM configured (``[llm] base_url``). A save commits first,
with the offline tags (:mod:`remd.tagging`), so it is durable and findable when the model is
slow or down; then, as embedding does, the model is asked for tags, shown the namespace's most
used ones so it files the memory under the vocabulary the agent already has. Its answer is
validated (:class:`TagAnswer`), normalised like every tag, a near-duplicate of a known tag
becomes that tag, and the offline tags the saver did not give are replaced in one transaction.

Any failure (the endpoint down, a timeout, an HTTP error, an answer that is not the JSON asked
for, or has no usable tag) keeps the offline tags and is logged; the save never fails because
of it. After an endpoint failure the tagger rests ``llm_cooldown`` seconds, so a dead endpoint
does not make every save wait for its timeout. A process killed between the commit and the
answer leaves the memory with its offline tags.
"""

from __future__ import annotations

import functools
import html
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from remd.errors import InvalidInput, LLMError, StoreError
from remd.llm import LLMClient, LLMSettings, Prompt, load_prompt
from remd.logs import get_logger
from remd.tagging import Known, normalise_tag

if TYPE_CHECKING:
    from remd.engine import Engine
    from remd.ingest import Draft

__all__ = ["LLMTagger", "TagAnswer", "reuse_vocabulary", "tag_with_llm"]

_log = get_logger("remd.llm_tagging")

TEXT_CHARS = 4000  # the model reads a memory's opening, like the offline tagger
_LAST_WEIGHT = 0.5  # the model's tags weigh 1.0 (its first) down to this (its last)


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


def _vocabulary(engine: Engine, namespace: str) -> list[str]:
    limit = engine.config.tags.llm_vocabulary
    if limit == 0:
        return []
    rows = engine.store.query("SELECT name FROM tags WHERE namespace = ? AND df > 0 "
                              "ORDER BY df DESC, name LIMIT ?", (namespace, limit))
    return [str(r[0]) for r in rows]


def _known(engine: Engine, namespace: str, names: list[str]) -> set[str]:
    if not names:
        return set()
    marks = ",".join("?" * len(names))
    rows = engine.store.query(
        f"SELECT name FROM tags WHERE namespace = ? AND name IN ({marks})", (namespace, *names))
    return {str(r[0]) for r in rows}


def _weights(tags: Sequence[str]) -> dict[str, float]:
    n = len(tags)
    return {tag: round(1.0 - (1.0 - _LAST_WEIGHT) * i / max(n - 1, 1), 4)
            for i, tag in enumerate(tags)}


def tag_with_llm(engine: Engine, namespace: str, written: Sequence[tuple[int, Draft]]) -> int:
    """Re-tag memories just committed (``(rid, draft)``) with the LLM tagger; returns how many
    got the model's tags. A bulk save asks ``[llm] concurrency`` at a time. Never raises for a
    model failure: those memories keep their offline tags."""
    tagger = engine.tagger
    if tagger is None:
        return 0
    vocabulary = _vocabulary(engine, namespace)

    def ask(item: tuple[int, Draft]) -> list[str] | None:
        rid, draft = item
        if tagger.resting:
            return None
        try:
            raw = tagger.ask(draft.content, vocabulary)
        except LLMError as exc:
            _log.warning("tagging.llm_failed", rid=rid, error=str(exc), model=tagger.model)
            return None
        tags = reuse_vocabulary(raw, vocabulary, functools.partial(_known, engine, namespace),
                                tagger.max_tags)
        if not tags:
            _log.warning("tagging.llm_failed", rid=rid, error="no usable tag in the answer",
                         model=tagger.model)
        return tags or None

    workers = min(engine.config.llm.concurrency, len(written))
    if workers > 1:
        with ThreadPoolExecutor(workers, thread_name_prefix="remd-tagger") as pool:
            answers = list(pool.map(ask, written))
    else:
        answers = [ask(item) for item in written]
    skipped = sum(1 for a in answers if a is None)
    if tagger.resting and skipped:
        _log.info("tagging.llm_resting", kept_offline=skipped, namespace=namespace)
    return _write(engine, namespace, [(rid, draft, tags) for (rid, draft), tags
                                      in zip(written, answers, strict=True) if tags])


def _write(engine: Engine, namespace: str,
           answers: Sequence[tuple[int, Draft, list[str]]]) -> int:
    from remd.ingest import BULK_CHUNK, Writer  # ingest imports this module after its commit

    done = 0
    for start in range(0, len(answers), BULK_CHUNK):
        try:
            with engine.store.transaction() as conn:
                writer = Writer(conn, namespace, engine.config, engine.counter)
                now = engine.clock()
                for rid, draft, tags in answers[start:start + BULK_CHUNK]:
                    done += writer.retag(rid, set(draft.tags), _weights(tags), now)
        except StoreError as exc:  # e.g. the file went read-only: the offline tags stay
            _log.warning("tagging.llm_not_written", error=str(exc),
                         memories=len(answers[start:start + BULK_CHUNK]))
    return done
