"""The HTTP API for agents that are not written in Python (Starlette, served by uvicorn).

Endpoints (JSON in and out; the namespace is per request: a ``namespace`` field in POST
bodies, a ``?namespace=`` query parameter on GETs, else the server's default):

- ``POST /v1/memories`` ``{"content", "tags"?, "source"?}`` → 201, the memory
- ``POST /v1/inject`` ``{"query", "token_budget", "fill"?, "dated"?}`` → the pack, same shape as
  ``remd inject --json`` (``fill``: pack to the budget, default false: stop at the floor;
  ``dated``: each item's text begins with its date, relative dates resolved)
- ``POST /v1/feedback`` ``{"pack_id", "accepted"}``
- ``GET /v1/memories/{id}``, ``GET /v1/memories/{id}/history``, ``GET /v1/stats``
- ``GET /v1/contradictions`` ``?topic=&memory_id=&limit=`` (20; 1..200) →
  ``{"contradictions": [{"memory", "contradicts", "weight", "context"}]}``
- the web inspector's endpoints and its page at ``/ui`` (:mod:`remd.http.inspect`)
- ``GET /healthz`` (never needs the token): ``{"status": "ok", ...}``, or 503 with the
  error shape below plus ``"status": "unavailable"``
- ``GET /metrics`` (the token), ``GET /livez`` and ``GET /readyz`` (no token): see
  :mod:`remd.http.probes`

Logging: one ``http.summary`` event (info) per minute of traffic, logged by a timer when the
minute ends, counts every request (unknown routes, wrong methods and unparsable requests too)
by endpoint and status with their mean and slowest latency; the ``http.request`` line of each
request is debug-level (warning for a 5xx), so a busy server's journal grows with time, not
with traffic.

Errors are ``{"error": {"type", "message"}}`` with 400 (bad input: ``InvalidInput``, or
``InvalidJSON`` for a body that is not UTF-8 JSON or holds NaN, an integer too long to read or
nesting past the parser's limit, or ``InvalidHTTP`` for a request that is not HTTP/1.1, such as
a malformed ``Content-Length``), 401 (token), 403 (a Host or an Origin the server does not
answer: :mod:`remd.http.guard`), 404 (unknown id), 409 (conflict), 413 (body too large), 415
(a write that is not ``application/json``), 422 (body fails the schema, or gives a key
twice), 502 (LLM), 503 (the database is locked or unusable, or the
server is overloaded: every connection leased or no file descriptor left; these carry
``Retry-After`` and are logged once per cause per minute). Never a 500 for bad input.

Handlers run the blocking library calls on a bounded set of worker threads, over the served
engine (:class:`~remd.hosting.EngineHost`): one bounded pool of connections shared by every
namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict
from importlib import metadata
from typing import Any

import anyio.to_thread
import uvicorn
from pydantic import BaseModel, SecretStr, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from remd.config import Config
from remd.errors import (
    ConfigError,
    Conflict,
    DatabaseLocked,
    InvalidInput,
    LLMError,
    NotFound,
    RemdError,
    RollbackRefused,
    StoreError,
    first_line,
)
from remd.hosting import EngineHost, Throttle
from remd.http.guard import (
    Guard,
    HttpError,
    check_json_type,
    check_path,
    is_loopback,
    parse_json,
)
from remd.http.inspect import Inspector, inspector_routes
from remd.http.models import (
    ContradictionOut,
    EmptyIn,
    FeedbackIn,
    FeedbackOut,
    InjectIn,
    MemoryIn,
    MemoryOut,
    PackOut,
    StatsOut,
    error_body,
)
from remd.http.params import int_param
from remd.http.probes import Probes
from remd.http.protocol import http11
from remd.http.requestlog import SUMMARY_SECONDS, RequestLog
from remd.logs import get_logger
from remd.memory import Memory
from remd.query.contradictions import MAX_CONTRADICTIONS
from remd.wire import node_to_dict, pair_to_dict

log = get_logger("remd.http")

_RETRY_AFTER = {"Retry-After": "1"}


# -- errors ----------------------------------------------------------------------------------
_STATUS: tuple[tuple[type[RemdError], int], ...] = (
    (InvalidInput, 400), (NotFound, 404), (Conflict, 409), (RollbackRefused, 409),
    (DatabaseLocked, 503), (StoreError, 503), (LLMError, 502), (ConfigError, 500),
)


def status_of(exc: RemdError) -> int:
    """The HTTP status for a library error (400 for any RemdError not listed)."""
    return next((code for cls, code in _STATUS if isinstance(exc, cls)), 400)


def _error(status: int, kind: str, message: str,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(kind, message), status_code=status, headers=headers)


# -- the app ---------------------------------------------------------------------------------
Handler = Callable[[Request], Awaitable[Response]]


class _Api:
    def __init__(self, host: EngineHost, token: SecretStr | None, default_namespace: str,
                 max_body_bytes: int, summary_seconds: float,
                 allowed_hosts: Collection[str]) -> None:
        self.host = host
        self.guard = Guard(allowed_hosts)
        self.throttle = Throttle()
        self.token = token
        self.default_namespace = default_namespace
        self.max_body_bytes = max_body_bytes
        self.requests = RequestLog(summary_seconds)

    # -- plumbing ------------------------------------------------------------------------
    def endpoint(self, fn: Handler, *, auth: bool = True, route: bool = True) -> Handler:
        """Wrap a handler: the guard's Host and Origin rules (:mod:`remd.http.guard`), the
        bearer token (``auth``), and for a ``route`` (not the 404 and 405 answers) the JSON
        type of a write and storable path parameters; error mapping; the request recorded for
        the summary (and logged at debug level, or warning for a 5xx)."""
        name = fn.__name__

        async def wrapped(request: Request) -> Response:
            started = time.perf_counter()
            try:
                self.guard.check(request)
                if auth:
                    self._check_token(request)
                if route:
                    check_json_type(request)
                    check_path(request)
                response = await fn(request)
            except HttpError as exc:
                response = _error(exc.status, exc.kind, exc.message, exc.headers)
            except (RemdError, OSError) as exc:
                code, body, headers = self._refusal(exc)
                response = JSONResponse(body, status_code=code, headers=headers)
            except Exception as exc:  # the API's boundary: a bug is still JSON
                log.exception("http.internal_error", method=request.method,
                              path=request.url.path, error_type=type(exc).__name__)
                response = _error(500, "InternalError", "internal error (see the server log)")
            ms = round((time.perf_counter() - started) * 1000, 2)
            status = response.status_code
            log.log(logging.WARNING if status >= 500 else logging.DEBUG, "http.request",
                    method=request.method, path=request.url.path, status=status, ms=ms)
            self.requests.record(name, status, ms)
            return response

        return wrapped

    def _refusal(self, exc: RemdError | OSError
                 ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        """Status, error body and headers for a library error, or for an exhausted resource
        (OSError: no file descriptor left, EMFILE, and the like). A 503 carries Retry-After
        and is logged once per cause per minute."""
        if isinstance(exc, RemdError):
            code, kind, message = status_of(exc), type(exc).__name__, first_line(exc)
        else:
            code, kind, message = 503, "Unavailable", "the server is out of resources; retry"
        if code != 503:
            return code, error_body(kind, message), None
        self._overloaded(type(exc).__name__, str(exc))
        return code, error_body(kind, message), _RETRY_AFTER

    def _overloaded(self, cause: str, detail: str) -> None:
        allowed, suppressed = self.throttle.allow(cause)
        if allowed:
            log.warning("http.unavailable", cause=cause, error=detail.splitlines()[0][:200],
                        suppressed=suppressed)

    def _check_token(self, request: Request) -> None:
        token = self.token
        if token is None:
            return
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        expected = token.get_secret_value().encode("utf-8")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8"),
                                                                 expected):
            raise HttpError(401, "Unauthorized", "missing or wrong bearer token",
                            {"WWW-Authenticate": "Bearer"})

    async def _body(self, request: Request, model: type[BaseModel]) -> Any:
        """The body read into ``model``; for :class:`EmptyIn` (a write that takes no body), an
        empty body is ``{}``. Raises HttpError 413, 400 (not JSON), 422 (not the model)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise HttpError(413, "PayloadTooLarge",
                            f"request body is larger than {self.max_body_bytes} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise HttpError(413, "PayloadTooLarge",
                                f"request body is larger than {self.max_body_bytes} bytes")
            chunks.append(chunk)
        raw = b"".join(chunks)
        data = {} if model is EmptyIn and not raw.strip() else parse_json(raw)
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            # The message names the field, never the caller's value (it may be a memory).
            raise HttpError(422, "ValidationError", f"{where}: {first['msg']}") from exc

    def _namespace(self, given: str | None) -> str:
        return self.default_namespace if given is None else given

    async def _call(self, namespace: str, fn: Callable[[Memory], Any]) -> Any:
        def work() -> Any:
            with self.host.lease() as engine:
                return fn(Memory.bound(engine, namespace))

        return await run_in_threadpool(work)

    # -- handlers ------------------------------------------------------------------------
    async def save(self, request: Request) -> Response:
        body: MemoryIn = await self._body(request, MemoryIn)
        node = await self._call(self._namespace(body.namespace),
                                lambda m: m.save(body.content, body.tags, body.source,
                                                 created_at=body.created_at))
        out = MemoryOut.model_validate(node_to_dict(node))
        return JSONResponse(out.model_dump(), status_code=201)

    async def inject(self, request: Request) -> Response:
        body: InjectIn = await self._body(request, InjectIn)
        data = await self._call(self._namespace(body.namespace),
                                lambda m: m.inject(body.query, body.token_budget,
                                                   fill=body.fill,
                                                   dated=body.dated).to_dict())
        return JSONResponse(PackOut.model_validate(data).model_dump())

    async def feedback(self, request: Request) -> Response:
        body: FeedbackIn = await self._body(request, FeedbackIn)
        data = await self._call(
            self._namespace(body.namespace),
            lambda m: asdict(m.feedback(body.pack_id, body.accepted)))
        return JSONResponse(FeedbackOut.model_validate(
            {**data, "accepted": body.accepted}).model_dump())

    async def get(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        node = await self._call(self._query_ns(request), lambda m: m.get(node_id))
        return JSONResponse(MemoryOut.model_validate(node_to_dict(node)).model_dump())

    async def history(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        nodes = await self._call(self._query_ns(request), lambda m: m.history(node_id))
        return JSONResponse([MemoryOut.model_validate(node_to_dict(n)).model_dump()
                             for n in nodes])

    async def restore(self, request: Request) -> Response:
        node_id = request.path_params["node_id"]
        await self._body(request, EmptyIn)
        data = await self._call(self._query_ns(request), lambda m: asdict(m.restore(node_id)))
        return JSONResponse(data)

    async def contradictions(self, request: Request) -> Response:
        args = request.query_params
        topic, memory_id = args.get("topic"), args.get("memory_id")
        limit = int_param(request, "limit", 20, 1, MAX_CONTRADICTIONS)
        pairs = await self._call(self._query_ns(request),
                                 lambda m: m.contradictions(memory_id, topic, limit))
        return JSONResponse({"contradictions": [
            ContradictionOut.model_validate(pair_to_dict(*p)).model_dump() for p in pairs]})

    async def stats(self, request: Request) -> Response:
        data = await self._call(self._query_ns(request), lambda m: asdict(m.stats()))
        return JSONResponse(StatsOut.model_validate(data).model_dump())

    async def health(self, request: Request) -> Response:
        def schema_version(m: Memory) -> int:
            with m.store.snapshot():  # a read transaction: any SQLite error is a StoreError
                return m.store.schema_version()

        try:
            version = await self._call(self.default_namespace, schema_version)
        except (RemdError, OSError) as exc:
            # The documented error shape, plus the "status" a health check looks at.
            code, body, headers = self._refusal(exc)
            return JSONResponse({"status": "unavailable", **body}, status_code=code,
                                headers=headers)
        return JSONResponse({"status": "ok", "schema_version": version,
                             "version": _version()})

    def _query_ns(self, request: Request) -> str:
        values = request.query_params.getlist("namespace")
        if len(values) > 1:
            raise HttpError(400, "InvalidInput", "give at most one namespace")
        return values[0] if values else self.default_namespace


def _version() -> str:
    try:
        return metadata.version("remd")
    except metadata.PackageNotFoundError:
        return "unknown"


async def no_route(request: Request) -> Response:
    return _error(404, "NotFound", f"no route {request.method[:20]} {request.url.path[:80]}")


async def method_not_allowed(request: Request) -> Response:
    return _error(405, "MethodNotAllowed", f"{request.method[:20]} is not allowed here")


def _on_error(handler: Handler) -> Callable[[Request, Exception], Awaitable[Response]]:
    """``handler`` as Starlette's exception handlers are called."""
    async def respond(request: Request, exc: Exception) -> Response:
        return await handler(request)

    return respond


def create_app(host: EngineHost, *, token: SecretStr | None = None,
               default_namespace: str = "default", max_body_bytes: int = 1_048_576,
               summary_seconds: float = SUMMARY_SECONDS,
               allowed_hosts: Collection[str] = ()) -> Starlette:
    """The Starlette app over ``host``'s engine. ``app.state.api.token`` can be swapped at run
    time; ``summary_seconds`` is the window of an ``http.summary`` event; ``allowed_hosts``
    are the Host names a loopback bind answers besides loopback's own
    (:class:`~remd.http.guard.Guard`)."""
    api = _Api(host, token, default_namespace, max_body_bytes, summary_seconds, allowed_hosts)
    e = api.endpoint
    probes = Probes(host)
    routes = [
        Route("/healthz", e(api.health, auth=False), methods=["GET"]),
        Route("/livez", e(probes.livez, auth=False), methods=["GET"]),
        Route("/readyz", e(probes.readyz, auth=False), methods=["GET"]),
        Route("/metrics", e(probes.metrics), methods=["GET"]),
        Route("/v1/memories", e(api.save), methods=["POST"]),
        Route("/v1/memories/{node_id}", e(api.get), methods=["GET"]),
        Route("/v1/memories/{node_id}/history", e(api.history), methods=["GET"]),
        Route("/v1/memories/{node_id}/restore", e(api.restore), methods=["POST"]),
        Route("/v1/inject", e(api.inject), methods=["POST"]),
        Route("/v1/feedback", e(api.feedback), methods=["POST"]),
        Route("/v1/stats", e(api.stats), methods=["GET"]),
        Route("/v1/contradictions", e(api.contradictions), methods=["GET"]),
    ]
    routes += inspector_routes(Inspector(api._call, api._query_ns, api._body,
                                         lambda: api.token is not None), e)
    # Unknown routes and wrong methods are answered (and counted) like any endpoint.
    app = Starlette(routes=routes, exception_handlers={
        404: _on_error(e(no_route, auth=False, route=False)),
        405: _on_error(e(method_not_allowed, auth=False, route=False))})
    app.state.api = api
    app.state.probes = probes
    return app


def http_server(host: EngineHost, config: Config, default_namespace: str) -> HttpServer:
    """The HTTP front end ``remd serve --http`` hands the daemon: the app over ``host``, bound
    to ``config.daemon.http_address``. Raises ConfigError when the address can't be bound."""
    d = config.daemon
    if d.http_address is None:
        raise ConfigError("daemon.http is not set")
    app = create_app(host, token=d.http_token, default_namespace=default_namespace,
                     max_body_bytes=d.http_max_body_bytes, allowed_hosts=d.http_allowed_hosts)
    return HttpServer(app, *d.http_address, workers=2 * config.store.max_connections)

# -- serving it from a thread of the daemon --------------------------------------------------
class HttpServer:
    """uvicorn on a thread of this process, on a socket bound up front.

    Binding in the constructor means a taken port or a bad host is reported when the daemon
    starts (ConfigError), and port 0 gives a free port whose number is known at once; the app's
    guard learns whether the bound address is loopback (the Host rule holds there only). A
    timer thread logs the ``http.summary`` of each window of the app's requests as it ends.
    Serving without a token is logged as a warning (``http.no_token``), at start and when a
    reload drops the token.
    """

    def __init__(self, app: Starlette, host: str, port: int, *, workers: int = 8) -> None:
        self.app = app
        self.workers = workers  # threads running library calls (more would only queue)
        self.throttle = Throttle()
        try:
            family, kind, proto, _, addr = socket.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
            self.sock = socket.socket(family, kind, proto)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind(addr)
            self.sock.listen(128)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port}: "
                              f"{exc.strerror or exc}") from exc
        self.host, self.port = self.sock.getsockname()[:2]
        app.state.api.guard.loopback_bind = is_loopback(self.host)
        self.requests: RequestLog = app.state.api.requests
        self.server = uvicorn.Server(uvicorn.Config(
            app, http=http11(self.requests), log_config=None, access_log=False,
            lifespan="off", timeout_graceful_shutdown=5))
        self._thread: threading.Thread | None = None
        self._drained_at = 0.0  # time.monotonic() until which stop() keeps serving
        self._stopping = threading.Event()
        self._summaries = threading.Thread(target=self.requests.run, args=(self._stopping,),
                                           name="remd-http-summary", daemon=True)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def set_token(self, token: SecretStr | None) -> None:
        dropped = token is None and self.app.state.api.token is not None
        self.app.state.api.token = token
        if dropped:
            self._no_token()

    def _no_token(self) -> None:
        log.warning("http.no_token", host=self.host, port=self.port, reason=(
            "no bearer token: every process and user of this machine can read and write "
            "every namespace; set daemon.http_token (REMD_DAEMON__HTTP_TOKEN)"))

    def start(self, timeout: float = 10.0) -> None:
        """Serve on a daemon thread; returns once uvicorn accepts connections."""
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),),
                                        name="remd-http", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"HTTP server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        if self.app.state.api.token is None:
            self._no_token()
        self._summaries.start()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._loop_error)
        # Library calls run on worker threads; past a few per connection they only wait for a
        # connection of the pool, so the pool of threads is bounded too (anyio's default: 40).
        anyio.to_thread.current_default_thread_limiter().total_tokens = self.workers
        await self.server.serve(sockets=[self.sock])

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """asyncio's errors outside any request (``socket.accept() out of system resource``
        when no file descriptor is left: asyncio pauses accepting for a second and retries on
        its own): one line per cause per minute, with no traceback."""
        exc = context.get("exception")
        cause = f"{context.get('message', 'error')}: {type(exc).__name__ if exc else ''}"
        allowed, suppressed = self.throttle.allow(cause)
        if allowed:
            log.warning("http.loop_error", cause=cause, error=str(exc or "")[:200],
                        suppressed=suppressed)

    def drain(self, seconds: float) -> None:
        """Answer 503 on /readyz from now on, and keep serving ``seconds`` more before
        :meth:`stop` closes the socket."""
        self.app.state.probes.drain()
        self._drained_at = time.monotonic() + seconds

    def stop(self) -> None:
        """Serve out the drain window, finish requests in flight (up to 5 s), log the last
        summary and close the socket."""
        time.sleep(max(0.0, self._drained_at - time.monotonic()))
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._stopping.set()
        if self._summaries.is_alive():
            self._summaries.join(timeout=10)
        self.requests.flush()
        with contextlib.suppress(OSError):
            self.sock.close()
