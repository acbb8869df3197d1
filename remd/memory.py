"""The Python API: ``Memory("agent.db", namespace="default")``.

A Memory owns one Store (one apsw connection) and works in one namespace; nothing it does
reads or writes another namespace. All methods are synchronous and thread-safe.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from remd import feedback as _feedback
from remd import inject as _inject
from remd import tagtools as _tagtools
from remd.config import Config
from remd.embed import Embedder, EmbedError, Vectors, make_embedder, to_blob
from remd.errors import InvalidInput, NotFound, StoreError
from remd.feedback import FeedbackResult
from remd.ingest import Draft, Writer, check_namespace, check_source, check_tags, check_text
from remd.logs import get_logger
from remd.models import EdgeType, Node, NodeKind, NodeStatus, Stats
from remd.pack import Pack
from remd.store import Store
from remd.tagtools import TagCluster
from remd.tokens import TokenCounter
from remd.vectors import knn, write_vectors

if TYPE_CHECKING:  # REM modules are imported where used: they are heavy and import models
    from remd import importance as _importance
    from remd import rem as _rem
    from remd import triggers as _triggers

log = get_logger("remd.memory")

NODE_COLUMNS = (
    "rid, id, namespace, kind, content, source, status, created_at, last_access, "
    "access_count, confidence, importance, tokens, valid_from, valid_until, deprecated_by, "
    "fact_key, fact_value"
)
BULK_CHUNK = 500  # memories per write transaction in bulk saves: short locks, steady progress
Progress = Callable[[int], None]


class Memory:
    """Long-term memory in one SQLite file, scoped to one namespace.

    Raises StoreError (and subclasses) if the file cannot be used, InvalidInput for a bad
    namespace, ConfigError for a bad configuration.
    """

    def __init__(
        self,
        path: str | Path = "remd.db",
        namespace: str = "default",
        *,
        config: Config | None = None,
        embedder: Embedder | None | bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.namespace = check_namespace(namespace)
        self.config = config if config is not None else Config()
        self.store = Store(path, self.config.store)
        self.counter = TokenCounter(self.config.store.encoding)
        self.tokens_exact = self._token_encoding()
        # embedder=True: the configured one, loaded lazily on first use; None/False: none.
        self._embedder_spec = embedder
        self._embedder: Embedder | None = None
        # Agents ask the same questions again ("what do I know about the user?"): the last
        # inject.query_cache query embeddings are kept, so a repeat skips the model run.
        self._query_vectors: OrderedDict[str, Vectors] = OrderedDict()
        self._query_lock = threading.Lock()
        self.clock = clock

    def _token_encoding(self) -> bool:
        """True if every stored ``tokens`` count is in this config's encoding, so inject can
        use them as they are. The encoding is recorded when a file is created; a Memory opened
        with another one marks the file "mixed" (its saves would mix them), and a file from
        before the record is treated the same: counts are then recomputed where they are
        shown. A read-only file is read, never marked."""
        mine = self.config.store.encoding
        row = self.store.one("SELECT value FROM remd_meta WHERE key = 'token_encoding'")
        if row is None and self.store.one("SELECT 1 FROM nodes LIMIT 1") is None:
            with contextlib.suppress(StoreError), self.store.transaction() as conn:
                conn.execute("INSERT OR IGNORE INTO remd_meta (key, value) SELECT "
                             "'token_encoding', ? WHERE NOT EXISTS (SELECT 1 FROM nodes)",
                             (mine,))
            row = self.store.one("SELECT value FROM remd_meta WHERE key = 'token_encoding'")
        if row is not None and row[0] == mine:
            return True
        if row is None or row[0] != "mixed":
            with contextlib.suppress(StoreError), self.store.transaction() as conn:
                conn.execute("INSERT INTO remd_meta (key, value) VALUES ('token_encoding', "
                             "'mixed') ON CONFLICT (key) DO UPDATE SET value = 'mixed'")
        return False

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and self._embedder_spec is not None:
            if self._embedder_spec is True:
                self._embedder = make_embedder(self.config.embed)
            elif self._embedder_spec is not False:
                self._embedder = self._embedder_spec
            self._embedder_spec = None
        return self._embedder

    def query_vector(self, text: str) -> Vectors | None:
        """The embedding of a query (None without an embedder), from a small LRU of recent
        queries. Raises EmbedError when the embedder fails."""
        embedder = self.embedder
        if embedder is None:
            return None
        with self._query_lock:
            cached = self._query_vectors.get(text)
            if cached is not None:
                self._query_vectors.move_to_end(text)
                return cached
        fresh: Vectors = embedder.embed([text])[0]
        fresh.setflags(write=False)  # shared by every later call with this text
        with self._query_lock:
            self._query_vectors[text] = fresh
            while len(self._query_vectors) > self.config.inject.query_cache:
                self._query_vectors.popitem(last=False)
        return fresh

    # -- writes -------------------------------------------------------------------------
    def draft(self, text: object, tags: Sequence[str] | None = None,
              source: object = None) -> Draft:
        """Validate one memory's input. Raises InvalidInput."""
        return Draft(
            content=check_text(text, self.config.store.max_content_chars),
            tags=check_tags(tags),
            source=check_source(source),
        )

    def save(self, text: str, tags: Sequence[str] | None = None,
             source: str | None = None) -> Node:
        """Store one memory; it is durable when this returns.

        The embedding is computed right after the commit (unless embed_on_save is off); if the
        embedder fails the memory stays saved and its vector waits in the backlog.
        Raises InvalidInput for bad text/tags/source, StoreError if the file can't be written.
        """
        draft = self.draft(text, tags, source)
        now = self.clock()
        with self.store.transaction() as conn:
            rid, node_id = Writer(conn, self.namespace, self.config, self.counter).write(
                draft, now)
        if self.config.embed.embed_on_save:
            self.embed_pending(rids=[rid])
        return self.get(node_id)

    def save_many(self, texts: Iterable[str], *, tags: Sequence[str] | None = None,
                  source: str | None = None, embed: bool = True,
                  progress: Progress | None = None) -> list[str]:
        """Store many memories in batched transactions; returns their ids in order.

        Every text is validated before anything is written, so a bad one stores nothing.
        Memories are durable batch by batch; with ``embed`` the embedding backlog is then
        processed in the embedder's batches. Raises InvalidInput naming the bad item.
        """
        drafts = []
        for i, text in enumerate(texts):
            try:
                drafts.append(self.draft(text, tags, source))
            except InvalidInput as exc:
                raise InvalidInput(f"item {i}: {exc}") from exc
        return self.write_drafts(drafts, embed=embed, progress=progress)

    def write_drafts(self, drafts: Sequence[Draft], *, embed: bool = True,
                     progress: Progress | None = None) -> list[str]:
        """Write validated drafts in chunks of BULK_CHUNK per transaction."""
        ids: list[str] = []
        for start in range(0, len(drafts), BULK_CHUNK):
            chunk = drafts[start:start + BULK_CHUNK]
            counts = self.counter.count_many([d.content for d in chunk])
            now = self.clock()
            with self.store.transaction() as conn:
                writer = Writer(conn, self.namespace, self.config, self.counter)
                ids.extend(writer.write(d, now, n)[1] for d, n in zip(chunk, counts, strict=True))
            if progress:
                progress(len(chunk))
        if embed:
            self.embed_pending()
        return ids

    def embed_pending(self, *, rids: Sequence[int] | None = None, limit: int | None = None,
                      progress: Progress | None = None) -> int:
        """Compute and store vectors for nodes that have none yet; returns how many.

        Embedder failures are logged and leave the nodes in the backlog (never raised: the
        memories themselves are already safe).
        """
        embedder = self.embedder
        if embedder is None:
            return 0
        done = 0
        batch = self.config.embed.batch_size
        while limit is None or done < limit:
            want = batch if limit is None else min(batch, limit - done)
            if rids is not None:
                todo = rids[done:done + want]
                marks = ",".join("?" * len(todo))
                rows = self.store.query(
                    f"SELECT rid, content FROM nodes WHERE rid IN ({marks}) AND embedded = 0",
                    list(todo)) if todo else []
            else:
                rows = self.store.query(
                    "SELECT rid, content FROM nodes WHERE namespace = ? AND embedded = 0 "
                    "ORDER BY rid LIMIT ?", (self.namespace, want))
            if not rows:
                break
            try:
                vectors = embedder.embed([r[1] for r in rows])
            except EmbedError as exc:
                log.warning("embed.failed", error=str(exc), pending=len(rows))
                break
            with self.store.transaction() as conn:
                for (rid, _), vec in zip(rows, vectors, strict=True):
                    conn.execute("DELETE FROM node_vec WHERE rowid = ?", (rid,))
                    conn.execute(
                        "INSERT INTO node_vec (rowid, namespace, embedding) VALUES (?, ?, ?)",
                        (rid, self.namespace, to_blob(vec)))
                write_vectors(conn, self.namespace, [r[0] for r in rows], vectors)
                conn.executemany("UPDATE nodes SET embedded = 1 WHERE rid = ?",
                                 [(r[0],) for r in rows])
            done += len(rows)
            if progress:
                progress(len(rows))
        return done

    def forget(self, node_id: str) -> Node:
        """Soft-delete: the node stays in the file (status forgotten) but is never injected.

        Raises NotFound for an unknown id.
        """
        node = self.get(node_id)
        with self.store.transaction() as conn:
            conn.execute("UPDATE nodes SET status = 'forgotten' WHERE rid = ?",
                         (self._rid(node_id),))
        log.info("memory.forgotten", id=node.id, namespace=self.namespace)
        return self.get(node_id)

    # -- reads --------------------------------------------------------------------------
    def _rid(self, node_id: str) -> int:
        rid = self.store.scalar("SELECT rid FROM nodes WHERE id = ? AND namespace = ?",
                                (node_id, self.namespace))
        if rid is None:
            raise NotFound("memory", node_id, self.namespace)
        return int(rid)

    def _tags_of(self, rids: Sequence[int]) -> dict[int, tuple[str, ...]]:
        if not rids:
            return {}
        out: dict[int, list[str]] = {rid: [] for rid in rids}
        for start in range(0, len(rids), 500):
            part = rids[start:start + 500]
            marks = ",".join("?" * len(part))
            for rid, name in self.store.query(
                f"SELECT nt.rid, t.name FROM node_tags nt JOIN tags t ON t.tid = nt.tid "
                f"WHERE nt.rid IN ({marks}) ORDER BY nt.rid, t.name",
                list(part),
            ):
                out[rid].append(name)
        return {rid: tuple(names) for rid, names in out.items()}

    def nodes_from_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[Node]:
        tags = self._tags_of([r[0] for r in rows])
        return [
            Node(id=r[1], namespace=r[2], kind=NodeKind(r[3]), content=r[4], source=r[5],
                 status=NodeStatus(r[6]), created_at=r[7], last_access=r[8],
                 access_count=r[9], confidence=r[10], importance=r[11], tokens=r[12],
                 valid_from=r[13], valid_until=r[14], deprecated_by=r[15], fact_key=r[16],
                 fact_value=r[17], tags=tags.get(r[0], ()))
            for r in rows
        ]

    def get(self, node_id: str) -> Node:
        """The memory with this id in this namespace. Raises NotFound."""
        if not isinstance(node_id, str):
            raise InvalidInput(f"memory id must be a string, not {type(node_id).__name__}")
        rows = self.store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ? AND namespace = ?",
            (node_id, self.namespace))
        if not rows:
            raise NotFound("memory", node_id, self.namespace)
        return self.nodes_from_rows(rows)[0]

    def recent(self, n: int = 10, *, include_inactive: bool = False) -> list[Node]:
        """The n most recently created live memories (all statuses if include_inactive)."""
        if not isinstance(n, int) or n < 0:
            raise InvalidInput(f"n must be a non-negative integer, not {n!r}")
        status = "" if include_inactive else "AND status = 'live'"
        rows = self.store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? {status} "
            "ORDER BY created_at DESC, rid DESC LIMIT ?", (self.namespace, n))
        return self.nodes_from_rows(rows)

    def history(self, node_id: str) -> list[Node]:
        """The SUPERSEDES chain through this memory, oldest first. Raises NotFound."""
        self.get(node_id)
        seen = {node_id}
        frontier = [node_id]
        while frontier:
            marks = ",".join("?" * len(frontier))
            rows = self.store.query(
                f"SELECT src, dst FROM edges WHERE namespace = ? AND type = 'SUPERSEDES' "
                f"AND live = 1 AND (src IN ({marks}) OR dst IN ({marks}))",
                (self.namespace, *frontier, *frontier))
            frontier = []
            for src, dst in rows:
                for other in (src, dst):
                    if other not in seen:
                        seen.add(other)
                        frontier.append(other)
        marks = ",".join("?" * len(seen))
        rows = self.store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? AND id IN ({marks}) "
            "ORDER BY created_at, rid", (self.namespace, *seen))
        return self.nodes_from_rows(rows)

    def nearest(self, text: str, k: int = 8, *, live_only: bool = True,
                exact: bool = False) -> list[tuple[Node, float]]:
        """The k memories closest to ``text`` by cosine distance (smallest first).

        By default the search is inject's (:mod:`remd.vectors`): a Hamming pre-filter over the
        namespace's in-process bit index (built on the process's first search), then the exact
        cosine of the best ``k * vector_rerank`` candidates; a few ms at 100k memories, but a
        true neighbour can in rare cases rank outside the candidates. ``exact=True`` asks
        sqlite-vec's vec0 for an exact scan instead (~70 ms per 100k memories here).
        """
        embedder = self.embedder
        if embedder is None or k <= 0:
            return []
        query = check_text(text, self.config.store.max_content_chars)
        vec = self.query_vector(query)
        assert vec is not None  # the embedder exists (checked above)
        rerank = self.config.inject.vector_rerank
        status = "AND status = 'live'" if live_only else ""
        want = k * 2 if live_only else k
        while True:
            # Memories that are no longer live sit among the vectors too: ask for more until
            # k live ones are found or the namespace has no more vectors.
            if exact:
                hits = self.store.query(
                    "SELECT rowid, distance FROM node_vec WHERE embedding MATCH ? AND k = ? "
                    "AND namespace = ?", (to_blob(vec), want, self.namespace))
                more = len(hits) == want
            else:
                found = knn(self.store, self.namespace, vec, want, rerank=rerank)
                hits = [(rid, 1.0 - sim) for rid, sim in found]
                more = len(found) == want * rerank
            if not hits:
                return []
            dist = {rid: d for rid, d in hits}
            marks = ",".join("?" * len(dist))
            rows = self.store.query(
                f"SELECT {NODE_COLUMNS} FROM nodes WHERE rid IN ({marks}) {status}", list(dist))
            if len(rows) >= k or not more:
                break
            want *= 4
        nodes = self.nodes_from_rows(rows)
        rid_of = {r[1]: r[0] for r in rows}
        ranked = sorted(((n, float(dist[rid_of[n.id]])) for n in nodes), key=lambda p: p[1])
        return ranked[:k]

    def edges(self, node_id: str) -> list[tuple[str, str, EdgeType, float]]:
        """Live typed edges touching a memory: (src, dst, type, weight)."""
        self.get(node_id)
        rows = self.store.query(
            "SELECT src, dst, type, weight FROM edges WHERE namespace = ? AND live = 1 "
            "AND (src = ? OR dst = ?) ORDER BY eid", (self.namespace, node_id, node_id))
        return [(s, d, EdgeType(t), w) for s, d, t, w in rows]

    def stats(self) -> Stats:
        """Counts for this namespace."""
        ns = self.namespace
        with self.store.snapshot():
            by_status = dict(self.store.query(
                "SELECT status, count(*) FROM nodes WHERE namespace = ? GROUP BY status", (ns,)))
            by_kind = dict(self.store.query(
                "SELECT kind, count(*) FROM nodes WHERE namespace = ? AND status = 'live' "
                "GROUP BY kind", (ns,)))
            tags = self.store.scalar("SELECT count(*) FROM tags WHERE namespace = ?", (ns,))
            tag_edges = self.store.scalar(
                "SELECT count(*) FROM tag_edges te JOIN tags t ON t.tid = te.src "
                "WHERE t.namespace = ?", (ns,))
            edges = self.store.scalar(
                "SELECT count(*) FROM edges WHERE namespace = ? AND live = 1", (ns,))
            pending = self.store.scalar(
                "SELECT count(*) FROM nodes WHERE namespace = ? AND embedded = 0", (ns,))
            packs = self.store.scalar("SELECT count(*) FROM packs WHERE namespace = ?", (ns,))
            runs = self.store.scalar("SELECT count(*) FROM rem_runs WHERE namespace = ?", (ns,))
        path = self.store.path
        size = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))
        return Stats(
            namespace=ns, nodes=sum(by_status.values()), live=by_status.get("live", 0),
            deprecated=by_status.get("deprecated", 0),
            superseded=by_status.get("superseded", 0),
            forgotten=by_status.get("forgotten", 0), facts=by_kind.get("fact", 0),
            synthesis=by_kind.get("synthesis", 0), tags=tags, tag_edges=tag_edges,
            edges=edges, pending_embeddings=pending, packs=packs, rem_runs=runs,
            db_bytes=size, schema_version=self.store.schema_version(), by_kind=by_kind)

    # -- inject, feedback and tag tools (remd.inject, remd.feedback, remd.tagtools) -------
    def inject(self, query: str, token_budget: int, *, namespace: str | None = None) -> Pack:
        """The memories that matter for ``query`` within ``token_budget`` tokens (a hard
        limit). Raises InvalidInput for an empty query or a negative budget."""
        return _inject.inject(self, query, token_budget, namespace=namespace)

    def feedback(self, pack_id: str, accepted: bool | float, *,
                 namespace: str | None = None) -> FeedbackResult:
        """Move the tag edges behind a pack towards accepted (EMA), once per pack.
        Raises NotFound for an unknown pack, InvalidInput for a bad ``accepted``."""
        return _feedback.feedback(self, pack_id, accepted, namespace=namespace)

    def memories_by_tag_cluster(self, tag: str, depth: int = 2, *,
                                limit: int = 50) -> TagCluster:
        """The tags around ``tag`` and the live memories carrying them. Raises NotFound."""
        return _tagtools.memories_by_tag_cluster(self, tag, depth, limit=limit)

    def suggest_related_tags(self, tags: Sequence[str], *,
                             limit: int = 10) -> list[tuple[str, float]]:
        """Existing tags that go with ``tags`` (co-occurrence and hierarchy)."""
        return _tagtools.suggest_related_tags(self, tags, limit=limit)

    def add_subtype(self, child: str, parent: str) -> None:
        """Record ``child IS_SUBTYPE_OF parent``. Raises Conflict for a cycle."""
        with self.store.transaction() as conn:
            _tagtools.add_subtype(conn, self.namespace, child, parent, self.clock())

    def subtypes(self, tag: str) -> list[str]:
        """Tags below ``tag`` in the IS_SUBTYPE_OF hierarchy. Raises NotFound."""
        return _tagtools.subtypes(self, tag)

    def supertypes(self, tag: str) -> list[str]:
        """Tags above ``tag`` in the IS_SUBTYPE_OF hierarchy. Raises NotFound."""
        return _tagtools.supertypes(self, tag)

    def rename_tag(self, old: str, new: str) -> str:
        """Rename a tag. Raises NotFound, or Conflict if ``new`` exists (merge instead)."""
        return _tagtools.rename_tag(self, old, new)

    def merge_tags(self, src: str, dst: str) -> str:
        """Fold tag ``src`` into ``dst``. Raises NotFound or Conflict."""
        return _tagtools.merge_tags(self, src, dst)

    def export_tag_graph(self, format: Literal["dot", "json"] = "json", *,
                         max_edges: int | None = None) -> str:
        """The tag graph as Graphviz DOT or JSON. Raises InvalidInput for another format."""
        return _tagtools.export_tag_graph(self, format, max_edges=max_edges)

    # -- importance, triggers and REM (remd.importance, remd.triggers, remd.rem) ---------------
    def refresh_importance(self, now: float | None = None) -> _importance.NamespaceScores:
        """Recompute and store the importance of every live memory at ``now`` (default: the
        clock). Raises StoreError."""
        from remd import importance as _imp

        return _imp.refresh_importance(self, now)

    def triggers(self, now: float | None = None) -> _triggers.TriggerReport:
        """Evaluate the REM triggers of the namespace at ``now``. Raises StoreError."""
        from remd import triggers as _trig

        return _trig.evaluate(self, now)

    def run_rem(self, **kwargs: Any) -> _rem.RemRun:
        """One REM cycle (see :func:`remd.rem.run_rem` for the options). Raises InvalidInput,
        Conflict (another run is alive in this namespace), StoreError."""
        from remd import rem as _r

        return _r.run_rem(self, **kwargs)

    def rollback(self, run_id: str) -> _rem.RollbackResult:
        """Undo a REM run exactly. Raises NotFound, RollbackRefused."""
        from remd import rem as _r

        return _r.rollback(self, run_id)
