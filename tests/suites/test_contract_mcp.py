"""`remd mcp` keeps the contract on bad input: every request line gets an answer (the client
never waits for its timeout), the server stays up, and `accepted` follows the rule of every
front end (a bool, echoed as given).

The real server over stdio in a subprocess (the command of tests/mcp/test_server.py), spoken to line
by line over its pipes: lines no MCP client library would send.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from remd import Memory
from tests.mcp.test_server import params

DEEP = "[" * 5000 + "]" * 5000
DIGITS = "9" * 5001


def obj(**raw: str) -> str:
    """A JSON object whose values are written as given (they may not be JSON)."""
    return "{" + ", ".join(f'"{key}": {value}' for key, value in raw.items()) + "}"


def call(ident: int, tool: str, arguments: str) -> str:
    """A tools/call line, with ``arguments`` as written."""
    return obj(jsonrpc='"2.0"', id=str(ident), method='"tools/call"',
               params=obj(name=f'"{tool}"', arguments=arguments))


class Wire:
    """``remd mcp`` over db, its stdout read line by line on a thread."""

    def __init__(self, db: Path, errlog: IO[str]) -> None:
        p = params(db)
        self.proc = subprocess.Popen([p.command, *p.args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=errlog, env=p.env, cwd=p.cwd)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def answer(self, line: str, timeout: float = 120) -> dict[str, Any]:
        """Send ``line`` and read the next line the server writes (generous timeout: only
        the answer is waited for)."""
        self.send(line)
        try:
            return dict(json.loads(self.lines.get(timeout=timeout)))
        except queue.Empty:
            raise AssertionError(f"no answer to {line[:100]!r}") from None

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=120)


def _open(wire: Wire) -> None:
    init = wire.answer(json.dumps({
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "contract", "version": "1"}}}))
    assert init["id"] == 0 and "result" in init
    wire.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def _tool_error(answer: dict[str, Any], ident: int) -> str:
    assert answer["id"] == ident and answer["result"]["isError"] is True, answer
    (item,) = answer["result"]["content"]
    assert "\n" not in item["text"] and len(item["text"]) < 300, item
    return str(item["text"])


# -- row 4: every request line gets an answer ---------------------------------------------------
UNREADABLE_CALLS = [
    ("lone surrogate", "save_memory", obj(content='"bad \\ud800 text"')),
    ("lone low surrogate", "save_memory", obj(content='"bad \\udc00 text"')),
    ("5,001 digits", "save_memory", obj(content='"a note"', colour=DIGITS)),
    ("5,001 digits budget", "inject_memories", obj(query='"notes"', token_budget=DIGITS)),
    ("5,000 deep", "save_memory", obj(content='"a note"', tags=DEEP)),
    ("5,000 deep object", "inject_memories",
     obj(query='"notes"', token_budget="50", x='{"a": ' * 5000 + "1" + "}" * 5000)),
]


def test_every_request_line_gets_an_answer_and_the_server_stays_up(db_path: Path) -> None:
    Memory(db_path, embedder=None).close()
    with open(db_path.parent / "mcp-stderr.log", "w") as errlog:
        wire = Wire(db_path, errlog)
        try:
            _open(wire)
            saved = wire.answer(call(1, "save_memory", '{"content": "I like dark chocolate"}'))
            assert saved["result"]["isError"] is False
            # A tool call the parser refuses: the tool's error result, to the call's id.
            for n, (case, tool, arguments) in enumerate(UNREADABLE_CALLS, start=10):
                text = _tool_error(wire.answer(call(n, tool, arguments)), n)
                assert text.startswith(f"Error executing tool {tool}: InvalidJSON: "), (case, text)
                assert "99999" not in text and "bad" not in text  # the value is not echoed
            # Anything else: a JSON-RPC error, to the id when the line gives it, else null.
            broken = wire.answer('{"jsonrpc": "2.0", "id": 30, "method": "tools/list", "par')
            assert broken["id"] == 30 and broken["error"]["code"] == -32700, broken
            garbage = wire.answer("not JSON at all")
            assert garbage["id"] is None and garbage["error"]["code"] == -32700, garbage
            surrogate_id = wire.answer('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}')
            assert surrogate_id["id"] is None and surrogate_id["error"]["code"] == -32700
            not_rpc = wire.answer('{"id": 31, "hello": "world"}')
            assert not_rpc["id"] == 31 and not_rpc["error"]["code"] == -32600, not_rpc
            for answer in (broken, garbage, surrogate_id, not_rpc):
                message = answer["error"]["message"]
                assert message and "\n" not in message and len(message) < 300, answer
            # The server is fine afterwards.
            tools = wire.answer('{"jsonrpc": "2.0", "id": 40, "method": "tools/list"}')
            assert len(tools["result"]["tools"]) == 6
            assert wire.proc.poll() is None
        finally:
            code = wire.close()
    assert code == 0
    with Memory(db_path, embedder=None) as m:  # the one good save, nothing else
        assert m.store.scalar("SELECT count(*) FROM nodes") == 1
    events = [json.loads(line) for line in (db_path.parent / "mcp-stderr.log").read_text()
              .splitlines() if line.startswith("{")]
    unreadable = [e for e in events if e.get("event") == "mcp.unreadable_request"]
    assert len(unreadable) == len(UNREADABLE_CALLS) + 4  # one warning line each


# -- row 7: `accepted` is a bool, echoed as given -----------------------------------------------
@pytest.mark.parametrize("accepted", ["1", "0", "0.5", "1.0", '"true"'])
@pytest.mark.slow
def test_memory_feedback_takes_a_bool_and_echoes_it(db_path: Path, accepted: str) -> None:
    Memory(db_path, embedder=None).close()
    with open(db_path.parent / "mcp-stderr.log", "w") as errlog:
        wire = Wire(db_path, errlog)
        try:
            _open(wire)
            wire.answer(call(1, "save_memory", '{"content": "I like dark chocolate"}'))
            pack = wire.answer(call(2, "inject_memories",
                                    '{"query": "chocolate", "token_budget": 100}'))
            pack_id = pack["result"]["structuredContent"]["pack_id"]
            refused = _tool_error(wire.answer(call(
                3, "memory_feedback", obj(pack_id=f'"{pack_id}"', accepted=accepted))), 3)
            assert refused.startswith("Error executing tool memory_feedback: ValidationError: "
                                      "accepted: "), refused
            for n, given in enumerate(("true", "false"), start=4):  # the second: not applied
                fb = wire.answer(call(n, "memory_feedback",
                                      obj(pack_id=f'"{pack_id}"', accepted=given)))
                echoed = fb["result"]["structuredContent"]
                assert echoed["accepted"] is (given == "true"), echoed
                assert echoed["applied"] is (n == 4)
        finally:
            wire.close()
