"""A GET request's query parameters, read with the library's bounds: each bad value is an
InvalidInput (400) naming the parameter, never the caller's whole value."""

from __future__ import annotations

import re

from starlette.requests import Request

from remd.errors import InvalidInput, quote

_INTEGER = re.compile(r"-?[0-9]+")  # ASCII digits: str.isdigit() takes "１２" and "²"


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    """``?name=`` as an integer from ``low`` to ``high``, else ``default``. Raises
    InvalidInput naming the bound a value passes, however many digits it has."""
    values = request.query_params.getlist(name)
    if not values:
        return default
    text = values[-1]
    if len(values) > 1 or not _INTEGER.fullmatch(text):
        raise InvalidInput(f"{name} must be one integer, not {quote(text[:40])}")
    digits = text.lstrip("-").lstrip("0")
    value = int(text) if len(digits) <= 18 else (-1 if text.startswith("-") else 1) * 10**18
    if value > high:
        raise InvalidInput(f"{name} is too large (at most {high})")
    if value < low:
        raise InvalidInput(f"{name} is too small (at least {low})")
    return value


def flag_param(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise InvalidInput(f"{name} must be true or false, not {quote(value[:40])}")
    return value in ("true", "1")
