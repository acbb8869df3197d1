from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import SecretStr

from remd import Config, Memory
from remd.config import EmbedConfig
from remd.text.embed import DIM, MiniLMEmbedder, make_embedder
from tests.llm_server import LLMServer


def test_minilm_vectors_are_normalised_and_semantic() -> None:
    e = MiniLMEmbedder()
    v = e.embed(["I adopted a puppy", "We got a young dog", "The invoice is overdue"])
    assert v.shape == (3, DIM) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # Batching and order do not change a text's vector.
    again = e.embed(["The invoice is overdue", "I adopted a puppy"])
    assert np.allclose(again[1], v[0], atol=1e-5) and np.allclose(again[0], v[2], atol=1e-5)


def test_the_model_is_shared_per_process() -> None:
    assert make_embedder(EmbedConfig()) is make_embedder(EmbedConfig())
    assert make_embedder(EmbedConfig(provider="none")) is None


def test_openai_compatible_embedder(db_path: Path, llm_server: LLMServer) -> None:
    cfg = Config(embed=EmbedConfig(provider="openai", base_url=llm_server.base_url,
                                   api_key=SecretStr("sk-test"), model="emb-test"))
    with Memory(db_path, config=cfg) as m:
        a = m.save("first memory via the endpoint")
        m.save_many(["second", "third"])
        assert m.stats().pending_embeddings == 0
        assert m.nearest("first memory via the endpoint", k=1)[0][0].id == a.id
    req = llm_server.embedding_requests[0]
    assert "dimensions" not in req and req["model"] == "emb-test"  # the model's own size
    with Memory(db_path, config=cfg, embedder=None) as m:
        assert m.store.one("SELECT length(vec) FROM node_vec_bit")[0] == 1536


def test_failing_embedder_keeps_memory_in_backlog(db_path: Path) -> None:
    from tests.llm_server import refused_base_url

    cfg = Config(embed=EmbedConfig(provider="openai", base_url=refused_base_url()))
    with Memory(db_path, config=cfg) as m:
        node = m.save("saved even though the embedder is down")
        assert m.get(node.id).content == "saved even though the embedder is down"
        assert m.stats().pending_embeddings == 1


def test_the_endpoint_is_asked_batch_size_texts_at_a_time(llm_server: LLMServer) -> None:
    from remd.text.embed import OpenAIEmbedder

    e = OpenAIEmbedder(EmbedConfig(provider="openai", base_url=llm_server.base_url,
                                   model="emb-test", batch_size=2, dimensions=768))
    v = e.embed(["one", "two", "three", "four", "five"])
    assert v.shape == (5, 768) and e.dim == 768
    assert [len(r["input"]) for r in llm_server.embedding_requests] == [2, 2, 1]
    assert np.allclose(v[2], e.embed(["three"])[0], atol=1e-6)  # the same text, the same vector
