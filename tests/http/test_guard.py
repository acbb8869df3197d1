"""What a request must be before a handler sees it (remd.http.guard): a loopback Host (or one of
``daemon.http_allowed_hosts``) on a loopback bind, no Origin but the server's own, and the JSON
type on every write; and the warning a server without a token logs at start. A real uvicorn
server on a real file, spoken to with httpx (SQLite only: the guard never reaches the store).
The end-to-end case, ``remd serve`` as the README runs it, is in tests/suites/test_security.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from remd import ConfigError, Memory, load_config
from remd.hosting import EngineHost
from remd.http.app import HttpServer, create_app, http_server
from remd.logs import capture_events
from tests.http.test_app import count_nodes

TOKEN = "guard-t0ken-5e2a9c71"


@pytest.fixture
def served(db_path: Path) -> Iterator[tuple[httpx.Client, int]]:
    """A server on 127.0.0.1 without a token (the README's way), and a client of it."""
    host = EngineHost(db_path, load_config(env={}), embedder=None)
    server = HttpServer(create_app(host), "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            yield api, server.port
    finally:
        server.stop()
        host.close()


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[httpx.Client, int, Path]]:
    """:func:`served` once for the module's tests of requests that are refused (nothing they
    send is stored, which each checks: the file stays empty), with its file."""
    db = tmp_path_factory.mktemp("guard") / "agent.db"
    host = EngineHost(db, load_config(env={}), embedder=None)
    server = HttpServer(create_app(host), "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            yield api, server.port, db
    finally:
        server.stop()
        host.close()


def error_type(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert set(body) == {"error"} and body["error"]["message"], body
    return str(body["error"]["type"])


# -- writes take JSON only ---------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/memories"), ("POST", "/v1/inject"), ("POST", "/v1/feedback"),
    ("POST", "/v1/inject/explain"), ("POST", "/v1/memories/m1/restore"),
    ("DELETE", "/v1/memories/m1"), ("POST", "/v1/rem/runs/rem_1/rollback"),
])
@pytest.mark.parametrize("kind", [None, "text/plain", "application/x-www-form-urlencoded",
                                  "multipart/form-data; boundary=b", "application/jsonx",
                                  "text/json"])
@pytest.mark.slow
def test_every_write_needs_the_json_type(refusing: tuple[httpx.Client, int, Path],
                                         method: str, path: str, kind: str | None) -> None:
    api, _, db_path = refusing
    headers = {} if kind is None else {"Content-Type": kind}
    r = api.request(method, path, content=b'{"content": "planted"}', headers=headers)
    assert error_type(r, 415) == "UnsupportedMediaType"
    assert "application/json" in r.json()["error"]["message"]
    assert count_nodes(db_path) == 0


def test_the_json_type_may_carry_parameters_and_writes_without_a_body_take_none_or_empty(
        served: tuple[httpx.Client, int], db_path: Path) -> None:
    """A route that takes no body (forget, restore, rollback) takes the JSON type with an empty
    body or ``{}``; a field there is refused like an unknown field anywhere."""
    api, _ = served
    r = api.post("/v1/memories", content=b'{"content": "My city is Pune"}',
                 headers={"Content-Type": "Application/JSON; charset=utf-8"})
    assert r.status_code == 201, r.text
    node = r.json()["id"]
    json_type = {"Content-Type": "application/json"}
    r = api.request("DELETE", f"/v1/memories/{node}", content=b'{"why": "x"}',
                    headers=json_type)
    assert error_type(r, 422) == "ValidationError"
    assert api.get(f"/v1/memories/{node}").json()["status"] == "live"
    r = api.request("DELETE", f"/v1/memories/{node}", headers=json_type)  # empty body
    assert r.status_code == 200 and r.json()["status"] == "forgotten", r.text
    r = api.post("/v1/rem/runs/rem_nope/rollback", content=b" {} ", headers=json_type)
    assert error_type(r, 404) == "NotFound"
    r = api.post(f"/v1/memories/{node}/restore", json={})
    assert error_type(r, 400) == "InvalidInput"  # reached: nothing says it was updated
    # Reads, unknown routes and wrong methods are not writes: no type asked for.
    assert api.get("/v1/stats").status_code == 200
    assert error_type(api.post("/v1/nothing-here"), 404) == "NotFound"
    assert error_type(api.put(f"/v1/memories/{node}"), 405) == "MethodNotAllowed"


# -- no Origin but the server's own ----------------------------------------------------------
@pytest.mark.parametrize("origin", [
    "http://evil.example", "null", "http://127.0.0.1", "http://127.0.0.1:{other}",
    "https://127.0.0.1:{port}", "http://localhost:{port}", "http://127.0.0.1:{port}/x",
    "http://127.0.0.1:{port}.evil.example", "not an origin",
])
@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/v1/memories"), ("GET", "/v1/memories"), ("GET", "/v1/stats"),
    ("GET", "/healthz"), ("GET", "/ui"),
])
@pytest.mark.slow
def test_a_foreign_origin_is_refused_on_every_route(
        refusing: tuple[httpx.Client, int, Path], origin: str, method: str,
        path: str) -> None:
    api, port, db_path = refusing
    origin = origin.format(port=port, other=port + 1 if port < 65535 else port - 1)
    r = api.request(method, path, json={"content": "planted"} if method == "POST" else None,
                    headers={"Origin": origin})
    assert error_type(r, 403) == "Forbidden"
    assert "origin" in r.json()["error"]["message"].lower()
    assert count_nodes(db_path) == 0


def test_the_servers_own_origin_is_served(served: tuple[httpx.Client, int]) -> None:
    """What a same-origin fetch of the inspector's page sends: Origin equal to the server's
    own (scheme, host and port of the Host it was asked for, a default port or not)."""
    api, port = served
    for host, origin in ((f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"),
                         (f"localhost:{port}", f"http://LOCALHOST:{port}"),
                         ("localhost", "http://localhost:80"),
                         ("localhost:80", "http://localhost")):
        r = api.post("/v1/memories", json={"content": f"from {origin}"},
                     headers={"Host": host, "Origin": origin})
        assert r.status_code == 201, (host, origin, r.text)


# -- on a loopback bind, a loopback Host or a configured one -----------------------------------
@pytest.mark.parametrize("host", [
    "attacker.example", "attacker.example:{port}", "127.0.0.1.nip.io:{port}",
    "localhost.attacker.example", "evil-localhost", "0.0.0.0:{port}", "192.168.1.20:{port}",
    "[::1", "",
])
def test_on_a_loopback_bind_another_host_is_refused(
        served: tuple[httpx.Client, int], db_path: Path, host: str) -> None:
    api, port = served
    for method, path in (("GET", "/v1/memories"), ("GET", "/v1/stats"),
                         ("POST", "/v1/memories"), ("GET", "/livez")):
        r = api.request(method, path, headers={"Host": host.format(port=port)},
                        json={"content": "planted"} if method == "POST" else None)
        assert error_type(r, 403) == "Forbidden"
        assert "host" in r.json()["error"]["message"].lower()
    assert count_nodes(db_path) == 0


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}",
                                  "LocalHost", "[::1]:{port}", "[::1]", "127.0.0.2:{port}"])
def test_on_a_loopback_bind_a_loopback_host_is_served(served: tuple[httpx.Client, int],
                                                      host: str) -> None:
    api, port = served
    r = api.get("/v1/stats", headers={"Host": host.format(port=port)})
    assert r.status_code == 200, r.text


def test_a_host_of_http_allowed_hosts_is_served_on_a_loopback_bind(db_path: Path) -> None:
    """The name a reverse proxy on the same machine passes through, configured."""
    config = load_config(env={}, overrides={"daemon": {
        "http": "127.0.0.1:0", "http_allowed_hosts": ["Remd.Internal", "10.0.0.7"]}})
    assert config.daemon.http_allowed_hosts == ("remd.internal", "10.0.0.7")
    host = EngineHost(db_path, config, embedder=None)
    server = http_server(host, config, "default")
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            for name in ("remd.internal", "REMD.internal:443", "10.0.0.7:8765"):
                r = api.post("/v1/memories", json={"content": f"via {name}"},
                             headers={"Host": name, "Origin": f"http://{name}"})
                assert r.status_code == 201, (name, r.text)
            r = api.get("/v1/stats", headers={"Host": "other.internal"})
            assert error_type(r, 403) == "Forbidden"
    finally:
        server.stop()
        host.close()


@pytest.mark.parametrize("name", ["http://remd.internal", "remd.internal:8443", "remd internal",
                                  "remd.internal/ui", "", "*"])
def test_http_allowed_hosts_takes_host_names_only(name: str) -> None:
    with pytest.raises(ConfigError, match="http_allowed_hosts.*not a host name"):
        load_config(env={}, overrides={"daemon": {"http_allowed_hosts": [name]}})


def test_a_public_bind_takes_any_host(db_path: Path) -> None:
    """Off loopback the token guards the API (a public bind can't start without one), and the
    Host is whatever name the clients reach it by."""
    host = EngineHost(db_path, load_config(env={}), embedder=None)
    server = HttpServer(create_app(host, token=SecretStr(TOKEN)), "0.0.0.0", 0)
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60,
                          headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            r = api.get("/v1/stats", headers={"Host": "remd.example.org"})
            assert r.status_code == 200, r.text
            r = api.get("/v1/stats", headers={"Host": "remd.example.org",
                                              "Origin": "http://evil.example"})
            assert error_type(r, 403) == "Forbidden"
    finally:
        server.stop()
        host.close()


# -- the warning of a server without a token -------------------------------------------------
def test_a_server_without_a_token_warns_at_start_and_when_a_reload_drops_it(
        db_path: Path) -> None:
    Memory(db_path, embedder=None).close()
    host = EngineHost(db_path, load_config(env={}), embedder=None)
    for token in (None, SecretStr(TOKEN)):
        server = HttpServer(create_app(host, token=token), "127.0.0.1", 0)
        with capture_events() as logs:
            server.start()
            if token is not None:
                server.set_token(SecretStr(TOKEN + "x"))  # rotated: still guarded
                assert not [e for e in logs if e["event"] == "http.no_token"]
                server.set_token(None)  # a reload that drops the token
        server.stop()
        (warning,) = [e for e in logs if e["event"] == "http.no_token"]
        assert warning["log_level"] == "warning"
        assert warning["host"] == "127.0.0.1" and warning["port"] == server.port
        assert TOKEN not in str(logs)
    host.close()
