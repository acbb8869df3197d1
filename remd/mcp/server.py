"""``remd mcp``: the memory as MCP tools over stdio (official ``mcp`` SDK, ``MCPServer``).

Tools: ``save_memory``, ``inject_memories`` (token-budgeted pack), ``memory_feedback``,
``memory_history`` (the SUPERSEDES chain) and ``find_contradictions`` (memories linked by live
CONTRADICTS edges, optionally about a topic). Every tool takes an optional ``namespace``;
without it the server's ``--namespace`` is used. Results are JSON objects (structured
content), with the same fields as the CLI's ``--json`` output.

Arguments are checked as the HTTP API checks a body: types strict (``"100"`` is not a
budget, ``1`` is not ``accepted``, and a string is never parsed into the number, list or null
it spells, as the SDK would do), unknown arguments refused; ``accepted`` is echoed as given.
Every error is a tool result with ``isError`` and one text,
``Error executing tool <name>: <Type>: <message>`` (``ValidationError`` for the arguments, else
the remd error's type); a crash shows only ``Error executing tool <name>``.

A request line the SDK cannot read (not JSON, a lone surrogate, an integer too long or nesting
too deep for its parser) is answered too, where the SDK would drop it and leave the client
waiting: a tool call with an ``isError`` result (``InvalidJSON``), anything else with a
JSON-RPC error (-32700, or -32600 for JSON that is not a JSON-RPC message), carrying the id the
line gives when it can be read, else ``null``.

The SDK runs these synchronous tools on worker threads, each call on the served engine (one
bounded pool shared by every namespace, :class:`~remd.hosting.EngineHost`). stdout carries
the
protocol, so logs go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
)
from pydantic import BaseModel, ConfigDict, ValidationError

from remd.config import Config
from remd.errors import RemdError, first_line
from remd.hosting import EngineHost, freeze_heap, log_secrets, shared_embedder
from remd.logs import configure_logging, get_logger
from remd.memory import Memory
from remd.wire import node_to_dict, pair_to_dict

INSTRUCTIONS = """Long-term memory (remd). Save durable facts and observations with save_memory;
before answering, call inject_memories with the user's request and a token budget, then
report with memory_feedback whether the pack helped. memory_history shows how a fact changed;
find_contradictions lists memories that disagree; restore_memory undoes a wrong "this was
updated" decision."""

ERROR_PREFIX = "Error executing tool "  # what the SDK puts before a tool error's text

log = get_logger("remd.mcp")


def find_contradictions(mem: Memory, topic: str | None = None, memory_id: str | None = None,
                        limit: int = 20) -> list[dict[str, Any]]:
    """Pairs of live memories joined by a live CONTRADICTS edge, newest edge first
    (:meth:`remd.Memory.contradictions`). Raises NotFound for an unknown ``memory_id``,
    InvalidInput for a bad limit or topic."""
    return [pair_to_dict(*pair) for pair in mem.contradictions(memory_id, topic, limit)]


class _Arguments(FuncMetadata):
    """A tool's arguments taken as they come: the SDK would parse a string given for a
    non-string parameter as JSON first (``"100"`` a budget, ``"null"`` no namespace)."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


def _strict(tool: Tool) -> Tool:
    """``tool`` with the argument model of its signature made strict and closed, and the
    schema it publishes saying so (``additionalProperties: false``)."""
    meta = tool.fn_metadata
    model = cast(type[BaseModel], type(meta.arg_model.__name__, (meta.arg_model,), {
        "__module__": __name__, "model_config": ConfigDict(extra="forbid", strict=True)}))
    arguments = _Arguments(arg_model=model, output_schema=meta.output_schema,
                           output_model=meta.output_model, wrap_output=meta.wrap_output)
    return tool.model_copy(update={"fn_metadata": arguments,
                                   "parameters": model.model_json_schema(by_alias=True)})


class _Server(MCPServer[Any]):
    """The SDK's server, with each call's arguments checked first: a refusal names the
    argument and the rule in one line, never the value (it may be a memory)."""

    def __init__(self, tools: list[Tool]) -> None:
        strict = [_strict(t) for t in tools]
        super().__init__("remd", instructions=INSTRUCTIONS, tools=strict)
        self._models: dict[str, type[BaseModel]] = {t.name: t.fn_metadata.arg_model
                                                    for t in strict}

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        model = self._models.get(name)
        if model is not None:
            try:
                model.model_validate(arguments)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "arguments"
                raise ToolError(f"{ERROR_PREFIX}{name}: ValidationError: {where}: "
                                f"{first['msg']}") from exc
        return await super().call_tool(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """Serve on stdin/stdout as the SDK does, each line it cannot read answered."""
        async with stdio_server() as (read_stream, write_stream):
            lowlevel = self._lowlevel_server
            await lowlevel.run(_Answered(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())


# -- request lines the SDK cannot read -----------------------------------------------------------
# A JSON token: a string (escapes and all), a structural character, or a bare number or literal.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')
# The members an answer needs, by the keys (as written) that lead to them.
_WANTED: dict[tuple[str | None, ...], str] = {
    ('"id"',): "id", ('"method"',): "method", ('"params"', '"name"'): "tool"}


def _member(raw: str) -> str | int | None:
    """A JSON string or integer token's value, if it can be written back (not a lone
    surrogate, not an integer past Python's digit limit)."""
    try:
        value = json.loads(raw)
        if isinstance(value, str):
            value.encode("utf-8")
    except ValueError:  # JSONDecodeError, an integer too long, UnicodeEncodeError
        return None
    ok = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    return value if ok else None


def _members(line: str) -> dict[str, str | int]:
    """``id``, ``method`` and ``params.name`` of a line the JSON parser refused, where they can
    be read: a scan of its tokens, which needs neither the other values readable nor the
    nesting bounded (the answer must carry the id: the client waits for it)."""
    found: dict[str, str | int] = {}
    path: list[str | None] = []  # the key each open container sits under
    key: str | None = None  # the key whose value comes next (None in an array)
    text: str | None = None  # a string token: a key if a colon follows, else a value

    def value(raw: str) -> None:
        name = _WANTED.get((*path[1:], key)) if key is not None else None
        if name is not None and name not in found and (got := _member(raw)) is not None:
            found[name] = got

    for match in _TOKEN.finditer(line):
        token = match.group()
        if token == ":":
            key, text = text, None
        elif token in ("{", "["):
            path.append(key)
            key = text = None
        elif token in ("}", "]", ","):
            if text is not None:
                value(text)
            if token != "," and path:
                path.pop()
            key = text = None
        elif token.startswith('"'):
            text = token
        else:
            value(token)
    if text is not None:
        value(text)
    return found


def _refusal(exc: Exception) -> tuple[dict[str, str | int], int, str]:
    """What a refused line gave (its readable members), the JSON-RPC error code and the
    reason in one line (the parser's, which names a position, never the text)."""
    if not isinstance(exc, ValidationError):
        return {}, PARSE_ERROR, "request is not valid JSON"
    errors = exc.errors()
    first = errors[0]
    if first["type"] == "json_invalid" and isinstance(first["input"], str):
        reason = first.get("ctx", {}).get("error", first["msg"])
        return _members(first["input"]), PARSE_ERROR, f"request is not valid JSON: {reason}"
    # JSON, but no JSON-RPC message: a "missing" error of a message type holds the object.
    whole = next((e["input"] for e in errors if e["type"] == "missing" and len(e["loc"]) == 2
                  and isinstance(e["input"], dict)), {})
    members = {k: v for k in ("id", "method")
               if (v := _member(json.dumps(whole.get(k)))) is not None}
    return members, INVALID_REQUEST, "request is not a JSON-RPC message"


def _answer(exc: Exception) -> SessionMessage:
    """The reply to a line the SDK refused: a tool call's ``isError`` result, else a JSON-RPC
    error, with the line's id when it could be read."""
    members, code, reason = _refusal(exc)
    ident, tool = members.get("id"), members.get("tool")
    log.warning("mcp.unreadable_request", code=code, reason=reason,
                method=str(members.get("method", ""))[:80], answered_to_id=ident is not None)
    if code == PARSE_ERROR and ident is not None and members.get("method") == "tools/call" \
            and tool is not None:
        text = f"{ERROR_PREFIX}{str(tool)[:80]}: InvalidJSON: {reason}"
        result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=ident, result=result.model_dump(
            by_alias=True, mode="json", exclude_none=True)))
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident,
                                       error=ErrorData(code=code, message=reason)))


class _Answered:
    """The stdio transport's read stream, with the lines the SDK could not read answered on the
    write stream instead of passed on: the SDK only logs them at debug level, so a client
    would wait for its timeout."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner, self._write = inner, write

    @property
    def last_context(self) -> Any:  # the sender's context, which the SDK's loop looks for
        return getattr(self._inner, "last_context", None)

    async def _answered(self, item: Any) -> bool:
        if not isinstance(item, Exception):
            return False
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._write.send(_answer(item))
        return True

    async def receive(self) -> Any:
        while await self._answered(item := await self._inner.receive()):
            pass
        return item

    async def __anext__(self) -> Any:
        while await self._answered(item := await self._inner.__anext__()):
            pass
        return item

    def __aiter__(self) -> _Answered:
        return self

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Answered:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def build_server(host: EngineHost, default_namespace: str = "default") -> MCPServer[Any]:
    """The MCP server with remd's tools over ``host``'s engine."""

    def call(namespace: str | None, fn: Callable[[Memory], dict[str, Any]]) -> dict[str, Any]:
        try:
            with host.lease() as engine:
                return fn(Memory.bound(engine,
                                       default_namespace if namespace is None else namespace))
        except RemdError as exc:
            # An anticipated failure: the model reads the one-line message (the SDK puts
            # "Error executing tool <name>: " before it).
            raise ToolError(f"{type(exc).__name__}: {first_line(exc)}") from exc

    def save_memory(content: str, tags: list[str] | None = None, source: str | None = None,
                    namespace: str | None = None) -> dict[str, Any]:
        """Save one memory (a fact, preference, decision or observation worth keeping).
        Returns the stored memory with its id and extracted tags."""
        return call(namespace, lambda m: node_to_dict(m.save(content, tags, source)))

    def inject_memories(query: str, token_budget: int, fill: bool = False,
                        namespace: str | None = None,
                        dated: bool | None = None) -> dict[str, Any]:
        """The memories relevant to `query`, best first, within `token_budget` tokens (a hard
        limit). The pack stops where relevance falls off; fill=true packs to the budget;
        dated=true begins each memory with its date, false never; left out, a question that
        asks when ("when did I ...?") gets dates.
        Returns {pack_id, budget, tokens_used, items: [{id, content, tokens, score, tags}]};
        pass pack_id to memory_feedback."""
        return call(namespace, lambda m: m.inject(query, token_budget, fill=fill,
                                                 dated=dated).to_dict())

    def memory_feedback(pack_id: str, accepted: bool,
                        namespace: str | None = None) -> dict[str, Any]:
        """Tell remd whether the pack from inject_memories helped (true) or not (false);
        remd strengthens or weakens the associations that found it. Once per pack."""
        return call(namespace, lambda m: {**asdict(m.feedback(pack_id, accepted)),
                                          "accepted": accepted})  # echoed as given

    def memory_history(memory_id: str, namespace: str | None = None) -> dict[str, Any]:
        """How a fact changed: the memories of its SUPERSEDES chain, oldest first (stale
        values are marked status "superseded")."""
        return call(namespace, lambda m: {
            "memories": [node_to_dict(n) for n in m.history(memory_id)]})

    def restore_memory(memory_id: str, namespace: str | None = None) -> dict[str, Any]:
        """Undo remd's decision that a memory was updated by a newer one (it was not): the
        memory is live again and the same pair is never decided again."""
        return call(namespace, lambda m: asdict(m.restore(memory_id)))

    def find_contradictions_tool(topic: str | None = None, memory_id: str | None = None,
                                 limit: int = 20,
                                 namespace: str | None = None) -> dict[str, Any]:
        """Live memories that contradict each other, optionally about `topic` or touching
        `memory_id`, newest first."""
        return call(namespace, lambda m: {
            "contradictions": find_contradictions(m, topic, memory_id, limit)})

    return _Server([Tool.from_function(save_memory), Tool.from_function(inject_memories),
                    Tool.from_function(memory_feedback), Tool.from_function(memory_history),
                    Tool.from_function(restore_memory),
                    Tool.from_function(find_contradictions_tool, name="find_contradictions")])


def run_stdio(db: str | Path, config: Config, namespace: str = "default") -> int:
    """``remd mcp``: serve the tools on stdin/stdout until the client closes the pipe.

    Raises StoreError/ConfigError before serving when the file or config can't be used.
    """
    configure_logging(config.daemon.log_format, config.daemon.log_level, stream=sys.stderr,
                      secrets=log_secrets(config))
    # The file is opened up front, so a bad path fails here with a one-line error.
    host = EngineHost(db, config, embedder=shared_embedder(config))
    try:
        server = build_server(host, namespace)
        freeze_heap()
        server.run("stdio")
    finally:
        host.close()
    return 0
