"""The namespace routing rule (tests/pg_routing.py) on every statement the PostgreSQL arm of the
suite sent: the check runs last (tests/conftest.py orders it), after the other tests have gone
through the suite's server, and first makes traffic of its own (every front of the Memory API
on two namespaces), so that it checks something when run alone too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remd import Memory
from tests.pg_routing import literal_statements, shape, violations
from tests.pg_server import SuiteServer

TESTS = Path(__file__).resolve().parents[1]

# Reads across every namespace on purpose, and why (on a distributed database each is one
# multi-shard query, at most once per scrape or probe, never on a request's path).
ACROSS_NAMESPACES = {
    r"^SELECT count\(\*\) FROM \(SELECT \$1 FROM nodes WHERE embedded = \$2 LIMIT \$3\)":
        "the whole file's embedding backlog, capped (remd.readiness: /readyz, /metrics)",
    r"^SELECT count\(\*\) FROM \(SELECT DISTINCT namespace FROM nodes\)":
        "how many namespaces the file holds (remd.readiness: /metrics)",
    r"^SELECT namespace, status, count\(\*\) FROM nodes WHERE namespace IN \(SELECT DISTINCT":
        "the file's namespaces for an operator (remd.query.namespaces: /v1/namespaces, /ui)",
    r"^-- remd migration ":
        "a migration: applied once to the whole database (remd/store/postgres/migrations)",
    r"^(?:DELETE FROM node_keys$|SELECT rid, namespace, content FROM nodes WHERE rid > )":
        "the subject keys read anew by a new version, the whole file once (remd.index.keys)",
}


def test_the_checker_tells_routed_statements_from_others() -> None:
    assert violations("SELECT rid FROM node_tags WHERE namespace = $1 AND tid = $2") == []
    assert violations("SELECT t.rid FROM node_tags t JOIN tags g ON g.namespace = t.namespace "
                      "AND g.tid = t.tid WHERE t.namespace = $1") == []
    assert violations("INSERT INTO node_tags (namespace, tid, rid) VALUES ($1,$2,$3)") == []
    assert violations("SELECT rid FROM node_tags WHERE tid = $1") == ["node_tags"]
    assert violations("SELECT t.rid FROM node_tags t JOIN tags g ON g.tid = t.tid "
                      "WHERE t.namespace = $1") == ["tags"]
    assert violations("INSERT INTO tag_edges (src, dst) VALUES ($1, $2)") == ["insert tag_edges"]
    assert violations("UPDATE nodes SET status = $1 WHERE rid = $2") == ["nodes"]
    assert violations("SELECT rid FROM nodes WHERE namespace = $1 AND rid IN "
                      "(SELECT rid FROM node_tags WHERE tid = $2)") == ["node_tags"]
    assert violations('SELECT $2 FROM ONLY "s"."nodes" x WHERE "rid" OPERATOR(pg_catalog.=) $1 '
                      "FOR KEY SHARE OF x") == ["foreign key nodes"]
    assert violations("SELECT name FROM pg_catalog.pg_tables") == []


def _traffic(url: str) -> None:
    from tests.sleep.test_rem import KEEP_ALL, NOW, fragments, old_lines

    for ns in ("alpha", "beta"):
        with Memory(url, namespace=ns, clock=lambda: NOW) as m:
            m.import_lines(old_lines(fragments(3)))
            m.save("My city is Bangalore", tags=["city", "home"])
            m.save("My city has changed to Mumbai")
            pack = m.inject("which city do I live in?", 200)
            m.feedback(pack.pack_id, True)
            # about nothing stored (no similar memory, few of its tags): the lexical hits'
            # words are read to tell (cues.unrelated)
            assert m.inject("is the Mumbai zebra quantum xylophone?", 200).stop == "unrelated"
            m.add_subtype("city", "place")
            m.memories_by_tag_cluster("city")
            m.suggest_related_tags(["city"])
            m.rename_tag("home", "house")
            m.merge_tags("house", "city")
            m.export_tag_graph("json")
            m.forget(m.save("a note to forget").id)
            m.nearest("Mumbai", 3)
            m.triggers(now=NOW)
            run = m.run_rem(synthesiser=KEEP_ALL, now=NOW)
            m.inject("Falcon timeouts", 300)
            m.rollback(run.run_id or "", now=NOW)
            lines = list(m.export_lines())
            m.stats()
        with Memory(url, namespace=ns + "-copy", clock=lambda: NOW) as copy:
            copy.import_lines(lines)


@pytest.mark.last
def test_every_statement_on_memory_tables_names_one_namespace(pg_server: SuiteServer) -> None:
    _traffic(pg_server.fresh_url())
    sent = pg_server.sent()
    own = literal_statements(TESTS.rglob("*.py"))  # the tests' own inspection queries
    checked = 0
    bad: dict[str, list[str]] = {}
    for sql in sorted(sent):
        if shape(sql) in own or any(re.search(p, " ".join(sql.split()))
                                    for p in ACROSS_NAMESPACES):
            continue
        checked += 1
        found = violations(sql)
        if found:
            bad[" ".join(sql.split())[:240]] = found
    assert checked > 150, f"only {checked} statements seen"
    assert not bad, "\n".join(f"{found} {sql}" for sql, found in sorted(bad.items()))
