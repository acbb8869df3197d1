"""The SQLite schema: schema.sql for a new file, named migrations for an older one.

schema.sql is the one schema file, at the top level of the repository; the wheel carries it as
remd/store/schema.sql (``[tool.hatch.build.targets.wheel.force-include]``).

:class:`remd.store.sqlite.store.Store` applies them (``Store.migrate``), recording each name in the
``remd_migrations`` table in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

import apsw
import numpy as np

from remd.store import base
from remd.store.base import migration_names
from remd.store.quantisation import DIM, to_int8

_SCHEMA_FILE = "schema.sql"


def schema_sql() -> str:
    """schema.sql: the whole schema of a new file (every migration applied)."""
    packaged = resources.files("remd.store") / _SCHEMA_FILE
    if packaged.is_file():  # an installed wheel
        return packaged.read_text(encoding="utf-8")
    # a checkout (an editable install): the top level of the repository
    return (Path(__file__).resolve().parents[3] / _SCHEMA_FILE).read_text(encoding="utf-8")


def migration_sql(name: str) -> str:
    """The SQL of one named migration (remd/store/sqlite/migrations/NAME.sql)."""
    return base.migration_sql("remd.store.sqlite", name)


Step = Callable[[apsw.Connection], None]


def _migration_sql(name: str) -> Step:
    def step(conn: apsw.Connection) -> None:
        conn.execute(migration_sql(name))
    return step


def _vectors_once(conn: apsw.Connection) -> None:
    """0008: its SQL (vec0's node_vec dropped, its rows copied first), then every float32
    vector rewritten in the stored int8 form (remd.store.quantisation.to_int8: 384 bytes instead of
    1,536)."""

    def int8(blob: apsw.SQLiteValue) -> apsw.SQLiteValue:
        assert isinstance(blob, bytes)
        return to_int8(np.frombuffer(blob, np.float32))[0].tobytes()

    conn.execute(migration_sql("0008_vectors_once"))
    conn.create_scalar_function("remd_int8", int8, 1,  # type: ignore[arg-type]
                                deterministic=True)
    conn.execute("UPDATE node_vec_bit SET vec = remd_int8(vec) WHERE length(vec) = ?",
                 (4 * DIM,))


# Named migrations, applied in order to a file that lacks them (by name, as remd_migrations
# records them); a new file gets schema.sql, which equals all of them applied, and records
# every name. The schema version of a file is the number of migrations it has. Never edit or
# rename a file once released: add the next one (its SQL says what it changes), and make the
# same change in schema.sql. A migration that needs more than its SQL has a step here.
_STEPS: dict[str, Step] = {
    "0008_vectors_once": _vectors_once,  # vec0 gone, int8 vectors: no chunk per namespace
}
MIGRATIONS: tuple[tuple[str, Step], ...] = tuple(
    (name, _STEPS.get(name) or _migration_sql(name))
    for name in migration_names("remd.store.sqlite"))
SCHEMA_VERSION = len(MIGRATIONS)
