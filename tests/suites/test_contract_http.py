"""The front ends keep the contract on bad input: the HTTP API answers a 4xx in the
documented error shape (never a 500), `remd mcp` refuses arguments as HTTP refuses a body, and
`remd serve` reports a busy port in one line on stderr. A refused call writes nothing.

Real files under tmp_path, a real uvicorn server, a real MCP stdio client, a real subprocess.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from remd import InvalidInput, Memory, load_config
from remd.hosting import EngineHost
from remd.http.app import HttpServer, create_app
from remd.logs import capture_events
from tests.helpers import hogged
from tests.http.test_app import serve
from tests.mcp.test_server import session

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
MCP_DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
WRITTEN = ("nodes", "packs", "pack_items", "feedback", "access_log")


def written(db: Path) -> dict[str, int]:
    """How many rows each table a call could write to holds, all namespaces."""
    with Memory(db, embedder=None) as m:
        return {t: int(m.store.scalar(f"SELECT count(*) FROM {t}")) for t in WRITTEN}


def assert_error_shape(r: httpx.Response, status: int, kind: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    assert body["error"]["type"] == kind, body
    message = body["error"]["message"]
    assert message and "\n" not in message and len(message) < 300, message


# -- row 4: bodies the JSON parser cannot read -----------------------------------------------
# Placeholders, so that the test ids stay short: ARRAY and OBJECT nest 5,000 levels deep,
# DIGITS is an integer of 5,001 digits, PACK the id of a real pack.
LONG = {"ARRAY": "[" * 5000 + "]" * 5000, "OBJECT": '{"a": ' * 5000 + "1" + "}" * 5000,
        "DIGITS": "9" * 5001}


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/memories", '{"content": "a note", "tags": ARRAY}'),
    ("/v1/memories", '{"content": "a note", "source": OBJECT}'),
    ("/v1/memories", '{"content": "a note", "colour": DIGITS}'),
    ("/v1/memories", '{"content": "a note", "tags": ["a", -DIGITS]}'),
    ("/v1/memories", '{"content": "a note", "colour": Infinity}'),
    ("/v1/inject", '{"query": "sweets", "token_budget": DIGITS}'),
    ("/v1/inject", '{"query": ARRAY, "token_budget": 100}'),
    ("/v1/inject", '{"query": "sweets", "token_budget": 100, "fill": -Infinity}'),
    ("/v1/feedback", '{"pack_id": "PACK", "accepted": DIGITS}'),
    ("/v1/feedback", '{"pack_id": "PACK", "accepted": NaN}'),
    ("/v1/feedback", '{"pack_id": "PACK", "accepted": true, "x": OBJECT}'),
])
def test_bodies_the_json_parser_cannot_read_answer_400_and_write_nothing(
        api: httpx.Client, db_path: Path, path: str, body: str) -> None:
    """Nesting past the parser's recursion limit, an integer past Python's digit limit, and
    NaN/Infinity (not JSON) are 400 InvalidJSON on every endpoint that takes a body, not 500."""
    saved = api.post("/v1/memories", json={"content": "I prefer dark chocolate"})
    pack = api.post("/v1/inject", json={"query": "sweets", "token_budget": 100}).json()
    before = written(db_path)
    for name, text in {**LONG, "PACK": pack["pack_id"]}.items():
        body = body.replace(name, text)
    r = api.post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert_error_shape(r, 400, "InvalidJSON")
    assert "99999" not in r.json()["error"]["message"]  # the caller's value is not echoed
    assert written(db_path) == before
    assert saved.status_code == 201
    # The server is fine afterwards.
    assert api.post("/v1/feedback", json={"pack_id": pack["pack_id"],
                                          "accepted": True}).json()["applied"] is True


# -- row 17: /healthz when the database can't be used ------------------------------------------
def _garbage(db: Path) -> None:
    """Overwrite the file and its WAL and index with bytes that are not SQLite."""
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if path.exists():
            size = path.stat().st_size
            with open(path, "r+b") as f:
                f.write((b"not a database, not at all " * (size // 27 + 1))[:size])


@pytest.mark.parametrize("cause", ["garbage file", "every connection leased"])
def test_healthz_on_an_unusable_database_answers_the_error_shape(db_path: Path,
                                                                 cause: str) -> None:
    config = load_config(env={}, overrides={"store": {"max_connections": 1,
                                                       "pool_wait_ms": 20}})
    Memory(db_path, embedder=None).close()
    server, host = serve(db_path, config)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            assert api.get("/healthz").json()["status"] == "ok"
            if cause == "garbage file":
                _garbage(db_path)
                r = api.get("/healthz")
            else:
                with hogged(host.engine.store):
                    r = api.get("/healthz")
            assert r.status_code == 503, r.text
            assert r.headers["retry-after"] == "1"
            body = r.json()
            assert set(body) == {"status", "error"} and body["status"] == "unavailable"
            assert set(body["error"]) == {"type", "message"}
            assert body["error"]["type"] == ("StoreError" if cause == "garbage file"
                                             else "PoolExhausted")
            assert body["error"]["message"] and "\n" not in body["error"]["message"]
    finally:
        server.stop()
        host.close()


# -- rows 18 and 19: MCP arguments and what a client sees for an error ---------------------------
def _text(result: Any) -> str:
    assert result.is_error and result.structured_content is None, result
    (item,) = result.content
    assert item.type == "text"
    return str(item.text)


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("save_memory", {"content": 42}, "content"),
    ("save_memory", {"content": "ok", "tags": '["food"]'}, "tags"),
    ("save_memory", {"content": "ok", "source": 7}, "source"),
    ("save_memory", {"content": "ok", "colour": "red"}, "colour"),
    ("inject_memories", {"query": "sweets", "token_budget": "100"}, "token_budget"),
    ("inject_memories", {"query": "sweets", "token_budget": 100.0}, "token_budget"),
    ("inject_memories", {"query": "sweets", "token_budget": 100, "fill": "true"}, "fill"),
    ("inject_memories", {"query": "sweets", "token_budget": 100, "colour": "red"}, "colour"),
    ("memory_feedback", {"pack_id": "PACK", "accepted": "true"}, "accepted"),
    ("memory_feedback", {"pack_id": "PACK", "accepted": 1}, "accepted"),
    ("memory_feedback", {"pack_id": "PACK", "accepted": True, "grade": 1.0}, "grade"),
    ("memory_history", {"memory_id": 5}, "memory_id"),
    ("memory_history", {"memory_id": "MEMORY", "depth": 2}, "depth"),
    ("find_contradictions", {"limit": "5"}, "limit"),
    ("find_contradictions", {"limit": 5, "colour": "red"}, "colour"),
    ("find_contradictions", {}, ""),  # accepted: a control
]


def test_mcp_arguments_are_strict_and_closed_like_http_bodies(db_path: Path) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
        memory = (await client.call_tool("save_memory", {"content": "I like dark chocolate"}
                                         )).structured_content
        pack = (await client.call_tool("inject_memories", {"query": "chocolate",
                                                           "token_budget": 100})
                ).structured_content
        for name, args, field in REFUSED:
            args = {k: {"PACK": pack["pack_id"], "MEMORY": memory["id"]}.get(v, v)
                    if isinstance(v, str) else v for k, v in args.items()}
            result = await client.call_tool(name, args)
            if not field:
                assert not result.is_error, result
                continue
            text = _text(result)
            assert text.startswith(f"Error executing tool {name}: ValidationError: {field}: "), (
                name, args, text)
            assert "\n" not in text and "'red'" not in text and "100" not in text
        # A string is what it says: "null" is a namespace's name, not "no namespace".
        stored = (await client.call_tool("save_memory", {"content": "Standup at ten",
                                                         "namespace": "null"})
                  ).structured_content
        assert stored["namespace"] == "null"
        missing = await client.call_tool("find_contradictions", {"memory_id": "null"})
        assert _text(missing).endswith("NotFound: no memory 'null' in namespace 'default'")

    session(db_path, body)
    rows = written(db_path)  # the two saves and the one inject above, nothing refused
    assert (rows["nodes"], rows["packs"], rows["feedback"]) == (2, 1, 0)
    with Memory(db_path, "null", embedder=None) as m:
        assert m.stats().live == 1


def _documented() -> str:
    """The MCP page, docs/mcp.md."""
    page = MCP_DOCS.read_text()
    assert "Error executing tool" in page, "docs/mcp.md does not say what a client sees"
    return page


def test_mcp_errors_reach_the_client_as_the_docs_say(db_path: Path) -> None:
    seen: list[str] = []

    async def body(client: Client) -> None:
        for name, args in [("inject_memories", {"query": "x", "token_budget": "100"}),
                           ("memory_history", {"memory_id": "x"}),
                           ("save_memory", {"content": "   "}),
                           ("nope", {})]:
            seen.append(_text(await client.call_tool(name, args)))

    session(db_path, body)
    doc = " ".join(_documented().split())  # markdown lines joined
    examples = re.findall(r"`(Error executing tool [^`<]+)`", doc)
    assert len(examples) == 2 and examples == seen[:2]
    assert re.fullmatch(r"Error executing tool save_memory: InvalidInput: [^\n]+", seen[2])
    assert "`Error executing tool <tool>: <Type>: <message>`" in doc
    assert seen[3] == "Unknown tool: nope" and "`Unknown tool: <name>`" in doc
    assert written(db_path)["nodes"] == 0


# -- row 20: `remd serve` on a port already taken ---------------------------------------------
def test_serve_on_a_busy_port_fails_with_one_line_on_stderr(db_path: Path) -> None:
    Memory(db_path, embedder=None).close()
    env = {k: v for k, v in os.environ.items() if k != "REMD_CONFIG"}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run([*REMD, "--db", str(db_path), "serve", "--http",
                               f"127.0.0.1:{port}", "--interval", "3600"],
                              capture_output=True, text=True, timeout=120,
                              env={**env, "REMD_EMBED__PROVIDER": "none"})
    assert proc.returncode == 1, proc
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert f"127.0.0.1:{port}" in line and "in use" in line, line


# -- row 5: a request uvicorn cannot parse ----------------------------------------------------
def raw_request(port: int, head: str, body: bytes = b"") -> httpx.Response:
    """Send ``head`` (request line and headers, as written) and ``body`` over a plain socket,
    as no HTTP client would, and read the answer up to the server's close."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    head_lines, _, content = rest.partition(b"\r\n\r\n")
    headers = [line.decode().split(":", 1) for line in head_lines.split(b"\r\n") if line]
    return httpx.Response(int(status_line.split()[1]), content=content,
                          headers=[(name, value.strip()) for name, value in headers])


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "12, 13", "0x10", ""])
def test_a_malformed_content_length_answers_the_error_shape(api: httpx.Client, db_path: Path,
                                                            length: str) -> None:
    before = written(db_path)
    r = raw_request(api.base_url.port or 0, "POST /v1/memories HTTP/1.1\nHost: 127.0.0.1\n"
                    f"Content-Type: application/json\nContent-Length: {length}\n",
                    b'{"content": "framed badly"}')
    assert_error_shape(r, 400, "InvalidHTTP")
    assert "Content-Length" in r.json()["error"]["message"]
    assert written(db_path) == before
    assert api.post("/v1/memories", json={"content": "a note"}).status_code == 201


# -- row 7: one input rule: a bool for `accepted`, an integer for a budget, echoed as given -------
@pytest.mark.parametrize(("path", "body", "field"), [
    ("/v1/feedback", {"pack_id": "PACK", "accepted": 1}, "accepted"),
    ("/v1/feedback", {"pack_id": "PACK", "accepted": 0}, "accepted"),
    ("/v1/feedback", {"pack_id": "PACK", "accepted": 0.5}, "accepted"),
    ("/v1/feedback", {"pack_id": "PACK", "accepted": 1.0}, "accepted"),
    ("/v1/feedback", {"pack_id": "PACK", "accepted": "true"}, "accepted"),
    ("/v1/inject", {"query": "sweets", "token_budget": "50"}, "token_budget"),
    ("/v1/inject", {"query": "sweets", "token_budget": 50.0}, "token_budget"),
])
def test_http_takes_a_bool_for_accepted_and_an_integer_for_a_budget(
        api: httpx.Client, db_path: Path, path: str, body: dict[str, Any], field: str) -> None:
    api.post("/v1/memories", json={"content": "I prefer dark chocolate"})
    pack = api.post("/v1/inject", json={"query": "sweets", "token_budget": 100}).json()
    before = written(db_path)
    r = api.post(path, json={k: pack["pack_id"] if v == "PACK" else v for k, v in body.items()})
    assert_error_shape(r, 422, "ValidationError")
    assert r.json()["error"]["message"].startswith(f"{field}: ")
    assert written(db_path) == before
    # What is taken is echoed as given: a bool stays a bool, the budget the integer sent.
    for accepted in (False, True):  # the second is not applied, and says what it was given
        fb = api.post("/v1/feedback", json={"pack_id": pack["pack_id"], "accepted": accepted})
        assert fb.json()["accepted"] is accepted, fb.text
    assert pack["budget"] == 100 and isinstance(pack["budget"], int)


# -- row 17: one http.summary a minute while there is traffic, every request counted --------------
def test_the_summary_comes_when_its_window_ends_and_counts_every_request(db_path: Path) -> None:
    """No request after the window: the summary still comes (a timer logs it), and it counts
    an unknown route, a wrong method and a request that is not HTTP as well as an endpoint's."""
    Memory(db_path, embedder=None).close()
    host = EngineHost(db_path, load_config(env={}), embedder=None)
    server = HttpServer(create_app(host, summary_seconds=0.2), "127.0.0.1", 0)
    server.start()
    try:
        with capture_events() as logs, httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            assert api.post("/v1/memories", json={"content": "a note"}).status_code == 201
            assert api.get("/v1/nothing-here").status_code == 404
            assert api.put("/v1/memories/abc").status_code == 405
            assert raw_request(server.port, "POST /v1/memories HTTP/1.1\nHost: x\n"
                               "Content-Length: abc\n").status_code == 400
            deadline = time.monotonic() + 60  # generous: only the event is waited for
            while sum(e["requests"] for e in list(logs) if e["event"] == "http.summary") < 4:
                assert time.monotonic() < deadline, "no http.summary while the server ran"
                time.sleep(0.05)
            summaries = [e for e in list(logs) if e["event"] == "http.summary"]
    finally:
        server.stop()
        host.close()
    assert "remd-http-summary" not in {t.name for t in threading.enumerate()}
    assert all(s["requests"] > 0 for s in summaries)  # a window without traffic logs nothing
    by_endpoint: Counter[str] = Counter()
    by_status: Counter[str] = Counter()
    for s in summaries:
        by_endpoint.update(s["by_endpoint"])
        by_status.update(s["by_status"])
    assert by_endpoint == {"save": 1, "no_route": 1, "method_not_allowed": 1, "unparsable": 1}
    assert by_status == {"201": 1, "404": 1, "405": 1, "400": 1}


# -- issue 38, row 12: a NUL in a path parameter is refused as everywhere else -----------------
@pytest.mark.parametrize(("path", "what"), [
    ("/v1/tags/a%00b/graph", "tag"), ("/v1/tags/%00a-b/graph", "tag"),
    ("/v1/memories/m%00x", "memory id"), ("/v1/memories/m%00x/history", "memory id"),
    ("/v1/memories/m%00x/links", "memory id"), ("/v1/rem/runs/rem_%00", "run id"),
])
def test_a_nul_in_a_path_parameter_is_invalid_input(api: httpx.Client, db_path: Path,
                                                    path: str, what: str) -> None:
    # "a b" and "a\0b" normalise to the same tag: the NUL must not be read as a space.
    assert api.post("/v1/memories", json={"content": "a note", "tags": ["a b"]}
                    ).status_code == 201
    assert api.get("/v1/tags/a-b/graph").status_code == 200
    with Memory(db_path, embedder=None) as m, pytest.raises(InvalidInput) as python:
        m.save("another note", tags=["a\x00b"])  # the Python API's words for it
    before = written(db_path)
    r = api.get(path)
    assert_error_shape(r, 400, "InvalidInput")
    assert r.json()["error"]["message"] == str(python.value).replace("tag", what, 1)
    assert written(db_path) == before


# -- issue 38, row 13: a key given twice in a JSON body ------------------------------------------
@pytest.mark.parametrize(("path", "body", "key"), [
    ("/v1/memories", '{"namespace": "alice", "content": "a note", "namespace": "bob"}',
     "namespace"),
    ("/v1/memories", '{"content": "harmless", "tags": ["x"], "content": "planted"}', "content"),
    ("/v1/inject", '{"query": "sweets", "token_budget": 10, "token_budget": 10}',
     "token_budget"),
    ("/v1/feedback", '{"pack_id": "p", "accepted": false, "accepted": true}', "accepted"),
    ("/v1/inject/explain", '{"query": "sweets", "token_budget": 10, "x": [{"a": 1, "a": 2}]}',
     "a"),
    ("/v1/memories/m1/restore", '{"a": {}, "a": {}}', "a"),
])
def test_a_key_given_twice_is_refused_with_422(api: httpx.Client, db_path: Path, path: str,
                                               body: str, key: str) -> None:
    before = written(db_path)
    r = api.post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert_error_shape(r, 422, "ValidationError")
    message = r.json()["error"]["message"]
    assert repr(key) in message and "twice" in message, message
    assert written(db_path) == before


# -- issue 38, row 14: an integer parameter past its maximum says so -----------------------------
@pytest.mark.parametrize(("path", "name", "most"), [
    ("/v1/namespaces", "limit", 100_000), ("/v1/memories", "limit", 1000),
    ("/v1/tags", "limit", 1000), ("/v1/tags/home/graph", "depth", 3),
    ("/v1/tags/home/graph", "max_nodes", 300), ("/v1/rem/runs", "limit", 1000),
])
def test_an_integer_parameter_past_its_maximum_says_the_maximum(
        api: httpx.Client, path: str, name: str, most: int) -> None:
    assert api.post("/v1/memories", json={"content": "a note", "tags": ["home"]}
                    ).status_code == 201
    for value in (str(most + 1), "100000000000000000000", "9" * 5000):
        r = api.get(path, params={name: value})
        assert_error_shape(r, 400, "InvalidInput")
        assert r.json()["error"]["message"] == f"{name} is too large (at most {most})"
    assert api.get(path, params={name: str(most)}).status_code == 200
    r = api.get(path, params={name: "-100000000000000000000"})
    assert_error_shape(r, 400, "InvalidInput")
    assert r.json()["error"]["message"].startswith(f"{name} is too small (at least ")
    for value in ("ten", "1e9", "", "0x10", "１２"):
        r = api.get(path, params={name: value})
        assert_error_shape(r, 400, "InvalidInput")
        assert r.json()["error"]["message"].startswith(f"{name} must be one integer"), r.text
