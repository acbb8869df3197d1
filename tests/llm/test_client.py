"""LLMClient against a real OpenAI-compatible server on 127.0.0.1 (no patched client)."""

from __future__ import annotations

import json
import threading
from collections.abc import MutableMapping
from typing import Any

import pydantic
import pytest
from pydantic import SecretStr

from remd.config import LLMSettings
from remd.errors import InvalidInput, LLMError
from remd.llm.client import LLMClient, LLMStatusError, LLMUnavailable
from remd.logs import capture_events
from tests.llm_server import (
    VALID_ANSWER,
    LLMServer,
    empty_choices,
    good,
    huge,
    refused_base_url,
    slow,
    status,
)

KEY = "sk-test-DO-NOT-LOG-4f9a"


def make_client(base_url: str, sleeps: list[float], **overrides: Any) -> LLMClient:
    options: dict[str, Any] = {"max_retries": 3, "timeout": 5.0, **overrides}
    settings = LLMSettings(base_url=base_url, api_key=SecretStr(KEY), **options)
    return LLMClient(settings, sleep=sleeps.append)


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def test_good_answer_and_what_is_sent(llm_server: LLMServer) -> None:
    sleeps: list[float] = []
    with make_client(llm_server.base_url, sleeps, model="test-model", max_tokens=77) as client:
        content = client.complete_json("SYSTEM TEXT", "USER TEXT")
    assert json.loads(content) == VALID_ANSWER
    assert sleeps == []
    (body,) = llm_server.requests
    assert body["model"] == "test-model"
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 77 and body["temperature"] == 0.0
    assert body["messages"] == [
        {"role": "system", "content": "SYSTEM TEXT"},
        {"role": "user", "content": "USER TEXT"},
    ]
    assert llm_server.headers[0]["authorization"] == f"Bearer {KEY}"


def test_turns_follow_the_user_message(llm_server: LLMServer) -> None:
    client = make_client(llm_server.base_url, [])
    client.complete_json("s", "u", turns=[("assistant", "{bad"), ("user", "try again")])
    roles = [m["role"] for m in llm_server.messages()]
    assert roles == ["system", "user", "assistant", "user"]
    assert llm_server.messages()[-1]["content"] == "try again"


def test_429_honours_retry_after(llm_server: LLMServer) -> None:
    llm_server.script(status(429, {"Retry-After": "2"}), good())
    sleeps: list[float] = []
    with capture_events() as logs:
        content = make_client(llm_server.base_url, sleeps).complete_json("s", "u")
    assert json.loads(content) == VALID_ANSWER
    assert sleeps == [2.0]
    (retry,) = events(logs, "llm.retry")
    assert retry["status"] == 429 and retry["attempt"] == 1 and retry["delay"] == 2.0
    assert len(llm_server.requests) == 2


def test_retry_after_is_capped_by_backoff_max(llm_server: LLMServer) -> None:
    llm_server.script(status(429, {"Retry-After": "120"}), good())
    sleeps: list[float] = []
    make_client(llm_server.base_url, sleeps, backoff_max=3.0).complete_json("s", "u")
    assert sleeps == [3.0]


def test_500_500_then_success_backs_off_exponentially(llm_server: LLMServer) -> None:
    llm_server.script(status(500), status(500), good())
    sleeps: list[float] = []
    with capture_events() as logs:
        make_client(llm_server.base_url, sleeps, backoff_base=0.5).complete_json("s", "u")
    assert len(llm_server.requests) == 3
    # equal jitter: attempt n sleeps between half and all of base * 2**(n-1)
    assert 0.25 <= sleeps[0] <= 0.5 and 0.5 <= sleeps[1] <= 1.0
    assert [e["attempt"] for e in events(logs, "llm.retry")] == [1, 2]
    assert events(logs, "llm.failed") == []


def test_503_exhausting_retries_raises(llm_server: LLMServer) -> None:
    llm_server.default = status(503)
    sleeps: list[float] = []
    with capture_events() as logs, pytest.raises(LLMStatusError) as info:
        make_client(llm_server.base_url, sleeps, max_retries=2).complete_json("s", "u")
    assert info.value.status == 503 and "503" in str(info.value)
    assert len(llm_server.requests) == 3 and len(sleeps) == 2
    (failed,) = events(logs, "llm.failed")
    assert failed["status"] == 503 and failed["attempt"] == 3


@pytest.mark.parametrize("code", [400, 401, 403, 404])
def test_client_errors_are_not_retried(llm_server: LLMServer, code: int) -> None:
    llm_server.default = status(code)
    sleeps: list[float] = []
    with capture_events() as logs, pytest.raises(LLMStatusError) as info:
        make_client(llm_server.base_url, sleeps).complete_json("s", "u")
    assert info.value.status == code and str(code) in str(info.value)
    assert len(llm_server.requests) == 1 and sleeps == []
    assert events(logs, "llm.retry") == [] and events(logs, "llm.failed")[0]["status"] == code


def test_timeout_is_retried_then_raises(llm_server: LLMServer) -> None:
    llm_server.default = slow(3.0)
    sleeps: list[float] = []
    with capture_events() as logs, pytest.raises(LLMUnavailable, match="timeout"):
        make_client(llm_server.base_url, sleeps, timeout=0.5, max_retries=1).complete_json("s", "u")
    assert len(llm_server.requests) == 2 and len(sleeps) == 1
    assert events(logs, "llm.retry")[0]["reason"] == "timeout"


def test_dripping_body_hits_the_whole_answer_deadline(llm_server: LLMServer) -> None:
    # Each chunk arrives well within the per-read timeout; only a total deadline stops it.
    llm_server.script(slow(3.0, drip=0.1), good())
    sleeps: list[float] = []
    with capture_events() as logs:
        content = make_client(llm_server.base_url, sleeps, timeout=0.5).complete_json("s", "u")
    assert json.loads(content) == VALID_ANSWER
    assert [e["reason"] for e in events(logs, "llm.retry")] == ["timeout"]


def test_empty_choices_raise_without_retry(llm_server: LLMServer) -> None:
    llm_server.script(empty_choices())
    with pytest.raises(LLMError, match="no choices"):
        make_client(llm_server.base_url, []).complete_json("s", "u")
    assert len(llm_server.requests) == 1


def test_oversized_response_is_refused(llm_server: LLMServer) -> None:
    llm_server.script(huge(1_200_000))
    with pytest.raises(LLMError, match="bytes"):
        make_client(llm_server.base_url, []).complete_json("s", "u")
    assert len(llm_server.requests) == 1


def test_connection_refused_is_retried_then_raises() -> None:
    sleeps: list[float] = []
    with capture_events() as logs, pytest.raises(LLMUnavailable):
        make_client(refused_base_url(), sleeps, max_retries=2).complete_json("s", "u")
    assert len(sleeps) == 2
    assert events(logs, "llm.failed")[0]["reason"] == "connection error"


@pytest.mark.parametrize(("concurrency", "bounded"), [(1, True), (4, False)])
def test_concurrency_bound(llm_server: LLMServer, concurrency: int, bounded: bool) -> None:
    llm_server.default = slow(0.4)
    client = make_client(llm_server.base_url, [], concurrency=concurrency)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.complete_json("s", "u")
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == [] and len(llm_server.requests) == 4
    if bounded:
        assert llm_server.max_in_flight == 1
    else:  # control: without the bound the server does see overlapping calls
        assert llm_server.max_in_flight > 1


def test_the_key_never_reaches_logs_or_errors(llm_server: LLMServer) -> None:
    llm_server.script(status(500), status(429), status(401))
    settings = LLMSettings(base_url=llm_server.base_url, api_key=SecretStr(KEY), max_retries=3)
    with capture_events() as logs, pytest.raises(LLMError) as info:
        LLMClient(settings, sleep=lambda _: None).complete_json("SYS-PROMPT-1", "USER-PROMPT-2")
    assert len(logs) == 3
    assert KEY not in repr(logs) and KEY not in str(info.value)
    assert KEY not in repr(settings) and KEY not in str(settings)
    assert "SYS-PROMPT" not in repr(logs) and "USER-PROMPT" not in repr(logs)  # nor prompts


def test_settings_validation() -> None:
    assert LLMSettings(base_url="  ").base_url is None
    for bad in ({"timeout": 0}, {"max_retries": -1}, {"concurrency": 0}, {"nope": 1}):
        with pytest.raises(pydantic.ValidationError):
            LLMSettings.model_validate(bad)
    with pytest.raises(InvalidInput, match="no LLM configured"):
        LLMClient(LLMSettings())
