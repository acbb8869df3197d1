"""What a request must be before a handler of the HTTP API (:mod:`remd.http.app`) sees it, and
how its JSON body is read.

A web page the user visits can make the browser send requests to ``127.0.0.1``: a "simple"
cross-origin request (a ``text/plain`` or form body, any GET) goes out without asking the server
first (no CORS preflight), and a page whose own name the attacker re-points at 127.0.0.1 (DNS
rebinding) is even the browser's same origin. So, for every route:

- on a loopback bind, the ``Host`` must name loopback (``localhost``, ``127.0.0.0/8``,
  ``[::1]``, any port) or one of ``daemon.http_allowed_hosts`` (a rebinding page's Host is its
  own name);
- an ``Origin``, when there is one, must be the server's own: the scheme, host and port of the
  request's ``Host`` (a same-origin fetch of the inspector sends exactly that; curl and the SDKs
  send none). Reads too: CORS alone keeps a cross-origin page from reading an answer, and a
  refusal is simpler to trust;
- a write (POST, PUT, PATCH, DELETE) must say ``Content-Type: application/json``, which a page
  can't send cross-origin without a preflight this server never grants; writes that take no
  body (forget, restore, rollback) too, with an empty body or ``{}``;
- a path parameter must be text a store can hold (no NUL), as every other input.

Refusals are :class:`HttpError`, in the API's error shape.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from remd.checks import check_storable
from remd.errors import quote

__all__ = ["Guard", "HttpError", "check_json_type", "check_path", "is_loopback", "parse_json"]

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_DEFAULT_PORT = {"http": 80, "https": 443}
_PARAM_NAMES = {"node_id": "memory id", "run_id": "run id", "tag": "tag", "asset": "file name"}


class HttpError(Exception):
    """An error response decided by the HTTP layer itself (auth, body, routing, the guard)."""

    def __init__(self, status: int, kind: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1); any other name is not."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_port(netloc: str) -> tuple[str, int | None] | None:
    """A ``Host`` header's (lower-case host, port or None), or None when it is not one."""
    try:
        parts = urlsplit(f"//{netloc}")
        host, port = parts.hostname, parts.port
    except ValueError:  # "[::1", "localhost:http"
        return None
    if not host or "@" in netloc or parts.path or parts.query or parts.fragment:
        return None
    return host, port


def _origin(origin: str) -> tuple[str, str, int] | None:
    """An ``Origin`` header's (scheme, host, port), or None when it is not a web origin
    (``null``, a path, no scheme)."""
    try:
        parts = urlsplit(origin)
        scheme = parts.scheme.lower()
        host_port = _host_port(parts.netloc) if scheme in _DEFAULT_PORT else None
    except ValueError:
        return None
    if host_port is None or parts.path or parts.query or parts.fragment:
        return None
    return scheme, host_port[0], host_port[1] or _DEFAULT_PORT[scheme]


class Guard:
    """The Host and Origin rules of one server. ``loopback_bind`` is set by the server from the
    address it bound (true until then: a Host is checked unless the bind is known public)."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)
        self.loopback_bind = True

    def check(self, request: Request) -> None:
        """Raises HttpError 403 for a Host or an Origin this server does not answer."""
        hosts = request.headers.getlist("host")
        origins = request.headers.getlist("origin")
        if len(hosts) > 1 or len(origins) > 1:
            raise HttpError(403, "Forbidden", "a request gives one Host and at most one Origin")
        host = _host_port(hosts[0]) if hosts else None
        # No Host at all is an HTTP/1.0 client (h11 demands one of HTTP/1.1), never a browser.
        if hosts and self.loopback_bind and (
                host is None or not (is_loopback(host[0]) or host[0] in self.allowed_hosts)):
            raise HttpError(403, "Forbidden", (
                f"Host {quote(hosts[0], 60)} is refused: a server on a loopback address "
                "answers to localhost, 127.0.0.1, [::1] and daemon.http_allowed_hosts only"))
        if origins:
            scheme = request.url.scheme
            own = (scheme, host[0], host[1] or _DEFAULT_PORT.get(scheme)) if host else None
            if own is None or _origin(origins[0]) != own:
                where = f"{scheme}://{hosts[0]}" if hosts else "no Host given"
                raise HttpError(403, "Forbidden", (
                    f"cross-origin request refused: Origin {quote(origins[0], 60)} is not "
                    f"this server's own ({quote(where, 80)})"))


def check_json_type(request: Request) -> None:
    """Raises HttpError 415 for a write whose Content-Type is not application/json."""
    if request.method not in WRITES:
        return
    given = request.headers.get("content-type", "")
    if given.split(";", 1)[0].strip().lower() != "application/json":
        raise HttpError(415, "UnsupportedMediaType", (
            f"{request.method} takes Content-Type: application/json (with an empty body or "
            f"{{}} where there is nothing to send), not {quote(given, 60) if given else 'none'}"))


def check_path(request: Request) -> None:
    """Raises InvalidInput for a path parameter no store could hold (a NUL), in the words the
    Python API uses for the same value."""
    for name, value in request.path_params.items():
        check_storable(value, _PARAM_NAMES.get(name, name))


# -- request bodies --------------------------------------------------------------------------
class _Unreadable(ValueError):
    """JSON text that Python's parser would read but that is not JSON (NaN) or that remd
    does not read (an integer past the interpreter's limit on digits)."""


class _Twice(ValueError):
    """An object that gives one key twice: which value was meant is anyone's guess."""


def _no_constant(name: str) -> Any:
    raise _Unreadable(f"{name} is not a JSON value")


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:  # past sys.get_int_max_str_digits() (4300 digits by default)
        raise _Unreadable(f"an integer of {len(text.lstrip('-'))} digits is too long") from exc


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Twice(key)
        out[key] = value
    return out


def parse_json(raw: bytes) -> Any:
    """The JSON document ``raw``. Raises HttpError 400 for anything else: not UTF-8, not
    JSON, NaN or Infinity, an integer too long to read, nesting deeper than the parser's
    recursion limit; 422 for an object that gives a key twice, at any depth."""
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_int=_integer,
                          object_pairs_hook=_object)
    except _Twice as exc:
        raise HttpError(422, "ValidationError",
                        f"body: key {quote(exc.args[0], 40)} is given twice") from exc
    except _Unreadable as exc:
        raise HttpError(400, "InvalidJSON", f"request body is not accepted: {exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HttpError(400, "InvalidJSON", f"request body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise HttpError(400, "InvalidJSON", "request body is not accepted: "
                        "its arrays or objects are nested too deeply") from exc
