"""Clustering flagged memories for a REM run: Union-Find over specific links, with guards.

Candidate links between two flagged memories:

- *evidence* links: a typed edge between them, or a shared **specific** tag. A tag is specific
  when it is on at most ``max(max_cluster_size, tag_max_share · live memories)`` live memories
  of the namespace: a year or a frequent word is on too many memories to say that two of them
  are about the same thing, and linking through it would chain unrelated fragments into one
  giant cluster. (That cut-off is an IDF floor: idf = ln(N / df) >= ln(1 / tag_max_share).)
  For a tag with many flagged carriers, each carrier links to its k most similar co-carriers
  only, so the number of links stays O(n·k).
- *similarity* links: among a memory's k nearest flagged neighbours (cosine over the vectors
  stored in sqlite-vec), those with cosine >= θ.

Either kind of link is dropped, and a union refused, when what two memories share is much less
specific than what each is about (each has a tag at least twice as rare, also carried by another
memory, that the other lacks):
"the Falcon wiki hint is teal-1" / "the Heron wiki hint is teal-2" are alike and share "teal",
but they are two facts about two projects, not one (the seed's "similarity dedup merges
causally distinct events").

Links are applied in the order of Kruskal's algorithm: evidence links before similarity-only
links, strongest first (evidence by the summed IDF of the specific tags shared, then cosine;
similarity links by cosine). A union is refused when the merged cluster
would be larger than ``max_cluster_size``, hold more than ``max_cluster_chars`` of text, or be
incoherent: its mean pairwise cosine (computed in O(d) from the sum of its unit vectors,
``(|Σv|² - Σ|v|²) / (n(n-1))``) below ``coherence_min``. Because the strongest links are merged
first, refusing the weakest ones splits an over-large or mixed component along its weakest
similarities, and every cluster that comes out has passed the coherence check.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from remd.config import RemConfig
from remd.errors import InvalidInput

Vectors = npt.NDArray[np.float32]
_EDGE_EVIDENCE = 3.0  # a typed edge counts like a tag on 5% of the namespace (ln 20)
_SUBJECT_SLACK = math.log(2)  # a principal name must be 2x rarer than what is shared to differ
_BLOCK = 1024  # rows of the similarity matrix computed at once (n × 1024 float32 each)
_TAG_LINK_COS = 0.4  # a shared specific tag links two memories at least this alike


class UnionFind:
    """Disjoint sets over ``0..n-1``: path compression and union by rank."""

    def __init__(self, n: int) -> None:
        if n < 0:
            raise InvalidInput(f"UnionFind size must be >= 0, not {n}")
        self.parent = list(range(n))
        self.rank = [0] * n
        self.size = [1] * n

    def __len__(self) -> int:
        return len(self.parent)

    def find(self, x: int) -> int:
        """The root of ``x``'s set; compresses the path on the way (iteratively, so a long
        chain cannot hit the recursion limit)."""
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> int:
        """Merge the sets of ``a`` and ``b``; returns the root of the merged set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        if self.rank[ra] < self.rank[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        if self.rank[ra] == self.rank[rb]:
            self.rank[ra] += 1
        return ra

    def connected(self, a: int, b: int) -> bool:
        return self.find(a) == self.find(b)

    def set_size(self, x: int) -> int:
        return self.size[self.find(x)]

    def groups(self) -> list[list[int]]:
        """Every set (singletons included), each sorted, ordered by smallest member."""
        out: dict[int, list[int]] = {}
        for x in range(len(self.parent)):
            out.setdefault(self.find(x), []).append(x)
        return sorted(out.values(), key=lambda g: g[0])

    def clusters(self) -> list[list[int]]:
        """The sets with two or more members."""
        return [g for g in self.groups() if len(g) > 1]


@dataclass(frozen=True, kw_only=True)
class Cluster:
    members: tuple[int, ...]  # indices into the clustered items, ascending
    coherence: float  # mean pairwise cosine


@dataclass(frozen=True, kw_only=True)
class ClusterResult:
    clusters: tuple[Cluster, ...]
    singletons: int
    stats: Mapping[str, int] = field(default_factory=dict)


def coherence(vectors: Vectors) -> float:
    """Mean pairwise cosine of unit vectors (1.0 for fewer than two)."""
    n = len(vectors)
    if n < 2:
        return 1.0
    v = np.asarray(vectors, np.float64)
    s = v.sum(axis=0)
    return float((s @ s - np.einsum("ij,ij->", v, v)) / (n * (n - 1)))


def _knn_pairs(v: Vectors, k: int, theta: float) -> tuple[npt.NDArray[Any], ...]:
    """(i, j, cos) for each i and its k nearest others with cos >= theta, i != j."""
    n = len(v)
    if n < 2 or k <= 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, np.float64)
    kk = min(k, n - 1)
    rows_i, rows_j, sims = [], [], []
    for start in range(0, n, _BLOCK):
        block = v[start:start + _BLOCK] @ v.T
        idx = np.arange(start, min(n, start + _BLOCK))
        block[idx - start, idx] = -np.inf  # never your own neighbour
        top = np.argpartition(-block, kk - 1, axis=1)[:, :kk]
        s = np.take_along_axis(block, top, axis=1)
        keep = s >= theta
        rows_i.append(np.repeat(idx, kk).reshape(-1, kk)[keep])
        rows_j.append(top[keep])
        sims.append(s[keep].astype(np.float64))
    return np.concatenate(rows_i), np.concatenate(rows_j), np.concatenate(sims)


def _tag_pairs(v: Vectors, tags: Sequence[Collection[int]], specific: set[int],
               k: int) -> set[tuple[int, int]]:
    carriers: dict[int, list[int]] = {}
    for i, ts in enumerate(tags):
        for t in ts:
            if t in specific:
                carriers.setdefault(t, []).append(i)
    pairs: set[tuple[int, int]] = set()
    for members in carriers.values():
        m = len(members)
        if m < 2:
            continue
        if m <= k + 1:
            pairs.update((a, b) for x, a in enumerate(members) for b in members[x + 1:])
            continue
        idx = np.asarray(members)
        sub = v[idx] @ v[idx].T
        np.fill_diagonal(sub, -np.inf)
        top = np.argpartition(-sub, k - 1, axis=1)[:, :k]
        for row, cols in enumerate(top):
            a = members[row]
            for c in cols:
                b = members[int(c)]
                pairs.add((a, b) if a < b else (b, a))
    return pairs


def specific_cap(config: RemConfig, live_count: int) -> int:
    """The most live memories a tag may be on and still be specific (see the module docstring;
    synthesis tags use the same cut-off)."""
    return max(config.max_cluster_size, int(config.tag_max_share * live_count))


class _Subjects:
    """What each flagged memory is about: its specific tags (``named``), their IDF, and its
    principal name (the rarest of its names some other memory carries too)."""

    def __init__(self, tags: Sequence[Collection[int]], names: Sequence[Collection[int]],
                 tag_df: Mapping[int, int], specific: set[int], live_count: int) -> None:
        n = len(tags)
        self.idf = {t: math.log(max(live_count, 1) / tag_df[t]) for t in specific}
        self.named = [frozenset(t for t in ts if t in specific) for ts in tags]
        # A memory's principal name: its most specific name that some other memory also
        # carries, else its most specific tag that one does ("launched" can be rarer than
        # "Risris").
        shared = [frozenset(t for t in ns if tag_df[t] >= 2) for ns in self.named]
        own = [frozenset(names[i]) & shared[i] if i < len(names) else frozenset()
               for i in range(n)]
        candidates = [own[i] or shared[i] for i in range(n)]
        self.by_name = [bool(own[i]) for i in range(n)]
        self.own = own
        self.principal = [max((self.idf[t] for t in c), default=None) for c in candidates]
        # ...and the tags that are that specific (a tie is several).
        self.principal_tags = [frozenset(t for t in c if self.idf[t] == p)
                               for c, p in zip(candidates, self.principal, strict=True)]

    def shared_idf(self, a: int, b: int) -> float:
        return sum(self.idf[t] for t in self.named[a] & self.named[b])

    def same(self, a: int, b: int) -> bool:
        """Whether what a and b share (the IDF of their shared specific tags) is about as
        specific as what at least one of them is about (its principal name, up to a factor 2
        in rarity: in a small namespace IDF is noisy), and, when one is about a name, one of
        them names the other's too. "the Falcon wiki hint is teal-1" / "the Heron wiki hint is
        teal-2" share "teal", but each names a much rarer project: two facts, not one; "Falcon went
        live on 3 May" / "Heron went live on 9 June" share "live", as specific as either
        name in a namespace of such statements, but neither names the other's project.
        Memories that name nothing specific may still be near-duplicates."""
        pa, pb = self.principal[a], self.principal[b]
        if pa is None or pb is None:
            return True
        # Each names something the other does not ("Our Seville region is where Bellum
        # lives" / "... where Fenkorris lives"): two subjects, however alike the rest.
        if self.own[a] - self.named[b] and self.own[b] - self.named[a]:
            return False
        # A memory about a name and another must name what one of them is about.
        if (self.by_name[a] or self.by_name[b]) and not (
                self.principal_tags[a] & self.named[b] or self.principal_tags[b] & self.named[a]):
            return False
        return self.shared_idf(a, b) >= min(pa, pb) - _SUBJECT_SLACK


def _ranked_links(v: npt.NDArray[np.float32], tags: Sequence[Collection[int]],
                  specific: set[int], subjects: _Subjects, edge_set: set[tuple[int, int]],
                  config: RemConfig, stats: dict[str, int],
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """The candidate links (pairs of indexes) and the order Kruskal takes them in: evidence
    (a shared specific tag, or a typed edge) first, then similarity; strongest first."""
    tag_links = _tag_pairs(v, tags, specific, config.k)
    # A shared tag links two memories that are also alike: "face" of "face mask, tea, bed"
    # and of "the tram was packed, face in someone's armpit" is not one subject.
    tag_links = {(a, b) for a, b in tag_links if float(v[a] @ v[b]) >= _TAG_LINK_COS}
    evidence = {p for p in tag_links if subjects.same(*p)} | edge_set
    si, sj, _ = _knn_pairs(v, config.k, config.theta)
    near = {(min(int(a), int(b)), max(int(a), int(b))) for a, b in zip(si, sj, strict=True)}
    similar = {p for p in near - evidence if subjects.same(*p)}
    stats["refused_subject"] = len(tag_links - evidence) + len(near - evidence - similar)
    stats["evidence_links"] = len(evidence)
    stats["similarity_links"] = len(similar)

    pairs = np.asarray(sorted(evidence) + sorted(similar), np.int64).reshape(-1, 2)
    tier = np.concatenate([np.zeros(len(evidence), np.int64), np.ones(len(similar), np.int64)])
    cos = np.einsum("ij,ij->i", v[pairs[:, 0]], v[pairs[:, 1]]).astype(np.float64)
    # An evidence link is as strong as the specific tags it rests on (their IDF: a tag on 5
    # memories says more than one on 15), plus a typed edge, plus the cosine to break ties.
    strength = cos.copy()
    for p in range(len(evidence)):
        a, b = int(pairs[p, 0]), int(pairs[p, 1])
        strength[p] += subjects.shared_idf(a, b) + (
            _EDGE_EVIDENCE if (a, b) in edge_set else 0.0)
    # Kruskal order: evidence first, then similarity; strongest first; ties by index.
    return pairs, np.lexsort((pairs[:, 1], pairs[:, 0], -strength, tier))


@dataclass
class _Merging:
    """Union-Find over the flagged memories with what each root's guards need: the sum of its
    members' vectors and of their squared norms (coherence), its size, its characters and its
    members."""

    uf: UnionFind
    sums: npt.NDArray[np.float64]
    sq: npt.NDArray[np.float64]
    size_of: list[int]
    chars_of: list[int]
    members: dict[int, list[int]]

    @classmethod
    def start(cls, v: npt.NDArray[np.float32], chars: Sequence[int]) -> _Merging:
        n = len(v)
        sums = v.astype(np.float64)  # per root: sum of member vectors
        return cls(uf=UnionFind(n), sums=sums, sq=np.einsum("ij,ij->i", sums, sums),
                   size_of=[1] * n, chars_of=[int(c) for c in chars],
                   members={i: [i] for i in range(n)})

    def coherence(self, root: int, size: int) -> np.float64:
        value: np.float64 = ((float(self.sums[root] @ self.sums[root]) - self.sq[root])
                             / (size * (size - 1)))
        return value


def _merge(m: _Merging, pairs: npt.NDArray[np.int64], order: npt.NDArray[np.intp],
           subjects: _Subjects, keep_apart: dict[int, set[int]], config: RemConfig,
           stats: dict[str, int]) -> None:
    """Kruskal over ``pairs`` in ``order``: each link joins two clusters unless a guard
    refuses (size, characters, coherence, subject, kept apart); counted in ``stats``."""
    for p in order:
        a, b = int(pairs[p, 0]), int(pairs[p, 1])
        ra, rb = m.uf.find(a), m.uf.find(b)
        if ra == rb:
            continue
        size = m.size_of[ra] + m.size_of[rb]
        if size > config.max_cluster_size:
            stats["refused_size"] += 1
            continue
        if m.chars_of[ra] + m.chars_of[rb] > config.max_cluster_chars:
            stats["refused_chars"] += 1
            continue
        s = m.sums[ra] + m.sums[rb]
        q = m.sq[ra] + m.sq[rb]
        if (float(s @ s) - q) / (size * (size - 1)) < config.coherence_min:
            stats["refused_coherence"] += 1
            continue
        # Not only the two linked memories: no two members of a cluster may be about
        # different subjects (else "Falcon hint" + "hint" + "Heron hint" would chain).
        if not all(subjects.same(x, y) for x in m.members[ra] for y in m.members[rb]):
            stats["refused_subject"] += 1
            continue
        if keep_apart and any(keep_apart.get(x, set()) & set(m.members[rb])
                              for x in m.members[ra]):
            stats["refused_apart"] += 1
            continue
        root = m.uf.union(ra, rb)
        m.members[root] = m.members.pop(ra if root == rb else rb) + m.members[root]
        m.sums[root], m.sq[root] = s, q
        m.size_of[root] = size
        m.chars_of[root] = m.chars_of[ra] + m.chars_of[rb]
        stats["merged"] += 1


def build_clusters(
    vectors: Vectors,
    tags: Sequence[Collection[int]],
    chars: Sequence[int],
    *,
    tag_df: Mapping[int, int],
    live_count: int,
    config: RemConfig,
    edges: Sequence[tuple[int, int]] = (),
    names: Sequence[Collection[int]] = (),
    apart: Sequence[tuple[int, int]] = (),
) -> ClusterResult:
    """Cluster n flagged items (row i of ``vectors``, ``tags[i]``, ``chars[i]``).

    ``vectors`` are unit-length rows; ``tag_df`` is each tag's number of live memories in the
    namespace, ``live_count`` the namespace's live memories; ``edges`` are index pairs of typed
    edges between items; ``apart``: pairs that must never share a cluster (a statement and
    the newer one that probably updates it: remd.write.supersede). Every item ends in exactly one
    returned cluster or is a singleton. Raises InvalidInput when the inputs' lengths disagree.
    """
    v = np.ascontiguousarray(vectors, np.float32)
    n = len(v)
    if len(tags) != n or len(chars) != n:
        raise InvalidInput(f"{n} vectors but {len(tags)} tag sets and {len(chars)} lengths")
    stats = {"similarity_links": 0, "evidence_links": 0, "merged": 0, "refused_size": 0,
             "refused_chars": 0, "refused_coherence": 0, "specific_tags": 0,
             "refused_subject": 0}
    if n < 2:
        return ClusterResult(clusters=(), singletons=n, stats=stats)

    cap = specific_cap(config, live_count)
    specific = {t for t, df in tag_df.items() if 0 < df <= cap}
    stats["specific_tags"] = len(specific)
    subjects = _Subjects(tags, names, tag_df, specific, live_count)
    edge_set = {(min(a, b), max(a, b)) for a, b in edges if a != b and 0 <= a < n and 0 <= b < n}
    pairs, order = _ranked_links(v, tags, specific, subjects, edge_set, config, stats)

    keep_apart: dict[int, set[int]] = {}
    for a, b in apart:
        if a != b and 0 <= a < n and 0 <= b < n:
            keep_apart.setdefault(a, set()).add(b)
            keep_apart.setdefault(b, set()).add(a)
    stats["refused_apart"] = 0
    merging = _Merging.start(v, chars)
    _merge(merging, pairs, order, subjects, keep_apart, config, stats)

    clusters = []
    singletons = 0
    for group in merging.uf.groups():
        if len(group) == 1:
            singletons += 1
            continue
        r = merging.uf.find(group[0])
        value = merging.coherence(r, len(group))
        clusters.append(Cluster(members=tuple(group), coherence=round(value, 6)))
    return ClusterResult(clusters=tuple(clusters), singletons=singletons, stats=stats)
