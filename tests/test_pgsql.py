"""remd/store/pgsql.py: the engine's SQLite-dialect statements as PostgreSQL reads them."""

from __future__ import annotations

import pytest

from remd.store.pgsql import translate


@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("UPDATE tags SET df = max(df - 1, 0) WHERE tid IN (SELECT max(x) FROM y)",
     "UPDATE tags SET df = GREATEST(df - 1, 0) WHERE tid IN (SELECT max(x) FROM y)"),
    ("SET c = min(1.0, c + ?), a = max(a, f(b, ?)) WHERE rid = ?",
     "SET c = LEAST(1.0, c + %s), a = GREATEST(a, f(b, %s)) WHERE rid = %s"),
    ("SELECT json_array(n.status, n.confidence) FROM nodes n WHERE x IS NOT ? AND y IS ?",
     "SELECT json_build_array(n.status, n.confidence)::text FROM nodes n "
     "WHERE x IS DISTINCT FROM %s AND y IS NOT DISTINCT FROM %s"),
    ("SELECT name FROM tags WHERE name LIKE 'a?%' AND ifnull(df, 0) > ?",
     "SELECT name FROM tags WHERE name LIKE 'a?%%' AND coalesce(df, 0) > %s"),
    ("INSERT OR IGNORE INTO t (a, b) VALUES (?, ?)",
     "INSERT INTO t (a, b) VALUES (%s, %s) ON CONFLICT DO NOTHING"),
    ("INSERT OR REPLACE INTO v (rid, ns, vec) VALUES (?, ?, ?)",
     "INSERT INTO v (rid, ns, vec) VALUES (%s, %s, %s) ON CONFLICT (rid) DO UPDATE SET "
     "ns = excluded.ns, vec = excluded.vec"),
    ("INSERT OR IGNORE INTO t (a) VALUES (?) RETURNING a",
     "INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING RETURNING a"),
    ("SELECT max(t) FROM packs WHERE 1 AND ns = ?",
     "SELECT max(t) FROM packs WHERE true AND ns = %s"),
    ("SELECT 1 FROM tp CROSS JOIN tags t ON t.tid = tp.parent",
     "SELECT 1 FROM tp JOIN tags t ON t.tid = tp.parent"),
    ("SELECT coalesce(valid_until, 9e999), 'max(a, b)' FROM nodes",
     "SELECT coalesce(valid_until, 'Infinity'::float8), 'max(a, b)' FROM nodes"),
])
def test_translate(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


def test_unbalanced_parentheses_are_an_error() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        translate("SELECT max(a, (b FROM t")
