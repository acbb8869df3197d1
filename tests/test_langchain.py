"""remd.langchain (issue 21, its LangChain part): the tools invoked directly, and inside a real
LangGraph create_react_agent driven by langchain-core's fake chat model (a scripted tool call:
no remote LLM). Real SQLite file, real embedder."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langgraph.prebuilt import create_react_agent  # noqa: E402

from remd import Memory  # noqa: E402
from remd.langchain import (  # noqa: E402
    MemoryFeedbackTool,
    RecallMemoriesTool,
    SaveMemoryTool,
    memory_tools,
)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "lc.db") as m:
        m.save("I'm allergic to peanuts")
        m.save("My city is Lisbon")
        yield m


def test_schemas_are_pydantic_with_descriptions_for_the_model(mem: Memory) -> None:
    for tool in memory_tools(mem):
        schema = tool.args_schema.model_json_schema()  # type: ignore[union-attr]
        assert tool.description and schema["properties"]
        assert all(p.get("description") for p in schema["properties"].values()), tool.name
    recall = RecallMemoriesTool(memory=mem).args_schema.model_json_schema()  # type: ignore[union-attr]
    assert recall["required"] == ["query"]  # the budget is optional


def test_tools_invoked_directly(mem: Memory) -> None:
    recall, save, feedback = (RecallMemoriesTool(memory=mem), SaveMemoryTool(memory=mem),
                              MemoryFeedbackTool(memory=mem))
    out = recall.invoke({"query": "what is the user allergic to?", "token_budget": 60})
    head, _, body = out.partition("\n")
    assert head.startswith("[pack ") and "peanuts" in body
    pack_id = head[len("[pack "):-1]
    assert feedback.invoke({"pack_id": pack_id, "helpful": True}) == "feedback recorded"
    saved = save.invoke({"content": "The user drinks masala chai", "tags": ["drink"]})
    assert saved.startswith("saved memory ")
    assert mem.get(saved.split()[-1]).content == "The user drinks masala chai"
    with pytest.raises(Exception, match="token_budget"):
        recall.invoke({"query": "x", "token_budget": "many"})
    assert asyncio.run(recall.ainvoke({"query": "where does the user live?"})).count(
        "Lisbon") == 1


class _ScriptedModel(GenericFakeChatModel):
    """langchain-core's fake chat model; the agent binds tools to it, which it ignores."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> _ScriptedModel:
        return self


def test_a_react_agent_recalls_through_the_tool(mem: Memory) -> None:
    script = iter([
        AIMessage(content="", tool_calls=[{"name": "recall_memories", "id": "call-1",
                                           "args": {"query": "user allergies"}}]),
        AIMessage(content="You are allergic to peanuts."),
    ])
    agent = create_react_agent(_ScriptedModel(messages=script), memory_tools(mem))
    result = agent.invoke({"messages": [HumanMessage("What am I allergic to?")]})
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1 and "peanuts" in str(tool_messages[0].content)
    assert result["messages"][-1].content == "You are allergic to peanuts."
    assert mem.store.scalar("SELECT count(*) FROM packs") == 1  # the tool really injected
