"""LangChain tools over a remd namespace (``pip install 'remd[langchain]'``).

:class:`RecallMemoriesTool` injects a token-budgeted pack for a query and returns its text
after a ``[pack ID]`` line, so the agent can report back with :class:`MemoryFeedbackTool`;
:class:`SaveMemoryTool` saves one memory. Their argument schemas are pydantic models whose
descriptions are written for the model that calls them. Each tool holds a :class:`Memory`
(the caller opens and closes it); the async forms run the sync ones on the engine's executor,
as :class:`remd.AsyncMemory` does. They drop into LangGraph's ``create_react_agent``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field

from remd.memory import Memory

__all__ = ["MemoryFeedbackTool", "RecallMemoriesTool", "SaveMemoryTool", "memory_tools"]


class RecallArgs(BaseModel):
    query: str = Field(description=(
        "What you need to remember, in plain words: the user's question or the topic, "
        "e.g. 'where does the user live' or 'the user's food allergies'."))
    token_budget: int = Field(400, ge=1, le=16_384, description=(
        "The most tokens of memories to return; fewer come back when fewer matter."))


class SaveArgs(BaseModel):
    content: str = Field(description=(
        "One fact or event worth remembering, as a short self-contained sentence in the "
        "user's terms, e.g. 'The user is allergic to peanuts.'"))
    tags: list[str] | None = Field(None, description=(
        "Optional topic labels; leave empty to let remd tag it."))


class FeedbackArgs(BaseModel):
    pack_id: str = Field(description="The pack id from the [pack ...] line of recall_memories.")
    helpful: bool = Field(description="Whether those memories helped answer the user.")


class _RemdTool(BaseTool):
    """A tool over one namespace; its async form runs the sync one on the engine's executor,
    as :class:`remd.AsyncMemory` does."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        return await self.memory.engine.run_async(self._run, *args, **kwargs)


def _pack_text(pack: Any) -> str:
    body = pack.text if pack.items else "(no stored memory is relevant)"
    return f"[pack {pack.pack_id}]\n{body}"


class RecallMemoriesTool(_RemdTool):
    name: str = "recall_memories"
    description: str = (
        "Look up what you remember about the user and past conversations before answering. "
        "Returns the relevant memories, best first, after a [pack ID] line.")
    args_schema: type[BaseModel] = RecallArgs

    def _run(self, query: str, token_budget: int = 400, **_: Any) -> str:
        return _pack_text(self.memory.inject(query, token_budget))


class SaveMemoryTool(_RemdTool):
    name: str = "save_memory"
    description: str = (
        "Remember something the user told you for later conversations: a preference, a fact "
        "about them, a decision or an event. Save one fact per call.")
    args_schema: type[BaseModel] = SaveArgs

    def _run(self, content: str, tags: list[str] | None = None, **_: Any) -> str:
        node = self.memory.save(content, tags=tags)
        return f"saved memory {node.id}"


class MemoryFeedbackTool(_RemdTool):
    name: str = "memory_feedback"
    description: str = (
        "After answering with recalled memories, say whether they helped; remd learns which "
        "memories go together from it.")
    args_schema: type[BaseModel] = FeedbackArgs

    def _run(self, pack_id: str, helpful: bool, **_: Any) -> str:
        result = self.memory.feedback(pack_id, helpful)
        return f"feedback {'recorded' if result.applied else 'already given'}"


def memory_tools(memory: Memory) -> list[BaseTool]:
    """The three tools over one namespace, for ``create_react_agent(model, tools)``."""
    return [RecallMemoriesTool(memory=memory), SaveMemoryTool(memory=memory),
            MemoryFeedbackTool(memory=memory)]
