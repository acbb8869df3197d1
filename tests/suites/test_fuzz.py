"""Hypothesis against every entry point of one real file: each call works or raises a typed
RemdError; afterwards the file is intact and the memories saved before are unchanged.

Save fuzzing on its own is in tests/suites/test_faults.py; this drives inject (queries and
budgets of 0/1/huge/negative/not an int), lookups by unknown or hostile ids, feedback, rollback,
tag tools, odd namespaces, and the HTTP API with hostile JSON (4xx JSON errors, never a 500)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remd import Memory, RemdError, load_config
from remd.hosting import EngineHost
from remd.http.app import HttpServer, create_app
from remd.logs import capture_events
from remd.text.tokens import TokenCounter
from tests.http.test_app import serve

ANCHORS = ["I'm allergic to peanuts and I prefer dark chocolate",
           "My city has changed to Mumbai", "Project Falcon launches in March"]
COUNTER = TokenCounter()

_text = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40),
    st.sampled_from(["\x00", "\ud800 lone", "'; DROP TABLE nodes; --", "\u202eevil RTL",
                     "🧠💾🔥", "NEAR(a b)", '"unclosed', "a* OR b*", "peanuts AND -chocolate",
                     "SELECT * FROM nodes", "[[memory:x]]", "x" * 1_048_577, " \t\n ", "%s%n"]),
)
_budget = st.one_of(st.sampled_from([0, 1, 2, 10**12, 2**63, -1, -(2**63)]),
                    st.integers(-5, 5000), st.floats(allow_nan=True), st.none(),
                    st.text(max_size=5), st.booleans())
_namespace = st.one_of(st.just("default"), st.text(max_size=80),
                       st.sampled_from(["", "../etc", "a" * 65, "ns with space", "NUL\x00"]))


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, list[Any]]]:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with Memory(path) as m:
        for text in ANCHORS:
            m.save(text)
        before = m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")
        yield m, before
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        con.close()


def _ok_or_typed(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RemdError:
        return None


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=_text, budget=_budget)
def test_inject_fuzz(shared: tuple[Memory, list[Any]], query: str, budget: Any) -> None:
    m, before = shared
    pack = _ok_or_typed(lambda: m.inject(query, budget))
    if pack is not None:
        assert isinstance(budget, int) and budget >= 0
        assert pack.tokens_used == COUNTER.count(pack.text) <= budget
    assert m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")[:3] == before


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ident=_text, accepted=st.one_of(st.booleans(), st.floats(allow_nan=True), st.integers(),
                                       st.none(), st.text(max_size=3)))
def test_lookups_and_feedback_fuzz(shared: tuple[Memory, list[Any]], ident: str,
                                   accepted: Any) -> None:
    m, before = shared
    for call in (lambda: m.get(ident), lambda: m.history(ident), lambda: m.forget(ident),
                 lambda: m.feedback(ident, accepted), lambda: m.rollback(ident),
                 lambda: m.rename_tag(ident, "renamed"), lambda: m.merge_tags(ident, "food"),
                 lambda: m.add_subtype(ident, "food"), lambda: m.subtypes(ident),
                 lambda: m.suggest_related_tags([ident]),
                 lambda: m.memories_by_tag_cluster(ident, 2)):
        _ok_or_typed(call)
    now = m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")
    assert [r[:2] for r in now[:3]] == [r[:2] for r in before]  # nothing unknown touched them
    assert all(r[2] in ("live", "forgotten", "superseded") for r in now[:3])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ns=_namespace, text=_text, tags=st.one_of(st.none(), st.lists(_text, max_size=3)))
def test_odd_namespaces_and_tags(tmp_path_factory: pytest.TempPathFactory, ns: str, text: str,
                                 tags: list[str] | None) -> None:
    path = tmp_path_factory.mktemp("ns") / "f.db"
    m = _ok_or_typed(lambda: Memory(path, ns, embedder=None))
    if m is None:
        return
    with m:
        anchor = m.save("anchor")
        _ok_or_typed(lambda: m.save(text, tags=tags))
        _ok_or_typed(lambda: m.inject(text, 50))
        assert m.get(anchor.id).content == "anchor"


HOSTILE_BODIES: list[tuple[str, str, Any]] = [
    ("POST", "/v1/memories", b'{"content": "lone \\ud800 surrogate"}'),  # valid JSON
    ("POST", "/v1/memories", {"content": 42}),
    ("POST", "/v1/memories", {"content": "ok", "namespace": "../../etc"}),
    ("POST", "/v1/memories", {"content": "ok", "tags": ["\x00"]}),
    ("POST", "/v1/memories", ["not", "an", "object"]),
    ("POST", "/v1/inject", {"query": "peanuts", "token_budget": -1}),
    ("POST", "/v1/inject", {"query": "peanuts", "token_budget": 2**70}),
    ("POST", "/v1/inject", {"query": "peanuts", "token_budget": "ten"}),
    ("POST", "/v1/inject", {"query": "", "token_budget": 10}),
    ("POST", "/v1/inject", {"query": "x" * 2_000_000, "token_budget": 10}),
    ("POST", "/v1/feedback", {"pack_id": "'; DROP TABLE packs; --", "accepted": True}),
    ("POST", "/v1/feedback", {"pack_id": "p", "accepted": "maybe"}),
    ("GET", "/v1/memories/%00", None),
    ("GET", "/v1/memories/..%2F..%2Fetc", None),
    ("GET", "/v1/memories/x/history?namespace=%F0%9F%A7%A0", None),
    ("GET", "/v1/stats?namespace=" + "n" * 500, None),
]


def test_http_answers_hostile_requests_with_json_4xx(tmp_path: Path) -> None:
    db = tmp_path / "http.db"
    with Memory(db, embedder=None) as m:
        anchor = m.save(ANCHORS[0]).id
    server, pool = serve(db)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            for method, url, body in HOSTILE_BODIES:
                if isinstance(body, bytes):
                    r = api.request(method, url, content=body,
                                    headers={"content-type": "application/json"})
                else:
                    r = api.request(method, url, json=body) if body is not None else \
                        api.request(method, url)
                assert 400 <= r.status_code < 500, (method, url, r.status_code, r.text[:200])
                assert "error" in r.json(), (method, url)
            raw = api.post("/v1/memories", content=b"\xff\xfe not utf-8",
                           headers={"content-type": "application/json"})
            assert raw.status_code == 400 and "error" in raw.json()
            assert api.get(f"/v1/memories/{anchor}").json()["content"] == ANCHORS[0]
    finally:
        server.stop()
        pool.close()


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | _text,
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
_url_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
_fields = {"/v1/memories": ["content", "tags", "source", "namespace"],
           "/v1/inject": ["query", "token_budget", "namespace"],
           "/v1/feedback": ["pack_id", "accepted", "namespace"]}


@st.composite
def _post(draw: st.DrawFn) -> tuple[str, Any]:
    """A POST to one endpoint: its own fields with hostile values (sometimes an extra field
    or one missing), or any JSON at all."""
    path = draw(st.sampled_from(sorted(_fields)))
    if draw(st.booleans()):
        return path, draw(_json)
    names = draw(st.lists(st.sampled_from(_fields[path] + ["extra"]), unique=True))
    return path, {name: draw(_json) for name in names}


@pytest.fixture(scope="module")
def http_api(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[httpx.Client, Path, list[Any]]]:
    db = tmp_path_factory.mktemp("httpfuzz") / "http.db"
    with Memory(db, embedder=None) as m:
        for text in ANCHORS:
            m.save(text)
        before = m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")
    server, pool = serve(db)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            yield api, db, before
    finally:
        server.stop()
        pool.close()


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(post=_post(), ident=_url_text, ns=st.none() | _url_text)
def test_http_fuzz_answers_4xx_json_never_500(
        http_api: tuple[httpx.Client, Path, list[Any]], post: tuple[str, Any], ident: str,
        ns: str | None) -> None:
    api, db, before = http_api
    path, body = post
    params = {} if ns is None else {"namespace": ns}
    ident = quote(ident, safe="")
    responses = [
        api.post(path, content=json.dumps(body).encode(),
                 headers={"content-type": "application/json"}),
        api.get(f"/v1/memories/{ident}", params=params),
        api.get(f"/v1/memories/{ident}/history", params=params),
        api.get("/v1/stats", params=params),
    ]
    for r in responses:
        assert r.status_code < 500, (r.request.url, r.status_code, r.text[:300])
        if r.is_redirect:  # "/v1/memories/" (empty id): Starlette's trailing-slash redirect
            continue
        data = r.json()
        assert r.is_success or set(data) == {"error"}, data
    with Memory(db, embedder=None) as m:
        assert m.store.query("SELECT id, content, status FROM nodes ORDER BY rid")[:3] == before


class _BuggyPool(EngineHost):
    """A host whose every lease hits a bug (an exception that is not a RemdError)."""

    def lease(self) -> Any:
        raise RuntimeError(f"bug while leasing {self.db!r}")


def test_a_bug_behind_the_api_is_a_json_500_and_a_logged_event(db_path: Path) -> None:
    Memory(db_path, embedder=None).close()
    pool = _BuggyPool(db_path, load_config(env={}), embedder=None)
    server = HttpServer(create_app(pool), "127.0.0.1", 0)
    server.start()
    try:
        with capture_events() as logs, httpx.Client(
                base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            r = api.get("/v1/stats")
        assert r.status_code == 500 and r.json()["error"]["type"] == "InternalError"
        assert "bug while leasing" not in r.text  # the details go to the log, not the caller
        crash = [e for e in logs if e["event"] == "http.internal_error"]
        assert crash and crash[0]["error_type"] == "RuntimeError"
    finally:
        server.stop()
        pool.close()
