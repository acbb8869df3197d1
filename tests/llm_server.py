"""A real OpenAI-compatible chat-completions server on 127.0.0.1, driven by a script.

Each request to ``POST /v1/chat/completions`` consumes the next scripted behaviour (``good``,
``raw``, ``status``, ``empty_choices``, ``slow``, ``huge``); once the script is used up the
server repeats its default. Every request body is recorded, so tests can assert what was sent.
Other conftests load the fixtures with ``pytest_plugins = ["tests.llm_server"]``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
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


def slow(seconds: float, drip: float | None = None) -> Behaviour:
    """A good answer after ``seconds``: silent before the headers, or, with ``drip``, headers at
    once and then the body a few bytes every ``drip`` seconds (defeats a per-read timeout)."""
    return Behaviour("slow", content=json.dumps(VALID_ANSWER), seconds=seconds, drip=drip)


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
        self.headers: list[dict[str, str]] = []
        self.max_in_flight = 0
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self.stopping = threading.Event()
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/") == "/v1/embeddings":
            self._embeddings()
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        behaviour = self.server.begin(body, {k.lower(): v for k, v in self.headers.items()})
        try:
            self._act(behaviour, str(body.get("model", "test-model")))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered
        finally:
            self.server.end()

    def _embeddings(self) -> None:
        """Deterministic pseudo-embeddings: a unit vector seeded by each input's hash."""
        import hashlib

        import numpy as np

        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.embedding_requests.append(body)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dim = int(body.get("dimensions") or 1536)
        data = []
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).standard_normal(dim)
            data.append({"object": "embedding", "index": i,
                         "embedding": (v / np.linalg.norm(v)).tolist()})
        self._send(200, {"object": "list", "data": data, "model": body.get("model", "m"),
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _act(self, b: Behaviour, model: str) -> None:
        if b.kind == "status":
            self._send(b.code, {"error": {"message": f"scripted {b.code}"}}, b.headers)
        elif b.kind == "empty":
            self._send(200, _completion(model, None))
        elif b.kind == "slow" and b.drip is None:
            if not self.server.stopping.wait(b.seconds):
                self._send(200, _completion(model, b.content))
        elif b.kind == "slow":
            self._drip(_completion(model, b.content), b.seconds, b.drip or 0.1)
        else:
            self._send(200, _completion(model, b.content))

    def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
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
                return


def _completion(model: str, content: str | None) -> dict[str, Any]:
    choices = [] if content is None else [{
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
