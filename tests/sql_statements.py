"""Every SQL statement written in remd's source, for tests/store/test_sql_statements.py.

A statement is a string literal (or an f-string) of a module under remd/ that starts with an
SQL verb in capitals (SELECT, INSERT, UPDATE, DELETE, WITH, REPLACE), docstrings aside. An
f-string's holes are filled with what they name when that is a constant of the module (a column
list, a table name), else with ``?`` (an ``IN (...)`` list of placeholders), else with nothing
(an optional ``AND ...`` clause), else with a table name; the first filling that SQLite can
prepare is the statement checked. What no filling makes a statement (a fragment completed at
run time) is reported as such, not checked.
"""

from __future__ import annotations

import ast
import importlib
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_VERB = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\s")
# fillings tried for a hole that names no constant: after FROM / JOIN / INTO / UPDATE a table,
# elsewhere a list of placeholders, nothing (an optional clause) or a key column
_TABLES = ("nodes", "node_vec_bit", "sentence_vec", "tag_log", "node_log")
_OTHERS = ("?", "", "rid", "sid", ">", "DESC")
_VALUES = re.compile(r"\(([^()]*)\)\s*VALUES\s*$", re.IGNORECASE)  # a hole: one row's values
_AFTER_TABLE = re.compile(r"\b(FROM|JOIN|INTO|UPDATE)\s*$", re.IGNORECASE)
_MAX_FORMS = 400


@dataclass(frozen=True)
class Statement:
    where: str  # path:line
    forms: tuple[str, ...]  # the candidate texts (one for a plain literal)


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _resolve(expr: ast.expr, scope: dict[str, Any]) -> str | None:
    """The text of a hole naming a module constant (a name or a dotted name), else None."""
    if not isinstance(expr, ast.Name | ast.Attribute):
        return None
    try:
        value = eval(compile(ast.Expression(expr), "<hole>", "eval"), dict(scope))  # noqa: S307
    except Exception:
        return None
    return str(value) if isinstance(value, str | int | float) else None


Part = str | tuple[str, ...]  # a known text, or the fillings of a hole


def _parts(expr: ast.expr, scope: dict[str, Any]) -> list[Part] | None:
    """``expr`` as a string built of known texts and holes; None: not a string expression."""
    if isinstance(expr, ast.Constant):
        if not isinstance(expr.value, str):
            return None
        # a literal formatted later (rows_in's "{marks}", str.format's "{}"): a placeholder list
        return [re.sub(r"\{\w*\}", "?", expr.value)]
    if isinstance(expr, ast.JoinedStr):
        parts: list[Part] = []
        for value in expr.values:
            if isinstance(value, ast.Constant):
                parts.append(re.sub(r"\{\w*\}", "?", str(value.value)))
                continue
            assert isinstance(value, ast.FormattedValue)
            known = _resolve(value.value, scope)
            before = "".join(p for p in parts[-1:] if isinstance(p, str))
            values = _VALUES.search(before)
            parts.append(known if known is not None
                         else "1" if value.format_spec is not None
                         else _TABLES if _AFTER_TABLE.search(before)
                         else "(" + ", ".join("?" * (values.group(1).count(",") + 1)) + ")"
                         if values else _OTHERS)
        return parts
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        left, right = _parts(expr.left, scope), _parts(expr.right, scope)
        if left is None and right is None:
            return None
        return (left or [_OTHERS]) + (right or [_OTHERS])
    if isinstance(expr, ast.IfExp):
        body, orelse = _parts(expr.body, scope), _parts(expr.orelse, scope)
        if body is None or orelse is None:
            return None
        return [tuple(_forms(body)) + tuple(_forms(orelse))]
    return None


def _forms(parts: list[Part]) -> list[str]:
    choices = [(p,) if isinstance(p, str) else p for p in parts]
    return ["".join(c) for c in itertools.islice(itertools.product(*choices), _MAX_FORMS)]


def statements(package: Path = ROOT / "remd",
               skip: tuple[str, ...] = ("remd/store/postgres/translate.py",)) -> list[Statement]:
    """Every statement of ``package``'s modules, with where it is written (``skip``: modules
    whose strings are pieces of SQL, not statements: the translator's own)."""
    found: list[Statement] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if str(rel) in skip:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inner = _docstrings(tree)  # and the parts of a larger string expression:
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                inner |= {id(v) for v in node.values}
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                inner |= {id(node.left), id(node.right)}
            elif isinstance(node, ast.IfExp):
                inner |= {id(node.body), id(node.orelse)}
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        scope: dict[str, Any] | None = None
        for node in tree.body:  # a module's constant statement: its value, however built
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if not isinstance(target, ast.Name):
                    continue
                scope = scope or vars(importlib.import_module(module))
                value = scope.get(target.id)
                if isinstance(value, str) and _VERB.match(value):
                    found.append(Statement(f"{rel}:{node.lineno}",
                                           (re.sub(r"\{\w*\}", "?", value),)))
                    inner |= {id(n) for n in ast.walk(node.value)}
        for node in ast.walk(tree):
            if id(node) in inner or not isinstance(
                    node, ast.Constant | ast.JoinedStr | ast.BinOp | ast.IfExp):
                continue
            if scope is None:
                scope = vars(importlib.import_module(module))
            parts = _parts(node, scope)
            if parts is None:
                continue
            forms = [f for f in _forms(parts) if _VERB.match(f)]
            if forms:
                found.append(Statement(f"{rel}:{node.lineno}", tuple(dict.fromkeys(forms))))
    return found
