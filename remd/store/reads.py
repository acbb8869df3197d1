"""Reads either store runs the same way, on a connection the caller holds: a scalar as an int,
and the rows of a statement over a list of ids, bound in chunks (``IN ({marks})``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from remd.store.seam import Connection


def int_scalar(conn: Connection, sql: str, params: Sequence[Any] = ()) -> int:
    """The first column of the first row as an int (0 for no row or NULL), on ``conn`` as it
    is: for reads inside a snapshot the caller already holds (``max(seq)`` of a change log)."""
    row = conn.execute(sql, params).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


_IN_CHUNK = 500  # ids bound per statement by rows_in


def rows_in(conn: Connection, sql: str, ids: Sequence[int],
            before: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` for ``ids``, bound as the ``IN ({marks})`` list it holds (after the
    parameters ``before`` it, such as a namespace), in statements of at most 500 ids
    (orderings in ``sql`` hold within each statement)."""
    for statement in in_reads(sql, ids, before):
        yield from conn.execute(*statement)


def in_reads(sql: str, ids: Sequence[int], before: Sequence[Any] = ()
             ) -> list[tuple[str, tuple[Any, ...]]]:
    """The statements :func:`rows_in` runs (to send them ahead: PgConnection.prefetch)."""
    out = []
    for start in range(0, len(ids), _IN_CHUNK):
        part = list(ids[start:start + _IN_CHUNK])
        out.append((sql.format(marks=",".join("?" * len(part))), (*before, *part)))
    return out
