"""The wire form of a memory: the JSON every front end answers with (``get``, ``recent``,
``history``, the inspector) and the export line's fields, with times as ISO 8601 in UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from remd.checks import check_time
from remd.models import Node

FIELDS = ("id", "namespace", "content", "tags", "kind", "status", "created_at", "last_access",
          "access_count", "confidence", "importance", "source", "valid_from", "valid_until",
          "deprecated_by", "fact_key", "fact_value")

def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


def parse_time(value: object, field: str, now: float | None = None) -> float | None:
    """A time field of an import line: :func:`remd.checks.check_time`, the rules of a dated
    save too (an ISO 8601 string; a date alone is midnight UTC, no offset means UTC; a
    ``created_at`` at most a day after ``now``)."""
    return check_time(value, field, now)


def node_to_dict(node: Node) -> dict[str, Any]:
    """The export form of a memory (also the JSON of `get`, `recent` and `history`)."""
    return {
        "id": node.id, "namespace": node.namespace, "content": node.content,
        "tags": list(node.tags), "kind": node.kind.value, "status": node.status.value,
        "created_at": iso(node.created_at), "last_access": iso(node.last_access),
        "access_count": node.access_count, "confidence": round(node.confidence, 6),
        "importance": round(node.importance, 6), "source": node.source,
        "valid_from": iso(node.valid_from), "valid_until": iso(node.valid_until),
        "deprecated_by": node.deprecated_by, "fact_key": node.fact_key,
        "fact_value": node.fact_value,
    }


def pair_to_dict(newer: Node, older: Node, weight: float, context: str | None
                 ) -> dict[str, Any]:
    """A pair of live memories that disagree (``remd contradictions --json``,
    ``GET /v1/contradictions``, MCP's ``find_contradictions``)."""
    return {"memory": node_to_dict(newer), "contradicts": node_to_dict(older),
            "weight": weight, "context": context}
