"""The web inspector's HTTP endpoints (remd.http.inspect): a real uvicorn server on 127.0.0.1 over
a real file (and the PostgreSQL arm), spoken to with httpx; typed errors for bad input, unknown
ids and a missing token."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from remd import Memory, NodeStatus
from tests.http.test_app import serve
from tests.sleep.test_rem import NOW, fragments, old_lines

pytestmark = pytest.mark.backends

TOKEN = "inspect-t0ken-4b1d"


@dataclass
class Setup:
    db: Path
    client: httpx.Client
    pune: str
    berlin: str
    run_id: str


@pytest.fixture
def setup(db_path: Path) -> Iterator[Setup]:
    with Memory(db_path, clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(2)))
        pune = m.save("My city is Pune", tags=["home"])
        berlin = m.save("My city has changed to Berlin")
        run = m.run_rem()
        assert run.run_id is not None and run.synthesised > 0
    with Memory(db_path, namespace="team.alpha", embedder=None) as other:
        other.save("The deploy freeze starts on Friday")
    server, host = serve(db_path, token=TOKEN)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60,
                      headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield Setup(db=db_path, client=client, pune=pune.id, berlin=berlin.id,
                    run_id=run.run_id)
    server.stop()
    host.close()


@pytest.fixture(scope="module")
def _built() -> Iterator[dict[str, tuple[Setup, Any, Any]]]:
    """The setup of the read-only tests, built once per backend for the module."""
    built: dict[str, tuple[Setup, Any, Any]] = {}
    yield built
    for made, server, host in built.values():
        made.client.close()
        server.stop()
        host.close()


@pytest.fixture
def readonly(db_path: Path, backend: str, _built: dict[str, tuple[Setup, Any, Any]],
             tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """:func:`setup`'s namespace and server for tests that only read and are refused: one per
    backend for the module (each test's own ``db_path`` stays empty)."""
    if backend not in _built:
        db = (tmp_path_factory.mktemp("inspect") / "agent.db" if backend == "sqlite"
              else db_path)
        with Memory(db, clock=lambda: NOW) as m:
            m.import_lines(old_lines(fragments(2)))
            pune = m.save("My city is Pune", tags=["home"])
            berlin = m.save("My city has changed to Berlin")
            run = m.run_rem()
        server, host = serve(db, token=TOKEN)
        client = httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60,
                              headers={"Authorization": f"Bearer {TOKEN}"})
        _built[backend] = (Setup(db=db, client=client, pune=pune.id, berlin=berlin.id,
                                 run_id=run.run_id or ""), server, host)
    return _built[backend][0]


def error_of(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    return str(r.json()["error"]["type"])


def test_namespaces_and_recent(setup: Setup) -> None:
    c = setup.client
    rows = c.get("/v1/namespaces").json()
    assert [r["namespace"] for r in rows] == ["default", "team.alpha"]
    default = rows[0]
    assert default["live"] < default["memories"]  # the run folded, the update superseded
    recent = c.get("/v1/memories", params={"limit": 2}).json()
    assert len(recent) == 2 and all(m["status"] == "live" for m in recent)
    every = c.get("/v1/memories", params={"limit": 1000, "include_inactive": "true"}).json()
    assert len(every) == default["memories"]
    alpha = c.get("/v1/memories", params={"namespace": "team.alpha"}).json()
    assert [m["content"] for m in alpha] == ["The deploy freeze starts on Friday"]


def test_links_follow_the_update_chain(setup: Setup) -> None:
    c = setup.client
    old = c.get(f"/v1/memories/{setup.pune}/links").json()
    assert old["links"] == [{"src": setup.berlin, "dst": setup.pune, "type": "SUPERSEDES",
                             "weight": old["links"][0]["weight"],
                             "context": old["links"][0]["context"]}]
    assert old["related"][setup.berlin]["content"] == "My city has changed to Berlin"
    assert old["related"][setup.berlin]["status"] == "live"


def test_a_run_its_folds_and_its_rollback(setup: Setup) -> None:
    c = setup.client
    runs = c.get("/v1/rem/runs").json()
    assert [r["run_id"] for r in runs] == [setup.run_id]
    assert runs[0]["can_rollback"] is True and runs[0]["why_not"] == ""
    detail = c.get(f"/v1/rem/runs/{setup.run_id}").json()
    committed = [f for f in detail["folds"] if f["status"] == "committed"]
    assert committed and all(f["synthesis"] for f in committed)
    assert detail["tokens_after"] < detail["tokens_before"]
    members = [m["id"] for f in committed for m in f["members"]]
    assert {m["status_now"] for f in committed for m in f["members"]} == {"deprecated"}
    synthesis = committed[0]["synthesis_id"]
    sources = c.get(f"/v1/memories/{synthesis}/links").json()["links"]
    assert {e["dst"] for e in sources if e["type"] == "DERIVED_FROM"} == {
        m["id"] for m in committed[0]["members"]}

    done = c.post(f"/v1/rem/runs/{setup.run_id}/rollback", json={})
    assert done.status_code == 200, done.text
    assert done.json()["members_restored"] == len(members)
    with Memory(setup.db, embedder=None) as m:
        assert {m.get(i).status for i in members} == {NodeStatus.LIVE}
    after = c.get(f"/v1/rem/runs/{setup.run_id}").json()
    assert after["can_rollback"] is False and after["why_not"] == "already rolled back"
    assert after["run"]["status"] == "rolled_back"
    assert all(f["synthesis"] is None for f in after["folds"] if f["status"] == "committed")
    assert error_of(c.post(f"/v1/rem/runs/{setup.run_id}/rollback", json={}),
                    409) == "RollbackRefused"


def test_forget_deletes_softly(setup: Setup) -> None:
    r = setup.client.request("DELETE", f"/v1/memories/{setup.berlin}",
                             headers={"Content-Type": "application/json"})  # no body
    assert r.status_code == 200 and r.json()["status"] == "forgotten"
    with Memory(setup.db, embedder=None) as m:
        assert m.get(setup.berlin).status is NodeStatus.FORGOTTEN


def test_inject_explained(setup: Setup) -> None:
    r = setup.client.post("/v1/inject/explain",
                          json={"query": "where do I live?", "token_budget": 60})
    assert r.status_code == 200, r.text
    pack = r.json()
    assert pack["items"][0]["content"] == "My city has changed to Berlin"
    assert set(pack["items"][0]["parts"]) >= {"relevance", "graph", "vector", "lexical"}
    assert pack["explanation"][0].startswith(f"pack {pack['pack_id']}")
    assert error_of(setup.client.post("/v1/inject/explain", json={"query": "x"}),
                    422) == "ValidationError"


def test_tags_and_the_graph_around_one(setup: Setup) -> None:
    c = setup.client
    top = c.get("/v1/tags", params={"limit": 3}).json()
    assert len(top) == 3 and top[0]["memories"] >= top[-1]["memories"]
    g = c.get("/v1/tags/home/graph", params={"depth": 1}).json()
    assert g["nodes"][0] == {"tag": "home", "memories": 2, "hops": 0}
    names = {n["tag"] for n in g["nodes"]}
    assert {"city", "pune", "berlin"} <= names
    assert all(e["a"] in names and e["b"] in names for e in g["edges"])
    assert all(n["hops"] <= 1 for n in g["nodes"])
    small = c.get("/v1/tags/home/graph", params={"max_nodes": 2}).json()
    assert len(small["nodes"]) == 2


def test_triggers(setup: Setup) -> None:
    data = setup.client.get("/v1/triggers").json()
    assert {t["name"] for t in data["triggers"]} >= {"node_count", "idle"}


@pytest.mark.parametrize(("method", "path", "params"), [
    ("GET", "/v1/memories/nope-404/links", {}),
    ("DELETE", "/v1/memories/nope-404", {}),
    ("GET", "/v1/rem/runs/rem_nope", {}),
    ("POST", "/v1/rem/runs/rem_nope/rollback", {}),
    ("GET", "/v1/tags/no-such-tag/graph", {}),
])
def test_unknown_ids_are_404(setup: Setup, method: str, path: str,
                             params: dict[str, str]) -> None:
    r = setup.client.request(method, path, params=params,
                             json=None if method == "GET" else {})
    assert error_of(r, 404) == "NotFound"


@pytest.mark.parametrize(("path", "params"), [
    ("/v1/memories", {"limit": "ten"}),
    ("/v1/memories", {"limit": "-1"}),
    ("/v1/memories", {"limit": "5000"}),
    ("/v1/memories", {"include_inactive": "maybe"}),
    ("/v1/namespaces", {"limit": "1e9"}),
    ("/v1/rem/runs", {"limit": "100000"}),
    ("/v1/tags", {"limit": "x"}),
    ("/v1/tags/home/graph", {"depth": "9"}),
    ("/v1/tags/home/graph", {"max_nodes": "0"}),
    ("/v1/memories", {"namespace": "bad namespace!"}),
    ("/v1/triggers", {"namespace": ""}),
])
@pytest.mark.slow
def test_bad_input_is_400(readonly: Setup, path: str, params: dict[str, str]) -> None:
    assert error_of(readonly.client.get(path, params=params), 400) == "InvalidInput"


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/v1/namespaces"), ("GET", "/v1/memories"), ("DELETE", "/v1/memories/x"),
    ("GET", "/v1/memories/x/links"), ("POST", "/v1/inject/explain"), ("GET", "/v1/tags"),
    ("GET", "/v1/tags/home/graph"), ("GET", "/v1/rem/runs"), ("GET", "/v1/rem/runs/r"),
    ("POST", "/v1/rem/runs/r/rollback"), ("GET", "/v1/triggers"),
])
@pytest.mark.slow
def test_every_endpoint_needs_the_token(readonly: Setup, method: str, path: str) -> None:
    r = httpx.request(method, str(readonly.client.base_url.join(path)),
                      headers={"Authorization": "Bearer wrong"})
    assert error_of(r, 401) == "Unauthorized"
    with Memory(readonly.db, embedder=None) as m:  # nothing was forgotten or rolled back
        assert m.store.scalar("SELECT count(*) FROM nodes WHERE status = 'forgotten'") == 0
        assert m.store.scalar("SELECT status FROM rem_runs") == "completed"


def test_the_page_is_served_without_the_token_and_carries_no_data(setup: Setup) -> None:
    for path, kind in [("/ui", "text/html"), ("/ui/app.js", "text/javascript"),
                       ("/ui/app.css", "text/css")]:
        r = httpx.get(str(setup.client.base_url.join(path)))
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind)
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert "Pune" not in r.text and "Berlin" not in r.text
    assert error_of(httpx.get(str(setup.client.base_url.join("/ui/secret.txt"))),
                    404) == "NotFound"


# The layout library the tag graph uses, vendored: these bytes are the packages' dist/*.min.js
# as published on npm (remd/http/inspector/vendor/NOTICE says how to update them).
VENDORED = {
    "d3-dispatch.min.js": ("v3.0.1",
                           "94b3bbdb6b98dc1325a15762b051013e8253999b0e0436b27d1da17b952ba0af"),
    "d3-quadtree.min.js": ("v3.0.1",
                           "57e2ad12824ed82893ba447523f2a2fb9beeb9222aafb2c778a9f5b313348b0e"),
    "d3-timer.min.js": ("v3.0.1",
                        "911ceda305f014b6b53ca68d5c896a9a387da120cfd56a421a2c60cca2fc9b36"),
    "d3-force.min.js": ("v3.0.0",
                        "1e07b473241328795d5ea9ad479a7bbabd765012fa2ef95633c83b69868dff6b"),
}


def test_every_script_of_the_page_is_served_from_the_package(setup: Setup) -> None:
    base = setup.client.base_url
    page = httpx.get(str(base.join("/ui"))).text
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert scripts[-1] == "/ui/app.js" and "/ui/graph.js" in scripts
    assert {f"/ui/vendor/{name}" for name in VENDORED} <= set(scripts)
    vendor = resources.files("remd.http") / "inspector" / "vendor"
    notice = vendor.joinpath("NOTICE").read_text()
    assert "ISC" in notice and vendor.joinpath("LICENSE-d3").read_text().startswith("Copyright")
    for src in scripts:
        assert src.startswith("/ui/")  # nothing from elsewhere: the CSP would refuse it anyway
        r = httpx.get(str(base.join(src)))
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
        assert "script-src 'self'" in r.headers["content-security-policy"]
        name = src.removeprefix("/ui/vendor/")
        if name in VENDORED:
            version, digest = VENDORED[name]
            assert hashlib.sha256(r.content).hexdigest() == digest, name
            assert r.text.startswith(f"// https://d3js.org/{name.split('.')[0]}/ {version} ")
            assert f"{name.split('.')[0]:<12} {version[1:]}" in notice
    for path in ("/ui/vendor/NOTICE", "/ui/vendor/%2e%2e/app.js", "/ui/vendor/", "/ui/graph.js/x"):
        assert httpx.get(str(base.join(path))).status_code == 404


def test_the_page_can_tell_whether_the_api_wants_a_token(setup: Setup) -> None:
    r = httpx.get(str(setup.client.base_url.join("/ui/auth.json")))  # no token sent
    assert r.status_code == 200 and r.json() == {"token_required": True}
    assert r.headers["cache-control"] == "no-store"
    server, host = serve(setup.db)  # the same file, served without a token
    try:
        r = httpx.get(f"http://127.0.0.1:{server.port}/ui/auth.json")
        assert r.json() == {"token_required": False}
        server.set_token(SecretStr("a-token-set-at-run-time"))
        r = httpx.get(f"http://127.0.0.1:{server.port}/ui/auth.json")
        assert r.json() == {"token_required": True}
    finally:
        server.stop()
        host.close()
