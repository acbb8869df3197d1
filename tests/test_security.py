"""Security checks: loopback-only HTTP unless a token guards it, and no namespace reads another
through any front end (Python, CLI, HTTP, MCP).

Covered elsewhere and not repeated here: the DB, WAL and SHM files are 0600
(tests/test_faults.py::test_wal_and_shm_are_private); the bearer token is enforced, compared in
constant time and rotated on reload (tests/test_http.py::test_bearer_token); the API key and the
token never reach a log line (tests/test_daemon.py::test_logs_are_json_lines_without_secrets_
or_contents, tests/test_llm_faults.py); memory contents are logged at debug only
(tests/test_daemon.py::test_contents_are_logged_at_debug_only).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from remd import ConfigError, Memory, NotFound, load_config
from remd.cli import main
from tests.test_http import serve
from tests.test_mcp import session

SECRET = "Alice's bank PIN is 4921"


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "[::]", "example.org"])
def test_a_public_bind_needs_a_token(host: str) -> None:
    with pytest.raises(ConfigError, match="not loopback"):
        load_config(env={}, overrides={"daemon": {"http": f"{host}:8765"}})
    cfg = load_config(env={"REMD_DAEMON__HTTP_TOKEN": "t0ken"},
                      overrides={"daemon": {"http": f"{host}:8765"}})
    assert cfg.daemon.http_address is not None


@pytest.mark.parametrize("http", ["8765", ":8765", "127.0.0.1:8765", "127.0.0.5:1",
                                  "[::1]:8765", "localhost:8765"])
def test_loopback_binds_need_no_token(http: str) -> None:
    address = load_config(env={}, overrides={"daemon": {"http": http}}).daemon.http_address
    assert address is not None and address[0] in ("127.0.0.1", "127.0.0.5", "::1", "localhost")


def test_serve_refuses_a_public_bind_without_a_token(db_path: Path) -> None:
    out = CliRunner().invoke(main, ["--db", str(db_path), "serve", "--http", "0.0.0.0:0"],
                             env={"REMD_DAEMON__HTTP_TOKEN": ""})
    assert out.exit_code == 1 and "not loopback" in out.output
    assert "Traceback" not in out.output


@pytest.fixture
def two(db_path: Path) -> Iterator[tuple[str, str]]:
    """A private memory and a pack in namespace "alice"; "bob" is the one who tries."""
    with Memory(db_path, "alice") as m:
        secret = m.save(SECRET).id
        pack = m.inject("bank PIN", 100).pack_id
    yield secret, pack


def test_python_api_keeps_namespaces_apart(db_path: Path, two: tuple[str, str]) -> None:
    secret, pack = two
    with Memory(db_path, "bob") as bob:
        bob.save("Bob likes sailing")
        for call in (lambda: bob.get(secret), lambda: bob.history(secret),
                     lambda: bob.forget(secret), lambda: bob.feedback(pack, True)):
            with pytest.raises(NotFound):
                call()
        items = bob.inject("What is Alice's bank PIN?", 4000).items
        assert all("4921" not in i.content for i in items)
        assert SECRET not in json.dumps([n.content for n in bob.recent(50)])
        assert SECRET not in bob.export_tag_graph("json")
    with Memory(db_path, "alice", embedder=None) as alice:
        assert alice.get(secret).status.value == "live"  # bob's forget did nothing


def test_cli_keeps_namespaces_apart(db_path: Path, two: tuple[str, str]) -> None:
    secret, pack = two
    runner = CliRunner()
    base = ["--db", str(db_path), "--namespace", "bob"]
    for args in (["get", secret], ["history", secret], ["forget", secret],
                 ["feedback", pack, "--accept"]):
        out = runner.invoke(main, [*base, *args])
        assert out.exit_code == 1 and "4921" not in out.output, args
    for args in (["inject", "bank PIN", "--budget", "500", "--json"], ["export"],
                 ["recent", "--json"], ["tags", "export", "--format", "json"]):
        out = runner.invoke(main, [*base, *args])
        assert out.exit_code == 0 and "4921" not in out.output, args


def test_http_keeps_namespaces_apart(db_path: Path, two: tuple[str, str]) -> None:
    secret, pack = two
    server, pool = serve(db_path)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            bob = {"namespace": "bob"}
            assert api.get(f"/v1/memories/{secret}", params=bob).status_code == 404
            assert api.get(f"/v1/memories/{secret}/history", params=bob).status_code == 404
            r = api.post("/v1/feedback", json={"pack_id": pack, "accepted": True, **bob})
            assert r.status_code == 404 and r.json()["error"]["type"] == "NotFound"
            r = api.post("/v1/inject", json={"query": "bank PIN", "token_budget": 500, **bob})
            assert r.status_code == 200 and "4921" not in r.text
            assert "4921" not in api.get("/v1/stats", params=bob).text
            # The default namespace is not alice's either.
            assert api.get(f"/v1/memories/{secret}").status_code == 404
    finally:
        server.stop()
        pool.close()


def test_mcp_keeps_namespaces_apart(db_path: Path, two: tuple[str, str]) -> None:
    secret, pack = two

    async def body(client: object) -> None:
        call = client.call_tool  # type: ignore[attr-defined]
        history = await call("memory_history", {"memory_id": secret})
        assert history.is_error and "4921" not in str(history.content)
        fb = await call("memory_feedback", {"pack_id": pack, "accepted": True})
        assert fb.is_error
        pack_b = await call("inject_memories", {"query": "bank PIN", "token_budget": 500})
        assert not pack_b.is_error and "4921" not in json.dumps(pack_b.structured_content)
        found = await call("find_contradictions", {})
        assert "4921" not in json.dumps(found.structured_content)

    session(db_path, body, "--namespace", "bob")
    with Memory(db_path, "alice", embedder=None) as alice:
        assert alice.store.scalar("SELECT count(*) FROM feedback") == 0
