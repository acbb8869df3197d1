"""remd's SQL, as written for SQLite, in PostgreSQL's dialect.

The engine writes its statements once, in the SQLite dialect it was built on; the PostgreSQL
store (:mod:`remd.store.postgres`) runs each through :func:`translate` (cached: the engine has a few
hundred distinct statements). The rewrites are the handful of places where the dialects differ
in the SQL remd actually writes:

- ``?`` placeholders become ``%s`` (and a literal ``%`` becomes ``%%``), outside quotes;
- two-argument ``max(a, b)`` / ``min(a, b)`` (scalar in SQLite) become ``GREATEST`` / ``LEAST``;
- ``json_array(...)`` becomes ``json_build_array(...)::text``; ``ifnull`` becomes ``coalesce``;
- ``IS NOT ?`` / ``IS ?`` become ``IS DISTINCT FROM`` / ``IS NOT DISTINCT FROM``;
- ``INSERT OR IGNORE`` becomes ``ON CONFLICT DO NOTHING``; ``INSERT OR REPLACE INTO t (k, ...)``
  becomes an upsert on its first column (remd's tables put the key first);
- ``WHERE 1`` (a filter built by appending ``AND ...``) becomes ``WHERE true``;
- ``CROSS JOIN t ON ...`` (SQLite's join-order hint) becomes ``JOIN t ON ...``;
- ``9e999`` (SQLite's way to write infinity) becomes ``'Infinity'::float8``.

What the dialects do differently beyond SQL text (full-text search, the exact vector scan, the
change-log triggers, the schema) is done by the PostgreSQL store and its schema, not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache

__all__ = ["translate"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
_OR_REPLACE = re.compile(r"\bINSERT\s+OR\s+REPLACE\s+INTO\s+(\w+)\s*\(([^)]*)\)", re.IGNORECASE)
_IS_NOT = re.compile(r"\bIS\s+NOT\s+\?", re.IGNORECASE)
_IS = re.compile(r"\bIS\s+\?", re.IGNORECASE)
_WHERE_1 = re.compile(r"\bWHERE\s+1\b(?!\s*[=<>!])", re.IGNORECASE)
_CROSS_ON = re.compile(r"\bCROSS\s+JOIN\s+(\w+(?:\s+\w+)?)\s+ON\b", re.IGNORECASE)
_INFINITY = re.compile(r"(?<![\w.])9e999\b")
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


def _outside_quotes(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, parenthesis depth after it) of each character of ``text`` from
    ``start`` that is not inside a quoted literal."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "'":
            quote = not quote
        elif not quote:
            depth += (ch == "(") - (ch == ")")
            yield i, ch, depth


def _split_args(body: str) -> list[str]:
    """Top-level comma-separated arguments of a call's body."""
    cuts = [i for i, ch, depth in _outside_quotes(body) if ch == "," and depth == 0]
    return [body[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(body)], strict=True)]


def _close(sql: str, open_at: int) -> int:
    """Index of the parenthesis closing the one at ``open_at``."""
    for i, ch, depth in _outside_quotes(sql, open_at):
        if ch == ")" and depth == 0:
            return i
    raise ValueError(f"unbalanced parentheses in SQL: {sql[:80]!r}")


def _calls(sql: str) -> str:
    """Rewrite the function calls whose names or meanings differ."""
    out: list[str] = []
    i = 0
    quote = False
    while i < len(sql):
        ch = sql[i]
        if ch == "'":
            quote = not quote
            out.append(ch)
            i += 1
            continue
        if quote:
            out.append(ch)
            i += 1
            continue
        m = _WORD.match(sql, i)
        if m is None:
            out.append(ch)
            i += 1
            continue
        name, end = m.group(0), m.end()
        low = name.lower()
        prev = sql[i - 1] if i else " "
        if (low in ("max", "min", "json_array", "ifnull") and end < len(sql)
                and sql[end] == "(" and prev != "."):
            close = _close(sql, end)
            inner = _calls(sql[end + 1:close])
            if low == "json_array":
                out.append(f"json_build_array({inner})::text")
            elif low == "ifnull":
                out.append(f"coalesce({inner})")
            elif len(_split_args(inner)) >= 2:
                out.append(f"{'GREATEST' if low == 'max' else 'LEAST'}({inner})")
            else:
                out.append(f"{name}({inner})")
            i = close + 1
            continue
        out.append(name)
        i = end
    return "".join(out)


def _placeholders(sql: str) -> str:
    """``?`` -> ``%s`` outside quoted literals; every ``%`` -> ``%%`` (psycopg reads them
    inside literals too)."""
    out: list[str] = []
    quote = False
    for ch in sql:
        if ch == "'":
            quote = not quote
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?" and not quote:
            out.append("%s")
        else:
            out.append(ch)
    return "".join(out)


def _append_conflict(sql: str, clause: str) -> str:
    m = _RETURNING.search(sql)
    if m is None:
        return sql.rstrip().rstrip(";") + " " + clause
    return sql[:m.start()] + clause + " " + sql[m.start():]


@lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """``sql`` (SQLite dialect, ``?`` placeholders) for PostgreSQL through psycopg."""
    if _OR_IGNORE.search(sql):
        sql = _append_conflict(_OR_IGNORE.sub("INSERT INTO", sql), "ON CONFLICT DO NOTHING")
    m = _OR_REPLACE.search(sql)
    if m is not None:
        table, cols = m.group(1), [c.strip() for c in m.group(2).split(",")]
        sets = ", ".join(f"{c} = excluded.{c}" for c in cols[1:])
        sql = _append_conflict(sql[:m.start()] + f"INSERT INTO {table} ({m.group(2)})"
                               + sql[m.end():], f"ON CONFLICT ({cols[0]}) DO UPDATE SET {sets}")
    sql = _IS_NOT.sub("IS DISTINCT FROM ?", sql)
    sql = _IS.sub("IS NOT DISTINCT FROM ?", sql)
    sql = _WHERE_1.sub("WHERE true", sql)
    sql = _CROSS_ON.sub(r"JOIN \1 ON", sql)
    sql = _INFINITY.sub("'Infinity'::float8", sql)
    return _placeholders(_calls(sql))


_IN_LIST = re.compile(r"\b(NOT\s+)?IN\s*\((%s(?:\s*,\s*%s)*)\)", re.IGNORECASE)


@lru_cache(maxsize=4096)
def as_arrays(sql: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """``sql`` (translated) with each ``IN (%s, %s, ...)`` list of placeholders made one array
    parameter (``= ANY(%s)``; ``NOT IN``: ``<> ALL(%s)``), so that a read has one text
    whatever its list's length and a prepared plan serves every call; and where each list's
    parameters start and how many there are, for :func:`group`."""
    spans: list[tuple[int, int]] = []
    out: list[str] = []
    at = 0
    for m in _IN_LIST.finditer(sql):
        start = sql.count("%s", 0, m.start())
        spans.append((start, m.group(2).count("%s")))
        out.append(sql[at:m.start()])
        out.append("<> ALL(%s)" if m.group(1) else "= ANY(%s)")
        at = m.end()
    out.append(sql[at:])
    return "".join(out), tuple(spans)


def group(params: Sequence[object], spans: tuple[tuple[int, int], ...]) -> list[object]:
    """``params`` with each span (start, count) of :func:`as_arrays` made one list."""
    out: list[object] = []
    at = 0
    for start, count in spans:
        out += params[at:start]
        out.append(list(params[start:start + count]))
        at = start + count
    out += params[at:]
    return out
