"""Tag tools: hierarchy, clusters, suggestions, rename, merge, export (real database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import Conflict, InvalidInput, Memory, NotFound
from remd.cli.main import main

pytestmark = pytest.mark.backends

TEXTS = [
    "Unit tests for the parser run on every commit",
    "Integration tests need the staging database",
    "Pytest fixtures make the unit tests fast",
    "The parser handles nested JSON arrays",
    "Deploy the staging database on Monday",
]


def snapshot(mem: Memory) -> tuple[object, ...]:
    q = mem.store.query
    return (q("SELECT * FROM tags ORDER BY tid"), q("SELECT * FROM node_tags ORDER BY tid, rid"),
            q("SELECT * FROM tag_edges ORDER BY src, dst"),
            q("SELECT * FROM tag_parents ORDER BY child, parent"))


@pytest.fixture
def tagged(mem: Memory) -> Memory:
    mem.save_many(TEXTS)
    return mem


# -- IS_SUBTYPE_OF ------------------------------------------------------------------------------
def test_hierarchy_register_and_traverse(tagged: Memory) -> None:
    tagged.add_subtype("unit test", "Testing")
    tagged.add_subtype("integration-tests", "testing")
    tagged.add_subtype("testing", "engineering")
    tagged.add_subtype("unit-test", "testing")  # again: a no-op
    assert tagged.supertypes("unit-test") == ["testing", "engineering"]
    assert sorted(tagged.subtypes("testing")) == ["integration-test", "unit-test"]
    assert sorted(tagged.subtypes("engineering")) == ["integration-test", "testing", "unit-test"]
    assert tagged.subtypes("unit-test") == []
    with pytest.raises(NotFound):
        tagged.subtypes("no-such-tag")


@pytest.mark.parametrize("child,parent", [("testing", "testing"), ("engineering", "unit-test"),
                                          ("testing", "unit-test")])
def test_hierarchy_refuses_cycles_and_changes_nothing(tagged: Memory, child: str,
                                                      parent: str) -> None:
    tagged.add_subtype("unit-test", "testing")
    tagged.add_subtype("testing", "engineering")
    before = snapshot(tagged)
    with pytest.raises(Conflict):
        tagged.add_subtype(child, parent)
    assert snapshot(tagged) == before


def test_bad_tag_name_is_invalid_input(tagged: Memory) -> None:
    before = snapshot(tagged)
    with pytest.raises(InvalidInput):
        tagged.add_subtype("   ", "testing")
    assert snapshot(tagged) == before


def test_inject_follows_subtypes(mem: Memory) -> None:
    mem.save("Pytest fixtures make the suite fast")
    mem.save("Lunch at noon")
    mem.add_subtype("pytest", "testing")
    mem.save("Testing strategy notes")  # makes "testing" a seed-able tag with a memory
    pack = mem.inject("testing", 1000, fill=True)
    fixture = next(i for i in pack.items if i.content.startswith("Pytest"))
    assert fixture.path[:2] == ("testing", "pytest")


def test_subtypes_survive_export_import(tagged: Memory, tmp_path: Path) -> None:
    tagged.add_subtype("unit-test", "testing")
    lines = list(tagged.export_lines())
    with Memory(tmp_path / "copy.db") as other:
        other.import_lines(lines)
        assert other.supertypes("unit-test") == ["testing"]


# -- reading the graph --------------------------------------------------------------------------
def test_memories_by_tag_cluster(tagged: Memory) -> None:
    cluster = tagged.memories_by_tag_cluster("parser", depth=1)
    assert cluster.tags[0] == ("parser", 1.0)
    names = {t for t, _ in cluster.tags}
    assert "unit-test" in names or "json" in names  # co-occurring tags joined the cluster
    contents = [n.content for n in cluster.memories]
    assert set(contents[:2]) == {TEXTS[0], TEXTS[3]}  # carriers of the seed tag first
    assert TEXTS[2] in contents  # reached through unit-test
    assert all(n.status.value == "live" for n in cluster.memories)
    only = tagged.memories_by_tag_cluster("parser", depth=0)
    assert {n.content for n in only.memories} == {TEXTS[0], TEXTS[3]}
    with pytest.raises(NotFound):
        tagged.memories_by_tag_cluster("nothing-here")
    with pytest.raises(InvalidInput):
        tagged.memories_by_tag_cluster("parser", depth=-1)


def test_suggest_related_tags(tagged: Memory) -> None:
    tagged.add_subtype("unit-test", "testing")
    suggestions = dict(tagged.suggest_related_tags(["Unit"]))
    assert "parser" in suggestions and "test" in suggestions and "unit" not in suggestions
    assert list(suggestions.values()) == sorted(suggestions.values(), reverse=True)
    by_hierarchy = dict(tagged.suggest_related_tags(["unit-test"]))
    assert "testing" in by_hierarchy and "pytest" in by_hierarchy
    assert tagged.suggest_related_tags(["never-seen"]) == []
    with pytest.raises(InvalidInput):
        tagged.suggest_related_tags("unit-test")  # type: ignore[arg-type]


# -- curating ----------------------------------------------------------------------------------
def test_rename_tag(tagged: Memory) -> None:
    assert tagged.rename_tag("parser", "Parsing Engine") == "parsing-engine"
    nodes = {n.content: n.tags for n in tagged.recent(10)}
    assert "parsing-engine" in nodes[TEXTS[0]] and "parser" not in nodes[TEXTS[0]]
    with pytest.raises(NotFound):
        tagged.rename_tag("parser", "x")
    before = snapshot(tagged)
    with pytest.raises(Conflict):
        tagged.rename_tag("parsing-engine", "staging")
    assert snapshot(tagged) == before


def test_merge_tags(tagged: Memory) -> None:
    tagged.add_subtype("integration-test", "testing")
    tid = {n: t for t, n in tagged.store.query("SELECT tid, name FROM tags")}
    u, i = tid["unit-test"], tid["integration-test"]
    edges_u = dict(tagged.store.query("SELECT dst, count FROM tag_edges WHERE src = ?", (u,)))
    edges_i = dict(tagged.store.query("SELECT dst, count FROM tag_edges WHERE src = ?", (i,)))
    assert tagged.merge_tags("integration-test", "unit-test") == "unit-test"
    carriers = {n.content for n in tagged.recent(10) if "unit-test" in n.tags}
    assert carriers == {TEXTS[1], TEXTS[2]}
    assert tagged.store.scalar("SELECT df FROM tags WHERE tid = ?", (u,)) == 2
    assert tagged.store.scalar("SELECT count(*) FROM tags WHERE name = 'integration-test'") == 0
    assert tagged.store.scalar("SELECT count(*) FROM tag_edges WHERE src = ? OR dst = ?",
                               (i, i)) == 0
    merged = dict(tagged.store.query("SELECT dst, count FROM tag_edges WHERE src = ?", (u,)))
    for dst in set(edges_u) | set(edges_i):
        if dst not in (u, i):
            assert merged[dst] == edges_u.get(dst, 0) + edges_i.get(dst, 0)
    assert u not in merged  # no self-loop
    assert tagged.supertypes("unit-test") == ["testing"]
    # symmetric counts stay symmetric
    for dst, count in merged.items():
        assert tagged.store.scalar("SELECT count FROM tag_edges WHERE src = ? AND dst = ?",
                                   (dst, u)) == count


def test_merge_refusals_change_nothing(tagged: Memory) -> None:
    tagged.add_subtype("unit-test", "testing")
    tagged.add_subtype("testing", "engineering")
    tagged.add_subtype("engineering", "work")
    before = snapshot(tagged)
    with pytest.raises(Conflict):
        tagged.merge_tags("parser", "parser")
    with pytest.raises(NotFound):
        tagged.merge_tags("parser", "missing")
    # "unit-test" below "testing": merging "work" into "unit-test" puts unit-test above itself
    with pytest.raises(Conflict, match="cyclic"):
        tagged.merge_tags("work", "unit-test")
    assert snapshot(tagged) == before


# -- export ------------------------------------------------------------------------------------
def test_export_json_and_dot(tagged: Memory) -> None:
    tagged.add_subtype("unit-test", "testing")
    data = json.loads(tagged.export_tag_graph("json"))
    names = {t["name"] for t in data["tags"]}
    assert {"parser", "unit-test", "testing"} <= names
    assert data["subtypes"] == [{"child": "unit-test", "parent": "testing"}]
    weights = [e["weight"] for e in data["edges"]]
    assert weights == sorted(weights, reverse=True) and all(0 < w <= 1 for w in weights)
    assert len(json.loads(tagged.export_tag_graph("json", max_edges=3))["edges"]) == 3
    dot = tagged.export_tag_graph("dot")
    assert dot.startswith('digraph "remd:default" {') and dot.rstrip().endswith("}")
    assert '"unit-test" -> "testing" [style=dashed' in dot
    with pytest.raises(InvalidInput):
        tagged.export_tag_graph("svg")  # type: ignore[arg-type]


def test_cli_tags_commands(db_path: Path) -> None:
    runner = CliRunner()

    def cli(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(main, ["--db", str(db_path), *args], catch_exceptions=False)
        return r.exit_code, r.stdout, r.stderr

    for text in TEXTS:
        cli("save", text)
    code, out, _ = cli("tags", "subtype", "unit-test", "testing")
    assert code == 0
    code, out, _ = cli("tags", "export", "--format", "json")
    assert code == 0 and json.loads(out)["subtypes"] == [{"child": "unit-test",
                                                         "parent": "testing"}]
    code, out, _ = cli("tags", "export", "--format", "dot")
    assert code == 0 and out.startswith("digraph")
    assert cli("tags", "rename", "parser", "parsing")[1].strip() == "parsing"
    assert cli("tags", "merge", "integration-test", "unit-test")[0] == 0
    code, _, err = cli("tags", "subtype", "testing", "unit-test")
    assert code == 1 and "cycle" in err and err.count("\n") == 1
    code, _, err = cli("tags", "merge", "nope", "parsing")
    assert code == 1 and "no tag" in err
    assert cli("tags", "export", "--format", "svg")[0] == 2
