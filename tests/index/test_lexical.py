"""PostgreSQL's bm25 (remd/index/lexical.py: the term index, each stem's postings as counted, the
namespace's statistics) ranks and scores as SQLite's FTS5 does, on the same memories of one
namespace (whose statistics are then the file's too)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from remd import Memory
from remd.index import lexical
from tests.pg_server import SuiteServer

WORDS = ["harbour", "ferry", "pier", "lantern", "garden", "tomato", "basil", "kettle", "violin",
         "piano", "marathon", "glacier", "canyon", "desert", "orchard", "lemon", "cedar",
         "falcon", "copper", "ribbon", "velvet", "quartz"]


def _texts(count: int) -> list[str]:
    rng = random.Random(5)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) + "."
            for _ in range(count)]


def _search(mem: Memory, query: str, limit: int) -> list[tuple[int, float]]:
    counts = mem.engine.caches.terms
    with mem.store.snapshot() as conn:
        counts.sync(conn, mem.namespace)
        terms = lexical.query_terms(conn, query, 8)
        match = lexical.match_expression(conn, mem.namespace, terms, counts, max_postings=2000)
        assert match is not None
        return lexical.search(conn, match, limit, mem.namespace)


def test_bm25_on_postgresql_ranks_and_scores_as_fts5(tmp_path: Path,
                                                    pg_server: SuiteServer) -> None:
    texts = _texts(120)
    with Memory(tmp_path / "fts5.db", embedder=None) as file, \
            Memory(pg_server.fresh_url(), embedder=None) as server:
        for mem in (file, server):
            mem.save_many(texts)
        for query in ("the ferry to the harbour pier", "violin and piano",
                      "lemon orchard in the desert canyon", "quartz"):
            fts5, pg = _search(file, query, 15), _search(server, query, 15)
            assert len(fts5) == 15
            assert [rid for rid, _ in pg] == [rid for rid, _ in fts5], query
            assert [s for _, s in pg] == pytest.approx([s for _, s in fts5], rel=1e-9), query
