"""The flat baselines remd is measured against, and the one greedy packer they share.

Each baseline ranks every turn of a conversation for a question; the packer then walks the
ranking and keeps what fits the token budget (exact o200k count of the items joined by
newlines), skipping what does not fit — the same rule remd's inject follows.

- BM25: ``bm25s`` (Lucene variant, k1=1.5, b=0.75) over its own simple tokenizer (lower-case,
  ``\\w\\w+``) with its larger English stop-word list (``STOPWORDS_EN_PLUS``), no stemming.
  That list reproduces the outside measurement (.507/.588/.651/.697 vs .512/.587/.654/.699);
  the 33-word ``"en"`` list scores lower (.458/.541/.619/.678).
- dense: cosine over the same MiniLM vectors remd stores (``remd.text.embed.MiniLMEmbedder``).
- RRF: reciprocal-rank fusion, ``sum 1 / (k + rank)`` with k=60 and 1-based ranks, over the two
  full rankings; turns BM25 scores 0 (no query word) are unranked by BM25 and get no BM25 term.
- recency: newest turns first, whatever the question.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from remd.text.embed import DIM, Embedder, Vectors
from remd.text.tokens import TokenCounter

RRF_K = 60


@dataclass(frozen=True)
class Packed:
    indices: tuple[int, ...]  # positions in the corpus, in pack order
    tokens: int  # exact count of the joined text


class TokenTable:
    """Exact token counts of a corpus's items, alone and followed by the separator.

    With o200k's pre-tokeniser a newline followed by a non-space character always ends a
    pre-token, so ``count(a + "\n" + b) == count(a + "\n") + count(b)`` when ``b`` starts with
    a non-space character other than "/" (which a punctuation pre-token may absorb). The pack's
    exact size is then a sum; :func:`pack` checks it against a full count and falls back to
    counting the joined text when the rule does not apply.
    """

    def __init__(self, texts: Sequence[str], counter: TokenCounter, separator: str = "\n"):
        self.texts = list(texts)
        self.counter = counter
        self.separator = separator
        self.alone = counter.count_many(self.texts)
        self.with_sep = counter.count_many([t + separator for t in self.texts])
        self.additive = separator == "\n" and all(
            t and not t[0].isspace() and t[0] != "/" for t in self.texts)


def pack(ranking: Sequence[int], table: TokenTable, budget: int) -> Packed:
    """Greedy by rank: add each item whose addition keeps the joined text within budget.

    Items that don't fit are skipped, never truncated; the count is the exact count of the
    items joined by the separator.
    """
    if table.additive:
        chosen: list[int] = []
        closed = 0  # exact tokens of the chosen items, each followed by the separator
        last = -1
        for i in ranking:
            total = closed + (table.with_sep[last] if last >= 0 else 0) + table.alone[i]
            if total <= budget:
                if last >= 0:
                    closed += table.with_sep[last]
                chosen.append(i)
                last = i
        used = closed + table.alone[last] if last >= 0 else 0
        joined = table.separator.join(table.texts[i] for i in chosen)
        if table.counter.count(joined) == used:
            return Packed(tuple(chosen), used)
    return _pack_slow(ranking, table, budget)


def _pack_slow(ranking: Sequence[int], table: TokenTable, budget: int) -> Packed:
    """The same greedy rule, deciding every item on a full count of the joined text."""
    chosen: list[int] = []
    joined, used = "", 0
    for i in ranking:
        if used + table.alone[i] > budget + 4:  # BPE never saves 4 tokens at one seam
            continue
        candidate = joined + table.separator + table.texts[i] if chosen else table.texts[i]
        exact = table.counter.count(candidate)
        if exact <= budget:
            chosen.append(i)
            joined, used = candidate, exact
    return Packed(tuple(chosen), used)


def rrf(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Fuse rankings: score(d) = sum over rankings of 1 / (k + rank of d), ranks from 1.

    Ties (same fused score) keep the order of first appearance, so the result is deterministic.
    """
    score: dict[int, float] = {}
    first: dict[int, int] = {}
    pos = 0
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
            if doc not in first:
                first[doc] = pos
                pos += 1
    return sorted(score, key=lambda d: (-score[d], first[d]))


def argsort_desc(scores: npt.NDArray[np.floating], keep_zero: bool = True) -> list[int]:
    """Indices by decreasing score, ties by index; with keep_zero False, scores <= 0 dropped."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    if not keep_zero:
        order = order[scores[order] > 0]
    return [int(i) for i in order]


class BM25Ranker:
    """bm25s over one conversation's turns."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self._bm25s = bm25s
        self._stop = list(STOPWORDS_EN_PLUS)
        tokens = bm25s.tokenize(list(texts), stopwords=self._stop, show_progress=False,
                                return_ids=False)
        self._retriever = bm25s.BM25()
        self._retriever.index(tokens, show_progress=False)
        self.n = len(texts)

    def scores(self, query: str) -> npt.NDArray[np.floating]:
        q = self._bm25s.tokenize([query], stopwords=self._stop, show_progress=False,
                                 return_ids=False)[0]
        if not q:
            return np.zeros(self.n, np.float32)
        return np.asarray(self._retriever.get_scores(q), dtype=np.float32)

    def rank(self, query: str) -> list[int]:
        return argsort_desc(self.scores(query), keep_zero=False)


def dense_rank(query_vec: npt.NDArray[np.float32], corpus: Vectors) -> list[int]:
    """Turns by decreasing cosine (the vectors are L2-normalised)."""
    return argsort_desc(corpus @ query_vec)


def recency_rank(times: Sequence[float]) -> list[int]:
    """Newest first; equal times by later position first."""
    return sorted(range(len(times)), key=lambda i: (-times[i], -i))


class CachedEmbedder:
    """An Embedder that remembers vectors by content hash, optionally in an .npz file.

    Only the texts embedded while ``recording`` is on are kept (the corpus), so that query
    embeddings are always computed and their cost shows in the latency figures.
    """

    def __init__(self, inner: Embedder, path: Path | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = path
        self.recording = True
        self._cache: dict[str, npt.NDArray[np.float32]] = {}
        self._dirty = False
        if path is not None and path.exists():
            with np.load(path) as data:
                keys, vecs = data["keys"], data["vecs"]
            self._cache = {str(k): v for k, v in zip(keys, vecs, strict=True)}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def embed(self, texts: Sequence[str]) -> Vectors:
        keys = [self.key(t) for t in texts]
        missing = [i for i, k in enumerate(keys) if k not in self._cache]
        fresh = self.inner.embed([texts[i] for i in missing]) if missing else None
        known = next(iter(self._cache.values()), None)  # any embedder's size
        width = fresh.shape[1] if fresh is not None else len(known) if known is not None else DIM
        out = np.empty((len(texts), width), np.float32)
        if fresh is not None:
            for row, i in enumerate(missing):
                out[i] = fresh[row]
                if self.recording:
                    self._cache[keys[i]] = fresh[row]
                    self._dirty = True
        for i, k in enumerate(keys):
            if k in self._cache:
                out[i] = self._cache[k]
        return out

    def save(self) -> None:
        if self.path is None or not self._dirty:
            return
        keys = np.array(list(self._cache), dtype="U32")
        vecs = np.stack(list(self._cache.values())) if self._cache else np.zeros((0, DIM))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vecs=vecs.astype(np.float32))
        tmp.replace(self.path)
        self._dirty = False


Ranker = Callable[[str], list[int]]
