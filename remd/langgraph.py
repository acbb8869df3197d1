"""A LangGraph long-term store kept in remd (``pip install 'remd[langgraph]'``).

:class:`RemdStore` implements LangGraph's ``BaseStore`` (``batch``/``abatch``, and through
them put, get, search, delete and list_namespaces), so a LangGraph app keeps its memory in a
remd file and the daemon's REM cycles run over it.

Mapping, reversible:

- A namespace tuple ``("users", "u 1")`` is the remd namespace ``lg.users.u_201``: ``lg``,
  then each label with every character but letters, digits and ``-`` written as ``_`` and its
  UTF-8 bytes in hex (``_20`` for a space, ``_2e`` for ``.``, ``_5f`` for ``_``), joined by
  ``.``. remd namespaces are at most 64 characters, so deep or long tuples are refused.
- A key is the memory's ``source`` (``lg:KEY``); a value is its content, as JSON, kept exact
  (``Draft.exact``): never read as a fact statement (keys are independent), never superseded
  by another memory, never folded by a REM run, so ``get`` returns what ``put`` stored. ``put``
  with a key that exists forgets the old memory and saves the new one (replace, as LangGraph
  expects); ``put(..., None)`` (delete) forgets it. Forgotten memories stay in the file.
- ``search`` with a ``query`` ranks by remd's inject (packed to a budget, ``fill=True``);
  without one, newest first. ``filter`` keeps items whose value matches it as in LangGraph's
  ``InMemoryStore``: equal fields (nested dicts field by field), or the operators ``$eq``,
  ``$ne``, ``$gt``, ``$gte``, ``$lt`` and ``$lte`` (the ordering ones compare as numbers; a
  value that is not one does not match, where ``InMemoryStore`` raises).

Bad input is an :class:`InvalidInput` before any operation of the batch runs: a key that is not
a string (``BaseStore`` would store ``str(key)``), a negative ``limit`` or ``offset``, another
filter operator.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from remd.errors import InvalidInput, quote
from remd.memory import Memory
from remd.query import nodes as _nodes

__all__ = ["RemdStore", "from_remd_namespace", "to_remd_namespace"]

ROOT = "lg"
_SOURCE = "lg:"
SEARCH_BUDGET = 4096  # tokens of inject's pack a query search ranks
_ORDERING = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
OPERATORS = ("$eq", "$ne", *_ORDERING)  # the filter operators LangGraph documents


def _label(text: str) -> str:
    return "".join(c if (c.isascii() and c.isalnum()) or c == "-"
                   else "".join(f"_{b:02x}" for b in c.encode()) for c in text)


def _unlabel(text: str) -> str:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "_":
            out += bytes.fromhex(text[i + 1:i + 3])
            i += 3
        else:
            out += text[i].encode()
            i += 1
    return out.decode()


def to_remd_namespace(namespace: tuple[str, ...]) -> str:
    """``("users", "u 1")`` -> ``lg.users.u_201``. Raises InvalidInput past 64 characters."""
    name = ".".join((ROOT, *(_label(p) for p in namespace)))
    if len(name) > 64:
        raise InvalidInput(f"LangGraph namespace {namespace!r} is too long for remd "
                           f"({len(name)} > 64 characters once encoded)")
    return name


def from_remd_namespace(name: str) -> tuple[str, ...]:
    """The inverse of :func:`to_remd_namespace`."""
    parts = name.split(".")
    if parts[0] != ROOT:
        raise InvalidInput(f"{name!r} is not a LangGraph namespace")
    return tuple(_unlabel(p) for p in parts[1:])


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidInput(f"a LangGraph key must be a string, not {type(key).__name__} "
                           f"{quote(key)}")
    return key


def _count(what: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidInput(f"{what} must be a whole number >= 0, not {quote(value)}")


def _check_filter(spec: Mapping[str, Any]) -> None:
    """Refuses an operator ``InMemoryStore`` does not know, or a non-number to order by."""
    for name, wanted in spec.items():
        if not isinstance(wanted, Mapping):
            continue
        if not any(str(k).startswith("$") for k in wanted):
            _check_filter(wanted)
            continue
        for op, operand in wanted.items():
            if op not in OPERATORS:
                raise InvalidInput(f"filter operator {quote(op)} on {quote(name)} is not one of "
                                   f"{', '.join(OPERATORS)}")
            if op in _ORDERING and _number(operand) is None:
                raise InvalidInput(f"filter {op} on {quote(name)} needs a number, not "
                                   f"{quote(operand)}")


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _matches(value: Any, wanted: Any) -> bool:
    """``InMemoryStore``'s JSONB-like match of one field (see the module docstring)."""
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_holds(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, Mapping) and all(_matches(value.get(k), v)
                                                  for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(_matches(a, b) for a, b in zip(value, wanted, strict=True)))
    return bool(value == wanted)


def _holds(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(value == operand)
    if op == "$ne":
        return bool(value != operand)
    number, bound = _number(value), _number(operand)
    return number is not None and bound is not None and _ORDERING[op](number, bound)


def _check(op: Op) -> None:
    if isinstance(op, GetOp | PutOp):
        _key(op.key)
    elif isinstance(op, SearchOp | ListNamespacesOp):
        _count("limit", op.limit)
        _count("offset", op.offset)
        if isinstance(op, SearchOp) and op.filter:
            _check_filter(op.filter)


class RemdStore(BaseStore):
    """LangGraph's ``BaseStore`` over a remd file (see the module docstring)."""

    def __init__(self, path: str | Path = "remd.db", **memory_kwargs: Any) -> None:
        self._root = Memory(path, ROOT, **memory_kwargs)

    def close(self) -> None:
        self._root.close()

    def _mem(self, namespace: tuple[str, ...]) -> Memory:
        return Memory.bound(self._root.engine, to_remd_namespace(namespace))

    # -- keys stay strings: BaseStore's own get/put/delete would pass str(key) on ---------
    def get(self, namespace: tuple[str, ...], key: str, *args: Any, **kwargs: Any) -> Item | None:
        return super().get(namespace, _key(key), *args, **kwargs)

    def put(self, namespace: tuple[str, ...], key: str, *args: Any, **kwargs: Any) -> None:
        super().put(namespace, _key(key), *args, **kwargs)

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        super().delete(namespace, _key(key))

    async def aget(self, namespace: tuple[str, ...], key: str, *args: Any,
                   **kwargs: Any) -> Item | None:
        return await super().aget(namespace, _key(key), *args, **kwargs)

    async def aput(self, namespace: tuple[str, ...], key: str, *args: Any,
                   **kwargs: Any) -> None:
        await super().aput(namespace, _key(key), *args, **kwargs)

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        await super().adelete(namespace, _key(key))

    # -- batch ----------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:  # all checked first: a bad op leaves the batch unapplied
            _check(op)
        out: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                out.append(self._get(op.namespace, op.key))
            elif isinstance(op, PutOp):
                self._put(op.namespace, op.key, op.value)
                out.append(None)
            elif isinstance(op, SearchOp):
                out.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                out.append(self._list(op))
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        return out

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._root.engine.run_async(self.batch, list(ops))

    # -- operations -----------------------------------------------------------------------
    def _live(self, mem: Memory, key: str | None = None) -> list[tuple[Any, ...]]:
        if key is not None:
            return _nodes.live_by_source(mem.store, mem.namespace, _SOURCE + key)
        return _nodes.live_by_source(mem.store, mem.namespace, _SOURCE + "%", like=True)

    @staticmethod
    def _item(namespace: tuple[str, ...], row: tuple[Any, ...], score: float | None = None,
              searched: bool = False) -> Item:
        _, content, source, created = row
        at = datetime.fromtimestamp(float(created), UTC)
        key = str(source)[len(_SOURCE):]
        value = json.loads(str(content))
        if searched:
            return SearchItem(namespace, key, value, at, at, score)
        return Item(value=value, key=key, namespace=namespace, created_at=at, updated_at=at)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        rows = self._live(self._mem(namespace), key)
        return self._item(namespace, rows[0]) if rows else None

    def _put(self, namespace: tuple[str, ...], key: str,
             value: Mapping[str, Any] | None) -> None:
        mem = self._mem(namespace)
        kept = None
        if value is not None:
            try:
                content = json.dumps(dict(value), sort_keys=True, ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInput(f"the value of key {quote(key)} is not JSON: {exc}") from exc
            # The new value is saved before the old one is forgotten: a refused save loses
            # nothing. A value is kept exact (Draft.exact): never read as a fact statement
            # ("My city is Porto" under one key must not supersede "My city is Lisbon" under
            # another), never superseded by a memory, never folded by a REM run.
            draft = mem.draft(content, source=_SOURCE + key)
            draft.exact = True
            old = [str(row[0]) for row in self._live(mem, key)]
            (kept,) = mem.write_drafts([draft], embed=mem.config.embed.embed_on_save)
        else:
            old = [str(row[0]) for row in self._live(mem, key)]
        for node_id in old:
            if node_id != kept:
                mem.forget(node_id)

    def _namespaces(self, prefix: tuple[str, ...] = ()) -> list[str]:
        """The remd namespaces holding live store items under ``prefix``: a range of the
        ``(namespace, status, rid)`` index ("base" itself, then "base." up to "base/", the
        character after "."), never the other namespaces' memories."""
        return _nodes.live_namespaces(self._root.store, to_remd_namespace(prefix),
                                      _SOURCE + "%")

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        found: list[tuple[float, float, SearchItem]] = []
        for name in self._namespaces(tuple(prefix)):
            namespace = from_remd_namespace(name)
            mem = Memory.bound(self._root.engine, name)
            rows = self._live(mem)
            ranked: list[tuple[float | None, tuple[Any, ...]]]
            if op.query:
                by_id = {str(r[0]): r for r in rows}
                pack = mem.inject(op.query, SEARCH_BUDGET, fill=True)
                ranked = [(i.score, by_id[i.id]) for i in pack.items if i.id in by_id]
            else:
                ranked = [(None, r) for r in rows]
            for score, row in ranked:
                item = self._item(namespace, row, score, searched=True)
                if op.filter and not all(_matches(item.value.get(k), v)
                                         for k, v in op.filter.items()):
                    continue
                if isinstance(item, SearchItem):
                    found.append((-(score or 0.0), -float(row[3]), item))
        found.sort(key=lambda t: (t[0], t[1]))
        return [item for _, _, item in found][op.offset:op.offset + op.limit]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        names = set()
        for name in self._namespaces():
            ns = from_remd_namespace(name)
            ok = True
            for cond in op.match_conditions or ():
                path = tuple(cond.path)
                part = ns[:len(path)] if cond.match_type == "prefix" else ns[-len(path):]
                if len(ns) < len(path) or any(p != "*" and p != q
                                              for p, q in zip(path, part, strict=True)):
                    ok = False
            if ok:
                names.add(ns[:op.max_depth] if op.max_depth is not None else ns)
        return sorted(names)[op.offset:op.offset + op.limit]
