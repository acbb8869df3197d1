"""Which embedder made a file's vectors: recorded with the first vector, checked ever after.

A file holds one embedder's vectors (every namespace of it). The first vector written records
the embedder's name and dimension in ``remd_meta`` (key ``embedder``, JSON ``{"name", "dim"}``);
an engine that would embed with another model or size is refused when it opens (a
:class:`remd.errors.ConfigError` naming both), and a write of vectors that do not match the
record (another process moved the file meanwhile) is refused in its transaction, leaving the
memories in the embedding backlog. Vectors of two models are never mixed: their similarities
mean nothing to each other.

:mod:`remd.write.reembed` moves a file to another embedder (``remd reembed``): in one
transaction the record names the new one, every vector goes and every memory joins the
embedding backlog, which the backlog's batches work off; inject finds the memories not yet
embedded through their words and tags meanwhile.

A file written before the record (every one was 384-dimensional) is recorded by its next
vector write; an engine whose known dimension differs from its stored vectors' is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from remd.errors import ConfigError
from remd.store import shown
from remd.store.seam import Connection, Store
from remd.text.embed import EmbedError

KEY = "embedder"


@dataclass(frozen=True)
class Model:
    """An embedder as recorded: its name and dimension (0: not known until its first
    vectors, an endpoint asked for no size)."""

    name: str
    dim: int

    def __str__(self) -> str:
        return f"{self.name} ({self.dim} dimensions)" if self.dim else self.name

    def matches(self, other: Model) -> bool:
        return self.name == other.name and (not self.dim or not other.dim
                                            or self.dim == other.dim)


def of(embedder: Any) -> Model:
    """The model of an embedder object (its ``name`` and ``dim``)."""
    return Model(str(getattr(embedder, "name", type(embedder).__name__)),
                 int(getattr(embedder, "dim", 0) or 0))


def _parse(value: Any) -> Model | None:
    try:
        got = json.loads(str(value))
        return Model(str(got["name"]), int(got.get("dim") or 0))
    except (ValueError, KeyError, TypeError):
        return None


def recorded(store: Store) -> Model | None:
    """The model recorded for the file (None: no vector written since records began)."""
    row = store.one("SELECT value FROM remd_meta WHERE key = ?", (KEY,))
    return None if row is None else _parse(row[0])


def _stored_width(store: Store) -> int | None:
    """The dimension of one stored vector (None: none stored)."""
    row = store.one("SELECT vec FROM node_vec_bit LIMIT 1")
    return None if row is None else len(row[0])


def check_open(store: Store, wanted: Model) -> None:
    """Raise ConfigError when an engine that embeds with ``wanted`` opens a file whose
    vectors another model (or size) made."""
    have = recorded(store)
    if have is not None:
        if not have.matches(wanted):
            raise ConfigError(
                f"{shown(store.path)}: its vectors were made by {have}; the configured embedder is "
                f"{wanted}. Configure [embed] as when the file was made, or move the file to "
                f"the new embedder with `remd reembed`")
        return
    width = _stored_width(store) if wanted.dim else None
    if width is not None and width != wanted.dim:
        raise ConfigError(
            f"{shown(store.path)}: its vectors have {width} dimensions; the configured embedder is "
            f"{wanted}. Configure [embed] as when the file was made, or move the file to the "
            f"new embedder with `remd reembed`")


def check_write(conn: Connection, model: Model) -> None:
    """In the transaction that writes ``model``'s vectors: record the model if the file has
    none yet (or complete its dimension), raise EmbedError if it records another."""
    row = conn.execute("SELECT value FROM remd_meta WHERE key = ?", (KEY,)).fetchone()
    have = None if row is None else _parse(row[0])
    if have is not None and not have.matches(model):
        raise EmbedError(f"the file's vectors are now {have}'s, not {model}'s: the vectors "
                         f"were not written (the memories stay in the embedding backlog)")
    if have is None:  # a file from before the record: its vectors say their size
        old = conn.execute("SELECT vec FROM node_vec_bit LIMIT 1").fetchone()
        if old is not None and len(old[0]) != model.dim:
            raise EmbedError(f"the file's vectors have {len(old[0])} dimensions, not "
                             f"{model}'s {model.dim}: the vectors were not written (configure "
                             f"embed.dimensions, or move the file with `remd reembed`)")
    if have is None or have.dim != model.dim:
        record(conn, Model(model.name, model.dim or (have.dim if have else 0)))


def record(conn: Connection, model: Model) -> None:
    """Record ``model`` as the file's embedder (in the caller's transaction)."""
    conn.execute("INSERT INTO remd_meta (key, value) VALUES (?, ?) ON CONFLICT (key) "
                 "DO UPDATE SET value = excluded.value",
                 (KEY, json.dumps({"name": model.name, "dim": model.dim})))
