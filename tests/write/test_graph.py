"""The one graph writer (remd/write/graph.py): no other module writes a node, its tags, tag
counts, edges, full-text rows, vectors or status (read from the source), and a save and a synthesis
written through it leave the same kinds of rows (real database, both backends)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from remd import Memory
from remd.ids import new_id
from remd.write.graph import GraphWriter, NodeRow, mark_embedded

pytestmark = pytest.mark.backends

PKG = Path(__file__).resolve().parents[2] / "remd"
WRITER = PKG / "write" / "graph.py"
STORE = PKG / "store"  # the schema, migrations and each store's own bookkeeping

# SQL only the graph writer sends (the index modules implement the FTS and vector rows it asks for).
OWNED_SQL = {
    "a node inserted or deleted": (r"\bINSERT INTO nodes\b|\bDELETE FROM nodes\b"
                                   r"|\bDELETE FROM \{", ()),
    "a node's status changed": (r"\bUPDATE nodes SET (?:[a-z_]+ = [^,]+, )*status\b", ()),
    "a node's vectors recorded": (r"\bUPDATE nodes SET embedded\b", ()),
    "tags on a node": (r"\b(?:INSERT INTO|DELETE FROM|UPDATE) node_tags\b", ()),
    "a tag's count": (r"\bSET df\b", ()),
    "an edge between nodes": (r"\b(?:INSERT INTO|DELETE FROM|UPDATE) edges\b", ()),
    "a full-text row": (r"\b(?:INSERT INTO|DELETE FROM|UPDATE) "
                        r"(?:node_fts|node_terms|node_terms_len|fts_stats)\b",
                        ("index/lexical.py",)),
    "a vector row": (r"\b(?:INSERT(?: OR REPLACE)? INTO|DELETE FROM|UPDATE) "
                     r"(?:node_vec_bit|sentence_vec)\b", ("index/vectors.py",)),
}
# The index functions that write those rows: called by the graph writer only.
OWNED_CALLS = {"index_text", "unindex_text", "write_vectors", "write_sentence_vectors",
               "delete_vectors"}


def _sources() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if p != WRITER and STORE not in p.parents]


def _strings(tree: ast.AST) -> list[str]:
    """Every string literal of a module (an f-string's literal parts joined, ``{`` marking
    each value), white space collapsed."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(str(v.value) if isinstance(v, ast.Constant) else "{"
                               for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return [" ".join(s.split()) for s in out]


def test_only_the_graph_writer_writes_the_graph() -> None:
    wrong = []
    for path in _sources():
        rel = str(path.relative_to(PKG))
        tree = ast.parse(path.read_text())
        for text in _strings(tree):
            for what, (pattern, allowed) in OWNED_SQL.items():
                if rel not in allowed and re.search(pattern, text):
                    wrong.append(f"{rel}: {what}: {text[:70]}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else (
                    node.func.id if isinstance(node.func, ast.Name) else "")
                if name in OWNED_CALLS:
                    wrong.append(f"{rel}:{node.lineno}: calls {name}")
    assert wrong == []


def test_the_patterns_find_what_they_look_for() -> None:
    """The check above reads the writer itself as it reads the others: each kind is found."""
    texts = _strings(ast.parse(WRITER.read_text()))
    for what, (pattern, _) in OWNED_SQL.items():
        if what in ("a full-text row", "a vector row"):
            continue  # written by the index functions the writer calls
        assert any(re.search(pattern, t) for t in texts), what
    calls = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
             for n in ast.walk(ast.parse(WRITER.read_text()))
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)}
    assert calls >= OWNED_CALLS


def _rows(mem: Memory, backend: str, rid: int, word: str) -> dict[str, object]:
    """What the graph holds for node ``rid``: its tags and their counts, whether ``word``
    finds it in the full-text index, its vector."""
    q, ns = mem.store.query, mem.namespace
    tags = q("SELECT tid FROM node_tags WHERE namespace = ? AND rid = ? ORDER BY tid", (ns, rid))
    counted = [q("SELECT df, (SELECT count(*) FROM node_tags n WHERE n.namespace = t.namespace "
                 "AND n.tid = t.tid) FROM tags t WHERE namespace = ? AND tid = ?", (ns, t))[0]
               for (t,) in tags]
    if backend == "postgres":
        fts = q("SELECT rid FROM node_terms WHERE namespace = ? AND stem = ? AND rid = ?",
                (ns, word[:-1], rid))  # the porter stem
    else:
        fts = q("SELECT rowid FROM node_fts WHERE node_fts MATCH ? AND rowid = ?", (word, rid))
    vec = q("SELECT length(vec) FROM node_vec_bit WHERE namespace = ? AND rid = ?", (ns, rid))
    embedded = q("SELECT embedded FROM nodes WHERE namespace = ? AND rid = ?", (ns, rid))
    return {"tags": len(tags) > 0, "df exact": all(df == n for df, n in counted),
            "fts": len(fts) == 1, "vector": [tuple(r) for r in vec],
            "embedded": embedded[0][0]}


def test_a_save_and_a_synthesis_leave_the_same_rows(mem: Memory, backend: str) -> None:
    saved = mem.save("Marguerite repaired the lighthouse lamp in Saint-Malo")
    ns = mem.namespace
    rid = int(mem.store.query("SELECT rid FROM nodes WHERE namespace = ? AND id = ?",
                              (ns, saved.id))[0][0])
    engine = mem.engine
    assert engine.embedder is not None
    content = "Marguerite keeps the Saint-Malo lighthouse: she repaired its lamp"
    [vec] = engine.embedder.embed([content])
    tids = [int(t) for (t,) in mem.store.query(
        "SELECT tid FROM node_tags WHERE namespace = ? AND rid = ?", (ns, rid))]
    with engine.store.transaction() as conn:
        graph = GraphWriter(conn, ns)
        srid = graph.insert_node(NodeRow(
            id=new_id(), kind="synthesis", content=content, source="rem:test", status="live",
            created_at=engine.clock(), last_access=engine.clock(), access_count=0,
            confidence=0.5, importance=0.5, tokens=engine.counter.count(content),
            rem_run="test"))
        graph.tag(srid, [(t, 1.0) for t in tids])
        graph.write_vector(srid, vec)
        mark_embedded(conn, [(ns, srid)])
    memory = _rows(mem, backend, rid, "lighthouse")
    synthesis = _rows(mem, backend, srid, "lighthouse")
    assert memory == synthesis
    assert memory["tags"] and memory["df exact"] and memory["fts"] and memory["embedded"] == 1
    assert synthesis["vector"] == memory["vector"] != []
    node = mem.get(mem.store.query("SELECT id FROM nodes WHERE rid = ?", (srid,))[0][0])
    assert node.kind.value == "synthesis" and node.tags == saved.tags


def test_no_edge_names_a_tag_that_is_not_there(mem: Memory) -> None:
    """PostgreSQL checks no foreign key on tag_edges (migration 0009_edge_checks): the writers
    keep every edge between tags that exist, through saves, merges, renames, forgetting, a
    REM run and its rollback, and an import."""
    dangling = ("SELECT count(*) FROM tag_edges e WHERE e.namespace = ? AND ("
                "NOT EXISTS (SELECT 1 FROM tags t WHERE t.namespace = e.namespace "
                "AND t.tid = e.src) OR NOT EXISTS (SELECT 1 FROM tags t "
                "WHERE t.namespace = e.namespace AND t.tid = e.dst))")
    ns = mem.namespace
    first = mem.save("Ines booked the ferry to Hydra for the second week of June",
                     tags=["ferry", "hydra", "june"])
    mem.save_many([f"Ferry timetable note {i}: the Hydra boat leaves Piraeus at {7 + i}:30"
                   for i in range(12)], tags=["ferry", "timetable"])
    mem.save("The Hydra rental has no wifi, bring the hotspot", tags=["hydra", "wifi"])
    mem.merge_tags("timetable", "ferry")
    mem.rename_tag("wifi", "internet")
    mem.forget(first.id)
    run = mem.run_rem(now=mem.clock() + 40 * 86400)
    assert mem.store.scalar(dangling, (ns,)) == 0
    if run.run_id and run.synthesised:
        mem.rollback(run.run_id)
    lines = list(mem.export_lines())
    other = Memory.bound(mem.engine, "imported")
    other.import_lines(lines)
    assert mem.store.scalar("SELECT count(*) FROM tag_edges WHERE namespace = ?", (ns,)) > 0
    for namespace in (ns, "imported"):
        assert mem.store.scalar(dangling, (namespace,)) == 0
