"""The namespace routing rule, checked on the statements the PostgreSQL backend sent.

Every table that holds memories carries ``namespace``; a statement that reads or writes one of
them must pin it to one namespace, so that on a database distributed by namespace (Citus) it
routes to one shard:

- ``SELECT`` / ``UPDATE`` / ``DELETE``: each such table in a query block has a conjunct of its
  ``WHERE`` or ``JOIN ... ON`` comparing its ``namespace`` to a value (``= $1``, ``IN (...)``)
  or to another table's ``namespace`` (a co-located join);
- ``INSERT``: the column list names ``namespace``.

The statements come from ``pg_stat_statements`` (normalised texts: constants are ``$n``), with
``track = all`` so that statements run by remd's PL/pgSQL triggers are checked too. They are
parsed with sqlglot. A few statements are cross-namespace by nature and are allowed by name in
:data:`ALLOWED`, each with its reason.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterable
from pathlib import Path

import sqlglot
from sqlglot import exp

from remd.store.postgres.translate import translate

MEMORY_TABLES = frozenset({
    "nodes", "tags", "node_tags", "tag_edges", "tag_parents", "edges", "node_vec_bit",
    "sentence_vec", "node_terms", "node_terms_len", "fts_stats", "access_log", "packs",
    "pack_items", "feedback", "rem_runs", "rem_clusters", "rem_holds", "tag_log", "node_log",
})

# Statements that span namespaces on purpose (a regular expression on the normalised text,
# whitespace collapsed) and why. On a sharded database each is a multi-shard statement, run
# once per daemon tick, per log step or per store opened, never per save or inject.
ALLOWED: dict[str, str] = {
    r"^DELETE FROM (tag|node)_log WHERE \(SELECT max\(seq\) - min\(seq\) FROM (tag|node)_log\)":
        "each commit: a change log past its size loses its oldest entries, every namespace's"
        " (two index probes when there is nothing to drop, once per 4096 changes otherwise)",
    r"^SELECT \$1 FROM nodes LIMIT \$2$":
        "opening a store: is the database empty (token encoding of a new database)?",
    r"^INSERT INTO remd_meta .* WHERE NOT EXISTS \(SELECT \$3 FROM nodes\)":
        "opening a store: the token encoding is recorded only while the database is empty",
    r"GROUP BY (\w+\.)?namespace$":
        "the daemon's tick: each namespace's trigger measures, one grouped statement for all",
    r"^SELECT rid, namespace, content, id, created_at, judged FROM nodes WHERE embedded = \$1 "
    r"ORDER BY rid LIMIT":
        "the daemon's embedding backlog, oldest first across namespaces",
    r"^SELECT vec FROM node_vec_bit LIMIT \$1$":
        "opening a store to embed, before its embedder is recorded: the size of a stored vector",
    r"^SELECT DISTINCT namespace FROM nodes":
        "listing the namespaces (remd namespaces, the LangGraph store's list)",
    r"^SELECT id, namespace FROM nodes WHERE id IN":
        "import: a memory id is unique in the whole database; whose is it?",
}
_RI_CHECK = re.compile(r'FROM ONLY "[^"]+"\."(\w+)" x WHERE (.*) FOR KEY SHARE OF x$')
_TABLE_WORD = re.compile(r"\b(" + "|".join(sorted(MEMORY_TABLES)) + r")\b")


def _conjuncts(cond: exp.Expression | None) -> list[exp.Expression]:
    if cond is None:
        return []
    if isinstance(cond, exp.Where):
        cond = cond.this
    if isinstance(cond, exp.Paren):
        return _conjuncts(cond.this)
    if isinstance(cond, exp.And):
        return _conjuncts(cond.this) + _conjuncts(cond.expression)
    return [cond]


def _pins(cond: exp.Expression, alias: str, alone: bool) -> bool:
    """Does ``cond`` compare ``alias``'s namespace column to something?"""
    if not isinstance(cond, exp.EQ | exp.In):
        return False
    sides = [cond.this, cond.expression] if isinstance(cond, exp.EQ) else [cond.this]
    return any(isinstance(side, exp.Column) and side.name == "namespace"
               and (side.table == alias or (not side.table and alone)) for side in sides)


def _scope_tables(owner: exp.Expression) -> list[exp.Table]:
    """The tables a query block reads directly (not those of its subqueries)."""
    found: list[exp.Table] = []
    for key in ("from_", "from", "joins", "using"):
        part = owner.args.get(key)
        for item in part if isinstance(part, list) else [part]:
            if isinstance(item, exp.From | exp.Join):
                item = item.this
            if isinstance(item, exp.Table):
                found.append(item)
    if isinstance(owner, exp.Update | exp.Delete) and isinstance(owner.this, exp.Table):
        found.append(owner.this)
    return found


def _conditions(owner: exp.Expression) -> list[exp.Expression]:
    conds = _conjuncts(owner.args.get("where"))
    for join in owner.args.get("joins") or []:
        conds += _conjuncts(join.args.get("on"))
    return conds


def violations(sql: str) -> list[str]:
    """The memory tables ``sql`` touches without pinning the namespace (empty: it keeps the
    rule)."""
    flat = " ".join(sql.split())
    if not _TABLE_WORD.search(flat) or any(re.search(pattern, flat) for pattern in ALLOWED):
        return []
    ri = _RI_CHECK.search(flat)
    if ri is not None:  # PostgreSQL's own foreign key check: does its key name namespace?
        pinned = re.search(r'"namespace" OPERATOR|OPERATOR\(pg_catalog\.=\) "namespace"',
                           ri.group(2))
        return [] if pinned else [f"foreign key {ri.group(1)}"]
    try:
        # sqlglot's tokenizer wants space around a parameter ("$1,$2" does not parse)
        trees = sqlglot.parse(re.sub(r"\$(\d+)", r" $\1 ", sql), read="postgres")
    except sqlglot.errors.SqlglotError as exc:
        return [f"unparsed: {exc}"[:200]]
    bad: list[str] = []
    for tree in trees:
        if tree is None or isinstance(tree, exp.Create | exp.Drop | exp.Alter | exp.Command):
            continue
        for table in tree.find_all(exp.Table):
            if table.name not in MEMORY_TABLES:
                continue
            owner = table.parent
            while owner is not None and not isinstance(
                    owner, exp.Select | exp.Update | exp.Delete | exp.Insert):
                owner = owner.parent
            if owner is None:
                continue
            if isinstance(owner, exp.Insert):
                target = owner.this
                columns = target.expressions if isinstance(target, exp.Schema) else []
                if not any(c.name == "namespace" for c in columns):
                    bad.append(f"insert {table.name}")
                continue
            tables = _scope_tables(owner)
            alias = table.alias_or_name
            if not any(_pins(c, alias, len(tables) == 1) for c in _conditions(owner)):
                bad.append(table.name)
    return bad


_CONSTANT = re.compile(r"\$\d+|%s|\?|'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")


def shape(sql: str) -> str:
    """``sql`` with its constants and placeholders as ``?``, lower case, spaces collapsed: the
    same for a statement as written in Python and as pg_stat_statements shows it."""
    return " ".join(_CONSTANT.sub("?", sql).lower().split())


def literal_statements(paths: Iterable[Path]) -> set[str]:
    """The shapes of the SQL string literals in ``paths`` (Python files), as the PostgreSQL
    backend would send them (remd.store.postgres.translate.translate)."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.match(
                    r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", node.value, re.I):
                with contextlib.suppress(Exception):
                    found.add(shape(translate(node.value)))
    return found
