"""A save, whole: drafts written, then embedded, then looked at again by the LLM when one is on.

:func:`save_drafts` writes validated drafts through :class:`remd.write.ingest.Writer`,
``BULK_CHUNK``
per transaction, so a save is durable chunk by chunk; then (with ``embed``) their vectors
(:func:`remd.write.backlog.embed_pending`). After the commit, and only when configured, the LLM
tagger
re-tags the new memories (:func:`tag_with_llm`, :mod:`remd.llm.tagger`) and the LLM update
judge looks at them on the engine's background thread (:func:`judge_with_llm`,
:mod:`remd.llm.judge`). Neither ever fails the save: their failures keep the offline tags and
decisions, and are logged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from remd.errors import LLMError, StoreError
from remd.index.vectors import stored
from remd.llm.judge import DistrustedAnswer
from remd.llm.tagger import reuse_vocabulary
from remd.logs import get_logger
from remd.telemetry import LLMRole
from remd.text.updates import model_support, read
from remd.write.assistants import judge_of, tagger_of
from remd.write.backlog import embed_pending
from remd.write.ingest import Draft, Writer
from remd.write.supersede import Fresh, apply_judgement, decided_by, judge_pending, nearest_live

if TYPE_CHECKING:
    from remd.llm.judge import LLMUpdateJudge
    from remd.parts import Parts

# The LLM steps' events keep the loggers they have always had, which a host may tune by name.
_tag_log = get_logger("remd.llm_tagging")
_judge_log = get_logger("remd.llm_updates")
BULK_CHUNK = 500  # memories per write transaction in bulk saves: short locks, steady progress
_LAST_WEIGHT = 0.5  # the model's tags weigh 1.0 (its first) down to this (its last)


def save_drafts(engine: Parts, namespace: str, drafts: Sequence[Draft], *, embed: bool = True,
                progress: Callable[[int], None] | None = None) -> list[str]:
    """Write validated drafts, BULK_CHUNK per transaction, then (with ``embed``) the vectors:
    a single draft's own, or after a bulk write the namespace's whole backlog. Returns the new
    ids in order; durable chunk by chunk. Raises StoreError."""
    ids: list[str] = []
    rids: list[int] = []
    to_tag: list[tuple[int, Draft]] = []  # new nodes the LLM tagger (if on) tags after commit
    judged: list[str] = []  # new memories the LLM update judge (if on) looks at after commit
    for start in range(0, len(drafts), BULK_CHUNK):
        chunk = drafts[start:start + BULK_CHUNK]
        counts = engine.counter.count_many([d.content for d in chunk])
        now = engine.clock()
        with engine.store.transaction(namespace) as conn:
            writer = Writer(conn, namespace, engine.config, engine.counter)
            fresh: list[Fresh] = []
            for draft, n in zip(chunk, counts, strict=True):
                rid, node_id = writer.write(draft, now, n)
                rids.append(rid)
                ids.append(node_id)
                new = writer.created and writer.created[-1] == rid
                if draft.auto_tags and new:
                    to_tag.append((rid, draft))
                if new and draft.read:
                    judged.append(node_id)
                    fresh.append(Fresh(rid=rid, id=node_id, content=draft.content,
                                       created_at=draft.created_at or now))
            if fresh and not engine.embeds:  # else judged when its vector is written
                judge_pending(conn, namespace, fresh, now)
        if progress:
            progress(len(chunk))
    if embed:  # one save: its own vector; a bulk save: the namespace's whole backlog
        embed_pending(engine, namespace, rids=rids if len(drafts) == 1 else None)
    if to_tag and engine.config.tags.llm:
        tag_with_llm(engine, namespace, to_tag)
    if judged and engine.config.updates.llm and judge_of(engine) is not None:
        engine.in_background(judge_with_llm, engine, namespace, judged)
    engine.telemetry.saved(len(ids))
    return ids


# -- the LLM tagger, after the commit ------------------------------------------------------
def _vocabulary(engine: Parts, namespace: str) -> list[str]:
    limit = engine.config.tags.llm_vocabulary
    if limit == 0:
        return []
    rows = engine.store.query("SELECT name FROM tags WHERE namespace = ? AND df > 0 "
                              "ORDER BY df DESC, name LIMIT ?", (namespace, limit))
    return [str(r[0]) for r in rows]


def _known(engine: Parts, namespace: str, names: list[str]) -> set[str]:
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


def tag_with_llm(engine: Parts, namespace: str, written: Sequence[tuple[int, Draft]]) -> int:
    """Re-tag memories just committed (``(rid, draft)``) with the LLM tagger; returns how many
    got the model's tags. A bulk save asks ``[llm] concurrency`` at a time. Never raises for a
    model failure: those memories keep their offline tags."""
    tagger = tagger_of(engine)
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
            engine.telemetry.llm_called(LLMRole.TAGGER, failed=True)
            _tag_log.warning("tagging.llm_failed", rid=rid, error=str(exc), model=tagger.model)
            return None
        engine.telemetry.llm_called(LLMRole.TAGGER, failed=False)
        tags = reuse_vocabulary(raw, vocabulary, functools.partial(_known, engine, namespace),
                                tagger.max_tags)
        if not tags:
            _tag_log.warning("tagging.llm_failed", rid=rid, error="no usable tag in the answer",
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
        _tag_log.info("tagging.llm_resting", kept_offline=skipped, namespace=namespace)
    return _write(engine, namespace, [(rid, draft, tags) for (rid, draft), tags
                                      in zip(written, answers, strict=True) if tags])


def _write(engine: Parts, namespace: str,
           answers: Sequence[tuple[int, Draft, list[str]]]) -> int:
    done = 0
    for start in range(0, len(answers), BULK_CHUNK):
        try:
            with engine.store.transaction(namespace) as conn:
                writer = Writer(conn, namespace, engine.config, engine.counter)
                now = engine.clock()
                for rid, draft, tags in answers[start:start + BULK_CHUNK]:
                    done += writer.retag(rid, set(draft.tags), _weights(tags), now)
        except StoreError as exc:  # e.g. the file went read-only: the offline tags stay
            _tag_log.warning("tagging.llm_not_written", error=str(exc),
                             memories=len(answers[start:start + BULK_CHUNK]))
    return done


# -- the LLM update judge, on the background thread ----------------------------------------
def iso_date(posix: float) -> str:
    return datetime.fromtimestamp(posix, UTC).date().isoformat()


def judge_with_llm(engine: Parts, namespace: str, ids: Sequence[str]) -> int:
    """Ask the model about memories just saved (their ids) and apply its decisions; returns
    how many pairs it decided. While the judge rests after an endpoint failure (a warning),
    the memories wait for the rest to end, then are judged; the one that failed is asked once
    more. Never raises for a model or store failure: the offline decisions stay."""
    judge = judge_of(engine)
    if judge is None:
        return 0
    decided = 0
    for node_id in ids:
        for attempt in (1, 2):
            if judge.resting:
                _judge_log.warning("updates.llm_resting", namespace=namespace, id=node_id,
                                   seconds=round(judge.rest_left(), 1), model=judge.model)
                if not judge.wait_rest():
                    return decided  # closed while resting: the offline decisions stay
            try:
                decided += _judge_one(engine, judge, namespace, node_id)
            except DistrustedAnswer as exc:
                _judge_log.warning("updates.llm_distrusted", namespace=namespace, id=node_id,
                                   error=str(exc), model=judge.model)
            except LLMError as exc:
                _judge_log.warning("updates.llm_failed", namespace=namespace, id=node_id,
                                   error=str(exc), model=judge.model, attempt=attempt)
                if judge.resting and attempt == 1:
                    continue  # the endpoint failed: once more when the rest is over
            except StoreError as exc:
                _judge_log.warning("updates.llm_not_written", namespace=namespace, id=node_id,
                                   error=str(exc))
            break
    return decided


def _judge_one(engine: Parts, judge: LLMUpdateJudge, namespace: str, node_id: str) -> int:
    with engine.caches.use(namespace) as view, engine.store.snapshot() as conn:
        view.bits.refresh(conn)
        row = conn.execute("SELECT rid, content, created_at FROM nodes "
                           "WHERE namespace = ? AND id = ? AND status = 'live'",
                           (namespace, node_id)).fetchone()
        if row is None:
            return 0  # forgotten or superseded meanwhile
        rid, content, created = int(row[0]), str(row[1]), float(row[2])
        vector = stored(conn, namespace, [rid]).get(rid)
        fresh = Fresh(rid=rid, id=node_id, content=content, created_at=created, vector=vector)
        near = nearest_live(conn, namespace, fresh, view.bits)
        older = ([(o, 1.0) for o in decided_by(conn, namespace, node_id)]
                 + [(o, cos) for o, cos in near if o.created_at <= created])
        older = list({o.id: (o, c) for o, c in reversed(older)}.values())[::-1]
        older = older[:engine.config.updates.llm_candidates]
    if not older:
        return 0
    try:
        relations = judge.ask(content, iso_date(created), [
            (o.id, o.content, iso_date(o.created_at)) for o, _ in older])
    except LLMError:
        engine.telemetry.llm_called(LLMRole.UPDATE_JUDGE, failed=True)
        raise
    engine.telemetry.llm_called(LLMRole.UPDATE_JUDGE, failed=False)
    new = read(content)
    support = {o.id: model_support(read(o.content), new, cos) for o, cos in older}
    with engine.store.transaction(namespace) as conn:
        return apply_judgement(conn, namespace, node_id, relations, engine.clock(),
                               judge.model, support)
