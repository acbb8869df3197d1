"""The HTTP API's bodies (:mod:`remd.http.app`): the requests it reads, strictly, the responses it
writes, and the error shape every refusal shares."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class RequestIn(BaseModel):
    # strict: "100" is not a budget and 1 is not a string; unknown fields are refused.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    namespace: str | None = None


class EmptyIn(BaseModel):
    """The body of a write that takes none (forget, restore, rollback): ``{}`` (an empty body
    is read as ``{}``); a field is refused like an unknown field anywhere."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class MemoryIn(RequestIn):
    content: str
    tags: list[str] | None = None
    source: str | None = None
    created_at: str | None = None  # ISO 8601, the rules of an import line's (Memory.save)


class InjectIn(RequestIn):
    query: str
    token_budget: int
    fill: bool = False
    dated: bool | None = None  # each item with its date (None: when the question asks when)


class FeedbackIn(RequestIn):
    pack_id: str
    accepted: bool  # as on every front end: 1 and 0.5 are not a yes or a no


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MemoryOut(_Out):
    id: str
    namespace: str
    content: str
    tags: list[str]
    kind: str
    status: str
    created_at: str
    last_access: str
    access_count: int
    confidence: float
    importance: float
    source: str | None
    valid_from: str | None
    valid_until: str | None
    deprecated_by: str | None
    fact_key: str | None
    fact_value: str | None


class ContradictionOut(_Out):
    memory: MemoryOut  # the newer
    contradicts: MemoryOut
    weight: float
    context: str | None


class PackItemOut(_Out):
    id: str
    content: str
    tokens: int
    score: float
    tags: list[str]
    date: str  # the ISO day it was said ("FIRST/LAST" for a synthesis)


class PackOut(_Out):
    pack_id: str
    budget: int
    tokens_used: int
    items: list[PackItemOut]


class FeedbackOut(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    pack_id: str
    accepted: bool  # echoed as given (the library's target is 1.0 or 0.0)


class StatsOut(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    namespace: str
    nodes: int
    live: int
    schema_version: int


class ErrorOut(_Out):
    error: dict[str, str]


def error_body(kind: str, message: str) -> dict[str, Any]:
    """The body of every error response: ``{"error": {"type", "message"}}``."""
    return ErrorOut(error={"type": kind, "message": message}).model_dump()
