"""Contradictions by topic: one engine function (remd.query.contradictions) that the Python API,
the CLI, HTTP and MCP all offer, with the same pairs and the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from remd import Memory
from remd.errors import InvalidInput, NotFound
from remd.mcp.server import find_contradictions
from remd.wire import pair_to_dict
from tests.cli.test_main import run

pytestmark = pytest.mark.backends


def _disagreeing(mem: Memory) -> tuple[str, str, str]:
    """Two pairs that disagree (one about indentation, one about the standup) and a bystander."""
    tabs = mem.save("Use tabs for indentation in the Go services")
    spaces = mem.save(f"Use four spaces instead; this conflicts with [[memory:{tabs.id}]]")
    standup = mem.save("The standup is at 9:30 every weekday")
    mem.save(f"Standup moved to 10 o'clock, that conflicts with [[memory:{standup.id}]]")
    mem.save("Lunch with Priya on Friday")
    return tabs.id, spaces.id, standup.id


def test_every_front_end_gives_the_same_pairs(db_path: Path, api: httpx.Client) -> None:
    with Memory(db_path, embedder=None) as mem:
        tabs, spaces, standup = _disagreeing(mem)
        everything = [pair_to_dict(*p) for p in mem.contradictions()]
        about_tabs = [pair_to_dict(*p) for p in mem.contradictions(topic="indentation")]
        assert len(everything) == 2
        assert [(p["memory"]["id"], p["contradicts"]["id"]) for p in about_tabs] == [(spaces, tabs)]
        assert [pair_to_dict(*p) for p in mem.contradictions(memory_id=standup)] == everything[:1]
        assert [pair_to_dict(*p) for p in mem.contradictions(limit=1)] == everything[:1]
        assert mem.contradictions(topic="the quarterly budget") == []
        assert find_contradictions(mem, topic="indentation") == about_tabs

    code, out, _ = run(db_path, "contradictions", "--topic", "indentation", "--json")
    assert code == 0 and json.loads(out) == {"contradictions": about_tabs}
    code, out, _ = run(db_path, "contradictions")
    assert code == 0 and spaces in out and "probably updates" in out and "Lunch" not in out

    got = api.get("/v1/contradictions", params={"topic": "indentation"})
    assert got.status_code == 200 and got.json() == {"contradictions": about_tabs}
    assert api.get("/v1/contradictions").json() == {"contradictions": everything}
    assert api.get("/v1/contradictions",
                   params={"memory_id": standup}).json()["contradictions"] == everything[:1]


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "201"}, {"limit": "ten"},
                                    {"topic": "  "}])
def test_bad_input_is_refused_everywhere(db_path: Path, api: httpx.Client,
                                         params: dict[str, str]) -> None:
    with Memory(db_path, embedder=None) as mem:
        _disagreeing(mem)
        before = len(mem.contradictions())
        if "topic" in params:
            with pytest.raises(InvalidInput, match="topic"):
                mem.contradictions(topic=params["topic"])
        else:
            with pytest.raises(InvalidInput, match="limit"):
                mem.contradictions(limit=int(params["limit"]) if params["limit"].isdigit()
                                   else params["limit"])  # type: ignore[arg-type]
    refused = api.get("/v1/contradictions", params=params)
    assert refused.status_code == 400 and refused.json()["error"]["type"] == "InvalidInput"
    flag, value = next(iter(params.items()))
    code, _, err = run(db_path, "contradictions", f"--{flag}", value)
    assert code != 0 and err
    with Memory(db_path, embedder=None) as mem:  # nothing stored was touched
        assert len(mem.contradictions()) == before


def test_an_unknown_memory_is_not_found(db_path: Path, api: httpx.Client) -> None:
    with Memory(db_path, embedder=None) as mem:
        _disagreeing(mem)
        with pytest.raises(NotFound):
            mem.contradictions(memory_id="nosuchmemory0000")
    missing = api.get("/v1/contradictions", params={"memory_id": "nosuchmemory0000"})
    assert missing.status_code == 404
    code, _, err = run(db_path, "contradictions", "--id", "nosuchmemory0000")
    assert code != 0 and "nosuchmemory0000" in err
