"""JSON-lines export and import of a namespace.

One memory per line (the fields of :data:`FIELDS`), then its typed edges as
``{"edge": {...}}`` lines. Times are ISO 8601 in UTC. On import every field but ``content`` is
optional, so an old history can be brought in with its real dates; lines without ``status`` go
through the normal write path (tags, facts, links) in order of ``created_at``, lines with a
``status`` are restored as they were. Export, import into a new file, export again gives the
same lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from remd.errors import InvalidInput, quote
from remd.ids import derived_id, new_id
from remd.ingest import Draft, Writer, check_source, check_tags, check_text, save_drafts
from remd.models import EdgeType, Node, NodeKind, NodeStatus
from remd.nodes import NODE_COLUMNS, from_rows

FIELDS = ("id", "namespace", "content", "tags", "kind", "status", "created_at", "last_access",
          "access_count", "confidence", "importance", "source", "valid_from", "valid_until",
          "deprecated_by", "fact_key", "fact_value")
if TYPE_CHECKING:
    from remd.engine import Engine

_TIME_FIELDS = ("created_at", "last_access", "valid_from", "valid_until")


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")


_FUTURE_SLACK = 86_400.0  # clocks differ: a day ahead of ours is still believable


def parse_time(value: object, field: str, now: float | None = None) -> float | None:
    """ISO 8601 (a date alone is midnight UTC; no offset means UTC), or None.

    A number is refused (12345 would be 1970: an export writes strings), and so is a
    ``created_at`` more than a day after ``now`` (the year 3000 is a typo, not a memory).
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO 8601 string such as "
                           f"\"2025-03-14T09:30:00Z\", not {type(value).__name__}")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidInput(f"{field} {quote(value)} is not ISO 8601") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    ts = dt.timestamp()
    if field == "created_at" and now is not None and ts > now + _FUTURE_SLACK:
        raise InvalidInput(f"{field} {quote(value)} is more than a day in the future")
    return ts


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


def export_lines(engine: Engine, namespace: str) -> Iterator[str]:
    """Every memory of the namespace (all statuses), then its live typed edges."""
    last = 0
    while True:
        rows = engine.store.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? AND rid > ? "
            "ORDER BY rid LIMIT 1000", (namespace, last))
        if not rows:
            break
        last = rows[-1][0]
        for node in from_rows(engine.store, rows):
            yield json.dumps(node_to_dict(node), ensure_ascii=False)
    for src, dst, type_, weight, context, created in engine.store.query(
        "SELECT src, dst, type, weight, context, created_at FROM edges "
        "WHERE namespace = ? AND live = 1 ORDER BY eid", (namespace,)):
        yield json.dumps({"edge": {"src": src, "dst": dst, "type": type_, "weight": weight,
                                   "context": context, "created_at": iso(created)}},
                         ensure_ascii=False)
    for child, parent in engine.store.query(
        "SELECT c.name, p.name FROM tag_parents tp "
        "JOIN tags c ON c.namespace = tp.namespace AND c.tid = tp.child "
        "JOIN tags p ON p.namespace = tp.namespace AND p.tid = tp.parent "
        "WHERE tp.namespace = ? ORDER BY c.name, p.name",
        (namespace,)):
        yield json.dumps({"edge": {"src": f"tag:{child}", "dst": f"tag:{parent}",
                                   "type": EdgeType.IS_SUBTYPE_OF.value}})


@dataclass(frozen=True, kw_only=True)
class ImportResult:
    imported: int
    skipped: int  # ids already present in this namespace
    edges: int


def _draft(obj: dict[str, Any], engine: Engine, now: float) -> Draft:
    unknown = set(obj) - set(FIELDS)
    if unknown:
        raise InvalidInput(f"unknown field(s) {quote(sorted(unknown))}")
    content = check_text(obj.get("content"), engine.config.store.max_content_chars)
    times = {f: parse_time(obj.get(f), f, now) for f in _TIME_FIELDS}
    try:
        kind = NodeKind(obj["kind"]) if obj.get("kind") is not None else None
        status = NodeStatus(obj["status"]) if obj.get("status") is not None else None
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    numbers = {}
    for f, lo, hi in (("access_count", 0, 2**62), ("confidence", 0, 1), ("importance", 0, 1)):
        v = obj.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                              or not lo <= v <= hi):
            raise InvalidInput(f"{f} must be a number in [{lo}, {hi}]")
        numbers[f] = v
    node_id = obj.get("id")
    if node_id is not None and (not isinstance(node_id, str) or not 1 <= len(node_id) <= 64):
        raise InvalidInput("id must be a string of 1-64 characters")
    tags = obj.get("tags")
    return Draft(
        content=content, tags=check_tags(tags), auto_tags=tags is None,
        source=check_source(obj.get("source")), id=node_id, kind=kind, status=status,
        created_at=times["created_at"], last_access=times["last_access"],
        access_count=int(numbers["access_count"] or 0), confidence=numbers["confidence"],
        importance=numbers["importance"], valid_from=times["valid_from"],
        valid_until=times["valid_until"], deprecated_by=obj.get("deprecated_by"),
        fact_key=obj.get("fact_key"), fact_value=obj.get("fact_value"),
    )


def _numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    number = 0
    it = iter(lines)
    while True:
        number += 1
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"line {number}: not valid UTF-8") from exc
        yield number, line


def copy_id(node_id: str, namespace: str) -> str:
    """The id a memory's copy gets in ``namespace`` when its own id is taken in another: the
    same for every import of it, so importing one export twice skips what is there."""
    return derived_id(node_id, namespace)


def _placed(engine: Engine, namespace: str, ids: list[str]) -> tuple[set[str], dict[str, str]]:
    """(ids already in this namespace, id -> its copy's id for ids taken in another one).

    A copy's id (:func:`copy_id`) that is already in this namespace is the same memory
    imported before: it counts as present too.
    """
    existing: set[str] = set()
    remap: dict[str, str] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for found_id, ns in engine.store.query(
                f"SELECT id, namespace FROM nodes WHERE id IN ({marks})", chunk):
            if ns == namespace:
                existing.add(found_id)
            else:
                remap[found_id] = copy_id(found_id, namespace)
    copies = list(remap.items())
    for i in range(0, len(copies), 500):
        pairs = copies[i:i + 500]
        marks = ",".join("?" * len(pairs))
        taken = {str(found): str(ns) for found, ns in engine.store.query(
            f"SELECT id, namespace FROM nodes WHERE id IN ({marks})", [c for _, c in pairs])}
        for original, copy in pairs:
            if taken.get(copy) == namespace:
                existing.add(original)  # imported here before, under its copy's id
            elif copy in taken:  # a clash with another namespace's id: a fresh one
                remap[original] = new_id()
    return existing, remap


def import_lines(engine: Engine, namespace: str, lines: Iterable[str], *,
                 embed: bool = True) -> ImportResult:
    """Read export lines into this namespace. Everything is validated first: a bad line
    (reported with its number) imports nothing. Raises InvalidInput.
    """
    drafts: list[Draft] = []
    edges: list[tuple[str, str, EdgeType, float, str | None, float | None]] = []
    now = engine.clock()
    for number, line in _numbered(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise InvalidInput("each line must be a JSON object")
            if "edge" in obj:
                e = obj["edge"]
                if not isinstance(e, dict) or not all(isinstance(e.get(k), str)
                                                      for k in ("src", "dst", "type")):
                    raise InvalidInput("an edge needs string src, dst and type")
                weight = e.get("weight", 1.0)
                if isinstance(weight, bool) or not isinstance(weight, int | float):
                    raise InvalidInput("edge weight must be a number")
                context = e.get("context")
                edges.append((e["src"], e["dst"], EdgeType(e["type"]), float(weight),
                              context if isinstance(context, str) else None,
                              parse_time(e.get("created_at"), "created_at", now)))
            else:
                drafts.append(_draft(obj, engine, now))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"line {number}: not valid JSON") from exc
        except RecursionError as exc:  # json.loads of [[[[...]]]] thousands deep
            raise InvalidInput(f"line {number}: JSON nested too deeply") from exc
        except (InvalidInput, ValueError) as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc

    existing, remap = _placed(engine, namespace, [d.id for d in drafts if d.id])
    fresh = []
    for d in drafts:
        if d.id in existing:
            continue
        if d.id in remap:
            d.id = remap[d.id]
        if d.deprecated_by in remap:
            d.deprecated_by = remap[d.deprecated_by]
        fresh.append(d)
    # Memories without a status replay history: apply them in time order so facts supersede
    # in the order they happened.
    fresh.sort(key=lambda d: (d.status is None, d.created_at or 0.0) if d.status is None
               else (False, 0.0))
    save_drafts(engine, namespace, fresh, embed=embed)

    with engine.store.transaction() as conn:
        writer = Writer(conn, namespace, engine.config, engine.counter)
        for src, dst, type_, weight, context, created in edges:
            if type_ is EdgeType.IS_SUBTYPE_OF and src.startswith("tag:"):
                from remd.tagtools import add_subtype  # noqa: PLC0415 (cycle-free lazy)
                add_subtype(conn, namespace, src[4:], dst[4:], now, create_child=True)
                continue
            writer.add_edge(remap.get(src, src), remap.get(dst, dst), type_,
                            created if created is not None else now, weight=weight,
                            context=context)
    return ImportResult(imported=len(fresh), skipped=len(drafts) - len(fresh), edges=len(edges))
