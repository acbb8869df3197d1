"""Tools on the tag graph (the MGA seed's "tags as first-class nodes").

Tags are nodes of a graph: memories carry them (node_tags, the HAS_TAG relation), tags that
occur together are linked by weighted co-occurrence edges (tag_edges), and an IS_SUBTYPE_OF
hierarchy (tag_parents) says ``unit-test`` is a kind of ``testing``. These functions read and
curate that graph; every read is bounded like inject's walk (top-M edges per tag, a depth).
Every write runs in one transaction and leaves nothing changed when it raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from remd.errors import Conflict, InvalidInput, NotFound, quote
from remd.index.noderows import NODE_COLUMNS, from_rows
from remd.models import MAX_SQL_INTEGER, Node
from remd.store.seam import Connection
from remd.text.tagging import normalise_tag
from remd.write.graph import GraphWriter

if TYPE_CHECKING:
    from remd.parts import Parts

FANOUT = 32  # co-occurrence edges followed per tag, as in inject
MAX_HIERARCHY = 10_000  # tags visited by one hierarchy traversal (a guard, not a real limit)


def _tag_id(conn: Connection, namespace: str, name: str) -> int | None:
    row = conn.execute("SELECT tid FROM tags WHERE namespace = ? AND name = ?",
                       (namespace, name)).fetchone()
    return None if row is None else int(row[0])


def _need(conn: Connection, namespace: str, raw: str) -> tuple[int, str]:
    name = normalise_tag(raw)
    tid = _tag_id(conn, namespace, name)
    if tid is None:
        raise NotFound("tag", name, namespace)
    return tid, name


def _ensure(conn: Connection, namespace: str, name: str, now: float) -> int:
    return GraphWriter(conn, namespace).tag_id(name, now)


def _walk(conn: Connection, ns: str, start: int, sql: str) -> list[int]:
    """Breadth-first over tag_parents with ``sql`` (? for the namespace, then the tag), start
    excluded."""
    seen = {start}
    order: list[int] = []
    frontier = [start]
    while frontier and len(seen) < MAX_HIERARCHY:
        nxt = []
        for tid in frontier:
            for (other,) in conn.execute(sql, (ns, tid)):
                if other not in seen:
                    seen.add(int(other))
                    order.append(int(other))
                    nxt.append(int(other))
        frontier = nxt
    return order


_UP = "SELECT parent FROM tag_parents WHERE namespace = ? AND child = ?"


def _in_cycle(conn: Connection, ns: str, tid: int) -> bool:
    """Whether going up the hierarchy from ``tid`` comes back to it."""
    seen: set[int] = set()
    frontier = [tid]
    while frontier and len(seen) < MAX_HIERARCHY:
        nxt = []
        for t in frontier:
            for (parent,) in conn.execute(_UP, (ns, t)):
                p = int(parent)
                if p == tid:
                    return True
                if p not in seen:
                    seen.add(p)
                    nxt.append(p)
        frontier = nxt
    return False
_DOWN = "SELECT child FROM tag_parents WHERE namespace = ? AND parent = ?"


# -- IS_SUBTYPE_OF -------------------------------------------------------------------------------
def add_subtype(conn: Connection, namespace: str, child_name: str, parent_name: str,
                now: float, *, create_child: bool = False) -> None:
    """Record ``child IS_SUBTYPE_OF parent`` inside the caller's transaction.

    Both tags are normalised. The child must be a tag of the namespace (a typo must not
    invent one: NotFound, as rename and merge refuse); the parent is created if absent, since
    a new category is what a hierarchy adds. ``create_child`` (import: restoring an exported
    hierarchy) creates the child too. Recording an existing link is a no-op. Raises
    InvalidInput for an unusable tag name, NotFound for an unknown child, Conflict if the
    link would make a cycle (including a tag being its own subtype).
    """
    child, parent = normalise_tag(child_name), normalise_tag(parent_name)
    if child == parent:
        raise Conflict(f"tag {quote(child)} cannot be a subtype of itself")
    c = _ensure(conn, namespace, child, now) if create_child else _need(conn, namespace,
                                                                        child)[0]
    p = _ensure(conn, namespace, parent, now)
    if c in _walk(conn, namespace, p, _UP):  # parent is below child: the link closes a cycle
        raise Conflict(f"{quote(child)} IS_SUBTYPE_OF {quote(parent)} would make a cycle: "
                       f"{quote(parent)} is already a subtype of {quote(child)}")
    conn.execute("INSERT OR IGNORE INTO tag_parents (namespace, child, parent) VALUES (?, ?, ?)",
                 (namespace, c, p))


def remove_subtype(conn: Connection, namespace: str, child_name: str,
                   parent_name: str) -> bool:
    """Remove the link if present; returns whether it was. Raises NotFound for unknown tags."""
    c, _ = _need(conn, namespace, child_name)
    p, _ = _need(conn, namespace, parent_name)
    return conn.execute("DELETE FROM tag_parents WHERE namespace = ? AND child = ? AND parent = ? "
                        "RETURNING 1", (namespace, c, p)).fetchone() is not None


def _names(conn: Connection, ns: str, tids: Sequence[int]) -> list[str]:
    if not tids:
        return []
    marks = ",".join("?" * len(tids))
    by_id = {int(t): str(n) for t, n in conn.execute(
        f"SELECT tid, name FROM tags WHERE namespace = ? AND tid IN ({marks})", (ns, *tids))}
    return [by_id[t] for t in tids if t in by_id]


def subtypes(engine: Parts, ns: str, tag: str) -> list[str]:
    """Every tag below ``tag`` in the hierarchy, nearest first. Raises NotFound."""
    with engine.store.snapshot() as conn:
        tid, _ = _need(conn, ns, tag)
        return _names(conn, ns, _walk(conn, ns, tid, _DOWN))


def supertypes(engine: Parts, ns: str, tag: str) -> list[str]:
    """Every tag above ``tag`` in the hierarchy, nearest first. Raises NotFound."""
    with engine.store.snapshot() as conn:
        tid, _ = _need(conn, ns, tag)
        return _names(conn, ns, _walk(conn, ns, tid, _UP))


# -- reading the graph ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class TagCluster:
    tags: tuple[tuple[str, float], ...]  # (tag, activation), the seed first at 1.0
    memories: tuple[Node, ...]  # live memories carrying cluster tags, strongest first


def _cluster(conn: Connection, ns: str, seed: int, depth: int, decay: float
             ) -> dict[int, float]:
    act = {seed: 1.0}
    frontier = [seed]
    for _ in range(depth):
        nxt: dict[int, float] = {}
        for src in frontier:
            rows: list[tuple[Any, ...]] = list(conn.execute(
                "SELECT dst, weight FROM tag_edges WHERE namespace = ? AND src = ? "
                "ORDER BY weight DESC, dst LIMIT ?", (ns, src, FANOUT)))
            rows += [(c, 1.0) for (c,) in conn.execute(_DOWN + " LIMIT ?", (ns, src, FANOUT))]
            for dst, w in rows:
                a = act[src] * decay * float(w)
                if a > act.get(int(dst), 0.0) and a > nxt.get(int(dst), 0.0):
                    nxt[int(dst)] = a
        act.update(nxt)
        frontier = list(nxt)
    return act


def memories_by_tag_cluster(engine: Parts, ns: str, tag: str, depth: int = 2, *,
                            limit: int = 50) -> TagCluster:
    """The tags around ``tag`` (co-occurrence edges and subtypes, ``depth`` hops, top-32
    edges per tag) and the live memories carrying them, ranked by cluster activation.

    Raises NotFound for an unknown tag, InvalidInput for a negative depth or limit.
    """
    if not isinstance(depth, int) or isinstance(depth, bool) or not 0 <= depth <= 4:
        raise InvalidInput(f"depth must be an integer from 0 to 4, not {quote(depth)}")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidInput(f"limit must be a non-negative integer, not {quote(limit)}")
    decay = engine.config.inject.decay
    per_tag = engine.config.inject.per_tag_cap
    with engine.store.snapshot() as conn:
        seed, _ = _need(conn, ns, tag)
        act = _cluster(conn, ns, seed, depth, decay)
        ranked = sorted(act, key=lambda t: -act[t])[: engine.config.inject.beam]
        score: dict[int, float] = {}
        for tid in ranked:
            for rid, w in conn.execute(
                    "SELECT rid, weight FROM node_tags WHERE namespace = ? AND tid = ? "
                    "AND live = 1 ORDER BY weight DESC, rid DESC LIMIT ?", (ns, tid, per_tag)):
                score[int(rid)] = score.get(int(rid), 0.0) + act[tid] * float(w)
        names = dict(zip(ranked, _names(conn, ns, ranked), strict=True))
    top = sorted(score, key=lambda r: (-score[r], -r))[:limit]
    rows = engine.store.query(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE namespace = ? "
        f"AND rid IN ({','.join('?' * len(top))})", (ns, *top)) if top else []
    order = {rid: i for i, rid in enumerate(top)}
    nodes = from_rows(engine.store, sorted(rows, key=lambda r: order[int(r[0])]))
    return TagCluster(tags=tuple((names[t], round(act[t], 6)) for t in ranked),
                      memories=tuple(nodes))


def suggest_related_tags(engine: Parts, ns: str, tags: Iterable[str], *, limit: int = 10
                         ) -> list[tuple[str, float]]:
    """Existing tags that go with ``tags``: co-occurrence (edge weight, summed over the given
    tags, damped for tags on most memories) plus their hierarchy neighbours. Unknown tags are
    ignored; raises InvalidInput for an unusable tag string or limit.
    """
    if isinstance(tags, str):
        raise InvalidInput("tags must be a list of strings, not one string")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise InvalidInput(f"limit must be a non-negative integer, not {quote(limit)}")
    names = [normalise_tag(t) for t in tags]
    score: dict[int, float] = {}
    with engine.store.snapshot() as conn:
        given = {tid for tid in (_tag_id(conn, ns, n) for n in names)
                 if tid is not None}
        total = conn.execute("SELECT max(df) FROM tags WHERE namespace = ?",
                             (ns,)).fetchone()
        biggest = max(1, int(total[0] or 1)) if total else 1
        for tid in given:
            for dst, w, df in conn.execute(
                    "SELECT e.dst, e.weight, t.df FROM tag_edges e JOIN tags t "
                    "ON t.namespace = e.namespace AND t.tid = e.dst "
                    "WHERE e.namespace = ? AND e.src = ? ORDER BY e.weight DESC, e.dst LIMIT ?",
                    (ns, tid, FANOUT)):
                damp = 1.0 - 0.5 * (int(df) / biggest)
                score[int(dst)] = score.get(int(dst), 0.0) + float(w) * damp
            for other in (*_walk(conn, ns, tid, _UP)[:FANOUT],
                          *_walk(conn, ns, tid, _DOWN)[:FANOUT]):
                score[other] = score.get(other, 0.0) + 1.0
        for tid in given:
            score.pop(tid, None)
        ranked = sorted(score, key=lambda t: -score[t])[:limit]
        named = dict(zip(ranked, _names(conn, ns, ranked), strict=True))
    return [(named[t], round(score[t], 6)) for t in ranked]


# -- curating the vocabulary ---------------------------------------------------------------------
def rename_tag(engine: Parts, ns: str, old: str, new: str) -> str:
    """Rename a tag (its memories, edges and hierarchy follow); returns the normalised new name.

    Raises NotFound if ``old`` is unknown, Conflict if ``new`` exists already (merge instead),
    InvalidInput for an unusable name.
    """
    new_name = normalise_tag(new)
    with engine.store.transaction(ns) as conn:
        tid, old_name = _need(conn, ns, old)
        if new_name == old_name:
            return new_name
        if _tag_id(conn, ns, new_name) is not None:
            raise Conflict(f"tag {quote(new_name)} exists already; merge {quote(old_name)} "
                           "into it instead")
        conn.execute("UPDATE tags SET name = ? WHERE namespace = ? AND tid = ?",
                     (new_name, ns, tid))
    return new_name


def merge_tags(engine: Parts, ns: str, src: str, dst: str) -> str:
    """Fold tag ``src`` into ``dst`` and delete ``src``; returns dst's name.

    Memories carrying src carry dst (the higher weight is kept), co-occurrence edges are summed
    into dst's (counts added, the higher weight kept), hierarchy links follow; dst's document
    frequency is recounted. One transaction. Raises NotFound for an unknown tag, Conflict if the
    two are the same tag or the merged hierarchy would have a cycle.
    """
    with engine.store.transaction(ns) as conn:
        s, s_name = _need(conn, ns, src)
        d, d_name = _need(conn, ns, dst)
        if s == d:
            raise Conflict(f"cannot merge tag {quote(s_name)} into itself")
        graph = GraphWriter(conn, ns)
        graph.move_tag(s, d)
        # Re-point src's edges to dst in both directions; an edge dst already has is combined.
        conn.execute(
            "INSERT INTO tag_edges (namespace, src, dst, count, weight) "
            "SELECT namespace, ?, dst, count, weight FROM tag_edges "
            "WHERE namespace = ? AND src = ? AND dst NOT IN (?, ?) ON CONFLICT (src, dst) DO "
            "UPDATE SET count = tag_edges.count + excluded.count, "
            "weight = max(tag_edges.weight, excluded.weight)", (d, ns, s, s, d))
        conn.execute(
            "INSERT INTO tag_edges (namespace, src, dst, count, weight) "
            "SELECT namespace, src, ?, count, weight FROM tag_edges "
            "WHERE namespace = ? AND dst = ? AND src NOT IN (?, ?) ON CONFLICT (src, dst) DO "
            "UPDATE SET count = tag_edges.count + excluded.count, "
            "weight = max(tag_edges.weight, excluded.weight)", (d, ns, s, s, d))
        conn.execute("DELETE FROM tag_edges WHERE namespace = ? AND (src = ? OR dst = ?)",
                     (ns, s, s))
        conn.execute("INSERT INTO tag_parents (namespace, child, parent) "
                     "SELECT namespace, ?, parent FROM tag_parents "
                     "WHERE namespace = ? AND child = ? ON CONFLICT DO NOTHING", (d, ns, s))
        conn.execute("INSERT INTO tag_parents (namespace, child, parent) "
                     "SELECT namespace, child, ? FROM tag_parents "
                     "WHERE namespace = ? AND parent = ? ON CONFLICT DO NOTHING", (d, ns, s))
        conn.execute("DELETE FROM tag_parents "
                     "WHERE namespace = ? AND (child = ? OR parent = ? OR child = parent)",
                     (ns, s, s))
        if _in_cycle(conn, ns, d):
            raise Conflict(f"merging {quote(s_name)} into {quote(d_name)} would make the "
                           "IS_SUBTYPE_OF hierarchy cyclic")
        graph.recount(d)
        conn.execute("DELETE FROM tags WHERE namespace = ? AND tid = ?", (ns, s))
    return d_name


# -- export --------------------------------------------------------------------------------------
def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def export_tag_graph(engine: Parts, ns: str, format: Literal["dot", "json"] = "json", *,
                     max_edges: int | None = None) -> str:
    """The namespace's tag graph as Graphviz DOT or JSON (tags with df, weighted co-occurrence
    edges strongest first, subtype links). Raises InvalidInput for another format."""
    if format not in ("dot", "json"):
        raise InvalidInput(f"tag graph format must be 'dot' or 'json', not {quote(format)}")
    if max_edges is not None and (not isinstance(max_edges, int) or max_edges < 0):
        raise InvalidInput(f"max_edges must be a non-negative integer, not {quote(max_edges)}")
    with engine.store.snapshot() as conn:
        tags = [(str(n), int(df)) for n, df in conn.execute(
            "SELECT name, df FROM tags WHERE namespace = ? ORDER BY name", (ns,))]
        edges = [(str(a), str(b), round(float(w), 6), int(c)) for a, b, w, c in conn.execute(
            "SELECT s.name, d.name, e.weight, e.count FROM tag_edges e "
            "JOIN tags s ON s.namespace = e.namespace AND s.tid = e.src "
            "JOIN tags d ON d.namespace = e.namespace AND d.tid = e.dst "
            "WHERE e.namespace = ? ORDER BY e.weight DESC, s.name, d.name LIMIT ?",
            (ns, MAX_SQL_INTEGER if max_edges is None else max_edges))]
        parents = [(str(c), str(p)) for c, p in conn.execute(
            "SELECT c.name, p.name FROM tag_parents tp "
            "JOIN tags c ON c.namespace = tp.namespace AND c.tid = tp.child "
            "JOIN tags p ON p.namespace = tp.namespace AND p.tid = tp.parent "
            "WHERE tp.namespace = ? ORDER BY c.name, p.name",
            (ns,))]
    if format == "json":
        return json.dumps({
            "namespace": ns,
            "tags": [{"name": n, "df": df} for n, df in tags],
            "edges": [{"src": a, "dst": b, "weight": w, "count": c} for a, b, w, c in edges],
            "subtypes": [{"child": c, "parent": p} for c, p in parents],
        }, ensure_ascii=False)
    lines = [f"digraph {_dot_id('remd:' + ns)} {{", "  node [shape=box];"]
    lines += [f"  {_dot_id(n)} [label={_dot_id(f'{n} ({df})')}];" for n, df in tags]
    lines += [f"  {_dot_id(a)} -> {_dot_id(b)} [weight={w}, label=\"{w:.2f}\"];"
              for a, b, w, _ in edges]
    lines += [f"  {_dot_id(c)} -> {_dot_id(p)} [style=dashed, label=\"IS_SUBTYPE_OF\"];"
              for c, p in parents]
    lines.append("}")
    return "\n".join(lines) + "\n"
