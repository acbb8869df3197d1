"""The stored forms of a vector: its sign bits and its int8 rows, of any dimension.

A memory's embedding is stored twice in ``node_vec_bit`` (and a sentence's in ``sentence_vec``):
the sign bits the Hamming pre-filter scans (:mod:`remd.index.vectors`) and the int8 vector the
cosine
rerank reads. The schema's migration 0008 (:mod:`remd.store.sqlite.schema`) rewrote older float32
vectors in
the int8 form, so these functions sit below both.

Nothing here fixes the dimension: a file's embedder (and so its size) is recorded in
``remd_meta`` (:mod:`remd.index.embedder`). The sign bits are padded with zero bits to whole
64-bit words (384 dimensions: 6 words, 768: 12, 1,000: 16), the unit the Hamming scan reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

DIM = 384  # the default embedder's (all-MiniLM-L6-v2); the 384-d files of migration 0008

F32 = npt.NDArray[np.float32]


def words(dim: int) -> int:
    """64-bit words of the sign bits of a ``dim``-dimension vector."""
    return -(-dim // 64)


def quantise(vectors: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """Sign bits of each row, LSB first (the layout of sqlite-vec's ``vec_quantize_binary``),
    padded with zero bits to whole 64-bit words."""
    m = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"vectors must be rows of at least one dimension, not {m.shape}")
    pad = 64 * words(m.shape[1]) - m.shape[1]
    signs = m > 0
    if pad:
        signs = np.pad(signs, ((0, 0), (0, pad)))
    bits: npt.NDArray[np.uint8] = np.packbits(signs, axis=1, bitorder="little")
    return bits


def to_int8(vectors: npt.ArrayLike) -> npt.NDArray[np.int8]:
    """Each row scaled so its largest component is ±127 and rounded: the stored form of a
    vector (a byte per dimension). Cosine similarity ignores the scale, so sqlite-vec's
    ``vec_distance_cosine`` works on these directly; on LoCoMo's real MiniLM embeddings the
    cosine moves by at most 0.002 and the top-1 neighbour of every question is unchanged
    (docs/inject.md, "Vectors")."""
    m = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    if m.ndim != 2 or m.shape[1] == 0:
        raise ValueError(f"vectors must be rows of at least one dimension, not {m.shape}")
    peak = np.abs(m).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    out: npt.NDArray[np.int8] = np.round(m * (127.0 / peak)).astype(np.int8)
    return out


def from_int8(blobs: Sequence[bytes]) -> F32:
    """Stored vectors back as float32 unit rows (zero rows stay zero); all of one dimension,
    a blob's length."""
    dim = len(blobs[0]) if blobs else DIM
    m = np.frombuffer(b"".join(blobs), np.int8).reshape(len(blobs), dim).astype(np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = m / norms
    return out
