"""`remd mcp`: the tools spoken to by the official MCP SDK client over stdio, in a real
subprocess over a real file."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from remd import Memory
from remd.cli.main import main
from remd.mcp.server import find_contradictions
from remd.text.tokens import TokenCounter

pytestmark = pytest.mark.backends

TOOLS = {"save_memory", "inject_memories", "memory_feedback", "memory_history",
         "find_contradictions", "restore_memory"}


def params(db: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from remd.cli.main import main; sys.exit(main())",
              "--db", str(db), *extra, "mcp"],
        # PYTHONPATH: a checkout run from elsewhere serves its own remd, not an installed one
        env={k: v for k, v in os.environ.items()
             if k.startswith(("REMD_", "TIKTOKEN", "XDG", "PYTHONPATH"))},
        cwd=str(_workdir(db)))


def _workdir(db: Path) -> Path:
    """The file's directory; for a PostgreSQL URL, a temporary one of its own."""
    if isinstance(db, Path):
        return db.parent
    where = Path(tempfile.gettempdir()) / f"remd-mcp-{hashlib.sha1(db.encode()).hexdigest()[:12]}"
    where.mkdir(exist_ok=True)
    return where


def session(db: Path, body: Callable[[Client], Awaitable[None]], *extra: str) -> None:
    async def main_() -> None:
        # The server's stderr (its logs) goes to a file the test reads afterwards.
        with open(_workdir(db) / "mcp-stderr.log", "w") as errlog:  # noqa: ASYNC230
            transport = stdio_client(params(db, *extra), errlog=errlog)
            async with Client(transport, read_timeout_seconds=120) as client:
                await body(client)

    anyio.run(main_)


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def test_every_tool_over_stdio(db_path: Path) -> None:
    async def body(client: Client) -> None:
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == TOOLS
        assert "token_budget" in tools["inject_memories"].input_schema["properties"]
        assert "fill" in tools["inject_memories"].input_schema["properties"]
        assert "dated" in tools["inject_memories"].input_schema["properties"]

        old = data(await client.call_tool("save_memory", {"content": "My city is Bangalore"}))
        new = data(await client.call_tool("save_memory", {
            "content": "My city has changed to Mumbai", "tags": ["home"]}))
        assert new["status"] == "live" and "home" in new["tags"]
        plan = data(await client.call_tool("save_memory", {
            "content": "Deploy the API with Docker on Fridays"}))
        data(await client.call_tool("save_memory", {
            "content": f"Never deploy on Fridays; this contradicts [[memory:{plan['id']}]]"}))

        history = data(await client.call_tool("memory_history", {"memory_id": new["id"]}))
        assert [m["id"] for m in history["memories"]] == [old["id"], new["id"]]
        assert history["memories"][0]["status"] == "superseded"

        pack = data(await client.call_tool("inject_memories", {
            "query": "which city do I live in?", "token_budget": 30}))
        assert set(pack) == {"pack_id", "budget", "tokens_used", "items"}
        assert 0 < pack["tokens_used"] <= 30
        contents = [i["content"] for i in pack["items"]]
        assert "My city has changed to Mumbai" in contents
        assert "My city is Bangalore" not in contents  # stale facts never come back
        full = data(await client.call_tool("inject_memories", {
            "query": "which city do I live in?", "token_budget": 200, "fill": True}))
        assert full["tokens_used"] >= pack["tokens_used"]
        assert "My city is Bangalore" not in [i["content"] for i in full["items"]]
        counter = TokenCounter("o200k_base")
        assert counter.count("\n".join(contents)) == pack["tokens_used"]
        dated = data(await client.call_tool("inject_memories", {
            "query": "which city do I live in?", "token_budget": 60, "dated": True}))
        today = dt.datetime.now(dt.UTC).date().isoformat()
        assert f"[{today}] My city has changed to Mumbai" in [
            i["content"] for i in dated["items"]]

        fb = data(await client.call_tool("memory_feedback", {"pack_id": pack["pack_id"],
                                                             "accepted": True}))
        assert fb["applied"] is True and fb["pack_id"] == pack["pack_id"]

        found = data(await client.call_tool("find_contradictions", {"topic": "deploy"}))
        ((pair,),) = [found["contradictions"]]
        assert pair["contradicts"]["id"] == plan["id"]
        assert "Never deploy" in pair["memory"]["content"]
        none = data(await client.call_tool("find_contradictions", {"topic": "chocolate"}))
        assert none["contradictions"] == []
        # "It was not an update": the superseded city is live again, and stays so.
        back = data(await client.call_tool("restore_memory", {"memory_id": old["id"]}))
        assert back["status_before"] == "superseded" and back["by"] == [new["id"]]
        history = data(await client.call_tool("memory_history", {"memory_id": old["id"]}))
        assert [m["status"] for m in history["memories"]] == ["live"]

        # Namespaces: the server's --namespace by default, or per call.
        data(await client.call_tool("save_memory", {"content": "Sprint review on Thursday",
                                                    "namespace": "work"}))
        work = data(await client.call_tool("inject_memories", {
            "query": "sprint review", "token_budget": 50, "namespace": "work"}))
        assert [i["content"] for i in work["items"]] == ["Sprint review on Thursday"]

    session(db_path, body)
    with Memory(db_path, "work", embedder=None) as m:
        assert m.stats().live == 1


def test_tool_errors_are_reported_to_the_model_and_store_nothing(db_path: Path) -> None:
    async def body(client: Client) -> None:
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("save_memory", {"content": "   "}, "InvalidInput"),
            ("save_memory", {"content": "ok", "namespace": "bad ns"}, "InvalidInput"),
            ("inject_memories", {"query": "x", "token_budget": -5}, "InvalidInput"),
            ("memory_feedback", {"pack_id": "nope", "accepted": True}, "NotFound"),
            ("memory_history", {"memory_id": "missing"}, "NotFound"),
            ("find_contradictions", {"limit": 0}, "InvalidInput"),
            ("find_contradictions", {"memory_id": "missing"}, "NotFound"),
        ]
        for name, args, kind in cases:
            result = await client.call_tool(name, args)
            assert result.is_error, (name, args)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert kind in text and "Traceback" not in text
        wrong_type = await client.call_tool("inject_memories", {"query": "x",
                                                                "token_budget": "lots"})
        assert wrong_type.is_error

    session(db_path, body, "--namespace", "agent1")
    with Memory(db_path, "agent1", embedder=None) as m:
        assert m.stats().nodes == 0
    log = (_workdir(db_path) / "mcp-stderr.log").read_text()
    assert all(json.loads(line) for line in log.splitlines() if line.strip().startswith("{"))


def test_find_contradictions_in_process(mem: Memory) -> None:
    a = mem.save("Use tabs for indentation")
    b = mem.save(f"Use four spaces; this conflicts with [[memory:{a.id}]]")
    mem.save("Unrelated: lunch at noon")
    pairs = find_contradictions(mem)
    assert [(p["memory"]["id"], p["contradicts"]["id"]) for p in pairs] == [(b.id, a.id)]
    assert find_contradictions(mem, memory_id=a.id) == pairs
    assert find_contradictions(mem, topic="indentation") == pairs
    assert find_contradictions(mem, topic="lunch") == []
    mem.forget(a.id)  # only live memories disagree
    assert find_contradictions(mem) == []


def test_mcp_refuses_an_unusable_file_with_one_line(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_text("not a database" * 100)
    result = CliRunner().invoke(main, ["--db", str(bogus), "mcp"])
    assert result.exit_code == 1 and "not a SQLite database" in result.stderr
