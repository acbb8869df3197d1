"""feedback: EMA on the tag edges that built a pack, once per pack (real database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remd import Config, InvalidInput, Memory, NotFound
from remd.cli.main import main
from remd.config import InjectConfig

pytestmark = pytest.mark.backends

TEXTS = [
    "Peanut butter sandwiches for lunch on school days",
    "I'm allergic to peanuts, keep an epinephrine pen nearby",
    "Lunch with the design team every Thursday",
    "Sushi for lunch near the office is great",
    "The garden needs new tomato plants",
]


def walked_edges(mem: Memory, pack_id: str) -> list[tuple[int, int]]:
    edges = []
    for (raw,) in mem.store.query("SELECT path FROM pack_items WHERE pack_id = ?", (pack_id,)):
        path = json.loads(raw)
        edges += list(zip(path, path[1:], strict=False))
    return sorted(set(edges))


def weights(mem: Memory, edges: list[tuple[int, int]]) -> dict[tuple[int, int], float]:
    return {(a, b): mem.store.scalar("SELECT weight FROM tag_edges WHERE src = ? AND dst = ?",
                                     (a, b)) for a, b in edges}


@pytest.fixture
def config() -> Config:
    # Vector neighbours' tags would seed "peanut" directly; here only the walk may reach it.
    return Config(inject=InjectConfig(vector_seed_nodes=0))


@pytest.fixture
def graph_pack(mem: Memory) -> tuple[Memory, str, list[tuple[int, int]]]:
    mem.save_many(TEXTS)
    pack = mem.inject("what should I pack for lunch?", 1000)
    edges = walked_edges(mem, pack.pack_id)
    assert edges, "the pack should hold an item reached through a tag edge"
    return mem, pack.pack_id, edges


@pytest.mark.parametrize("accepted,target", [(True, 1.0), (False, 0.0), (0.75, 0.75)])
def test_feedback_moves_walked_edges_towards_the_target(
        graph_pack: tuple[Memory, str, list[tuple[int, int]]], accepted: bool | float,
        target: float) -> None:
    mem, pack_id, edges = graph_pack
    before = weights(mem, edges)
    others = mem.store.query("SELECT src, dst, weight FROM tag_edges ORDER BY src, dst")
    result = mem.feedback(pack_id, accepted)
    assert result.applied and result.accepted == target
    assert result.edges_updated == len(edges)
    after = weights(mem, edges)
    eta = mem.config.inject.feedback_eta
    for edge in edges:
        assert after[edge] == pytest.approx((1 - eta) * before[edge] + eta * target)
        if target > before[edge]:
            assert after[edge] > before[edge]
        elif target < before[edge]:
            assert after[edge] < before[edge]
    # edges the pack did not walk keep their weight
    walked = set(edges)
    for src, dst, w in others:
        if (src, dst) not in walked:
            assert mem.store.scalar("SELECT weight FROM tag_edges WHERE src = ? AND dst = ?",
                                    (src, dst)) == w


def test_second_feedback_on_the_same_pack_does_nothing(
        graph_pack: tuple[Memory, str, list[tuple[int, int]]]) -> None:
    mem, pack_id, edges = graph_pack
    first = mem.feedback(pack_id, True)
    after_first = weights(mem, edges)
    second = mem.feedback(pack_id, False)
    assert first.applied and not second.applied
    assert second.edges_updated == 0 and second.accepted == 1.0
    assert weights(mem, edges) == after_first
    assert mem.store.scalar("SELECT count(*) FROM feedback WHERE pack_id = ?", (pack_id,)) == 1


def test_repeated_rejections_weaken_but_never_kill_an_edge(mem: Memory) -> None:
    cfg = Config(inject=InjectConfig(feedback_eta=0.9, vector_seed_nodes=0))
    with Memory(mem.store.path, config=cfg) as m:
        m.save_many(TEXTS)
        edge = None
        for _ in range(6):
            pack = m.inject("what should I pack for lunch?", 1000)
            edges = walked_edges(m, pack.pack_id)
            edge = edge or edges[0]
            m.feedback(pack.pack_id, False)
        w = m.store.scalar("SELECT weight FROM tag_edges WHERE src = ? AND dst = ?", edge)
        assert 0 < w < 0.05


def test_unknown_pack_is_not_found_and_nothing_changes(
        graph_pack: tuple[Memory, str, list[tuple[int, int]]]) -> None:
    mem, _, edges = graph_pack
    before = weights(mem, edges)
    with pytest.raises(NotFound, match="no pack 'nope'"):
        mem.feedback("nope", True)
    assert weights(mem, edges) == before


def test_pack_of_another_namespace_is_not_found(
        graph_pack: tuple[Memory, str, list[tuple[int, int]]]) -> None:
    mem, pack_id, _ = graph_pack
    with Memory(mem.store.path, namespace="other") as other, pytest.raises(NotFound):
        other.feedback(pack_id, True)
    assert mem.feedback(pack_id, True).applied


@pytest.mark.parametrize("accepted", [1.5, -0.1, float("nan"), "yes", None, [1]])
def test_bad_accepted_value_is_refused_and_nothing_changes(
        graph_pack: tuple[Memory, str, list[tuple[int, int]]], accepted: object) -> None:
    mem, pack_id, edges = graph_pack
    before = weights(mem, edges)
    with pytest.raises(InvalidInput):
        mem.feedback(pack_id, accepted)  # type: ignore[arg-type]
    assert weights(mem, edges) == before
    assert mem.store.scalar("SELECT count(*) FROM feedback") == 0


def test_feedback_on_a_pack_without_walked_edges_is_recorded(mem: Memory) -> None:
    mem.save("Our flight to Lisbon departs from gate twelve at dawn")
    pack = mem.inject("flight gate", 0)
    result = mem.feedback(pack.pack_id, True)
    assert result.applied and result.edges_updated == 0
    assert not mem.feedback(pack.pack_id, True).applied


def test_cli_feedback(db_path: Path) -> None:
    runner = CliRunner()

    def cli(*args: str) -> tuple[int, str, str]:
        r = runner.invoke(main, ["--db", str(db_path), *args], catch_exceptions=False)
        return r.exit_code, r.stdout, r.stderr

    for text in TEXTS:
        cli("save", text)
    _, out, _ = cli("inject", "what should I pack for lunch?", "--budget", "500", "--json")
    pack_id = json.loads(out)["pack_id"]
    code, out, _ = cli("feedback", pack_id, "--accept")
    assert code == 0 and "recorded" in out
    code, out, _ = cli("feedback", pack_id, "--reject")
    assert code == 0 and "already recorded" in out
    code, _, err = cli("feedback", "missing-pack", "--accept")
    assert code == 1 and "no pack" in err and err.count("\n") == 1
    assert cli("feedback", pack_id)[0] == 2
