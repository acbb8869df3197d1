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
    return (resources.files("remd.store.sqlite") / "migrations" /
    f"{name}.sql").read_text(encoding="utf-8")


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
# reorder an entry once released: append a new one, and make the same change in schema.sql.
MIGRATIONS: tuple[tuple[str, Step], ...] = (
    ("0001_initial", _migration_sql("0001_initial")),
    ("0002_vec_bit", _migration_sql("0002_vec_bit")),  # quantised vectors, tag/FTS indexes
    ("0003_vec_generation", _migration_sql("0003_vec_generation")),  # vector index reloads
    ("0004_node_tags_live", _migration_sql("0004_node_tags_live")),  # live rows of a tag
    ("0005_tag_log", _migration_sql("0005_tag_log")),  # tags changed, for the graph cache
    ("0006_node_log", _migration_sql("0006_node_log")),  # nodes changed, for the node mirror
    ("0007_node_tags_rid_cover", _migration_sql("0007_node_tags_rid_cover")),  # tags by memory
    ("0008_vectors_once", _vectors_once),  # vec0 gone, int8 vectors: no chunk per namespace
    ("0009_rem_holds", _migration_sql("0009_rem_holds")),  # no redo after a rollback
    ("0010_sentence_vectors", _migration_sql("0010_sentence_vectors")),  # a vector per sentence
    ("0011_namespace_everywhere", _migration_sql("0011_namespace_everywhere")),  # routing
    ("0012_update_judged", _migration_sql("0012_update_judged")),  # update detection pending
    ("0013_exact_values", _migration_sql("0013_exact_values")),  # store items kept exact
    ("0014_node_keys", _migration_sql("0014_node_keys")),  # what a memory is about
    ("0015_synthesis_clauses", _migration_sql("0015_synthesis_clauses")),  # dated clauses
    ("0016_smaller_file", _migration_sql("0016_smaller_file")),  # node_tags by memory
)
SCHEMA_VERSION = len(MIGRATIONS)
