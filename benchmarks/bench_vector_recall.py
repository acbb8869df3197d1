"""How much of the true cosine neighbourhood inject's vector search keeps, on real text.

Inject does not scan float vectors: it keeps the ``vector_k * vector_rerank`` nearest by the
Hamming distance of their sign bits and reranks those by exact cosine (remd/index/vectors.py). This
script measures what that pre-filter loses on real embeddings: every turn of LoCoMo's ten
conversations (../shared/data, evaluation only; pooled into one namespace) and a sample of its
questions, embedded by the packaged MiniLM model, the vectors written into a real remd file and
searched through ``remd.index.vectors.knn``; the reference is the exact cosine top-k of all of them.

    python benchmarks/bench_vector_recall.py [--questions 330] [--reranks 4 8 16 32]

Prints, per ``vector_rerank``, the share of each question's true top-1 / top-5 / top-32 that
the search returns among its best 1 / 5 / 32. Takes ~1 minute here (embedding 5.9k turns).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from remd import Memory
from remd.config import EmbedConfig  # noqa: E402
from remd.index import vectors
from remd.index.vectors import write_vectors  # noqa: E402
from remd.text.embed import make_embedder  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10.json"
K = 32
TOPS = (1, 5, 32)



def _knn(mem: Memory, query: np.ndarray, k: int, *, rerank: int) -> list[tuple[int, float]]:
    """The Hamming pre-filter and cosine rerank, as inject and Memory.nearest run them."""
    with mem.engine.caches.use(mem.namespace) as view, mem.store.snapshot() as conn:
        return vectors.knn(view.bits, conn, query, k, rerank=rerank)

def load(questions: int) -> tuple[list[str], list[str]]:
    """LoCoMo's turns (all conversations) and an even sample of its questions."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    turns = [t["text"] for conv in data for key, session in conv["conversation"].items()
             if key.startswith("session_") and isinstance(session, list)
             for t in session if t.get("text")]
    asked = [qa["question"] for conv in data for qa in conv["qa"] if qa.get("question")]
    step = max(1, len(asked) // questions)
    return turns, asked[::step][:questions]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=330)
    ap.add_argument("--reranks", type=int, nargs="+", default=[4, 8, 16, 32])
    args = ap.parse_args()
    if not DATA.exists():
        sys.exit(f"needs LoCoMo at {DATA} (evaluation data, not shipped with remd)")
    turns, asked = load(args.questions)
    embedder = make_embedder(EmbedConfig())
    if embedder is None:
        sys.exit("the embedding model is switched off in this configuration")
    t0 = time.perf_counter()
    vecs = embedder.embed(turns)
    queries = embedder.embed(asked)
    embed_s = time.perf_counter() - t0
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "recall.db",
                                                      embedder=None) as mem:
        rids = list(range(1, len(turns) + 1))
        with mem.store.transaction() as conn:
            write_vectors(conn, mem.namespace, rids, vecs)
        # The exact cosine top-K of each question (rids are positions + 1), for every rerank.
        truths = [(np.argsort(-(unit @ (q / np.linalg.norm(q))), kind="stable")[:K] + 1).tolist()
                  for q in queries]
        rows = []
        for rerank in args.reranks:
            kept: dict[int, list[float]] = {k: [] for k in TOPS}
            for q, true in zip(queries, truths, strict=True):
                found = [rid for rid, _ in _knn(mem, q, K,
                                               rerank=rerank)[:K]]
                for k in TOPS:
                    kept[k].append(len(set(true[:k]) & set(found[:k])) / k)
            share = K * rerank / len(turns)
            rows.append((rerank, K * rerank, share, *(float(np.mean(kept[k])) for k in TOPS)))
    print(f"vector pre-filter recall - {time.strftime('%Y-%m-%d')}, {platform.machine()}, "
          f"{len(turns):,} LoCoMo turns pooled, {len(asked)} questions, MiniLM "
          f"(embedded in {embed_s:.0f} s)\n")
    print("| vector_rerank | Hamming candidates | share of vectors | top-1 kept | top-5 kept "
          "| top-32 kept |")
    print("|---:|---:|---:|---:|---:|---:|")
    for rerank, cands, share, *kept_k in rows:
        print(f"| {rerank} | {cands} | {share:.1%} | " + " | ".join(f"{v:.3f}" for v in kept_k)
              + " |")


if __name__ == "__main__":
    main()
