"""The Python API: ``Memory("agent.db", namespace="default")``.

A Memory is an engine (:mod:`remd.engine`: the file's connection pool, config, clock, token
counter, embedder and caches, one per file per process) plus a namespace; nothing it does
reads or writes another namespace. Memories opened on the same file in one process share one
engine, so a thousand namespaces cost a thousand small objects, not a thousand connections.
All methods are synchronous and thread-safe.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from remd.checks import check_namespace, check_source, check_text, check_time
from remd.config import Config
from remd.engine import Engine, open_engine
from remd.errors import InvalidInput
from remd.index.noderows import NODE_COLUMNS, from_rows, rid_of
from remd.logs import get_logger
from remd.models import Edge, EdgeType, Node, Stats, TriggerReason
from remd.query import contradictions as _contradictions
from remd.query import edges as _edges
from remd.query import feedback as _feedback
from remd.query import inject as _inject
from remd.query import neighbours as _neighbours
from remd.query import nodes as _nodes
from remd.query import stats as _stats
from remd.query import taggraph as _taggraph
from remd.query.feedback import FeedbackResult
from remd.query.namespaces import NamespaceCount, namespace_counts
from remd.query.pack import Pack
from remd.store.seam import Store
from remd.text.embed import Embedder, Vectors
from remd.text.tagnames import check_tags
from remd.text.tokens import TokenCounter
from remd.write import backlog as _backlog
from remd.write import exchange as _exchange
from remd.write import forget as _forget
from remd.write import supersede as _supersede
from remd.write import tagtools as _tagtools
from remd.write.exchange import ImportBatch, ImportResult
from remd.write.ingest import Draft
from remd.write.saves import save_drafts
from remd.write.tagtools import TagCluster

if TYPE_CHECKING:  # REM modules are imported where used: they are heavy and import models
    from remd.sleep import importance as _importance
    from remd.sleep import remhistory as _remhistory
    from remd.sleep import remruns as _remruns
    from remd.sleep import rollback as _rollback
    from remd.sleep import triggers as _triggers
    from remd.sleep.rem import ClusterOutcome
    from remd.sleep.synthesis import Synthesiser

log = get_logger("remd.memory")

__all__ = ["NODE_COLUMNS", "Memory"]
Progress = Callable[[int], None]


class Memory:
    """Long-term memory in one SQLite file (or the PostgreSQL database a ``postgresql://``
    ``path`` names), scoped to one namespace.

    ``create=False`` opens only an existing database (a missing file, or a PostgreSQL database
    without remd's tables, is a StoreError instead of a new one).
    Raises StoreError (and subclasses) if the file cannot be used, InvalidInput for a bad
    namespace or a path that is neither a string nor os.PathLike, ConfigError for a bad
    configuration.
    """

    def __init__(
        self,
        path: str | Path = "remd.db",
        namespace: str = "default",
        *,
        config: Config | None = None,
        embedder: Embedder | None | bool = True,
        clock: Callable[[], float] = time.time,
        engine: Engine | None = None,
        create: bool = True,
    ) -> None:
        self.namespace = check_namespace(namespace)
        if engine is None:
            if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
                # str(5) would be a file named "5" in the working directory
                raise InvalidInput(f"path must be a string or a path (os.PathLike), "
                                   f"not {type(path).__name__}")
            engine = open_engine(path, config if config is not None else Config(),
                                 embedder=embedder, clock=clock, create=create)
            self._owns_engine = True
        else:  # a front end's engine, shared by its requests: it closes it itself
            self._owns_engine = False
        self.engine = engine
        self._closed = False

    @classmethod
    def bound(cls, engine: Engine, namespace: str) -> Memory:
        """A Memory over an engine the caller owns (front ends: one engine, a Memory per
        request). Closing it leaves the engine open. Raises InvalidInput for a bad namespace."""
        return cls(namespace=namespace, engine=engine)

    # -- what the engine holds -----------------------------------------------------------
    @property
    def config(self) -> Config:
        return self.engine.config

    @property
    def store(self) -> Store:
        return self.engine.store

    @property
    def counter(self) -> TokenCounter:
        return self.engine.counter

    @property
    def clock(self) -> Callable[[], float]:
        return self.engine.clock

    @property
    def tokens_exact(self) -> bool:
        return self.engine.tokens_exact

    @property
    def embedder(self) -> Embedder | None:
        return self.engine.embedder

    def query_vector(self, text: str) -> Vectors | None:
        """The embedding of a query (None without an embedder). Raises EmbedError."""
        return self.engine.query_vector(text)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Let go of the engine (the last Memory on a file closes its connections)."""
        if not self._closed:
            self._closed = True
            if self._owns_engine:
                self.engine.release()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------
    def draft(self, text: object, tags: Sequence[str] | None = None,
              source: object = None, created_at: object = None) -> Draft:
        """Validate one memory's input (``created_at``: see :meth:`save`). Raises
        InvalidInput."""
        return Draft(
            content=check_text(text, self.config.store.max_content_chars),
            tags=check_tags(tags),
            source=check_source(source),
            created_at=check_time(created_at, "created_at", self.clock()),
        )

    def save(self, text: str, tags: Sequence[str] | None = None,
             source: str | None = None, *,
             created_at: datetime | date | str | None = None) -> Node:
        """Store one memory; it is durable when this returns.

        ``created_at`` dates it (importing a history, replaying days) by the rules of an
        import line's ``created_at``: a timezone-aware ``datetime``, a ``date`` (midnight UTC)
        or an ISO 8601 string (no offset means UTC), at most a day after the engine's clock;
        by default it is now. A naive ``datetime`` is refused: its zone is unknown.
        The embedding is computed right after the commit (unless embed_on_save is off); if the
        embedder fails the memory stays saved and its vector waits in the backlog.
        Raises InvalidInput for bad text/tags/source/created_at, StoreError if the file can't
        be written.
        """
        draft = self.draft(text, tags, source, created_at)
        (node_id,) = save_drafts(self.engine, self.namespace, [draft],
                                 embed=self.config.embed.embed_on_save)
        return self.get(node_id)

    def save_many(self, texts: Iterable[str], *, tags: Sequence[str] | None = None,
                  source: str | None = None, created_at: datetime | date | str | None = None,
                  embed: bool = True, progress: Progress | None = None) -> list[str]:
        """Store many memories in batched transactions; returns their ids in order.

        ``created_at`` dates them all as :meth:`save` does (one moment: update detection
        never reads one of them as updating another). Every text is validated before
        anything is written, so a bad one stores nothing.
        Memories are durable batch by batch; with ``embed`` the embedding backlog is then
        processed in the embedder's batches. Raises InvalidInput naming the bad item.
        """
        if isinstance(texts, str | bytes):  # iterating would save each character
            raise InvalidInput(f"texts must be a list of texts, not one {type(texts).__name__}")
        drafts = []
        for i, text in enumerate(texts):
            try:
                drafts.append(self.draft(text, tags, source, created_at))
            except InvalidInput as exc:
                raise InvalidInput(f"item {i}: {exc}") from exc
        return self.write_drafts(drafts, embed=embed, progress=progress)

    def write_drafts(self, drafts: Sequence[Draft], *, embed: bool = True,
                     progress: Progress | None = None) -> list[str]:
        """Write validated drafts in batched transactions
        (see :func:`remd.write.saves.save_drafts`)."""
        return save_drafts(self.engine, self.namespace, drafts, embed=embed, progress=progress)

    def embed_pending(self, *, rids: Sequence[int] | None = None, limit: int | None = None,
                      progress: Progress | None = None) -> int:
        """Compute and store vectors for this namespace's memories that have none yet;
        returns how many. Embedder failures are logged, never raised."""
        return _backlog.embed_pending(self.engine, self.namespace, rids=rids, limit=limit,
                                      progress=progress)

    def forget(self, node_id: str) -> Node:
        """Soft-delete: the node stays in the file (status forgotten) but is never injected.

        Raises NotFound for an unknown id.
        """
        _forget.forget(self.store, self.namespace, node_id)
        log.info("memory.forgotten", id=node_id, namespace=self.namespace)
        return self.get(node_id)

    # -- reads --------------------------------------------------------------------------
    def _rid(self, node_id: str) -> int:
        return rid_of(self.store, self.namespace, node_id)

    def nodes_from_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[Node]:
        return from_rows(self.store, rows)

    def get(self, node_id: str) -> Node:
        """The memory with this id in this namespace. Raises NotFound."""
        return _nodes.get(self.store, self.namespace, node_id)

    def recent(self, n: int = 10, *, include_inactive: bool = False) -> list[Node]:
        """The n most recently created live memories (all statuses if include_inactive).
        Raises InvalidInput for a bad ``n``."""
        return _nodes.recent(self.store, self.namespace, n, include_inactive=include_inactive)

    def history(self, node_id: str) -> list[Node]:
        """The SUPERSEDES chain through this memory, oldest first. Raises NotFound."""
        return _nodes.history(self.store, self.namespace, node_id)

    def nearest(self, text: str, k: int = 8, *, live_only: bool = True,
                exact: bool = False) -> list[tuple[Node, float]]:
        """The k memories closest to ``text`` by cosine distance (smallest first).

        By default the search is inject's (:mod:`remd.index.vectors`): a Hamming pre-filter over the
        namespace's in-process bit index (built on the process's first search), then the exact
        cosine of the best ``k * vector_rerank`` candidates; a true neighbour can in rare cases
        rank outside the candidates. ``exact=True`` scans every stored vector of the namespace
        with sqlite-vec instead (see :func:`remd.query.neighbours.nearest`).
        """
        return _neighbours.nearest(self.engine, self.namespace, text, k, live_only=live_only,
                                   exact=exact)

    def edges(self, node_id: str) -> list[tuple[str, str, EdgeType, float]]:
        """Live typed edges touching a memory: (src, dst, type, weight)."""
        self.get(node_id)
        return _edges.touching(self.store, self.namespace, node_id)

    def links(self, node_id: str) -> list[Edge]:
        """Live typed edges touching a memory, with their weight and context: an update
        decision's SUPERSEDES or CONTRADICTS edge carries its confidence and reason; a
        synthesis's DERIVED_FROM edges name what it came from. Raises NotFound."""
        self.get(node_id)
        return _edges.links(self.store, self.namespace, node_id)

    def restore(self, node_id: str) -> _supersede.Restored:
        """Undo update detection's decision that a memory was updated: it is live again,
        the SUPERSEDES/CONTRADICTS edges into it are retired, and the same pairs are never
        decided again (remd.write.supersede.restore). Raises NotFound, InvalidInput."""
        with self.store.transaction(self.namespace) as conn:
            return _supersede.restore(conn, self.namespace, node_id)

    def contradictions(self, memory_id: str | None = None, topic: str | None = None,
                       limit: int | None = None) -> list[tuple[Node, Node, float, str | None]]:
        """Live memories that disagree, newest first: (newer, older, confidence, reason);
        those touching ``memory_id``, those about ``topic`` (a tag of it, or one of its words),
        ``limit`` at most (1..200; None: all). Raises NotFound for an unknown ``memory_id``,
        InvalidInput for a bad topic or limit."""
        return _contradictions.contradictions(self.store, self.namespace, memory_id, topic,
                                              limit)

    def compact(self) -> tuple[int, int]:
        """Rewrite the SQLite file with its tables and indexes packed in key order (every
        namespace's: the file is shared); (bytes before, bytes after). StoreError on
        PostgreSQL."""
        return self.store.compact()

    def stats(self) -> Stats:
        """Counts for this namespace."""
        return _stats.stats(self.store, self.namespace)

    def namespaces(self, limit: int = 1000) -> list[NamespaceCount]:
        """The file's namespaces (all of them, not only this one: for an operator's view),
        by name, with their memory counts. Raises InvalidInput for a bad ``limit``."""
        return namespace_counts(self.store, limit)

    # -- export and import (remd.write.exchange) --------------------------------------------------
    def export_lines(self) -> Iterator[str]:
        """The namespace as JSON lines (see :mod:`remd.write.exchange`)."""
        return _exchange.export_lines(self.engine, self.namespace)

    def import_lines(self, lines: Iterable[str] | ImportBatch, *,
                     embed: bool = True) -> ImportResult:
        """Read JSON lines (or a batch :func:`remd.write.exchange.read_lines` checked) into the
        namespace; a bad line imports nothing, and what is already here is skipped. Raises
        InvalidInput naming the line."""
        return _exchange.import_lines(self.engine, self.namespace, lines, embed=embed)

    # -- inject, feedback and tag tools (remd.query.inject, .feedback, remd.write.tagtools)
    def inject(self, query: str, token_budget: int, *, fill: bool = False,
               dated: bool | None = None, namespace: str | None = None) -> Pack:
        """The memories that matter for ``query`` within ``token_budget`` tokens (a hard
        limit), stopping at the relevance floor; ``fill=True`` packs to the budget;
        ``dated=True`` writes each item's date before it and resolves its relative dates
        ("yesterday"), counted in the budget; ``None`` dates the pack of a question that asks
        for a date ("when did I ...?") and no other. Raises InvalidInput for an empty query,
        a negative budget or a non-bool fill or dated."""
        return _inject.inject(self.engine, self.namespace if namespace is None else namespace,
                              query, token_budget, fill=fill, dated=dated)

    def feedback(self, pack_id: str, accepted: bool | float, *,
                 namespace: str | None = None) -> FeedbackResult:
        """Move the tag edges behind a pack towards accepted (EMA), once per pack.
        Raises NotFound for an unknown pack, InvalidInput for a bad ``accepted``."""
        return _feedback.feedback(
            self.engine, self.namespace if namespace is None else namespace, pack_id, accepted)

    def memories_by_tag_cluster(self, tag: str, depth: int = 2, *,
                                limit: int = 50) -> TagCluster:
        """The tags around ``tag`` and the live memories carrying them. Raises NotFound."""
        return _tagtools.memories_by_tag_cluster(self.engine, self.namespace, tag, depth,
                                                 limit=limit)

    def tag_neighbourhood(self, tag: str, *, depth: int = 2,
                          max_nodes: int = 40) -> _taggraph.TagNeighbourhood:
        """The tags within ``depth`` hops of ``tag`` and the weighted edges between them, to
        draw. Raises NotFound for an unknown tag, InvalidInput for bad arguments."""
        return _taggraph.neighbourhood(self.engine, self.namespace, tag, depth=depth,
                                       max_nodes=max_nodes)

    def top_tags(self, limit: int = 50) -> list[tuple[str, int]]:
        """The tags carried by the most memories: (tag, memories). Raises InvalidInput."""
        return _taggraph.top_tags(self.engine, self.namespace, limit)

    def suggest_related_tags(self, tags: Sequence[str], *,
                             limit: int = 10) -> list[tuple[str, float]]:
        """Existing tags that go with ``tags`` (co-occurrence and hierarchy)."""
        return _tagtools.suggest_related_tags(self.engine, self.namespace, tags, limit=limit)

    def add_subtype(self, child: str, parent: str) -> None:
        """Record ``child IS_SUBTYPE_OF parent``. Raises Conflict for a cycle."""
        with self.store.transaction(self.namespace) as conn:
            _tagtools.add_subtype(conn, self.namespace, child, parent, self.clock())

    def subtypes(self, tag: str) -> list[str]:
        """Tags below ``tag`` in the IS_SUBTYPE_OF hierarchy. Raises NotFound."""
        return _tagtools.subtypes(self.engine, self.namespace, tag)

    def supertypes(self, tag: str) -> list[str]:
        """Tags above ``tag`` in the IS_SUBTYPE_OF hierarchy. Raises NotFound."""
        return _tagtools.supertypes(self.engine, self.namespace, tag)

    def rename_tag(self, old: str, new: str) -> str:
        """Rename a tag. Raises NotFound, or Conflict if ``new`` exists (merge instead)."""
        return _tagtools.rename_tag(self.engine, self.namespace, old, new)

    def merge_tags(self, src: str, dst: str) -> str:
        """Fold tag ``src`` into ``dst``. Raises NotFound or Conflict."""
        return _tagtools.merge_tags(self.engine, self.namespace, src, dst)

    def export_tag_graph(self, format: Literal["dot", "json"] = "json", *,
                         max_edges: int | None = None) -> str:
        """The tag graph as Graphviz DOT or JSON. Raises InvalidInput for another format."""
        return _tagtools.export_tag_graph(self.engine, self.namespace, format, max_edges=max_edges)

    # -- importance, triggers and REM (remd.sleep.importance, remd.sleep.triggers, remd.sleep.rem)
    def refresh_importance(self, now: float | None = None) -> _importance.NamespaceScores:
        """Recompute and store the importance of every live memory at ``now`` (default: the
        clock). Raises StoreError."""
        from remd.sleep import importance as _imp

        return _imp.refresh_importance(self.engine, self.namespace, now)

    def triggers(self, now: float | None = None) -> _triggers.TriggerReport:
        """Evaluate the REM triggers of the namespace at ``now``. Raises StoreError."""
        from remd.sleep import triggers as _trig

        return _trig.evaluate(self.engine, self.namespace, now)

    def run_rem(self, *, now: float | None = None, dry_run: bool = False,
                include_held: bool = False, synthesiser: Synthesiser | None = None,
                trigger: TriggerReason | str = TriggerReason.MANUAL,
                should_stop: Callable[[], bool] | None = None,
                progress: Callable[[ClusterOutcome], None] | None = None) -> _remruns.RemRun:
        """One REM cycle on this namespace (:func:`remd.sleep.rem.run_rem`): ``dry_run`` writes
        nothing and carries the plan; ``include_held`` flags what a rollback holds;
        ``should_stop`` is checked between clusters; ``progress`` gets each cluster's outcome.
        Raises InvalidInput, Conflict (another run is alive in this namespace), StoreError."""
        from remd.sleep import rem as _r

        return _r.run_rem(self.engine, self.namespace, now=now, dry_run=dry_run,
                          include_held=include_held, synthesiser=synthesiser, trigger=trigger,
                          should_stop=should_stop, progress=progress)

    def rollback(self, run_id: str, *, now: float | None = None) -> _rollback.RollbackResult:
        """Undo a REM run exactly and hold its members back from later runs (see
        :func:`remd.sleep.rollback.rollback`). Raises NotFound, RollbackRefused, InvalidInput."""
        from remd.sleep import rollback as _rb

        return _rb.rollback(self.engine, self.namespace, run_id, now=now)

    def rem_runs(self, limit: int = 50) -> list[tuple[_remruns.RemRun, str]]:
        """The latest REM runs, newest first, each with why it cannot be rolled back ("" when
        it can). Raises InvalidInput for a bad ``limit``."""
        from remd.sleep import remhistory as _rh

        return _rh.recent_runs(self.engine, self.namespace, limit)

    def rem_run_folds(self, run_id: str) -> _remhistory.RunFolds:
        """What a REM run folded into what, with tokens before and after and whether it can
        still be rolled back. Raises NotFound, InvalidInput."""
        from remd.sleep import remhistory as _rh

        return _rh.run_folds(self.engine, self.namespace, run_id)
