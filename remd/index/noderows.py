"""A memory's row as a :class:`~remd.models.Node`: the columns every reader selects and their
decoding, with the tag names. Below both wings: the read wing (remd.query) and the writers that
hand nodes back (tag tools, export) import it from here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from remd.errors import InvalidInput, NotFound
from remd.models import Node, NodeKind, NodeStatus
from remd.store import rows_in
from remd.store.seam import Store

__all__ = ["NODE_COLUMNS", "check_id", "from_rows", "rid_of", "tags_of"]

NODE_COLUMNS = (
    "rid, id, namespace, kind, content, source, status, created_at, last_access, "
    "access_count, confidence, importance, tokens, valid_from, valid_until, deprecated_by, "
    "fact_key, fact_value"
)


def tags_of(store: Store, namespace: str, rids: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """The tag names of each memory of ``namespace``, sorted."""
    if not rids:
        return {}
    out: dict[int, list[str]] = {rid: [] for rid in rids}
    with store.snapshot() as conn:
        for rid, name in rows_in(
                conn, "SELECT nt.rid, t.name FROM node_tags nt JOIN tags t "
                      "ON t.namespace = nt.namespace AND t.tid = nt.tid "
                      "WHERE nt.namespace = ? AND nt.rid IN ({marks}) ORDER BY nt.rid, t.name",
                rids, (namespace,)):
            out[rid].append(name)
    return {rid: tuple(names) for rid, names in out.items()}


def from_rows(store: Store, rows: Sequence[tuple[Any, ...]]) -> list[Node]:
    """Nodes from rows of ``SELECT {NODE_COLUMNS}``, with their tags."""
    by_namespace: dict[str, list[int]] = {}
    for r in rows:
        by_namespace.setdefault(str(r[2]), []).append(int(r[0]))
    tags: dict[int, tuple[str, ...]] = {}
    for namespace, rids in by_namespace.items():
        tags.update(tags_of(store, namespace, rids))
    return [
        Node(id=r[1], namespace=r[2], kind=NodeKind(r[3]), content=r[4], source=r[5],
             status=NodeStatus(r[6]), created_at=r[7], last_access=r[8],
             access_count=r[9], confidence=r[10], importance=r[11], tokens=r[12],
             valid_from=r[13], valid_until=r[14], deprecated_by=r[15], fact_key=r[16],
             fact_value=r[17], tags=tags.get(r[0], ()))
        for r in rows
    ]


def check_id(node_id: object) -> str:
    if not isinstance(node_id, str):
        raise InvalidInput(f"memory id must be a string, not {type(node_id).__name__}")
    return node_id


def rid_of(store: Store, namespace: str, node_id: str) -> int:
    """The integer key of a memory. Raises NotFound, InvalidInput."""
    check_id(node_id)
    rid = store.scalar("SELECT rid FROM nodes WHERE id = ? AND namespace = ?",
                       (node_id, namespace))
    if rid is None:
        raise NotFound("memory", node_id, namespace)
    return int(rid)
