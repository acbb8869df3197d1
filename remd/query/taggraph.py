"""The tag graph around one tag, small enough to draw: the tags within a few co-occurrence hops
(the strongest edges of each, as inject walks them) and the weighted edges between them; and a
namespace's most used tags, to start from (engine level: an engine and a namespace, no facade).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from remd.errors import InvalidInput, NotFound, quote
from remd.text.tagnames import normalise_tag

if TYPE_CHECKING:
    from remd.parts import Parts

__all__ = ["TagNeighbourhood", "neighbourhood", "top_tags"]

MAX_NODES = 300  # tags a drawing can hold
PER_TAG = 12  # edges followed from each tag, strongest first


@dataclass(frozen=True, kw_only=True)
class TagNeighbourhood:
    tag: str
    nodes: tuple[tuple[str, int, int], ...]  # (tag, df, hops from the centre), centre first
    edges: tuple[tuple[str, str, float, int], ...]  # (a, b, weight, count), once per pair
    subtypes: tuple[tuple[str, str], ...]  # (child, parent) among the nodes


def _count(value: object, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{name} must be an integer from {low} to {high}, not {quote(value)}")
    return value


def neighbourhood(engine: Parts, ns: str, tag: str, *, depth: int = 2,
                  max_nodes: int = 40) -> TagNeighbourhood:
    """The tags within ``depth`` hops of ``tag`` (at most ``max_nodes``, nearer and stronger
    first) and the edges between them. Raises NotFound for an unknown tag, InvalidInput for
    a bad tag, depth or size."""
    depth = _count(depth, "depth", 1, 3)
    max_nodes = _count(max_nodes, "max_nodes", 1, MAX_NODES)
    name = normalise_tag(tag)
    with engine.store.snapshot() as conn:
        row = conn.execute("SELECT tid, df FROM tags WHERE namespace = ? AND name = ?",
                           (ns, name)).fetchone()
        if row is None:
            raise NotFound("tag", name, ns)
        hops = {int(row[0]): 0}
        frontier = [int(row[0])]
        for hop in range(1, depth + 1):
            found: list[tuple[float, int]] = []
            for src in frontier:
                found += [(float(w), int(d)) for d, w in conn.execute(
                    "SELECT dst, weight FROM tag_edges WHERE namespace = ? AND src = ? "
                    "ORDER BY weight DESC, dst LIMIT ?", (ns, src, PER_TAG))]
            frontier = []
            for _, tid in sorted(found, key=lambda f: (-f[0], f[1])):
                if tid not in hops and len(hops) < max_nodes:
                    hops[tid] = hop
                    frontier.append(tid)
        tids = list(hops)
        marks = ",".join("?" * len(tids))
        names = {int(t): (str(n), int(df)) for t, n, df in conn.execute(
            f"SELECT tid, name, df FROM tags WHERE namespace = ? AND tid IN ({marks})",
            (ns, *tids))}
        pairs: dict[tuple[int, int], tuple[float, int]] = {}
        for a, b, w, c in conn.execute(
                f"SELECT src, dst, weight, count FROM tag_edges WHERE namespace = ? "
                f"AND src IN ({marks}) AND dst IN ({marks})", (ns, *tids, *tids)):
            key = (min(int(a), int(b)), max(int(a), int(b)))
            if key not in pairs or float(w) > pairs[key][0]:
                pairs[key] = (float(w), int(c))
        subtypes = [(int(c), int(p)) for c, p in conn.execute(
            f"SELECT child, parent FROM tag_parents WHERE namespace = ? "
            f"AND child IN ({marks}) AND parent IN ({marks})", (ns, *tids, *tids))]
    return TagNeighbourhood(
        tag=name,
        nodes=tuple((names[t][0], names[t][1], hops[t]) for t in tids),
        edges=tuple((names[a][0], names[b][0], round(w, 6), c)
                    for (a, b), (w, c) in sorted(pairs.items(), key=lambda p: -p[1][0])),
        subtypes=tuple((names[c][0], names[p][0]) for c, p in subtypes))


def top_tags(engine: Parts, ns: str, limit: int = 50) -> list[tuple[str, int]]:
    """The namespace's tags carried by the most memories: (tag, df), most first.
    Raises InvalidInput for a bad ``limit``."""
    limit = _count(limit, "limit", 0, 1000)
    return [(str(n), int(df)) for n, df in engine.store.query(
        "SELECT name, df FROM tags WHERE namespace = ? ORDER BY df DESC, name LIMIT ?",
        (ns, limit))]
