"""JSON-lines export and import of a namespace.

One memory per line (the fields of :data:`FIELDS`, and ``"exact": true`` on a value kept exact:
a LangGraph store item, :class:`remd.models.Judged`), then its typed edges as
``{"edge": {...}}`` lines. Times are ISO 8601 in UTC. On import every field but ``content`` is
optional, so an old history can be brought in with its real dates; lines without ``status`` go
through the normal write path (tags, facts, links) in order of ``created_at``, lines with a
``status`` are restored as they were. Export, import into a new file, export again gives the
same lines.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from remd.checks import check_field, check_source, check_storable, check_text
from remd.config import Config
from remd.errors import InvalidInput, quote
from remd.ids import derived_id, new_id
from remd.index.noderows import NODE_COLUMNS, from_rows
from remd.models import EdgeType, Judged, NodeKind, NodeStatus
from remd.store.seam import Connection
from remd.text.tagging import normalise_tag
from remd.text.tagnames import check_tags
from remd.wire import FIELDS, iso, node_to_dict, parse_time
from remd.write.ingest import Draft, Writer
from remd.write.saves import save_drafts
from remd.write.tagtools import add_subtype

EXACT = "exact"  # on the export line of a value kept exact only (Judged.EXACT)
if TYPE_CHECKING:
    from remd.parts import Parts

_TIME_FIELDS = ("created_at", "last_access", "valid_from", "valid_until")
_ID_MAX = 64


def export_lines(engine: Parts, namespace: str) -> Iterator[str]:
    """Every memory of the namespace (all statuses), then its live typed edges."""
    last = 0
    while True:
        rows = engine.store.query(
            f"SELECT {NODE_COLUMNS}, judged FROM nodes WHERE namespace = ? AND rid > ? "
            "ORDER BY rid LIMIT 1000", (namespace, last))
        if not rows:
            break
        last = rows[-1][0]
        for row, node in zip(rows, from_rows(engine.store, rows), strict=True):
            line = node_to_dict(node)
            if row[-1] == Judged.EXACT:
                line[EXACT] = True
            yield json.dumps(line, ensure_ascii=False)
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
    edges: int  # edges written: those already here (an export imported twice) are not


@dataclass(frozen=True, kw_only=True)
class EdgeLine:
    """One checked ``{"edge": {...}}`` line (a tag hierarchy edge names ``tag:NAME``s)."""

    src: str
    dst: str
    type: EdgeType
    weight: float
    context: str | None
    created_at: float | None


@dataclass(frozen=True, kw_only=True)
class ImportBatch:
    """Export lines read and checked, not yet written. The CLI reads one before it opens the
    database, so a refused import leaves no new file behind."""

    drafts: tuple[Draft, ...]
    edges: tuple[EdgeLine, ...]


def _member(value: object, enum: type[NodeKind] | type[NodeStatus] | type[EdgeType],
            field: str) -> Any:
    """The enum member named ``value`` (None for None); the message quotes a capped value."""
    if value is None:
        return None
    members = {m.value: m for m in enum}
    if not isinstance(value, str) or value not in members:
        raise InvalidInput(f"{field} {quote(value)} is not one of {', '.join(members)}")
    return members[value]


def _draft(obj: dict[str, Any], max_chars: int, now: float) -> Draft:
    unknown = set(obj) - set(FIELDS) - {EXACT}
    if unknown:
        raise InvalidInput(f"unknown field(s) {quote(sorted(unknown))}")
    exact = obj.get(EXACT, False)
    if not isinstance(exact, bool):
        raise InvalidInput(f"{EXACT} must be true or false, not {quote(exact)}")
    content = check_text(obj.get("content"), max_chars)
    times = {f: parse_time(obj.get(f), f, now) for f in _TIME_FIELDS}
    kind = _member(obj.get("kind"), NodeKind, "kind")
    status = _member(obj.get("status"), NodeStatus, "status")
    numbers = {}
    for f, lo, hi in (("access_count", 0, 2**62), ("confidence", 0, 1), ("importance", 0, 1)):
        v = obj.get(f)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                              or not lo <= v <= hi):
            raise InvalidInput(f"{f} must be a number in [{lo}, {hi}]")
        numbers[f] = v
    node_id = obj.get("id")
    if node_id is not None and (not isinstance(node_id, str) or not 1 <= len(node_id) <= _ID_MAX):
        raise InvalidInput(f"id must be a string of 1-{_ID_MAX} characters")
    if node_id is not None:
        check_storable(node_id, "id")
    tags = obj.get("tags")
    if tags is not None and not isinstance(tags, list):
        raise InvalidInput(f"tags must be a list of strings, not {type(tags).__name__}")
    return Draft(
        content=content, tags=check_tags(tags), auto_tags=tags is None,
        source=check_source(obj.get("source")), id=node_id, kind=kind, status=status,
        exact=exact,
        created_at=times["created_at"], last_access=times["last_access"],
        access_count=int(numbers["access_count"] or 0), confidence=numbers["confidence"],
        importance=numbers["importance"], valid_from=times["valid_from"],
        valid_until=times["valid_until"],
        deprecated_by=check_field(obj.get("deprecated_by"), "deprecated_by", _ID_MAX),
        fact_key=check_field(obj.get("fact_key"), "fact_key", max_chars),
        fact_value=check_field(obj.get("fact_value"), "fact_value", max_chars),
    )


def _edge(e: object, max_chars: int, now: float) -> EdgeLine:
    if not isinstance(e, dict) or not all(isinstance(e.get(k), str)
                                          for k in ("src", "dst", "type")):
        raise InvalidInput("an edge needs string src, dst and type")
    src, dst = (check_field(e[k], k, max_chars) or "" for k in ("src", "dst"))
    type_: EdgeType = _member(e["type"], EdgeType, "edge type")
    weight = e.get("weight", 1.0)
    if (isinstance(weight, bool) or not isinstance(weight, int | float)
            or not math.isfinite(weight)):
        raise InvalidInput("edge weight must be a finite number")
    if type_ is EdgeType.IS_SUBTYPE_OF and src.startswith("tag:"):
        if not dst.startswith("tag:"):
            raise InvalidInput("a tag's IS_SUBTYPE_OF edge needs a dst tag:NAME")
        src, dst = f"tag:{normalise_tag(src[4:])}", f"tag:{normalise_tag(dst[4:])}"
        if src == dst:
            raise InvalidInput(f"tag {quote(src[4:])} cannot be a subtype of itself")
    return EdgeLine(src=src, dst=dst, type=type_, weight=float(weight),
                    context=check_field(e.get("context"), "context", max_chars),
                    created_at=parse_time(e.get("created_at"), "created_at", now))


def _tag_loop(edges: Sequence[EdgeLine]) -> str | None:
    """A tag of a loop in the file's tag hierarchy, or None. Checked before anything is
    written: add_subtype would refuse the loop only after the memories were saved."""
    parents: dict[str, list[str]] = {}
    for e in edges:
        if e.type is EdgeType.IS_SUBTYPE_OF and e.src.startswith("tag:"):
            parents.setdefault(e.src, []).append(e.dst)
    done: set[str] = set()
    for start in parents:
        if start in done:
            continue
        path, stack = {start}, [(start, iter(parents[start]))]
        while stack:
            tag, ups = stack[-1]
            up = next(ups, None)
            if up is None:
                done.add(tag)
                path.discard(tag)
                stack.pop()
            elif up in path:
                return up[4:]
            elif up not in done:
                path.add(up)
                stack.append((up, iter(parents.get(up, ()))))
    return None


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


def _placed(engine: Parts, namespace: str, ids: list[str]) -> tuple[set[str], dict[str, str]]:
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


def read_lines(lines: Iterable[str], config: Config, now: float) -> ImportBatch:
    """Read and check export lines without writing anything; ``now`` bounds ``created_at``.
    Raises InvalidInput naming the first bad line."""
    drafts: list[Draft] = []
    edges: list[EdgeLine] = []
    max_chars = config.store.max_content_chars
    for number, line in _numbered(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise InvalidInput("each line must be a JSON object")
            if "edge" in obj:
                edges.append(_edge(obj["edge"], max_chars, now))
            else:
                drafts.append(_draft(obj, max_chars, now))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"line {number}: not valid JSON") from exc
        except RecursionError as exc:  # json.loads of [[[[...]]]] thousands deep
            raise InvalidInput(f"line {number}: JSON nested too deeply") from exc
        except (InvalidInput, ValueError) as exc:
            raise InvalidInput(f"line {number}: {exc}") from exc
    loop = _tag_loop(edges)
    if loop is not None:
        raise InvalidInput(f"the tag hierarchy loops through {quote(loop)}")
    return ImportBatch(drafts=tuple(drafts), edges=tuple(edges))


def _absent(conn: Connection, namespace: str,
            edges: Sequence[EdgeLine]) -> list[EdgeLine]:
    """The edges not in the namespace yet (live or retired by REM), so an export imported
    twice adds its edges once; an edge the file repeats is added as often as it repeats it
    beyond the copies already here."""
    have: Counter[tuple[str, str, str]] = Counter()
    srcs = sorted({e.src for e in edges})
    for i in range(0, len(srcs), 500):
        chunk = srcs[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for src, dst, type_, n in conn.execute(
                f"SELECT src, dst, type, count(*) FROM edges WHERE namespace = ? "
                f"AND src IN ({marks}) GROUP BY src, dst, type", (namespace, *chunk)).fetchall():
            have[(str(src), str(dst), str(type_))] = int(str(n))
    out = []
    for e in edges:
        key = (e.src, e.dst, e.type.value)
        if have[key] > 0:
            have[key] -= 1
        else:
            out.append(e)
    return out


def _hierarchy_size(conn: Connection, namespace: str) -> int:
    row = conn.execute("SELECT count(*) FROM tag_parents WHERE namespace = ?",
                       (namespace,)).fetchone()
    return int(str(row[0])) if row else 0


def import_lines(engine: Parts, namespace: str, lines: Iterable[str] | ImportBatch, *,
                 embed: bool = True) -> ImportResult:
    """Read export lines (or a batch :func:`read_lines` checked) into this namespace.
    Everything is validated first: a bad line (reported with its number) imports nothing.
    Memories and edges already here are skipped, so importing one export twice imports it
    once. Raises InvalidInput.
    """
    batch = lines if isinstance(lines, ImportBatch) else read_lines(
        lines, engine.config, engine.clock())
    existing, remap = _placed(engine, namespace, [d.id for d in batch.drafts if d.id])
    fresh = []
    for d in batch.drafts:
        if d.id in existing:
            continue
        fresh.append(replace(  # a copy: the batch stays as it was read
            d, id=remap.get(d.id, d.id) if d.id else None,
            deprecated_by=remap.get(d.deprecated_by, d.deprecated_by) if d.deprecated_by
            else None))
    # Memories without a status replay history: apply them in time order so facts supersede
    # in the order they happened.
    fresh.sort(key=lambda d: (d.status is None, d.created_at or 0.0) if d.status is None
               else (False, 0.0))
    save_drafts(engine, namespace, fresh, embed=embed)

    now = engine.clock()
    is_tag = [e.type is EdgeType.IS_SUBTYPE_OF and e.src.startswith("tag:")
              for e in batch.edges]
    links = [replace(e, src=remap.get(e.src, e.src), dst=remap.get(e.dst, e.dst))
             for e, tag in zip(batch.edges, is_tag, strict=True) if not tag]
    with engine.store.transaction(namespace) as conn:
        writer = Writer(conn, namespace, engine.config, engine.counter)
        new_links = _absent(conn, namespace, links)
        for e in new_links:
            writer.add_edge(e.src, e.dst, e.type,
                            e.created_at if e.created_at is not None else now,
                            weight=e.weight, context=e.context)
        before = _hierarchy_size(conn, namespace)
        for e, tag in zip(batch.edges, is_tag, strict=True):
            if tag:  # recording a link already there is a no-op
                add_subtype(conn, namespace, e.src[4:], e.dst[4:], now, create_child=True)
        added = len(new_links) + _hierarchy_size(conn, namespace) - before
    return ImportResult(imported=len(fresh), skipped=len(batch.drafts) - len(fresh),
                        edges=added)
