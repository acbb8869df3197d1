"""remd/store/postgres/translate.py: the engine's SQLite-dialect statements as PostgreSQL reads
them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from remd.config import StoreConfig
from remd.errors import StoreError
from remd.store.postgres.store import PgStore
from remd.store.postgres.translate import KEYS, translate
from tests.pg_server import SuiteServer


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
    ("INSERT OR IGNORE INTO tag_parents (a, b) VALUES (?, ?)",
     "INSERT INTO tag_parents (a, b) VALUES (%s, %s) ON CONFLICT DO NOTHING"),
    ("INSERT OR REPLACE INTO node_vec_bit (rid, namespace, vec) VALUES (?, ?, ?)",
     "INSERT INTO node_vec_bit (rid, namespace, vec) VALUES (%s, %s, %s) "
     "ON CONFLICT (namespace, rid) DO UPDATE SET vec = excluded.vec"),
    ("INSERT OR IGNORE INTO remd_meta (a) VALUES (?) RETURNING a",
     "INSERT INTO remd_meta (a) VALUES (%s) ON CONFLICT DO NOTHING RETURNING a"),
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
    with pytest.raises(StoreError, match="unbalanced"):
        translate("SELECT max(a, (b FROM t")


# -- the lexer: quoted names, comments, literal percent signs ----------------------------------

def test_a_question_mark_in_a_quoted_name_is_not_a_parameter() -> None:
    assert translate('SELECT "a?b", x FROM t WHERE x = ?') == 'SELECT "a?b", x FROM t WHERE x = %s'
    assert translate('SELECT "say ""max(a, b)""?" FROM t') == 'SELECT "say ""max(a, b)""?" FROM t'


def test_an_apostrophe_in_a_comment_opens_no_string() -> None:
    assert (translate("SELECT a -- the node's id\nFROM t WHERE x = ? AND y = max(a, ?)")
            == "SELECT a -- the node's id\nFROM t WHERE x = %s AND y = GREATEST(a, %s)")
    assert (translate("SELECT a /* it's ? */ FROM t WHERE x = ?")
            == "SELECT a /* it's ? */ FROM t WHERE x = %s")


def test_a_dollar_quoted_string_is_left_alone() -> None:
    assert (translate("SELECT $q$it's ? max(a, b)$q$, x FROM t WHERE x = ?")
            == "SELECT $q$it's ? max(a, b)$q$, x FROM t WHERE x = %s")


def test_a_literal_percent_is_doubled_only_when_parameters_are_bound() -> None:
    sql = "SELECT name FROM tags WHERE name LIKE 'a%' AND df % 2 = 0"
    assert translate(sql, bound=False) == sql
    assert translate(sql) == "SELECT name FROM tags WHERE name LIKE 'a%%' AND df %% 2 = 0"
    assert translate(sql + " AND tid = ?") == (
        "SELECT name FROM tags WHERE name LIKE 'a%%' AND df %% 2 = 0 AND tid = %s")


@pytest.mark.parametrize("sql", [
    "SELECT 'it''s", 'SELECT "a', "SELECT 1 /* open", "SELECT $x$ open",
])
def test_an_unterminated_quote_is_an_error(sql: str) -> None:
    with pytest.raises(StoreError, match="unterminated"):
        translate(sql)


# -- INSERT OR REPLACE / OR IGNORE on the table's real key ------------------------------------

@pytest.mark.parametrize(("sqlite", "postgres"), [
    ("INSERT OR REPLACE INTO pack_items (namespace, pack_id, rank, rid) VALUES (?, ?, ?, ?)",
     "INSERT INTO pack_items (namespace, pack_id, rank, rid) VALUES (%s, %s, %s, %s) "
     "ON CONFLICT (namespace, pack_id, rank) DO UPDATE SET rid = excluded.rid"),
    ("INSERT OR REPLACE INTO tag_parents (namespace, child, parent) VALUES (?, ?, ?)",
     "INSERT INTO tag_parents (namespace, child, parent) VALUES (%s, %s, %s) "
     "ON CONFLICT (namespace, child, parent) DO NOTHING"),
    ("INSERT OR REPLACE INTO packs (namespace, pack_id, query) VALUES (?, ?, ?)",
     "INSERT INTO packs (namespace, pack_id, query) VALUES (%s, %s, %s) "
     "ON CONFLICT (namespace, pack_id) DO UPDATE SET query = excluded.query"),
])
def test_insert_or_replace_upserts_on_the_tables_key(sqlite: str, postgres: str) -> None:
    assert translate(sqlite) == postgres


# -- what has no translation is an error at translation time ----------------------------------

@pytest.mark.parametrize("sql", [
    "SELECT group_concat(name) FROM tags",
    "SELECT value FROM json_each(?)",
    "SELECT strftime('%s', 'now')",
    "SELECT julianday(created_at) FROM nodes",
    "SELECT rowid FROM nodes",
    "DELETE FROM nodes WHERE _rowid_ = ?",
    "SELECT name FROM tags WHERE name GLOB 'a*'",
    "SELECT rid FROM nodes WHERE rid == ?",
    "SELECT `rid` FROM nodes",
    "SELECT rid FROM nodes WHERE rid = :rid",
    "SELECT rid FROM nodes WHERE rid = ?1",
    "SELECT rid FROM nodes INDEXED BY nodes_ns WHERE rid = ?",
    "REPLACE INTO remd_meta (key, value) VALUES (?, ?)",
    "INSERT OR ABORT INTO remd_meta (key, value) VALUES (?, ?)",
    "UPDATE OR IGNORE nodes SET rid = ?",
    # the key (namespace first, migration 0003_namespace_keys) not all in the columns
    "INSERT OR REPLACE INTO tag_parents (child, parent) VALUES (?, ?)",
    # no unique key: nothing to conflict on (SQLite would also ignore NOT NULL violations)
    "INSERT OR IGNORE INTO access_log (rid, namespace, at) VALUES (?, ?, ?)",
    "INSERT OR IGNORE INTO no_such_table (a) VALUES (?)",
    # nodes has two keys (rid, id): SQLite would delete the rows that conflict on either
    "INSERT OR REPLACE INTO nodes (rid, id, namespace) VALUES (?, ?, ?)",
    "INSERT OR REPLACE INTO tag_parents (namespace, child) VALUES (?, ?)",
    "INSERT OR REPLACE INTO tag_parents VALUES (?, ?, ?)",
    "INSERT OR REPLACE INTO no_such_table (a) VALUES (?)",
])
def test_what_has_no_translation_is_an_error(sql: str) -> None:
    with pytest.raises(StoreError, match="has no PostgreSQL translation"):
        translate(sql)


@pytest.mark.parametrize("sql", [
    "SELECT 'group_concat(x), rowid, a == b' FROM t",
    'SELECT "rowid" FROM t',
    "SELECT a -- group_concat(rowid)\nFROM t",
    "SELECT x::text, y FROM t WHERE z = ?",
    "SELECT t.name, rid FROM tags t",
])
def test_the_same_words_in_quotes_comments_or_casts_are_fine(sql: str) -> None:
    translate(sql)


# -- on the server ----------------------------------------------------------------------------

@pytest.fixture
def pg_store(pg_server: SuiteServer) -> Iterator[PgStore]:
    store = PgStore(pg_server.fresh_url(), StoreConfig())
    yield store
    store.close()


def test_the_key_map_is_the_schemas(pg_store: PgStore) -> None:
    rows = pg_store.query(
        "SELECT c.relname, i.indisprimary, i.indpred IS NOT NULL, array(SELECT a.attname "
        "FROM unnest(i.indkey[:i.indnkeyatts - 1]) WITH ORDINALITY k(n, o) JOIN pg_attribute a "
        "ON a.attrelid = c.oid AND a.attnum = k.n ORDER BY k.o) FROM pg_index i JOIN pg_class c "
        "ON c.oid = i.indrelid WHERE i.indisunique AND c.relnamespace = "
        "current_schema()::regnamespace ORDER BY c.relname, NOT i.indisprimary, 4")
    assert not [r for r in rows if r[2]], "a partial unique index: KEYS can't say it"
    found: dict[str, tuple[tuple[str, ...], ...]] = {
        str(t): () for (t,) in pg_store.query(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    for table, _, _, cols in rows:
        found[table] += (tuple(cols),)
    assert found == KEYS


def test_a_literal_percent_reaches_the_server_as_written(pg_store: PgStore) -> None:
    assert pg_store.query("SELECT 'a%', 7 % 4") == [("a%", 3)]
    assert pg_store.query("SELECT 'a%', 7 % 4, ? -- 100% sure", ("b",)) == [("a%", 3, "b")]
    assert pg_store.query('SELECT 1 AS "x?"') == [(1,)]


def test_a_composite_key_upsert_runs(pg_store: PgStore) -> None:
    with pg_store.transaction() as conn:
        conn.execute("INSERT INTO packs (pack_id, namespace, query, budget, tokens_used, "
                     "created_at) VALUES ('p1', 'ns', 'q', 100, 0, 1.0)")
        for rid in (5, 6):
            conn.execute("INSERT OR REPLACE INTO pack_items (namespace, pack_id, rank, rid, "
                         "score, tokens, importance, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         ("ns", "p1", 1, rid, 0.5, 10, 0.1, "tag"))
    assert pg_store.query("SELECT rank, rid FROM pack_items") == [(1, 6)]


def test_rowid_of_a_table_that_has_one_on_postgresql_is_kept() -> None:
    """rem_runs has a real rowid column on PostgreSQL (insertion order); other tables do not."""
    sql = "SELECT run_id FROM rem_runs WHERE namespace = ? ORDER BY rowid DESC"
    assert "rowid" in translate(sql, bound=True)
    with pytest.raises(StoreError, match="rowid"):
        translate("SELECT id FROM nodes ORDER BY rowid", bound=False)
