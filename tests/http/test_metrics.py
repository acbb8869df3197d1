"""GET /metrics, /livez and /readyz: a real uvicorn server (in this process, or `remd serve
--http` as a subprocess) over a real file or PostgreSQL database, spoken to with httpx; the
scrapes are parsed with prometheus_client's own parser."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from remd import Memory, load_config
from remd.cli.main import main
from remd.config import Config
from remd.hosting import EngineHost, shared_embedder
from remd.http.app import HttpServer, create_app
from remd.write.backlog import embed_pending
from tests.llm_server import LLMServer, good, status
from tests.service.test_daemon import Served, fill, old_fragments
from tests.sleep.test_rem import ALICE, DAY, NOW, YEAR_AGO, line, llm_synth

pytestmark = pytest.mark.backends

TOKEN = "metrics-token-5b2e9d41"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NAMESPACES = ("tenant-alpha-17", "tenant-beta-42")

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(api: httpx.Client) -> tuple[Samples, set[str]]:
    """Every sample of a /metrics scrape by (name, labels), and every label value seen."""
    r = api.get("/metrics", headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    values: set[str] = set()
    for family in text_string_to_metric_families(r.text):
        assert family.name.startswith("remd_")
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
            values.update(v for k, v in s.labels.items() if k not in ("le",))
    return samples, values


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


Served_ = tuple[HttpServer, EngineHost, httpx.Client]


@contextlib.contextmanager
def serving(db: Path, config: Config, *, embeds: bool = False,
            token: str | None = TOKEN) -> Iterator[Served_]:
    """The HTTP API on a free loopback port over ``db`` (with the configured embedder when
    ``embeds``: the real model)."""
    host = EngineHost(db, config, embedder=shared_embedder(config) if embeds else None)
    server = HttpServer(create_app(host, token=SecretStr(token) if token else None),
                        "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            yield server, host, api
    finally:
        server.stop()
        host.close()


@pytest.fixture
def served(db_path: Path) -> Iterator[Served_]:
    with serving(db_path, load_config(env={})) as it:
        yield it


# -- /metrics --------------------------------------------------------------------------------
def test_metrics_count_saves_injects_and_feedback_without_namespace_labels(
        served: Served_) -> None:
    _, _, api = served
    before, _ = scrape(api)
    assert value(before, "remd_saves_total") == 0 and value(before, "remd_injects_total") == 0
    for ns in NAMESPACES:
        r = api.post("/v1/memories", headers=AUTH, json={
            "content": f"The deploy key of {ns} rotates every Monday", "namespace": ns})
        assert r.status_code == 201, r.text
    pack = api.post("/v1/inject", headers=AUTH, json={
        "query": "when does the deploy key rotate?", "token_budget": 60,
        "namespace": NAMESPACES[0]}).json()
    assert pack["items"]
    r = api.post("/v1/feedback", headers=AUTH, json={
        "pack_id": pack["pack_id"], "accepted": True, "namespace": NAMESPACES[0]})
    assert r.status_code == 200, r.text

    after, labels = scrape(api)
    assert value(after, "remd_saves_total") == 2
    assert value(after, "remd_injects_total") == 1
    assert value(after, "remd_inject_seconds_count") == 1
    assert value(after, "remd_inject_seconds_bucket", le="+Inf") == 1
    assert value(after, "remd_inject_seconds_sum") > 0
    assert value(after, "remd_feedback_total") == 1
    assert value(after, "remd_namespaces") == 2  # no daemon tick yet: counted by a query
    assert value(after, "remd_embedding_backlog") == 2  # this server has no embedder
    assert value(after, "remd_pool_exhausted_total") == 0
    # Only closed sets label a series: no namespace (nor anything stored) becomes a label.
    assert not labels & set(NAMESPACES)
    assert labels <= {"completed", "interrupted", "failed", "tagger", "synthesiser",
                      "update_judge", "kept", "changed"}


def test_metrics_need_the_token_like_the_rest_of_the_api(
        served: Served_) -> None:
    _, _, api = served
    assert api.get("/metrics").status_code == 401
    assert api.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert api.get("/metrics", headers=AUTH).status_code == 200
    # The probes, like /healthz, never need it.
    assert api.get("/livez").status_code == 200
    assert api.get("/readyz").status_code == 200


def test_openmetrics_is_served_when_asked_for(
        served: Served_) -> None:
    _, _, api = served
    r = api.get("/metrics", headers={**AUTH, "Accept": "application/openmetrics-text"})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/openmetrics-text")
    assert r.text.rstrip().endswith("# EOF")


def test_rem_runs_llm_calls_and_rollbacks_are_counted(db_path: Path,
                                                     llm_server: LLMServer) -> None:
    with serving(db_path, Config(), embeds=True) as (_, host, api):
        counted_rem_runs(Memory.bound(host.engine, "alice"), llm_server, api)


def counted_rem_runs(alice: Memory, llm_server: LLMServer, api: httpx.Client) -> None:
    alice.import_lines([line(t, YEAR_AGO - i * DAY) for i, t in enumerate(ALICE)])
    llm_server.script(status(400))  # refused at once: the cluster is skipped
    failed = alice.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
    assert failed.skipped == 1 and failed.synthesised == 0
    llm_server.script(good())
    run = alice.run_rem(now=NOW, synthesiser=llm_synth(llm_server))
    assert run.synthesised == 1
    alice.rollback(str(run.run_id))

    m, labels = scrape(api)
    assert value(m, "remd_rem_runs_total", outcome="completed") == 2
    assert value(m, "remd_rem_runs_total", outcome="failed") == 0
    assert value(m, "remd_rem_run_seconds_count") == 2
    assert value(m, "remd_rem_flagged_total") == failed.flagged + run.flagged == 6
    assert value(m, "remd_rem_folded_total") == 3
    assert value(m, "remd_rem_rollbacks_total") == 1
    assert value(m, "remd_llm_calls_total", role="synthesiser") == 2
    assert value(m, "remd_llm_failures_total", role="synthesiser") == 1
    assert value(m, "remd_llm_calls_total", role="tagger") == 0
    # Live memories after each run: 3 (nothing folded), then 1 (the synthesis).
    assert value(m, "remd_rem_live_memories_count") == 2
    assert value(m, "remd_rem_live_memories_sum") == 3 + 1
    assert value(m, "remd_rem_live_memories_bucket", le="10") == 2
    assert value(m, "remd_rem_live_tokens_sum") > 0
    assert "alice" not in labels


# -- /livez and /readyz ----------------------------------------------------------------------
def test_livez_and_readyz_answer_and_readyz_refuses_while_draining(
        served: Served_) -> None:
    server, _, api = served
    live = api.get("/livez")
    assert live.status_code == 200 and live.json()["status"] == "alive"
    ready = api.get("/readyz")
    assert ready.status_code == 200, ready.text
    checks = ready.json()["checks"]
    assert ready.json()["status"] == "ready"
    assert checks["database"]["ok"] and checks["database"]["pending_migrations"] == []
    assert checks["database"]["schema_version"] >= 1
    assert checks["embedding_backlog"] == {"ok": True, "pending": None, "bound": 1000,
                                           "embedder": False}
    assert checks["draining"] == {"ok": True}

    server.drain(0)  # what the daemon does on SIGTERM, before the server stops
    refused = api.get("/readyz")
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    assert refused.json()["status"] == "unready"
    assert refused.json()["checks"]["draining"] == {"ok": False}
    assert refused.json()["checks"]["database"]["ok"]
    # Draining refuses new traffic politely; it still serves what comes.
    assert api.get("/livez").status_code == 200
    assert api.get("/v1/stats", headers=AUTH).status_code == 200


def test_readyz_refuses_while_the_embedding_backlog_is_over_its_bound(db_path: Path) -> None:
    with Memory(db_path, "ops", embedder=None) as m:  # saved with no embedder: no vectors
        m.save_many([f"Runbook step {i}: restart the ingest worker on host {i}"
                     for i in range(3)])
    config = Config.model_validate({"daemon": {"ready_max_backlog": 2}})
    with serving(db_path, config, embeds=True, token=None) as (_, host, api):
        r = api.get("/readyz")
        assert r.status_code == 503, r.text
        backlog = r.json()["checks"]["embedding_backlog"]
        assert backlog == {"ok": False, "pending": "more than 2", "bound": 2}
        assert r.json()["checks"]["database"]["ok"]
        samples = api.get("/metrics").text  # no token configured on this server
        assert "remd_embedding_backlog 3.0" in samples

        assert embed_pending(host.engine, None) == 3
        r = api.get("/readyz")
        assert r.status_code == 200, r.text
        assert r.json()["checks"]["embedding_backlog"] == {"ok": True, "pending": 0,
                                                           "bound": 2}


# -- `remd serve --http`: a real daemon, a real SIGTERM -----------------------------------------
@pytest.mark.slow
def test_remd_serve_counts_its_rem_runs_and_drains_after_sigterm(db_path: Path) -> None:
    assert CliRunner().invoke(main, ["--db", str(db_path), "init"]).exit_code == 0
    fill(db_path, "work", old_fragments())
    served = Served(db_path, "--http", "127.0.0.1:0", "--interval", "3600", env={
        "REMD_DAEMON__HTTP_TOKEN": TOKEN, "REMD_DAEMON__DRAIN_SECONDS": "4",
        "REMD_TRIGGERS__MAX_LIVE_NODES": "10"})
    port = served.wait_for("http.listening")["port"]
    served.wait_for("daemon.ready")
    finished = served.wait_for("cycle.finished", namespace="work")
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as api:
        m, labels = scrape(api)
        assert value(m, "remd_rem_runs_total", outcome="completed") == 1
        assert value(m, "remd_rem_flagged_total") == finished["flagged"]
        assert value(m, "remd_rem_live_memories_sum") == finished["live_after"]
        assert value(m, "remd_namespaces") == 1  # as the tick counted them
        assert "work" not in labels
        assert api.get("/readyz").status_code == 200

        served.proc.send_signal(signal.SIGTERM)
        # Poll until the drain shows; the drain window (4 s) keeps the server up meanwhile.
        seen: list[int] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and 503 not in seen:
            try:
                seen.append(api.get("/readyz").status_code)
            except httpx.TransportError:
                break
        assert 503 in seen, seen
        refused = api.get("/readyz")
        assert refused.status_code == 503
        assert refused.json()["checks"]["draining"] == {"ok": False}
        # Still serving during the drain: an agent's request is answered.
        assert api.get("/v1/stats?namespace=work", headers=AUTH).status_code == 200
        assert api.get("/livez").status_code == 200
    assert served.proc.wait(timeout=60) == 0
