"""remd.langchain (issue 21, its LangChain part): the tools invoked directly, and inside a real
LangGraph create_react_agent driven by langchain-core's fake chat model (a scripted tool call:
no remote LLM). Real SQLite file, real embedder. An error the model causes comes back to it as
the tool's answer (contract row 6)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langgraph")

# LangGraph 1.x warns that create_react_agent moved to `langchain.agents.create_agent`. The
# `langchain` package is not among the test dependencies (langchain-core and langgraph are), and
# docs/integrations.md shows create_agent, so this module keeps the LangGraph loop and silences
# exactly that one warning.
pytestmark = pytest.mark.filterwarnings(
    "ignore:create_react_agent has been moved:langgraph.warnings.LangGraphDeprecatedSinceV10")

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


def test_recall_tool_dated_gives_each_memory_its_day(tmp_path: Path) -> None:
    with Memory(tmp_path / "dated.db") as m:
        m.save("I moved to Porto last week", created_at="2025-06-10T09:00:00Z")
        plain, dated = memory_tools(m)[0], memory_tools(m, dated=True)[0]
        ask = {"query": "where did I move?", "token_budget": 80}
        assert "[2025-06-10] I moved to Porto last week" not in plain.invoke(ask)
        assert "[2025-06-10] I moved to Porto last week" in dated.invoke(ask)


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


def test_errors_the_model_causes_come_back_to_it_and_the_run_goes_on(mem: Memory) -> None:
    nodes = mem.stats().nodes
    calls = [("recall_memories", {"query": ""}), ("save_memory", {"content": "   "}),
             ("memory_feedback", {"pack_id": "no-such-pack", "helpful": True}),
             ("save_memory", {"content": "The user likes tea", "tags": [""]})]
    script = iter([AIMessage(content="", tool_calls=[{"name": name, "id": f"call-{i}",
                                                      "args": args}])
                   for i, (name, args) in enumerate(calls)]
                  + [AIMessage(content="Sorry, I could not use my memory.")])
    agent = create_react_agent(_ScriptedModel(messages=script), memory_tools(mem))
    result = agent.invoke({"messages": [HumanMessage("What am I allergic to?")]})
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in tool_messages] == ["error"] * 4
    assert [m.content for m in tool_messages] == [
        "query is empty", "memory text is empty",
        "no pack 'no-such-pack' in namespace 'default'", "tag '' is empty once normalised"]
    assert result["messages"][-1].content == "Sorry, I could not use my memory."
    assert mem.stats().nodes == nodes  # nothing refused was stored


def test_the_async_form_hands_the_error_back_too(mem: Memory) -> None:
    recall = RecallMemoriesTool(memory=mem)
    assert asyncio.run(recall.ainvoke({"query": " "})) == "query is empty"


def test_a_budget_is_an_integer_and_helpful_a_bool_as_on_every_front_end(mem: Memory) -> None:
    """Contract row 7: "50", 50.0 and True are not budgets, 1 and "yes" not a bool, as over
    HTTP and MCP; the model is told which argument, and nothing is injected."""
    calls = [("recall_memories", {"query": "allergies", "token_budget": "50"}),
             ("recall_memories", {"query": "allergies", "token_budget": 50.0}),
             ("recall_memories", {"query": "allergies", "token_budget": True}),
             ("memory_feedback", {"pack_id": "any", "helpful": 1}),
             ("memory_feedback", {"pack_id": "any", "helpful": "yes"}),
             ("recall_memories", {"query": "allergies", "token_budget": 50})]  # taken
    script = iter([AIMessage(content="", tool_calls=[{"name": name, "id": f"call-{i}",
                                                      "args": args}])
                   for i, (name, args) in enumerate(calls)] + [AIMessage(content="Done.")])
    agent = create_react_agent(_ScriptedModel(messages=script), memory_tools(mem))
    result = agent.invoke({"messages": [HumanMessage("What am I allergic to?")]})
    answers = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in answers] == ["error"] * 5 + ["success"]
    for (_, args), answer in zip(calls[:5], answers, strict=False):
        field = "token_budget" if "token_budget" in args else "helpful"
        assert field in str(answer.content), answer.content
    assert str(answers[-1].content).startswith("[pack ")
    assert mem.store.scalar("SELECT count(*) FROM packs") == 1  # only the integer budget
