"""LangChain tools over a remd namespace (``pip install 'remd[langchain]'``).

:class:`RecallMemoriesTool` injects a token-budgeted pack for a query and returns its text
after a ``[pack ID]`` line, so the agent can report back with :class:`MemoryFeedbackTool`;
:class:`SaveMemoryTool` saves one memory. Their argument schemas are pydantic models whose
descriptions are written for the model that calls them. Each tool holds a :class:`Memory`
(the caller opens and closes it); the async forms run the sync ones on the engine's executor,
as :class:`remd.AsyncMemory` does. They drop into ``langchain.agents.create_agent`` (or
LangGraph's older ``create_react_agent``). An error the model caused (an empty query or memory,
an unknown pack id) comes back to it as the tool's answer, so the agent run goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from langchain_core.tools import BaseTool, ToolException
from pydantic import BaseModel, ConfigDict, Field

from remd.errors import InvalidInput, NotFound
from remd.memory import Memory

__all__ = ["MemoryFeedbackTool", "RecallMemoriesTool", "SaveMemoryTool", "memory_tools"]


class RecallArgs(BaseModel):
    query: str = Field(description=(
        "What you need to remember, in plain words: the user's question or the topic, "
        "e.g. 'where does the user live' or 'the user's food allergies'."))
    # strict, as on every front end: "50" and 50.0 are not a budget.
    token_budget: int = Field(400, ge=1, le=16_384, strict=True, description=(
        "The most tokens of memories to return; fewer come back when fewer matter."))


class SaveArgs(BaseModel):
    content: str = Field(description=(
        "One fact or event worth remembering, as a short self-contained sentence in the "
        "user's terms, e.g. 'The user is allergic to peanuts.'"))
    tags: list[str] | None = Field(None, description=(
        "Optional topic labels; leave empty to let remd tag it."))


class FeedbackArgs(BaseModel):
    pack_id: str = Field(description="The pack id from the [pack ...] line of recall_memories.")
    helpful: bool = Field(strict=True,  # 1 and "yes" are not a bool
                          description="Whether those memories helped answer the user.")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _told_to_the_model(run: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turns the errors the model's own arguments cause (:class:`InvalidInput`,
    :class:`NotFound`) into ``ToolException``, which LangChain hands back to the model as the
    tool's answer (``handle_tool_error``) instead of ending the agent run. Store failures are
    the host's to see, so they still propagate."""
    @functools.wraps(run)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return run(*args, **kwargs)
        except (InvalidInput, NotFound) as exc:
            raise ToolException(str(exc)) from exc
    return wrapped


class _RemdTool(BaseTool):
    """A tool over one namespace; its async form runs the sync one on the engine's executor,
    as :class:`remd.AsyncMemory` does."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    handle_tool_error: bool = True  # a ToolException's message becomes the tool's answer

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
    dated: bool | None = None  # each memory with its date (remd.Memory.inject's dated)

    @_told_to_the_model
    def _run(self, query: str, token_budget: int = 400, **_: Any) -> str:
        return _pack_text(self.memory.inject(query, token_budget, dated=self.dated))


class SaveMemoryTool(_RemdTool):
    name: str = "save_memory"
    description: str = (
        "Remember something the user told you for later conversations: a preference, a fact "
        "about them, a decision or an event. Save one fact per call.")
    args_schema: type[BaseModel] = SaveArgs

    @_told_to_the_model
    def _run(self, content: str, tags: list[str] | None = None, **_: Any) -> str:
        node = self.memory.save(content, tags=tags)
        return f"saved memory {node.id}"


class MemoryFeedbackTool(_RemdTool):
    name: str = "memory_feedback"
    description: str = (
        "After answering with recalled memories, say whether they helped; remd learns which "
        "memories go together from it.")
    args_schema: type[BaseModel] = FeedbackArgs

    @_told_to_the_model
    def _run(self, pack_id: str, helpful: bool, **_: Any) -> str:
        result = self.memory.feedback(pack_id, helpful)
        return f"feedback {'recorded' if result.applied else 'already given'}"


def memory_tools(memory: Memory, *, dated: bool | None = None) -> list[BaseTool]:
    """The three tools over one namespace, for ``create_agent(model, tools)``. ``dated=True``: the
    recall tool gives each memory with its date, so the model can tell an older statement
    from a newer one; the default (None) dates the memories of a question that asks when."""
    return [RecallMemoriesTool(memory=memory, dated=dated), SaveMemoryTool(memory=memory),
            MemoryFeedbackTool(memory=memory)]
