"""A real OpenAI-compatible chat-completions server on 127.0.0.1, driven by a script.

Each request to ``POST /v1/chat/completions`` consumes the next scripted behaviour (``good``,
``raw``, ``status``, ``empty_choices``, ``null_content``, ``slow``, ``huge``, ``body``,
``hangup``, ``echo_auth``, and what a small local model did: ``all_update``, ``verbatim``
near-verbatim over-target syntheses, ``template_echo``; a slow first call is ``slow`` scripted
first, a garbled id a ``good`` answer naming it); once the script is used up the server
repeats its default. Every request body is recorded, and the client's address, so tests can
assert what was sent and over how many connections (the server speaks HTTP/1.1 and keeps
connections alive, as real ones do).
Other conftests load the fixtures with ``pytest_plugins = ["tests.llm_server"]``.
"""

from __future__ import annotations

import functools
import html
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

VALID_ANSWER: dict[str, Any] = {
    "synthesis": "On 2024-03-01 Alice moved to Berlin because Acme opened an office there.",
    "key_entities": ["Alice", "Berlin", "Acme"],
    "causal_chains": ["Acme opened a Berlin office → Alice moved to Berlin"],
    "temporal_anchors": ["2024-03-01"],
    "importance": 0.6,
}


@dataclass(frozen=True)
class Behaviour:
    kind: str
    content: str | None = None
    code: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    drip: float | None = None
    payload: bytes = b""


# A synthesis of the tests' numbered Alice fragments ("Alice moved to Berlin ... (note 3)")
# that keeps their every detail: REM folds no member whose details a synthesis would lose
# (remd/text/details.py).
NOTES_ANSWER: dict[str, Any] = {**VALID_ANSWER, "synthesis": (
    "Alice moved to Berlin (relocated) because Acme opened its Berlin office there "
    "(notes 0, 1, 2 and 3).")}


def good(obj: Any = None) -> Behaviour:
    """200 with ``obj`` (default: a valid synthesis) JSON-encoded as the message content."""
    return Behaviour("answer", content=json.dumps(VALID_ANSWER if obj is None else obj))


def raw(content: str) -> Behaviour:
    """200 with ``content`` verbatim as the message content (e.g. truncated JSON)."""
    return Behaviour("answer", content=content)


def status(code: int, headers: dict[str, str] | None = None) -> Behaviour:
    """An error status with an OpenAI-style error body."""
    return Behaviour("status", code=code, headers=headers or {})


def empty_choices() -> Behaviour:
    return Behaviour("empty")


def null_content() -> Behaviour:
    """A choice whose message content is null (what a refusal or a tool call looks like)."""
    return Behaviour("null")


def body(payload: bytes, code: int = 200, headers: dict[str, str] | None = None) -> Behaviour:
    """``payload`` verbatim as the whole response body (e.g. a proxy's HTML error page)."""
    return Behaviour("body", code=code, payload=payload,
                     headers=headers or {"Content-Type": "text/html"})


def hangup() -> Behaviour:
    """Headers promising a full answer, half of it, then the connection closed."""
    return Behaviour("hangup", content=json.dumps(VALID_ANSWER))


def echo_auth(code: int = 401) -> Behaviour:
    """An error whose message repeats the Authorization header it got (some servers do)."""
    return Behaviour("echo_auth", code=code)


def slow(seconds: float, drip: float | None = None, *, merging: bool = False) -> Behaviour:
    """A good answer after ``seconds``: silent before the headers, or, with ``drip``, headers at
    once and then the body a few bytes every ``drip`` seconds (defeats a per-read timeout).
    ``merging``: the answer is the request's own fragments merged (:func:`merged_answer`)."""
    return Behaviour("slow", content=None if merging else json.dumps(VALID_ANSWER),
                     seconds=seconds, drip=drip)


_FRAGMENT = re.compile(r'<fragment id="(?P<id>[^"]*)" date="(?P<date>[^"]*)"[^>]*>\n'
                       r'(?P<text>.*?)\n</fragment>', re.DOTALL)


@functools.cache
def _embedder() -> Any:
    from remd.text.embed import MiniLMEmbedder

    return MiniLMEmbedder()


def merged_answer(body: dict[str, Any]) -> str:
    """A faithful model: the fragments of a synthesis request merged by remd's own offline
    synthesiser (every detail kept; when they can't all be merged, the ones that can), as a
    JSON answer with its names, causes and dates; the first fragment when none can be."""
    from remd.errors import NotDenser
    from remd.sleep.synthesis import Fragment, OfflineSynthesiser
    from remd.text.tokens import TokenCounter

    found = list(_FRAGMENT.finditer(body["messages"][-1]["content"]))
    texts = [html.unescape(m.group("text")) for m in found]
    embedder = _embedder()
    frags = [Fragment(id=m.group("id"), content=text, importance=0.5, vector=vector,
                      created_at=datetime.fromisoformat(m.group("date")).replace(
                          tzinfo=UTC).timestamp())
             for m, text, vector in zip(found, texts, embedder.embed(texts), strict=True)]
    synth = OfflineSynthesiser(count=TokenCounter().count, embed=embedder.embed)
    try:
        answer = synth.synthesise(frags, target_tokens=1)
    except NotDenser:
        return json.dumps({"synthesis": frags[0].content if frags else "nothing"})
    return answer.model_dump_json(exclude={"replaces"})


def all_update() -> Behaviour:
    """A weak model's judgement: "update" for every memory the request numbers."""
    return Behaviour("all_update")


def verbatim() -> Behaviour:
    """A faithful but near-verbatim model: the request's fragments joined as they are (always
    longer than a target under the members' total), the same answer however often asked."""
    return Behaviour("verbatim")


def template_echo() -> Behaviour:
    """A model that echoes the prompt's answer template instead of answering (what a 0.5B
    model did): valid JSON whose synthesis names none of the fragments' details."""
    return Behaviour("answer", content=json.dumps({
        "synthesis": "The synthesis text.", "key_entities": ["entity"],
        "causal_chains": [], "temporal_anchors": [], "importance": 0.5}))


def numbered(server: LLMServer, index: int = -1) -> list[int]:
    """The numbers of the memories a judge request showed."""
    return [int(n) for n in re.findall(r'<memory n="(\d+)"', server.messages(index)[-1]["content"])]


def fragments_of(body: dict[str, Any]) -> list[str]:
    """The fragment texts of a synthesis request (its first user message holds them; a
    re-ask's last one is the follow-up)."""
    users = [str(m["content"]) for m in body["messages"] if m["role"] == "user"]
    return [html.unescape(m.group("text")) for m in _FRAGMENT.finditer(users[0] if users else "")]


def huge(n_chars: int) -> Behaviour:
    """A well-formed answer whose synthesis is ``n_chars`` long."""
    return good({**VALID_ANSWER, "synthesis": "x" * n_chars})


class LLMServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, default: Behaviour | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.default = default or good()
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_dim = 1536  # when a request asks for no size
        self.embedding_delay = 0.0
        self.embedding_answer: Any = None
        self.headers: list[dict[str, str]] = []
        self.connection_of: list[int] = []  # per chat request: the serial of its connection
        self.connections_made = 0
        self.max_in_flight = 0
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self._connections = threading.Condition(self._lock)
        self.open_connections = 0
        self.stopping = threading.Event()
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that vanished (killed by a crash test, or reset a kept-alive connection)
        is routine here; anything else is still printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def answer_with(self, behaviour: Behaviour) -> None:
        """From now on every request gets ``behaviour`` (anything still scripted is dropped)."""
        with self._lock:
            self._queue.clear()
            self.default = behaviour

    def connected(self, delta: int) -> int:
        """Count a connection opened (+1, returns its serial) or closed (-1)."""
        with self._connections:
            self.open_connections += delta
            self.connections_made += max(0, delta)
            self._connections.notify_all()
            return self.connections_made

    def note_connection(self, serial: int) -> None:
        with self._lock:
            self.connection_of.append(serial)

    def wait_no_connections(self, timeout: float = 30.0) -> bool:
        """Whether every client connection got closed (by the client) within ``timeout``."""
        with self._connections:
            return self._connections.wait_for(lambda: self.open_connections == 0, timeout)

    def begin(self, body: dict[str, Any], headers: dict[str, str]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            return self._queue.popleft() if self._queue else self.default

    def end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def messages(self, index: int = -1) -> list[dict[str, str]]:
        """The chat messages of one recorded request."""
        return list(self.requests[index]["messages"])


class _Handler(BaseHTTPRequestHandler):
    server: LLMServer
    protocol_version = "HTTP/1.1"  # keep-alive: every answer below carries Content-Length

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean

    def setup(self) -> None:
        super().setup()
        self.serial = self.server.connected(+1)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.connected(-1)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/") == "/v1/embeddings":
            self._embeddings()
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        except (ValueError, OSError):  # the client died mid-request (the crash tests kill it)
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.note_connection(self.serial)
        behaviour = self.server.begin(body, headers)
        try:
            self._act(behaviour, str(body.get("model", "test-model")), headers, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout) before we answered
        finally:
            self.server.end()

    def _embeddings(self) -> None:
        """Deterministic pseudo-embeddings of the size asked (``dimensions``; else the
        server's ``embedding_dim``, 1,536 as OpenAI's text-embedding-3-small): the sum of a
        seeded unit vector per word, so texts sharing words are near, as with a real model
        (REM clusters them, a question finds them). ``embedding_delay`` seconds per request;
        ``embedding_answer`` (a callable of the vectors) replaces the rows sent."""
        import hashlib

        import numpy as np

        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = int(body.get("dimensions") or self.server.embedding_dim)
        time.sleep(self.server.embedding_delay)
        rows = []
        for text in texts:
            v = np.zeros(dim)
            for word in re.findall(r"\w+", text.lower()) or [text]:
                seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
                v += np.random.default_rng(seed).standard_normal(dim)
            rows.append((v / (np.linalg.norm(v) or 1.0)).tolist())
        answer = self.server.embedding_answer
        if answer is not None:
            rows = answer(rows)
        data = [{"object": "embedding", "index": i, "embedding": row}
                for i, row in enumerate(rows)]
        self._send(200, {"object": "list", "data": data, "model": body.get("model", "m"),
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _act(self, b: Behaviour, model: str, headers: dict[str, str],
             request: dict[str, Any]) -> None:
        if b.kind == "status":
            self._send(b.code, {"error": {"message": f"scripted {b.code}"}}, b.headers)
        elif b.kind == "echo_auth":
            got = headers.get("authorization", "")
            self._send(b.code, {"error": {"message": f"Incorrect API key provided: {got}"}})
        elif b.kind == "empty":
            self._send(200, _completion(model, None))
        elif b.kind == "null":
            self._send(200, _completion(model, None, choice=True))
        elif b.kind == "body":
            self._send_bytes(b.code, b.payload, b.headers)
        elif b.kind == "hangup":
            data = json.dumps(_completion(model, b.content)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
        elif b.kind == "slow" and b.drip is None:
            if self.server.stopping.wait(b.seconds):
                self.close_connection = True  # shutting down: no answer, no next request
            else:
                content = b.content if b.content is not None else merged_answer(request)
                self._send(200, _completion(model, content))
        elif b.kind == "slow":
            self._drip(_completion(model, b.content), b.seconds, b.drip or 0.1)
        elif b.kind == "all_update":
            shown = re.findall(r'<memory n="(\d+)"', request["messages"][-1]["content"])
            self._send(200, _completion(model, json.dumps({"decisions": [
                {"n": int(n), "relation": "update"} for n in shown]})))
        elif b.kind == "verbatim":
            self._send(200, _completion(model, json.dumps({
                **VALID_ANSWER, "synthesis": " ".join(fragments_of(request)),
                "key_entities": [], "causal_chains": [], "temporal_anchors": []})))
        else:
            self._send(200, _completion(model, b.content))

    def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(code, json.dumps(payload).encode(),
                         {"Content-Type": "application/json", **(headers or {})})

    def _send_bytes(self, code: int, data: bytes, headers: dict[str, str]) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _drip(self, payload: Any, seconds: float, every: float) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        step = max(1, len(data) // max(1, int(seconds / every)))
        for start in range(0, len(data), step):
            self.wfile.write(data[start:start + step])
            self.wfile.flush()
            if self.server.stopping.wait(every):
                self.close_connection = True
                return


def _completion(model: str, content: str | None, *, choice: bool = False) -> dict[str, Any]:
    """A chat.completion; no choices at all when ``content`` is None unless ``choice``."""
    choices = [] if content is None and not choice else [{
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }]
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
        "model": model, "choices": choices,
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def refused_base_url() -> str:
    """A base URL on a loopback port with nothing listening (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    server = LLMServer()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-server", daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()  # wake slow handlers so they do not outlive the test
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
