"""The HTTP API: a real uvicorn server on 127.0.0.1 over a real file, spoken to with httpx."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import apsw
import httpx
import psycopg
import pytest
from click.testing import CliRunner
from pydantic import SecretStr

from remd import Memory, load_config
from remd.cli.main import main
from remd.config import Config
from remd.hosting import EngineHost, Throttle
from remd.http.app import HttpServer, create_app
from remd.http.requestlog import RequestLog
from remd.logs import capture_events
from remd.text.tokens import TokenCounter
from tests.helpers import hogged
from tests.pg_server import SuiteServer
from tests.service.test_daemon import Served

pytestmark = pytest.mark.backends

TOKEN = "s3cret-token-7a1f0c"


def serve(db: Path, config: Config | None = None, *, token: str | None = None,
          max_body_bytes: int = 1_048_576) -> tuple[HttpServer, EngineHost]:
    config = config or load_config(env={})
    pool = EngineHost(db, config, embedder=None)
    app = create_app(pool, token=SecretStr(token) if token else None,
                     max_body_bytes=max_body_bytes)
    server = HttpServer(app, "127.0.0.1", 0)
    server.start()
    return server, pool


def count_nodes(db: Path) -> int:
    with Memory(db, embedder=None) as m:
        return int(m.store.scalar("SELECT count(*) FROM nodes"))


# -- the endpoints ---------------------------------------------------------------------------
def test_save_get_history_and_stats(api: httpx.Client) -> None:
    r = api.post("/v1/memories", json={"content": "My city is Bangalore", "tags": ["home"]})
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["content"] == "My city is Bangalore" and "home" in first["tags"]
    assert first["status"] == "live" and first["namespace"] == "default"
    second = api.post("/v1/memories", json={"content": "My city has changed to Mumbai",
                                            "source": "chat"}).json()

    got = api.get(f"/v1/memories/{first['id']}").json()
    assert got["id"] == first["id"] and got["status"] == "superseded"
    history = api.get(f"/v1/memories/{second['id']}/history").json()
    assert [n["id"] for n in history] == [first["id"], second["id"]]
    stats = api.get("/v1/stats").json()
    assert stats["nodes"] == 2 and stats["live"] == 1 and stats["namespace"] == "default"
    health = api.get("/healthz").json()
    assert health["status"] == "ok" and health["schema_version"] >= 1


def test_inject_dated_begins_each_item_with_its_day(api: httpx.Client) -> None:
    said = api.post("/v1/memories", json={"content": "I went hiking yesterday",
                                          "created_at": "2025-03-05T10:00:00Z"})
    assert said.status_code == 201, said.text
    body = {"query": "when did I go hiking?", "token_budget": 60}
    plain = api.post("/v1/inject", json={**body, "dated": False}).json()
    dated = api.post("/v1/inject", json={**body, "dated": True}).json()
    asked = api.post("/v1/inject", json=body).json()  # a question that asks when: dated
    assert [i["content"] for i in asked["items"]] == [i["content"] for i in dated["items"]]
    assert [i["content"] for i in plain["items"]] == ["I went hiking yesterday"]
    (item,) = dated["items"]
    assert item["content"].startswith("[2025-03-05] I went hiking yesterday")
    assert "(4 Mar 2025)" in item["content"]  # "yesterday" resolved against the day it was said
    assert dated["tokens_used"] > plain["tokens_used"]  # the date counts in the budget
    bad = api.post("/v1/inject", json={**body, "dated": "yes please"})
    assert bad.status_code == 422 and bad.json()["error"]["type"] == "ValidationError"


def test_inject_and_feedback_round_trip(api: httpx.Client, db_path: Path) -> None:
    for text in ["I am allergic to peanuts", "I prefer dark chocolate over milk chocolate",
                 "The office wifi password rotates every Monday"]:
        assert api.post("/v1/memories", json={"content": text}).status_code == 201
    r = api.post("/v1/inject", json={"query": "what food should I avoid?", "token_budget": 40})
    assert r.status_code == 200, r.text
    pack = r.json()
    assert set(pack) == {"pack_id", "budget", "tokens_used", "items"}
    assert pack["budget"] == 40 and 0 < pack["tokens_used"] <= 40
    counter = TokenCounter("o200k_base")
    for item in pack["items"]:
        assert set(item) == {"id", "content", "tokens", "score", "tags", "date"}
        assert item["tokens"] == counter.count(item["content"])
    assert counter.count("\n".join(i["content"] for i in pack["items"])) == pack["tokens_used"]
    assert any("peanuts" in i["content"] for i in pack["items"])

    # The same shape as the library's (and so the CLI's) JSON, by construction.
    with Memory(db_path, embedder=None) as m:
        local = m.inject("what food should I avoid?", 40).to_dict()
    assert set(local) == set(pack)
    assert all(set(a) == set(b) for a, b in zip(local["items"], pack["items"], strict=False))

    fb = api.post("/v1/feedback", json={"pack_id": pack["pack_id"], "accepted": True})
    assert fb.status_code == 200 and fb.json()["applied"] is True
    assert fb.json()["accepted"] == 1.0
    again = api.post("/v1/feedback", json={"pack_id": pack["pack_id"], "accepted": False})
    assert again.json()["applied"] is False


def test_the_namespace_is_chosen_per_request(api: httpx.Client) -> None:
    work = api.post("/v1/memories", json={"content": "Quarterly report due Friday",
                                          "namespace": "work"}).json()
    assert work["namespace"] == "work"
    assert api.get(f"/v1/memories/{work['id']}").status_code == 404
    assert api.get(f"/v1/memories/{work['id']}", params={"namespace": "work"}).status_code == 200
    assert api.get("/v1/stats", params={"namespace": "work"}).json()["live"] == 1
    assert api.get("/v1/stats").json()["live"] == 0
    pack = api.post("/v1/inject", json={"query": "report", "token_budget": 100,
                                        "namespace": "default"}).json()
    assert pack["items"] == []


def test_concurrent_requests_each_get_their_own_connection(api: httpx.Client,
                                                           db_path: Path) -> None:
    def save(i: int) -> int:
        return api.post("/v1/memories", json={"content": f"parallel note number {i}"}).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(save, range(24)))
    assert codes == [201] * 24 and count_nodes(db_path) == 24


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path", "body", "status", "kind"), [
    ("POST", "/v1/memories", {"content": "   "}, 400, "InvalidInput"),
    ("POST", "/v1/memories", {"content": "x" * 70000}, 400, "InvalidInput"),
    ("POST", "/v1/memories", {"content": "ok", "namespace": "bad ns"}, 400, "InvalidInput"),
    ("POST", "/v1/memories", {"content": 42}, 422, "ValidationError"),
    ("POST", "/v1/memories", {"content": "ok", "tags": "food"}, 422, "ValidationError"),
    ("POST", "/v1/memories", {"content": "ok", "colour": "red"}, 422, "ValidationError"),
    ("POST", "/v1/memories", {}, 422, "ValidationError"),
    ("POST", "/v1/inject", {"query": "x", "token_budget": -1}, 400, "InvalidInput"),
    ("POST", "/v1/inject", {"query": "x", "token_budget": "100"}, 422, "ValidationError"),
    ("POST", "/v1/inject", {"query": "", "token_budget": 10}, 400, "InvalidInput"),
    ("POST", "/v1/feedback", {"pack_id": "nope", "accepted": True}, 404, "NotFound"),
    ("POST", "/v1/feedback", {"pack_id": "nope", "accepted": 2.5}, 422, "ValidationError"),
    ("GET", "/v1/memories/unknown", None, 404, "NotFound"),
    ("GET", "/v1/memories/unknown/history", None, 404, "NotFound"),
    ("GET", "/v1/nothing-here", None, 404, "NotFound"),
    ("PUT", "/v1/memories/abc", None, 405, "MethodNotAllowed"),
    ("DELETE", "/v1/memories/abc", {}, 404, "NotFound"),  # forget (the inspector)
    ("DELETE", "/v1/memories/abc", None, 415, "UnsupportedMediaType"),  # a write needs JSON
])
@pytest.mark.slow
def test_errors_are_json_with_proper_status_and_store_nothing(
        api: httpx.Client, db_path: Path, method: str, path: str, body: Any, status: int,
        kind: str) -> None:
    r = api.request(method, path, json=body)
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["type"] == kind and error["message"] and "\n" not in error["message"]
    assert count_nodes(db_path) == 0


def test_bad_json_and_oversized_bodies(db_path: Path) -> None:
    server, pool = serve(db_path, max_body_bytes=2048)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
        r = api.post("/v1/memories", content=b"{not json",
                     headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidJSON"
        json_type = {"content-type": "application/json"}
        r = api.post("/v1/memories", content=b'{"content": "\xff\xfe"}', headers=json_type)
        assert r.status_code == 400
        r = api.post("/v1/memories", json={"content": "y" * 5000})
        assert r.status_code == 413 and r.json()["error"]["type"] == "PayloadTooLarge"

        def chunks() -> Iterator[bytes]:  # no Content-Length: the size is counted as it comes
            yield b'{"content": "'
            for _ in range(10):
                yield b"z" * 500
            yield b'"}'

        r = api.post("/v1/memories", content=chunks(), headers=json_type)
        assert r.status_code == 413
        # A lone surrogate escaped in JSON is refused, not stored half-encoded.
        r = api.post("/v1/memories", content=b'{"content": "bad \\ud800 text"}',
                     headers=json_type)
        assert r.status_code == 400
    server.stop()
    pool.close()
    assert count_nodes(db_path) == 0


@pytest.mark.sqlite_only("SQLite's write lock")
def test_a_locked_database_answers_503_with_retry_after(db_path: Path) -> None:
    config = load_config(env={}, overrides={"store": {"busy_timeout_ms": 0, "lock_retries": 0}})
    Memory(db_path, embedder=None).close()  # the schema exists before the lock is taken
    server, pool = serve(db_path, config)
    holder = apsw.Connection(str(db_path))
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            r = api.post("/v1/memories", json={"content": "waiting for the lock"})
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            assert r.json()["error"]["type"] == "DatabaseLocked"
            assert api.get("/v1/stats").status_code == 200  # reads never wait on writers
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        server.stop()
        pool.close()


def test_an_overloaded_server_answers_503_logs_once_and_recovers(db_path: Path) -> None:
    """Every connection of the pool leased by someone else: each request gets 503 with
    Retry-After (nothing written), the log says so once, not per request; once the connection
    is free again the server answers as usual without a restart."""
    config = load_config(env={}, overrides={"store": {"max_connections": 1,
                                                       "pool_wait_ms": 20}})
    Memory(db_path, embedder=None).close()
    server, host = serve(db_path, config)
    try:
        with hogged(host.engine.store) as hog, capture_events() as logs, httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            codes = []
            for i in range(20):
                r = api.post("/v1/memories", json={"content": f"memory {i}"})
                codes.append(r.status_code)
                assert r.headers.get("retry-after") == "1"
                assert r.json()["error"]["type"] == "PoolExhausted"
            assert codes == [503] * 20
            assert [e["event"] for e in logs].count("http.unavailable") == 1
            hog.release()
            assert api.post("/v1/memories", json={"content": "back"}).status_code == 201
    finally:
        server.stop()
        host.close()
    assert count_nodes(db_path) == 1


def test_throttle_allows_one_line_per_cause_per_interval() -> None:
    now = [0.0]
    throttle = Throttle(60.0, clock=lambda: now[0])
    assert throttle.allow("EMFILE") == (True, 0)
    assert [throttle.allow("EMFILE")[0] for _ in range(5)] == [False] * 5
    assert throttle.allow("PoolExhausted") == (True, 0)  # another cause has its own line
    now[0] = 61.0
    assert throttle.allow("EMFILE") == (True, 5)  # and says how many it held back


def test_bearer_token(db_path: Path) -> None:
    server, pool = serve(db_path, token=TOKEN)
    base = f"http://127.0.0.1:{server.port}"
    with httpx.Client(base_url=base, timeout=60) as api:
        assert api.get("/healthz").status_code == 200  # health checks need no secret
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                        {"Authorization": f"Basic {TOKEN}"}):
            r = api.post("/v1/memories", json={"content": "secret plan"}, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert r.json()["error"]["type"] == "Unauthorized"
        assert api.get("/v1/stats").status_code == 401
        ok = api.post("/v1/memories", json={"content": "secret plan"},
                      headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 201
        server.set_token(SecretStr("rotated"))  # what SIGHUP does after a config change
        assert api.get("/v1/stats", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 401
        assert api.get("/v1/stats", headers={"Authorization": "Bearer rotated"}).status_code == 200
    server.stop()
    pool.close()


# -- served by `remd serve --http`, in the daemon's process -----------------------------------
def test_remd_serve_http_is_served_beside_the_scheduler(db_path: Path) -> None:
    assert CliRunner().invoke(main, ["--db", str(db_path), "init"]).exit_code == 0
    served = Served(db_path, "--http", "127.0.0.1:0", "--interval", "3600",
                    env={"REMD_DAEMON__HTTP_TOKEN": TOKEN})
    listening = served.wait_for("http.listening")
    assert listening["host"] == "127.0.0.1"
    ready = served.wait_for("daemon.ready")
    assert ready["http"] == f"127.0.0.1:{listening['port']}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{listening['port']}", timeout=60,
                      headers=headers) as api:
        r = api.post("/v1/memories", json={"content": "served by the daemon process"})
        assert r.status_code == 201
        assert api.get("/v1/stats").json()["live"] == 1
    assert served.stop(signal.SIGTERM) == 0
    # At info level the requests are summed up (flushed when the server stops), not listed.
    assert not [e for e in served.seen if e.get("event") == "http.request"]
    (summary,) = [e for e in served.seen if e.get("event") == "http.summary"]
    assert summary["requests"] == 2 and summary["by_status"] == {"201": 1, "200": 1}
    assert summary["by_endpoint"] == {"save": 1, "stats": 1}
    assert TOKEN not in json.dumps(served.seen)


def test_a_server_out_of_file_descriptors_logs_once_and_recovers(db_path: Path) -> None:
    """`remd serve --http` with a low descriptor limit and far more client connections than
    it allows: accepting fails (asyncio pauses and retries), which is logged once, not per
    attempt; the process neither dies nor stops answering for good, and once the clients go,
    every endpoint answers again."""
    Memory(db_path, embedder=None).close()
    served = Served(db_path, "--interval", "3600", "--http", "127.0.0.1:0",
                    env={"REMD_EMBED__PROVIDER": "none"}, max_fds=96)
    listening = served.wait_for("http.listening")
    port = int(listening["port"])
    hogs: list[socket.socket] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as api:
            assert api.get("/healthz").status_code == 200
        for _ in range(300):  # idle keep-alive clients: each accepted one holds a descriptor
            hog = socket.create_connection(("127.0.0.1", port), timeout=5)
            hogs.append(hog)
        # The server meets the limit, says so, backs off and tries again.
        served.wait_for("http.loop_error", timeout=60)
        assert served.proc.poll() is None
    finally:
        for hog in hogs:
            hog.close()
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as api:
        deadline = time.monotonic() + 30
        while True:
            try:
                if api.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not recover"
            time.sleep(0.5)
        assert api.post("/v1/memories", json={"content": "after the storm"}).status_code == 201
    assert served.stop(signal.SIGTERM) == 0
    out_of = [e for e in served.seen if e.get("event") == "http.loop_error"]
    # once a minute per cause, not once per failed accept (under load asyncio may also trip
    # over the fd it could not get: a second cause, said once too)
    causes = [e["cause"] for e in out_of]
    assert any(c.startswith("socket.accept() out of system resource") for c in causes), out_of
    assert len(causes) == len(set(causes)), out_of
    assert not [e for e in served.seen if e.get("level") == "error"]
    assert count_nodes(db_path) == 1


def test_requests_are_summed_up_once_a_minute_and_listed_at_debug_only() -> None:
    now = [0.0]
    requests = RequestLog(every=60, clock=lambda: now[0])
    with capture_events() as logs:
        requests.record("save", 201, 10.0)
        now[0] = 30.0
        requests.record("inject", 200, 30.0)
        assert logs == []  # the window is still open
        now[0] = 61.0
        requests.record("save", 503, 2.0)  # the first request past the minute closes it
        now[0] = 62.0
        requests.record("save", 201, 4.0)
        requests.flush()  # the server stops: what is left is logged
        requests.flush()  # nothing new: nothing logged
    assert logs == [
        {"event": "http.summary", "log_level": "info", "requests": 3,
         "by_endpoint": {"save": 2, "inject": 1}, "by_status": {"201": 1, "200": 1, "503": 1},
         "ms_mean": 14.0, "ms_max": 30.0, "seconds": 61.0},
        {"event": "http.summary", "log_level": "info", "requests": 1,
         "by_endpoint": {"save": 1}, "by_status": {"201": 1}, "ms_mean": 4.0, "ms_max": 4.0,
         "seconds": 1.0}]


def test_each_request_is_a_debug_event_and_a_server_error_a_warning(db_path: Path) -> None:
    server, pool = serve(db_path)
    try:
        with capture_events() as logs, httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            assert api.post("/v1/memories", json={"content": "a note"}).status_code == 201
            pool.close()  # every later request finds the engine gone: an internal error
            assert api.get("/v1/stats").status_code == 500
    finally:
        server.stop()
    lines = [(e["log_level"], e["path"], e["status"]) for e in logs
             if e["event"] == "http.request"]
    assert lines == [("debug", "/v1/memories", 201), ("warning", "/v1/stats", 500)]


# -- the database file deleted or replaced under `remd serve --http` -------------------------
@pytest.mark.sqlite_only("the file at the path")
@pytest.mark.parametrize("fate", ["deleted", "replaced"])
def test_a_file_deleted_or_replaced_under_the_server_acknowledges_nothing(
        db_path: Path, tmp_path: Path, fate: str) -> None:
    """The file (with its -wal and -shm) deleted, or another remd file renamed over it, while
    `remd serve --http` runs: every save after it is refused (503, the StoreError naming the
    path), /readyz says why, and nothing acknowledged is missing from the file at the path."""
    other = tmp_path / "other.db"
    with Memory(other, embedder=None) as o:
        o.save("the memory of the file renamed over the path")
    Memory(db_path, embedder=None).close()
    served = Served(db_path, "--http", "127.0.0.1:0", "--interval", "3600",
                    env={"REMD_EMBED__PROVIDER": "none"})
    port = served.wait_for("http.listening")["port"]
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as api:
        r = api.post("/v1/memories", json={"content": "saved before the file went"})
        assert r.status_code == 201 and api.get("/readyz").status_code == 200
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink()
        if fate == "replaced":
            os.replace(other, db_path)
        for n in range(3):
            r = api.post("/v1/memories", json={"content": f"save number {n} after"})
            assert r.status_code == 503, r.text
            error = r.json()["error"]
            assert error["type"] == "StoreError"
            assert str(db_path) in error["message"] and fate in error["message"]
        ready = api.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["database"]["error"] == "StoreError"
        assert fate in ready.json()["checks"]["database"]["message"]
    assert served.stop(signal.SIGTERM) == 0
    if fate == "deleted":
        assert not db_path.exists()  # no empty file made in its place
    else:
        with Memory(db_path, embedder=None) as m:
            assert {n.content for n in m.recent()} == {
                "the memory of the file renamed over the path"}


# -- /readyz: a database the server cannot write is not ready --------------------------------
@contextlib.contextmanager
def unwritable(db: Path, how: str) -> Iterator[Path]:
    """``db`` (a remd file with one memory) as the server will see it: marked immutable, or
    through a read-only bind mount of its directory (needs root; skipped where refused)."""
    with Memory(db, embedder=None) as m:
        m.save("saved while the file could be written")
    if how == "immutable":
        if subprocess.run(["chattr", "+i", str(db)], capture_output=True).returncode:
            pytest.skip("chattr +i refused here")
        try:
            yield db
        finally:
            subprocess.run(["chattr", "-i", str(db)], check=True)
        return
    mount = db.parent.parent / "read-only-mount"
    mount.mkdir()
    for args in (["--bind", str(db.parent)], ["-o", "remount,bind,ro"]):
        if subprocess.run(["mount", *args, str(mount)], capture_output=True).returncode:
            subprocess.run(["umount", str(mount)], capture_output=True)
            pytest.skip("a read-only bind mount needs root and CAP_SYS_ADMIN")
    try:
        yield mount / db.name
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.sqlite_only("file modes and mounts")
@pytest.mark.parametrize(("how", "why"), [("immutable", "immutable"),
                                          ("read-only mount", "mounted read-only")])
def test_readyz_is_unready_when_the_file_cannot_be_written(
        db_path: Path, how: str, why: str) -> None:
    with unwritable(db_path, how) as db:
        server, host = serve(db)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
                refused = api.post("/v1/memories", json={"content": "cannot be written"})
                assert refused.status_code == 503
                assert refused.json()["error"]["type"] == "ReadOnlyStore"
                ready = api.get("/readyz")
                assert ready.status_code == 503 and ready.json()["status"] == "unready"
                writable = ready.json()["checks"]["writable"]
                assert writable["ok"] is False and writable["error"] == "ReadOnlyStore"
                assert str(db) in writable["message"] and why in writable["message"]
                assert ready.json()["checks"]["database"]["ok"] is True  # reads still work
                assert api.get("/v1/stats").status_code == 200
        finally:
            server.stop()
            host.close()


def test_readyz_is_unready_for_a_role_that_may_not_write(pg_server: SuiteServer) -> None:
    """PostgreSQL: a role that may read remd's tables but not write them."""
    url = pg_server.fresh_url()
    Memory(url, embedder=None).close()
    schema = unquote(url).rsplit("search_path=", 1)[1]
    reader = f"remd_reader_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"DROP ROLE IF EXISTS {reader}")
        admin.execute(f"CREATE ROLE {reader} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {reader}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {reader}")
    try:
        server, host = serve(url.replace("postgresql://remd@", f"postgresql://{reader}@"))
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
                assert api.post("/v1/memories", json={"content": "x y"}).status_code == 503
                ready = api.get("/readyz")
                assert ready.status_code == 503
                writable = ready.json()["checks"]["writable"]
                assert writable["error"] == "ReadOnlyStore" and "table" in writable["message"]
        finally:
            server.stop()
            host.close()
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {reader}")
            admin.execute(f"DROP ROLE {reader}")


# -- issue 38 row 19: POST /v1/memories with created_at ----------------------------------------
def test_a_save_is_dated_by_created_at(api: httpx.Client, db_path: Path) -> None:
    r = api.post("/v1/memories", json={"content": "The office moved to the harbour",
                                       "created_at": "2024-03-14T09:30:00Z"})
    assert r.status_code == 201, r.text
    assert r.json()["created_at"] == "2024-03-14T09:30:00.000000+00:00"
    assert api.post("/v1/memories", json={"content": "no offset means UTC",
                                          "created_at": "2024-03-14T09:30:00"}
                    ).json()["created_at"] == "2024-03-14T09:30:00.000000+00:00"
    for bad, status, message in [("3000-01-01", 400, "more than a day in the future"),
                                 ("soon", 400, "is not ISO 8601"),
                                 (1710408600, 422, "created_at")]:
        r = api.post("/v1/memories", json={"content": "refused", "created_at": bad})
        assert r.status_code == status, r.text
        assert message in r.json()["error"]["message"]
    assert count_nodes(db_path) == 2
