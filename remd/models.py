"""Frozen typed values passed around remd, and the enums for its closed sets."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, StrEnum

MAX_SQL_INTEGER = 2**63 - 1  # the largest integer SQLite stores (counts, budgets, LIMIT)


class NodeKind(StrEnum):
    EPISODIC = "episodic"
    FACT = "fact"
    SYNTHESIS = "synthesis"


class Judged(IntEnum):
    """``nodes.judged``: what update detection (:mod:`remd.write.supersede`) does with a memory."""

    PENDING = 0  # saved, not judged yet (it is when its vector is written)
    DONE = 1  # judged, or never to be (an import restored as it was, a synthesis)
    # A value kept exact (a LangGraph store item, saved with ``Draft.exact``): never read as a
    # fact, never judged, never an update's older side, never flagged or folded by REM. Its
    # content is what ``get`` must return byte for byte.
    EXACT = 2


class NodeStatus(StrEnum):
    LIVE = "live"
    DEPRECATED = "deprecated"  # folded into a synthesis node by a REM run
    SUPERSEDED = "superseded"  # a newer fact replaced it
    FORGOTTEN = "forgotten"  # soft-deleted by the user


class EdgeType(StrEnum):
    SUPERSEDES = "SUPERSEDES"
    EXTENDS = "EXTENDS"
    CONTRADICTS = "CONTRADICTS"
    DEPENDS_ON = "DEPENDS_ON"
    DERIVED_FROM = "DERIVED_FROM"
    MENTIONS = "MENTIONS"
    HAS_TAG = "HAS_TAG"
    IS_SUBTYPE_OF = "IS_SUBTYPE_OF"


class TriggerReason(StrEnum):
    """Why a REM run starts (recorded in rem_runs.trigger)."""

    NODE_COUNT = "node_count"  # too many live memories in the namespace
    RETRIEVAL_QUALITY = "retrieval_quality"  # recent packs carried low-importance items
    IDLE = "idle"  # no save or inject for a while
    CONTRADICTIONS = "contradictions"  # too many live memories in a CONTRADICTS edge
    MANUAL = "manual"  # `remd run-rem` / Memory.run_rem() called by hand


@dataclass(frozen=True, kw_only=True)
class Node:
    """One memory as stored. Times are POSIX seconds (UTC)."""

    id: str
    namespace: str
    kind: NodeKind
    content: str
    tags: tuple[str, ...]
    status: NodeStatus
    created_at: float
    last_access: float
    access_count: int
    confidence: float
    importance: float
    tokens: int
    source: str | None = None
    valid_from: float | None = None
    valid_until: float | None = None
    deprecated_by: str | None = None
    fact_key: str | None = None
    fact_value: str | None = None


@dataclass(frozen=True, kw_only=True)
class Edge:
    src: str
    dst: str
    type: EdgeType
    weight: float = 1.0
    context: str | None = None


@dataclass(frozen=True, kw_only=True)
class Stats:
    namespace: str
    nodes: int
    live: int
    deprecated: int
    superseded: int
    forgotten: int
    facts: int
    synthesis: int
    tags: int
    tag_edges: int
    edges: int
    pending_embeddings: int
    packs: int
    rem_runs: int
    db_bytes: int
    schema_version: int
    by_kind: dict[str, int] = field(default_factory=dict)
