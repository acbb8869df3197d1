"""remd's SQL, as written for SQLite, in PostgreSQL's dialect.

The engine writes its statements once, in the SQLite dialect it was built on; the PostgreSQL
store (:mod:`remd.store.postgres.store`) runs each through :func:`translate` (cached: the engine
has a few hundred distinct statements). A small lexer first sets aside what is not SQL code (quoted
names, string literals, dollar-quoted strings and comments), so that no rewrite ever looks
inside them. The rewrites are the handful of places where the dialects differ in the SQL remd
actually writes:

- ``?`` placeholders become ``%s``; when parameters are bound (psycopg reads the text for
  them) every literal ``%`` becomes ``%%``, when none are it stays ``%``;
- two-argument ``max(a, b)`` / ``min(a, b)`` (scalar in SQLite) become ``GREATEST`` / ``LEAST``;
- ``json_array(...)`` becomes ``json_build_array(...)::text``; ``ifnull`` becomes ``coalesce``;
- ``IS NOT ?`` / ``IS ?`` become ``IS DISTINCT FROM`` / ``IS NOT DISTINCT FROM``;
- ``INSERT OR IGNORE`` becomes ``ON CONFLICT DO NOTHING`` (on a table with a unique key);
  ``INSERT OR REPLACE INTO t (...)`` becomes an upsert on ``t``'s key (:data:`KEYS`; a table
  with more than one key has no translation: SQLite replaces the rows conflicting on any);
- an upsert's ``ON CONFLICT (src, dst)`` (SQLite's key) becomes ``ON CONFLICT (namespace,
  src, dst)`` where PostgreSQL's key leads with the namespace (:data:`KEYS`);
- ``WHERE 1`` (a filter built by appending ``AND ...``) becomes ``WHERE true``;
- ``CROSS JOIN t ON ...`` (SQLite's join-order hint) becomes ``JOIN t ON ...``;
- ``9e999`` (SQLite's way to write infinity) becomes ``'Infinity'::float8``.

What SQLite has and PostgreSQL has not (``group_concat``, ``json_each``, ``strftime``, ``rowid``,
``GLOB``, named parameters, ``REPLACE INTO`` ...) is a StoreError when the statement is
translated, not a failure on the server, only when a PostgreSQL test happens to run it.

What the dialects do differently beyond SQL text (full-text search, the exact vector scan, the
change-log triggers, the schema) is done by the PostgreSQL store and its schema, not here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from remd.errors import StoreError

__all__ = ["KEYS", "as_unnest", "translate"]

# Every unique key of each table of the PostgreSQL schema (remd/store/postgres/migrations),
# the primary key (if any) first. tests/store/test_translate.py checks it against the catalog
# of a migrated database.
KEYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "access_log": (),
    "edges": (("namespace", "eid"),),
    "feedback": (("namespace", "pack_id"),),
    "fts_stats": (("namespace",),),
    "node_keys": (("namespace", "key", "rid"),),
    "node_log": (("namespace", "seq"),),
    "node_tags": (("namespace", "tid", "rid"),),
    "node_terms": (("namespace", "stem", "rid"),),
    "node_terms_len": (("namespace", "rid"),),
    "node_vec_bit": (("namespace", "rid"),),
    "nodes": (("namespace", "id"), ("namespace", "rid")),
    "pack_items": (("namespace", "pack_id", "rank"),),
    "packs": (("namespace", "pack_id"),),
    "rem_clusters": (("namespace", "run_id", "cluster_no"),),
    "rem_holds": (("namespace", "node_id"),),
    "rem_runs": (("namespace", "run_id"),),
    "remd_meta": (("key",),),
    "remd_migrations": (("name",),),
    "sentence_vec": (("namespace", "sid"),),
    "tag_edges": (("namespace", "src", "dst"),),
    "tag_log": (("namespace", "seq"),),
    "tag_parents": (("namespace", "child", "parent"),),
    "tags": (("namespace", "name"), ("namespace", "tid")),
    "vec_generations": (("namespace",),),
}

# -- the lexer: what is not code is set aside as \x00n\x00 while the code is rewritten --------
_LEX = re.compile(r"""
    (?P<comment> --[^\n]* | /\*.*?\*/ )
  | (?P<quoted> '(?:[^']|'')*' | "(?:[^"]|"")*" | \$(?P<tag>[A-Za-z_]\w*)?\$.*?\$(?P=tag)\$ )
  | (?P<open> /\* | ['"] | \$(?:[A-Za-z_]\w*)?\$ )
  | (?P<code> [^-/'"$]+ | . )
""", re.DOTALL | re.VERBOSE)
_PIECE = re.compile(r"\x00(\d+)\x00")


class _Masked:
    """``sql``'s code with each quoted name, literal and comment replaced by ``\\x00n\\x00``
    (n: its index in ``pieces``)."""

    def __init__(self, sql: str) -> None:
        if "\x00" in sql:
            raise StoreError("SQL text can't contain a NUL character")
        self.pieces: list[str] = []
        self.comments: set[int] = set()
        code: list[str] = []
        for m in _LEX.finditer(sql):
            kind = m.lastgroup
            if kind == "code":
                code.append(m.group())
                continue
            if kind == "open":
                raise StoreError(f"unterminated {m.group()} in SQL: {sql[:80]!r}")
            if kind == "comment":
                self.comments.add(len(self.pieces))
            code.append(f"\x00{len(self.pieces)}\x00")
            self.pieces.append(m.group())
        self.code = "".join(code)

    def unmask(self, text: str) -> str:
        return _PIECE.sub(lambda m: self.pieces[int(m.group(1))], text)

    def tail(self, text: str) -> int:
        """Where ``text``'s trailing space and comments start (a clause goes before them)."""
        at = len(text)
        for m in reversed(list(re.finditer(r"\s+|\x00(\d+)\x00", text))):
            if m.end() != at or (m.group(1) is not None and int(m.group(1)) not in self.comments):
                break
            at = m.start()
        return at


# -- what has no translation ------------------------------------------------------------------
# Each: a pattern, what it finds, and where it has a translation after all (None: nowhere).
# rem_runs keeps SQLite's insertion order as a real ``rowid`` column on PostgreSQL
# (pg_migrations/0001_initial.sql), so a statement on it may order by it.
_SQLITE_ONLY: list[tuple[re.Pattern[str], str, re.Pattern[str] | None]] = [
    (re.compile(r"\b(?:group_concat|json_each|json_tree|json_extract|json_group_array"
                r"|json_group_object|json_insert|json_set|json_remove|json_patch|json_valid"
                r"|json_type|strftime|julianday|datetime|unixepoch|printf|instr|iif|total"
                r"|randomblob|zeroblob|hex|unhex|last_insert_rowid|changes|total_changes"
                r"|typeof|likely|unlikely|likelihood|bm25|highlight|snippet"
                r"|vec_\w+)\s*\(", re.IGNORECASE), "the SQLite function", None),
    (re.compile(r"(?<![.\w])(?:rowid|_rowid_)\b", re.IGNORECASE), "SQLite's rowid",
     re.compile(r"\brem_runs\b")),
    (re.compile(r"\bsqlite_\w+", re.IGNORECASE), "SQLite's", None),
    (re.compile(r"\b(?:GLOB|REGEXP|MATCH|PRAGMA|ATTACH|DETACH|AUTOINCREMENT)\b",
                re.IGNORECASE), "SQLite's", None),
    (re.compile(r"\b(?:NOT\s+INDEXED|INDEXED\s+BY)\b", re.IGNORECASE), "SQLite's", None),
    (re.compile(r"\bINSERT\s+OR\s+(?!IGNORE\b|REPLACE\b)\w+|\bUPDATE\s+OR\s+\w+",
                re.IGNORECASE), "SQLite's", None),
    (re.compile(r"=="), "SQLite's operator", None),
    (re.compile(r"`"), "a SQLite backquoted name", None),
    (re.compile(r"\?\d+|(?<![:\w[]):[A-Za-z_]\w*|@[A-Za-z_]\w*|\$\w+"), "the named parameter",
     None),
]

_REPLACE_INTO = re.compile(r"\bREPLACE\s+INTO\b", re.IGNORECASE)


def _untranslatable(what: str, sql: str) -> StoreError:
    return StoreError(f"{what} has no PostgreSQL translation (in {' '.join(sql.split())[:160]!r})")


def _refuse_sqlite_only(code: str, sql: str) -> None:
    for pattern, what, translated_on in _SQLITE_ONLY:
        m = pattern.search(code)
        if m is not None and not (translated_on and translated_on.search(code)):
            raise _untranslatable(f"{what} {' '.join(m.group().split())!r}", sql)
    for m in _REPLACE_INTO.finditer(code):
        if not re.search(r"\bINSERT\s+OR\s+$", code[:m.start()], re.IGNORECASE):
            raise _untranslatable("SQLite's 'REPLACE INTO'", sql)


# -- rewrites on the code ---------------------------------------------------------------------
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OR_IGNORE = re.compile(r"\bINSERT\s+OR\s+IGNORE\s+INTO\s+(\w+)", re.IGNORECASE)
_OR_REPLACE = re.compile(r"\bINSERT\s+OR\s+REPLACE\s+INTO\s+(\w+)\s*(\()?", re.IGNORECASE)
_IS_NOT = re.compile(r"\bIS\s+NOT\s+\?", re.IGNORECASE)
_IS = re.compile(r"\bIS\s+\?", re.IGNORECASE)
_WHERE_1 = re.compile(r"\bWHERE\s+1\b(?!\s*[=<>!])", re.IGNORECASE)
_CROSS_ON = re.compile(r"\bCROSS\s+JOIN\s+(\w+(?:\s+\w+)?)\s+ON\b", re.IGNORECASE)
_INFINITY = re.compile(r"(?<![\w.])9e999\b")
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


def _depths(text: str, start: int = 0) -> list[tuple[int, str, int]]:
    """(index, character, parenthesis depth after it) of each character of ``text`` (code
    only: quotes are set aside) from ``start``."""
    depth, out = 0, []
    for i in range(start, len(text)):
        ch = text[i]
        depth += (ch == "(") - (ch == ")")
        out.append((i, ch, depth))
    return out


def _split_args(body: str) -> list[str]:
    """Top-level comma-separated arguments of a call's body."""
    cuts = [i for i, ch, depth in _depths(body) if ch == "," and depth == 0]
    return [body[a + 1:b] for a, b in zip([-1, *cuts], [*cuts, len(body)], strict=True)]


def _close(sql: str, open_at: int) -> int:
    """Index of the parenthesis closing the one at ``open_at``."""
    for i, ch, depth in _depths(sql, open_at):
        if ch == ")" and depth == 0:
            return i
    raise StoreError(f"unbalanced parentheses in SQL: {sql[:80]!r}")


def _calls(sql: str) -> str:
    """Rewrite the function calls whose names or meanings differ."""
    out: list[str] = []
    i = 0
    while i < len(sql):
        m = _WORD.match(sql, i)
        if m is None:
            out.append(sql[i])
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


def _append_conflict(masked: _Masked, code: str, clause: str) -> str:
    m = _RETURNING.search(code)
    if m is None:
        at = masked.tail(code)
        return code[:at].rstrip().rstrip(";") + " " + clause + code[at:]
    return code[:m.start()] + clause + " " + code[m.start():]


_CONFLICT = re.compile(r"\bINSERT\s+INTO\s+(\w+)\b.*\bON\s+CONFLICT\s*\(([^)]*)\)",
                       re.IGNORECASE | re.DOTALL)


def _namespaced(code: str) -> str:
    """An upsert's conflict target as SQLite's key names it (``ON CONFLICT (src, dst)``) with
    the namespace the PostgreSQL key leads with (migration 0003_namespace_keys), where that
    key is the table's and the target alone is not."""
    m = _CONFLICT.search(code)
    if m is None:
        return code
    target = tuple(c.strip().lower() for c in m.group(2).split(","))
    keys = KEYS.get(m.group(1).lower(), ())
    if target in keys or ("namespace", *target) not in keys:
        return code
    return code[:m.start(2)] + "namespace, " + m.group(2) + code[m.end(2):]


def _keys(table: str, what: str, sql: str) -> tuple[tuple[str, ...], ...]:
    keys = KEYS.get(table.lower())
    if keys is None:
        raise _untranslatable(f"{what} (no table {table!r} in the PostgreSQL schema)", sql)
    if not keys:  # SQLite would skip rows breaking NOT NULL or CHECK: DO NOTHING never does
        raise _untranslatable(f"{what} ({table!r} has no unique key)", sql)
    return keys


def _name(masked: _Masked, column: str) -> str:
    text = masked.unmask(column.strip())
    return text[1:-1].replace('""', '"') if text.startswith('"') else text.lower()


def _or_replace(masked: _Masked, code: str, sql: str) -> str:
    m = _OR_REPLACE.search(code)
    if m is None:
        return code
    table, what = m.group(1), f"INSERT OR REPLACE INTO {m.group(1)}"
    if m.group(2) is None:
        raise _untranslatable(f"{what} without a column list", sql)
    keys = _keys(table, what, sql)
    # a key holding another adds no conflict of its own (nodes: rid and namespace, rid)
    least = [k for k in keys if not any(set(o) < set(k) for o in keys)]
    if len(least) > 1:
        raise _untranslatable(
            f"{what} ({table!r} has {len(least)} unique keys: "
            f"{', '.join('(' + ', '.join(k) + ')' for k in least)}; SQLite replaces the rows "
            "conflicting on any of them)", sql)
    close = _close(code, m.end() - 1)
    body = code[m.end():close]
    cols = [c.strip() for c in body.split(",")]
    names = [_name(masked, c) for c in cols]
    key = least[0]
    if not set(key) <= set(names):
        raise _untranslatable(f"{what} ({', '.join(key)} not all in its columns)", sql)
    sets = ", ".join(f"{c} = excluded.{c}" for c, n in zip(cols, names, strict=True)
                     if n not in key)
    action = f"DO UPDATE SET {sets}" if sets else "DO NOTHING"
    code = code[:m.start()] + f"INSERT INTO {table} ({body})" + code[close + 1:]
    return _append_conflict(masked, code, f"ON CONFLICT ({', '.join(key)}) {action}")


@lru_cache(maxsize=4096)
def translate(sql: str, bound: bool = True) -> str:
    """``sql`` (SQLite dialect, ``?`` placeholders) for PostgreSQL through psycopg; ``bound``:
    whether parameters go with it (psycopg then reads ``%`` as its own: a literal one is
    doubled). Raises StoreError when ``sql`` has no translation."""
    masked = _Masked(sql)
    code = masked.code
    _refuse_sqlite_only(code, sql)
    m = _OR_IGNORE.search(code)
    if m is not None:
        _keys(m.group(1), f"INSERT OR IGNORE INTO {m.group(1)}", sql)
        code = _append_conflict(masked, _OR_IGNORE.sub(r"INSERT INTO \1", code),
                                "ON CONFLICT DO NOTHING")
    code = _or_replace(masked, code, sql)
    code = _namespaced(code)
    code = _IS_NOT.sub("IS DISTINCT FROM ?", code)
    code = _IS.sub("IS NOT DISTINCT FROM ?", code)
    code = _WHERE_1.sub("WHERE true", code)
    code = _CROSS_ON.sub(r"JOIN \1 ON", code)
    code = _INFINITY.sub("'Infinity'::float8", code)
    code = _calls(code)
    if bound:  # psycopg reads every % of the text, in literals and comments too
        code = code.replace("%", "%%")
        masked.pieces = [p.replace("%", "%%") for p in masked.pieces]
    return masked.unmask(code.replace("?", "%s"))


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


_ONE_ROW = re.compile(r"^\s*INSERT\s+INTO\s+(\w+)\s*\(([^()]*)\)\s*VALUES\s*\(([^()]*)\)(.*)$",
                      re.IGNORECASE | re.DOTALL)
_CONSTANT = re.compile(r"-?\d+(\.\d+)?")
_UPDATE_ON = re.compile(r"\bON\s+CONFLICT\s*\(([^()]*)\)\s*DO\s+UPDATE\b", re.IGNORECASE)


@lru_cache(maxsize=256)
def one_row(sql: str) -> tuple[tuple[str, ...], tuple[int, ...] | None, int] | None:
    """A one-row ``INSERT INTO t (cols) VALUES (?, ..., constants) [tail]`` (SQLite's
    dialect, as executemany runs it per row): (its columns, the positions among its row's
    parameters of an upsert's conflict target, None for none, its ``?`` in VALUES); None for
    any other
    statement (or another shape of VALUES)."""
    m = _ONE_ROW.match(sql)
    if m is None or "?" in _Masked(m.group(1)).code:
        return None
    cols = tuple(c.strip().lower() for c in m.group(2).split(","))
    items = [i.strip() for i in m.group(3).split(",")]
    if len(items) != len(cols) or not all(i == "?" or _CONSTANT.fullmatch(i) for i in items):
        return None
    target = None
    update = _UPDATE_ON.search(m.group(4))
    if update is not None:
        names = [c.strip().lower() for c in update.group(1).split(",")]
        if not set(names) <= set(cols) or any(items[cols.index(c)] != "?" for c in names):
            return None
        target = tuple(items[:cols.index(c)].count("?") for c in names)
    return cols, target, items.count("?")


@lru_cache(maxsize=256)
def as_unnest(sql: str, casts: tuple[str, ...]) -> str:
    """The statement inserting many rows of :func:`one_row`'s ``sql`` in one go, from one
    array per ``?`` of its VALUES (each cast to ``casts``' type, "" for none; then the
    parameters of its tail once), translated."""
    m = _ONE_ROW.match(sql)
    assert m is not None
    items = [i.strip() for i in m.group(3).split(",")]
    arrays: list[str] = []
    select: list[str] = []
    for item in items:
        if item == "?":
            k = len(arrays)
            cast = casts[k]
            arrays.append(f"CAST(? AS {cast}[])" if cast else "?")
            select.append(f"u.c{k}")
        else:
            select.append(item)
    names = ", ".join(f"c{k}" for k in range(len(arrays)))
    return translate(f"INSERT INTO {m.group(1)} ({m.group(2)}) SELECT {', '.join(select)} "
                     f"FROM unnest({', '.join(arrays)}) AS u({names}){m.group(4)}")
