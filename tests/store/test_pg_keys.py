"""Distribution-ready keys (migration 0003_namespace_keys): every primary and unique key of a
table that holds memories includes ``namespace``, read from the catalog of a migrated
PostgreSQL database, so that namespace can be the distribution column of a sharded database
(Citus requires it of every unique key). The tables that need not are listed with why."""

from __future__ import annotations

import psycopg

from remd import Memory
from remd.store.postgres.translate import KEYS, translate
from tests.pg_server import PgServer

# Tables that hold no memories: a sharded database keeps them whole on every node (Citus
# reference tables), so their keys need no namespace.
NOT_DISTRIBUTED = {
    "remd_meta": "settings of the database (schema version, token encoding, REM leases "
                 "keyed by a name that holds the namespace)",
    "remd_migrations": "the migrations applied to the database",
}


def _keys(url: str) -> dict[str, list[tuple[str, list[str]]]]:
    """{table: [(constraint, its columns)]} of every primary and unique key of the schema."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname, k.conname, array_agg(a.attname ORDER BY u.ord) "
            "FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
            "CROSS JOIN LATERAL unnest(k.conkey) WITH ORDINALITY u(att, ord) "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = u.att "
            "WHERE k.contype IN ('p', 'u') AND c.relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema()) "
            "GROUP BY c.relname, k.conname").fetchall()
        tables = conn.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = "
            "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())").fetchall()
    out: dict[str, list[tuple[str, list[str]]]] = {str(t): [] for (t,) in tables}
    for table, name, cols in rows:
        out[str(table)].append((str(name), list(cols)))
    return out


def test_every_key_of_a_table_holding_memories_includes_namespace(pg_server: PgServer) -> None:
    url = pg_server.fresh_url()
    with Memory(url, embedder=None) as m:
        m.save("My city is Pune")
    keys = _keys(url)
    assert set(keys) == set(KEYS)  # every table is named in one place or the other below
    bad = [(table, name, cols) for table, found in keys.items() if table not in NOT_DISTRIBUTED
           for name, cols in found if "namespace" not in cols]
    assert bad == []
    for table in NOT_DISTRIBUTED:
        assert keys[table], table


def test_upserts_name_the_namespace_of_the_key() -> None:
    assert "ON CONFLICT (namespace, src, dst)" in translate(
        "INSERT INTO tag_edges (namespace, src, dst, count, weight) VALUES (?, ?, ?, 1, ?) "
        "ON CONFLICT (src, dst) DO UPDATE SET count = tag_edges.count + 1")
    assert "ON CONFLICT (namespace, tid, rid)" in translate(
        "INSERT INTO node_tags (namespace, tid, rid, weight) SELECT namespace, ?, rid, weight "
        "FROM node_tags WHERE namespace = ? AND tid = ? ON CONFLICT (tid, rid) DO UPDATE SET "
        "weight = 1")
    kept = "INSERT INTO remd_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"
    assert "ON CONFLICT (key)" in translate(kept)
    assert "ON CONFLICT (namespace, rid) DO UPDATE" in translate(
        "INSERT OR REPLACE INTO node_vec_bit (rid, namespace, bits, vec) VALUES (?, ?, ?, ?)")
