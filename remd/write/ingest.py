"""The write path: validate, tag, recognise facts and links, and store nodes.

Everything here runs inside a transaction the caller opened (:mod:`remd.write.saves` opens one per
save, or per batch of a bulk save), so each is atomic: the node, its FTS row, its tags, tag
co-occurrence edges, fact supersession and typed links commit together or not at all. The rows
themselves are written by the graph writer (:mod:`remd.write.graph`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from remd.config import Config
from remd.ids import new_id
from remd.models import EdgeType, Judged, NodeKind, NodeStatus
from remd.store.seam import Connection
from remd.text.facts import parse_facts
from remd.text.links import parse_links
from remd.text.tagging import extract_tags
from remd.text.tagnames import MAX_TAGS
from remd.text.tokens import TokenCounter
from remd.text.updates import fact_changes
from remd.write.graph import GraphWriter, NodeRow

CONFIRM_STEP = 0.1  # confidence gained when a fact is restated with the same value
CONTRADICT_STEP = 0.15  # confidence lost by the target of a CONTRADICTS link


@dataclass(kw_only=True)
class Draft:
    """A memory about to be written. Fields left None get their defaults at write time."""

    content: str
    tags: list[str] = field(default_factory=list)  # explicit, already normalised
    auto_tags: bool = True
    source: str | None = None
    id: str | None = None
    kind: NodeKind | None = None
    status: NodeStatus | None = None  # given on import: restore as-is, skip fact logic
    # A value to keep exact (a LangGraph store item): its content is never read as a fact or
    # a link, never judged by update detection and never folded by REM (``Judged.EXACT``).
    exact: bool = False
    created_at: float | None = None
    last_access: float | None = None
    access_count: int = 0
    confidence: float | None = None
    importance: float | None = None
    valid_from: float | None = None
    valid_until: float | None = None
    deprecated_by: str | None = None
    fact_key: str | None = None
    fact_value: str | None = None

    @property
    def read(self) -> bool:
        """Whether the write path reads the content (facts, links, update detection): a new
        statement, not one restored by an import, given a kind, or kept exact."""
        return self.status is None and self.kind is None and not self.exact


def _same_text(text: str) -> str:
    """A memory's words for telling a restatement from a copy: case and spacing ignored."""
    return " ".join(text.casefold().split())


def _same_value(stored: object, value: str | None) -> bool:
    """Whether a live fact's stored value is ``value`` (case ignored)."""
    return str(stored or "").casefold() == (value or "").casefold()


class Writer:
    """Writes drafts through one connection inside the caller's transaction."""

    def __init__(self, conn: Connection, namespace: str, config: Config,
                 counter: TokenCounter) -> None:
        self.conn = conn
        self.ns = namespace
        self.config = config
        self.counter = counter
        self.graph = GraphWriter(conn, namespace)
        self.created: list[int] = []  # rids of the nodes this writer inserted

    def _known(self, names: list[str]) -> set[str]:
        if not names:
            return set()
        marks = ",".join("?" * len(names))
        rows = self.conn.execute(
            f"SELECT name FROM tags WHERE namespace = ? AND name IN ({marks})",
            (self.ns, *names),
        ).fetchall()
        return {str(r[0]) for r in rows}

    def write(self, draft: Draft, now: float, tokens: int | None = None) -> tuple[int, str]:
        """Insert one node with everything derived from it; returns (rid, id)."""
        conn = self.conn
        created = draft.created_at if draft.created_at is not None else now
        node_id = draft.id or new_id()
        kind = draft.kind
        fact_key, fact_value = draft.fact_key, draft.fact_value
        facts = parse_facts(draft.content) if draft.read else []
        if facts and fact_key is None:
            fact_key, fact_value = facts[0].key, facts[0].value
        if kind is None:
            kind = NodeKind.FACT if fact_key else NodeKind.EPISODIC
        confidence = draft.confidence if draft.confidence is not None else 0.5
        valid_from = draft.valid_from if draft.valid_from is not None else (
            created if kind is NodeKind.FACT else None)

        superseded: list[tuple[str, float]] = []
        if draft.status is None and fact_key:
            live = conn.execute(
                "SELECT rid, id, fact_value, confidence, valid_from, content FROM nodes "
                "WHERE namespace = ? AND fact_key = ? AND status = 'live'",
                (self.ns, fact_key),
            ).fetchall()
            if len(live) == 1:
                old_rid, old_id, old_value, _, _, old_content = live[0]
                if (_same_text(str(old_content)) == _same_text(draft.content)
                        and _same_value(old_value, fact_value)):
                    # The same words again: no new node (history would fill with copies);
                    # the fact gains trust and counts as used.
                    conn.execute(
                        "UPDATE nodes SET confidence = min(1.0, confidence + ?), "
                        "last_access = max(last_access, ?) WHERE namespace = ? AND rid = ?",
                        (CONFIRM_STEP, created, self.ns, old_rid))
                    return int(str(old_rid)), str(old_id)
            for _, old_id, old_value, old_conf, old_from, old_content in live:
                if not _same_value(old_value, fact_value) and not fact_changes(
                        fact_key.split("/", 1)[-1], str(old_value or ""), fact_value or "",
                        str(old_content), draft.content):
                    continue  # another detail of the same thing, not a new value
                superseded.append((str(old_id), created))
                if _same_value(old_value, fact_value):
                    # A restatement confirms the fact: it keeps its start and gains trust.
                    confidence = max(confidence, min(1.0, float(old_conf) + CONFIRM_STEP))
                    if old_from is not None:
                        start = float(old_from)
                        valid_from = min(valid_from or start, start)

        status = draft.status or NodeStatus.LIVE
        n_tokens = tokens if tokens is not None else self.counter.count(draft.content)
        rid = self.graph.insert_node(NodeRow(
            id=node_id, kind=kind.value, content=draft.content, source=draft.source,
            status=status.value, created_at=created,
            last_access=draft.last_access if draft.last_access is not None else created,
            access_count=draft.access_count, confidence=confidence,
            importance=draft.importance if draft.importance is not None else 0.5,
            tokens=n_tokens, valid_from=valid_from, valid_until=draft.valid_until,
            deprecated_by=draft.deprecated_by, fact_key=fact_key, fact_value=fact_value,
            judged=int(Judged.EXACT if draft.exact else Judged.PENDING if draft.read
                       else Judged.DONE)))
        self.created.append(rid)

        self._write_tags(rid, draft, now)
        for old_id, at in superseded:
            self.graph.supersede(old_id, at)
            self.add_edge(node_id, old_id, EdgeType.SUPERSEDES, created, context=fact_key)
        if draft.status is None and not draft.exact:
            self._write_links(node_id, draft.content, created)
        return rid, node_id

    def _write_tags(self, rid: int, draft: Draft, now: float) -> None:
        weights: dict[str, float] = {name: 1.0 for name in draft.tags}
        # The extractor only fills the room the saver's tags leave: a memory carries at most
        # MAX_TAGS tags, so the co-occurrence edges one save writes stay bounded.
        room = MAX_TAGS - len(weights)
        if draft.auto_tags and room > 0:
            cfg = self.config.tags
            for name, weight in extract_tags(draft.content, known=self._known,
                                             max_tags=min(cfg.max_tags, room),
                                             min_tags=min(cfg.min_tags, room)):
                weights.setdefault(name, weight)
        if weights:
            self.graph.tag_with(rid, weights, now, [])

    def retag(self, rid: int, keep: set[str], weights: dict[str, float], now: float) -> bool:
        """Replace a memory's tags, except those named in ``keep`` (the ones its saver gave),
        with ``weights``: the LLM tagger's answer, written after the save committed. Tag counts
        follow; co-occurrence edges of dropped pairs lose their count (gone at zero), new pairs
        gain one. False if the memory is no longer live (forgotten or folded meanwhile)."""
        conn = self.conn
        ns = self.ns
        if conn.execute("SELECT 1 FROM nodes WHERE namespace = ? AND rid = ? AND status = 'live'",
                        (ns, rid)).fetchone() is None:
            return False
        current = {str(name): int(str(tid)) for tid, name in conn.execute(
            "SELECT t.tid, t.name FROM node_tags nt JOIN tags t "
            "ON t.namespace = nt.namespace AND t.tid = nt.tid "
            "WHERE nt.namespace = ? AND nt.rid = ?", (ns, rid)).fetchall()}
        wanted = {name: w for name, w in weights.items() if name not in keep}
        wanted = dict(list(wanted.items())[:max(MAX_TAGS - len(keep), 0)])  # MAX_TAGS in all
        drop = [tid for name, tid in current.items() if name not in keep and name not in wanted]
        if drop:
            self.graph.untag(rid, drop, list(current.values()))
        for name, w in wanted.items():
            if name in current:
                self.graph.reweigh(rid, current[name], w)
        fresh = {name: w for name, w in wanted.items() if name not in current}
        if fresh:
            self.graph.tag_with(rid, fresh, now,
                                [tid for tid in current.values() if tid not in drop])
        return True

    def _write_links(self, node_id: str, content: str, at: float) -> None:
        for link in parse_links(content):
            if link.target == node_id:
                continue
            self.add_edge(node_id, link.target, link.type, at, context=link.context)
            if link.type is EdgeType.SUPERSEDES:
                self.graph.supersede_linked(link.target, at)
            elif link.type is EdgeType.CONTRADICTS:
                self.conn.execute(
                    "UPDATE nodes SET confidence = max(0.0, confidence - ?) "
                    "WHERE id = ? AND namespace = ?",
                    (CONTRADICT_STEP, link.target, self.ns),
                )

    def add_edge(self, src: str, dst: str, type_: EdgeType, at: float, *,
                 weight: float = 1.0, context: str | None = None) -> None:
        self.graph.add_edge(src, dst, type_, at, weight=weight, context=context)
