"""The one LLM protocol remd speaks: chat completions against an OpenAI-compatible base URL.

Works with OpenAI, vLLM, Ollama and the llama.cpp server. The official ``openai`` client does the
HTTP; its own retries are switched off because we retry here, where each retry is logged and the
backoff sleep can be replaced in tests. A semaphore bounds concurrent calls per client.
Prompts are versioned Markdown files in ``prompts/`` (see :func:`load_prompt`), never f-strings.
"""

from __future__ import annotations

import email.utils
import importlib
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import pydantic
from pydantic import BaseModel

from remd.config import LLMSettings
from remd.errors import InvalidInput, LLMError, NotFound
from remd.logs import Scrub, get_logger

if TYPE_CHECKING:  # openai takes ~0.35 s to import: only a configured LLM pays for it
    from openai.types.chat import ChatCompletionMessageParam

_log = get_logger("remd.llm")

# A chat answer capped at max_tokens is a few KB; a megabyte is an endpoint gone wrong.
MAX_RESPONSE_BYTES = 1 << 20
_RETRY_STATUS = frozenset({408, 409, 429})

Role = Literal["user", "assistant"]


def _http_library(openai: ModuleType) -> ModuleType:
    """The HTTP library under ``openai`` (httpx; httpx2 from openai 3). openai wraps the errors
    raised before the response headers; those raised while the body streams (a connection
    dropped mid-answer, a read that stalls past the timeout, a corrupt gzip body) come from
    this library unwrapped."""
    try:
        module = importlib.import_module(
            openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])
    except (AttributeError, IndexError, ImportError):  # another openai layout: plain httpx
        module = importlib.import_module("httpx")
    if not all(hasattr(module, n) for n in ("TimeoutException", "RequestError")):
        module = importlib.import_module("httpx")
    return module



class LLMStatusError(LLMError):
    """The endpoint answered with an HTTP error status (after any retries)."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        super().__init__(f"LLM endpoint answered HTTP {status}{': ' + detail if detail else ''}")


class LLMUnavailable(LLMError):
    """The endpoint could not be reached or did not answer in time (after any retries)."""


class _Retryable(Exception):
    """Internal: one attempt failed in a way worth retrying."""

    def __init__(self, reason: str, status: int | None = None, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.delay = delay  # what the server asked for (Retry-After), if anything


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Completion(BaseModel):
    """The part of a chat.completion body we use; other fields vary by server and are ignored."""

    choices: list[_Choice] = []


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SECTION = re.compile(r"^## (\w+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True, kw_only=True)
class Prompt:
    """A versioned prompt file: front-matter ``meta`` and its ``## name`` sections."""

    name: str
    version: int
    sections: Mapping[str, str]
    meta: Mapping[str, str] = field(default_factory=dict)

    @property
    def ident(self) -> str:
        """What a REM run records, e.g. ``synthesis-1``."""
        return f"{self.name}-{self.version}"

    def fill(self, section: str, **values: str) -> str:
        """The section with its ``{{name}}`` placeholders replaced in ONE pass, so a value (memory
        text) containing ``{{...}}`` is never expanded. Raises InvalidInput on a missing value."""
        template = self.sections.get(section)
        if template is None:
            raise InvalidInput(f"prompt {self.name!r} has no section {section!r}")
        missing = set(_PLACEHOLDER.findall(template)) - values.keys()
        if missing:
            raise InvalidInput(f"prompt {self.name!r} needs values for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def load_prompt(name: str = "synthesis") -> Prompt:
    """Read ``prompts/<name>.md`` from the installed package.

    Raises NotFound for an unknown prompt, InvalidInput for a malformed file.
    """
    if not re.fullmatch(r"[a-z0-9_-]+", name):
        raise InvalidInput(f"bad prompt name {name!r}")
    try:
        text = (resources.files("remd") / "prompts" / f"{name}.md").read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFound("prompt", name) from exc
    head = re.match(r"---\n(.*?)\n---\n", text, re.DOTALL)
    if head is None:
        raise InvalidInput(f"prompt {name!r} has no front matter")
    pairs = (line.partition(":") for line in head.group(1).splitlines())
    meta = {k.strip(): v.strip() for k, _, v in pairs if k.strip()}
    if not meta.get("version", "").isdigit():
        raise InvalidInput(f"prompt {name!r} needs an integer 'version' in its front matter")
    parts = _SECTION.split(text[head.end():])
    sections = {key: body.strip() for key, body in zip(parts[1::2], parts[2::2], strict=True)}
    for needed in ("system", "user"):
        if not sections.get(needed):
            raise InvalidInput(f"prompt {name!r} has no '## {needed}' section")
    return Prompt(name=name, version=int(meta["version"]), sections=sections, meta=meta)


class LLMClient:
    """Sends JSON-mode chat completions with timeouts, logged retries and bounded concurrency."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """Raises InvalidInput when ``settings.base_url`` is None (no LLM configured)."""
        if settings.base_url is None:
            raise InvalidInput("no LLM configured: set llm.base_url")
        self.settings = settings
        self.model = settings.model
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        # Local servers (Ollama, llama.cpp, vLLM) ignore the key, but the client insists on one.
        key = settings.api_key.get_secret_value() if settings.api_key else "unused"
        # Some servers repeat the key they got in their 401 message: masked before it reaches
        # the REM run's log and its rem_clusters row.
        self._scrub = Scrub([key] if settings.api_key else []).clean
        import openai  # here, not at the top: see TYPE_CHECKING above

        self._openai = openai
        self._http = _http_library(openai)
        self._client = openai.OpenAI(
            base_url=settings.base_url, api_key=key, timeout=settings.timeout, max_retries=0
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def complete_json(
        self, system: str, user: str, *, turns: Sequence[tuple[Role, str]] = ()
    ) -> str:
        """Return the content of a JSON-mode answer to ``system`` + ``user`` (+ later ``turns``).

        ``turns`` are extra (role, content) messages after ``user``, e.g. a re-ask after an
        invalid answer. The content is not validated here beyond being non-empty.
        Raises LLMStatusError (HTTP 4xx at once; 429/5xx after retries), LLMUnavailable
        (timeouts, refused connections, after retries) or LLMError (no usable answer).
        """
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        for role, content in turns:
            if role == "assistant":
                messages.append({"role": "assistant", "content": content})
            else:
                messages.append({"role": "user", "content": content})
        attempts = self.settings.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._attempt(messages)
            except _Retryable as exc:
                if attempt == attempts:
                    _log.warning("llm.failed", attempt=attempt, status=exc.status,
                                 reason=exc.reason, model=self.model)
                    if exc.status is not None:
                        detail = f"gave up after {attempt} attempts"
                        raise LLMStatusError(exc.status, detail) from exc
                    detail = f"LLM endpoint unavailable after {attempt} attempts: {exc.reason}"
                    raise LLMUnavailable(detail) from exc
                delay = self._backoff(attempt, exc.delay)
                _log.warning("llm.retry", attempt=attempt, status=exc.status,
                             reason=exc.reason, delay=round(delay, 3), model=self.model)
                self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _backoff(self, attempt: int, asked: float | None) -> float:
        """Exponential backoff with equal jitter; a server's Retry-After wins, capped."""
        cap = self.settings.backoff_max
        if asked is not None:
            return min(asked, cap)
        ceiling = min(cap, self.settings.backoff_base * 2.0 ** (attempt - 1))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _attempt(self, messages: list[ChatCompletionMessageParam]) -> str:
        with self._slots:
            body = self._post(messages)
        try:
            completion = _Completion.model_validate_json(body)
        except pydantic.ValidationError as exc:
            _log.warning("llm.failed", reason="malformed response body", model=self.model)
            raise LLMError("LLM endpoint sent a response that is not a chat completion") from exc
        if not completion.choices:
            _log.warning("llm.failed", reason="no choices", model=self.model)
            raise LLMError("LLM answer has no choices")
        choice = completion.choices[0]
        content = choice.message.content
        if content is None or not content.strip():
            _log.warning("llm.failed", reason="empty content", model=self.model,
                         finish_reason=choice.finish_reason)
            raise LLMError("LLM answer has empty content")
        return content

    def _post(self, messages: list[ChatCompletionMessageParam]) -> bytes:
        """One HTTP attempt; returns the raw body. The body is streamed so the timeout covers
        the whole answer (the HTTP client's own timeout is per read) and its size is capped."""
        deadline = time.monotonic() + self.settings.timeout
        try:
            with self._client.chat.completions.with_streaming_response.create(
                model=self.model,
                messages=messages,
                response_format={"type": "json_object"},
                temperature=self.settings.temperature,
                max_tokens=self.settings.max_tokens,
            ) as response:
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_RESPONSE_BYTES:
                        _log.warning("llm.failed", reason="response too large", model=self.model)
                        raise LLMError(f"LLM response is over {MAX_RESPONSE_BYTES} bytes")
                    if time.monotonic() > deadline:
                        raise _Retryable("timeout")
                return bytes(body)
        except (self._openai.APITimeoutError, self._http.TimeoutException) as exc:
            raise _Retryable("timeout") from exc
        except self._openai.APIConnectionError as exc:
            raise _Retryable("connection error") from exc
        except self._http.RequestError as exc:  # while the body streamed: dropped, reset, corrupt
            raise _Retryable(f"answer body failed: {type(exc).__name__}") from exc
        except self._openai.APIStatusError as exc:
            code = exc.status_code
            if code in _RETRY_STATUS or code >= 500:
                asked = _retry_after(exc.response.headers)
                raise _Retryable(f"HTTP {code}", code, asked) from exc
            _log.warning("llm.failed", status=code, reason=f"HTTP {code}", model=self.model)
            raise LLMStatusError(code, self._scrub(_short(exc.message))) from exc


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms``, ``retry-after`` seconds or date)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            seconds = when.timestamp() - time.time()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
