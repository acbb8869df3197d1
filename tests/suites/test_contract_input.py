"""The input contract of import and of the input checks every front end shares: an export
imported twice is imported once (edges too), a refused import leaves no new file, a string is
not a list of texts nor a number a path, and a NUL or invalid UTF-8 is named as such by every
front end. Real SQLite files (and the PostgreSQL server for the ``db_path`` tests), the real
CLI in a subprocess, real HTTP over 127.0.0.1, the real MCP server over stdio, a real
LangGraph store."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from remd import AsyncMemory, Memory
from remd.errors import InvalidInput
from tests.http.test_app import serve
from tests.mcp.test_server import session

pytestmark = pytest.mark.backends

REMD = [sys.executable, "-c", "import sys; from remd.cli.main import main; sys.exit(main())"]
CITIES = ["Bangalore", "Mumbai", "Paris", "Lyon", "Rome", "Oslo"]


def _edges(lines: list[str]) -> int:
    return sum("edge" in json.loads(line) for line in lines)


def _cities(m: Memory) -> list[str]:
    for city in CITIES:  # each new city supersedes the last: 5 SUPERSEDES edges
        m.save(f"My city is {city}")
    lines = list(m.export_lines())
    assert _edges(lines) == len(CITIES) - 1
    return lines


def _other_db(db_path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A second empty database on the same backend as ``db_path``."""
    if isinstance(db_path, Path):
        return tmp_path / "other.db"
    url: Path = request.getfixturevalue("pg_server").fresh_url()  # a str, typed as db_path is
    return url


def _proc(*args: str | bytes, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMD_")}
    return subprocess.run([*REMD, *args], input=input, capture_output=True, env=env,
                          timeout=120)


def _one_line_error(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1 and done.stdout == b"", (done.returncode, err)
    assert err.startswith("Error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


# -- row 2: importing one export twice imports it once, edges included ----------------------
def test_importing_an_export_again_adds_no_edges(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        first = _cities(m)
        for _ in range(2):
            result = m.import_lines(first)
            assert (result.imported, result.skipped, result.edges) == (0, len(CITIES), 0)
        assert list(m.export_lines()) == first


def test_export_import_export_stays_identical_after_three_imports(
        db_path: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    with Memory(db_path, embedder=None) as m:
        first = _cities(m)
    with Memory(_other_db(db_path, tmp_path, request), embedder=None) as other:
        added = [other.import_lines(first).edges for _ in range(3)]
        again = list(other.export_lines())
    assert added == [len(CITIES) - 1, 0, 0]
    assert again == first


def test_an_edge_the_file_repeats_is_kept_and_not_doubled_on_reimport(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        a, b = m.save("first note"), m.save("second note")
        edge = json.dumps({"edge": {"src": b.id, "dst": a.id, "type": "EXTENDS"}})
        assert m.import_lines([edge, edge]).edges == 2
        assert m.import_lines([edge, edge]).edges == 0
        assert _edges(list(m.export_lines())) == 2


# -- row 3: a refused import leaves no new file -----------------------------------------------
REFUSED = {
    "bad JSON line": b'{"content": "fine"}\nnot json\n',
    "invalid UTF-8": b'{"content": "caf\xe9"}\n',
    "unknown field": b'{"content": "x", "colour": "red"}\n',
    "bad field type": b'{"content": "x", "tags": 5}\n',
    "bad kind": b'{"content": "x", "kind": "poem"}\n',
    "bad time": b'{"content": "x", "created_at": "yesterday"}\n',
    "bad edge type": b'{"edge": {"src": "a", "dst": "b", "type": "LIKES"}}\n',
    "non-finite weight": b'{"edge": {"src": "a", "dst": "b", "type": "EXTENDS", '
                         b'"weight": NaN}}\n',
    "NUL in a fact key": b'{"content": "x", "fact_key": "a\\u0000b"}\n',
    "lone surrogate id": b'{"content": "x", "id": "a\\ud800"}\n',
    "tag its own subtype": b'{"edge": {"src": "tag:food", "dst": "tag:food", '
                           b'"type": "IS_SUBTYPE_OF"}}\n',
    "tag hierarchy loop": b'{"edge": {"src": "tag:a", "dst": "tag:b", "type": "IS_SUBTYPE_OF"}}\n'
                          b'{"edge": {"src": "tag:b", "dst": "tag:a", "type": "IS_SUBTYPE_OF"}}\n',
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=list(REFUSED))
@pytest.mark.parametrize("from_stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.slow
def test_a_refused_import_leaves_no_new_file(tmp_path: Path, body: bytes,
                                             from_stdin: bool) -> None:
    db = tmp_path / "new.db"
    source = tmp_path / "in.jsonl"
    source.write_bytes(body)
    done = _proc("--db", str(db), "import", "-" if from_stdin else str(source),
                 input=body if from_stdin else None)
    _one_line_error(done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_refused_import_into_an_existing_file_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Memory(db, embedder=None) as m:
        before = _cities(m)
    body = b'{"content": "kept out"}\n{"edge": {"src": "tag:a", "dst": "tag:a", ' \
           b'"type": "IS_SUBTYPE_OF"}}\n'
    _one_line_error(_proc("--db", str(db), "import", "-", input=body))
    with Memory(db, embedder=None) as m:
        assert list(m.export_lines()) == before


# -- row 9: a string is not a list of texts; a path is a string or os.PathLike --------------
def test_save_many_refuses_one_string(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        with pytest.raises(InvalidInput, match="list of texts"):
            m.save_many("abc")
        assert m.stats().nodes == 0


@pytest.mark.parametrize("path", [5, None, b"agent.db", 2.5])
def test_a_path_that_is_no_path_is_refused_and_creates_no_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Any) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match=r"string or a path \(os\.PathLike\)"):
        Memory(path, embedder=None)
    with pytest.raises(InvalidInput, match=r"string or a path \(os\.PathLike\)"):
        AsyncMemory(path, embedder=None)
    assert list(tmp_path.iterdir()) == []


def test_async_memory_refuses_one_string_as_texts(db_path: Path) -> None:
    async def body() -> int:
        async with AsyncMemory(db_path, embedder=None) as m:
            with pytest.raises(InvalidInput, match="list of texts"):
                await m.save_many("abc")
            return (await m.stats()).nodes

    assert asyncio.run(body()) == 0


# -- row 10: "contains a NUL character", "is not valid UTF-8", from every front end ---------
def test_python_api_names_nul_and_invalid_utf8(db_path: Path) -> None:
    with Memory(db_path, embedder=None) as m:
        cases: list[tuple[Callable[[], object], str]] = [
            (lambda: m.save("ok", source="chat\x00log"), "source contains a NUL character"),
            (lambda: m.save("ok", source="chat\udcfflog"), "source is not valid UTF-8"),
            (lambda: m.save("caf\udce9"), "memory text is not valid UTF-8"),
            (lambda: m.save("ok", tags=["caf\udce9"]), "tag is not valid UTF-8"),
            (lambda: m.save("ok", tags=["a\x00b"]), "tag contains a NUL character"),
            (lambda: m.inject("caf\udce9", 100), "query is not valid UTF-8"),
            (lambda: m.save("x", source="s" * 257), "source is 257 characters; the limit"),
        ]
        for call, message in cases:
            with pytest.raises(InvalidInput) as raised:
                call()
            assert message in str(raised.value)
            assert "surrogate" not in str(raised.value)
        assert m.stats().nodes == 0


@pytest.mark.parametrize(("args", "message"), [
    ([b"save", b"caf\xe9"], "memory text is not valid UTF-8"),
    ([b"save", b"ok", b"--source", b"caf\xe9"], "source is not valid UTF-8"),
    ([b"save", b"ok", b"--tag", b"caf\xe9"], "tag is not valid UTF-8"),
    ([b"inject", b"caf\xe9", b"--budget", b"100"], "query is not valid UTF-8"),
    ([b"get", b"caf\xe9"], "is not valid UTF-8"),
    ([b"history", b"caf\xe9"], "is not valid UTF-8"),
])
def test_cli_says_invalid_utf8_is_not_valid_utf8(tmp_path: Path, args: list[bytes],
                                                 message: str) -> None:
    db = tmp_path / "agent.db"
    with Memory(db, embedder=None) as m:
        m.save("café au lait")
    err = _one_line_error(_proc(b"--db", bytes(db), *args))
    assert message in err and "surrogate" not in err


def test_http_names_nul_and_invalid_utf8(db_path: Path) -> None:
    server, pool = serve(db_path)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            for body, message in [
                (b'{"content": "ok", "source": "chat\\u0000log"}',
                 "source contains a NUL character"),
                (b'{"content": "ok", "source": "chat\\udcfflog"}', "source is not valid UTF-8"),
                (b'{"content": "caf\\udce9"}', "memory text is not valid UTF-8"),
            ]:
                r = api.post("/v1/memories", content=body,
                             headers={"content-type": "application/json"})
                assert r.status_code == 400, r.text
                assert message in r.json()["error"]["message"]
    finally:
        server.stop()
        pool.close()
    with Memory(db_path, embedder=None) as m:
        assert m.stats().nodes == 0


def test_mcp_names_a_nul_in_source(db_path: Path) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("save_memory", {"content": "ok",
                                                        "source": "chat\x00log"})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert result.is_error and "source contains a NUL character" in text, text

    session(db_path, body)
    with Memory(db_path, embedder=None) as m:
        assert m.stats().nodes == 0


def test_langgraph_names_a_nul_in_a_key(tmp_path: Path) -> None:
    pytest.importorskip("langgraph")
    from remd.langgraph import RemdStore  # noqa: PLC0415 (LangGraph is an optional extra)

    store = RemdStore(tmp_path / "lg.db")
    try:
        with pytest.raises(InvalidInput, match="contains a NUL character"):
            store.put(("users",), "food\x00x", {"text": "allergic to peanuts"})
        assert store.search(("users",)) == []
    finally:
        store.close()


# -- issue 38 row 5: at most 64 tags a memory, 4,096 characters of them, on every front end ---
TOO_MANY = [f"topic {i}" for i in range(5000)]  # ~50 KB: the save that once ran out of memory
LIMIT = "5000 tags; the limit is 64 tags a memory"


def _unchanged(db_path: Path, before: list[str]) -> None:
    with Memory(db_path, embedder=None) as m:
        assert list(m.export_lines()) == before
        assert m.store.scalar("SELECT count(*) FROM tags") == 0
        assert m.store.scalar("SELECT count(*) FROM tag_edges") == 0


def test_python_api_refuses_too_many_tags_and_takes_the_limit(db_path: Path) -> None:
    wide = [f"tag {i:02d}" + " " * 60 for i in range(64)]  # 64 tags of 66 characters as given
    with Memory(db_path, embedder=None) as m:
        for call in (lambda: m.save("ok", tags=TOO_MANY),
                     lambda: m.save_many(["one", "two"], tags=TOO_MANY),
                     lambda: m.import_lines([json.dumps({"content": "ok", "tags": TOO_MANY})]),
                     lambda: m.save("ok", tags=iter(TOO_MANY))):
            with pytest.raises(InvalidInput, match=r"tags; the limit is 64 tags a memory"):
                call()
        with pytest.raises(InvalidInput, match="4224 characters; the limit is 4096"):
            m.save("ok", tags=wide)
    _unchanged(db_path, [])
    with Memory(db_path, embedder=None) as m:
        given = [f"t{i}" for i in range(64)]
        saved = m.save("Notes from the planning meeting about Falcon and Heron", tags=given)
        assert set(given) <= set(saved.tags) and len(saved.tags) == 64  # no room for more
        assert m.store.scalar("SELECT count(*) FROM tag_edges") == 64 * 63
        auto = m.save("Notes from the planning meeting about Falcon and Heron", tags=given[:60])
        assert len(auto.tags) == 64 and {"falcon", "heron"} & set(auto.tags)


def test_async_memory_refuses_too_many_tags(db_path: Path) -> None:
    async def body() -> None:
        async with AsyncMemory(db_path, embedder=None) as m:
            with pytest.raises(InvalidInput, match=LIMIT):
                await m.save("ok", tags=TOO_MANY)

    asyncio.run(body())
    _unchanged(db_path, [])


def test_cli_refuses_too_many_tags_before_it_opens_the_file(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    args = [arg for tag in TOO_MANY for arg in ("--tag", tag)]
    err = _one_line_error(_proc("--db", str(db), "save", "ok", *args))
    assert LIMIT in err
    assert not db.exists()


def test_http_refuses_too_many_tags(db_path: Path) -> None:
    server, pool = serve(db_path)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            r = api.post("/v1/memories", json={"content": "ok", "tags": TOO_MANY})
            assert r.status_code == 400, r.text
            assert r.json()["error"]["type"] == "InvalidInput"
            assert LIMIT in r.json()["error"]["message"]
    finally:
        server.stop()
        pool.close()
    _unchanged(db_path, [])


def test_mcp_refuses_too_many_tags(db_path: Path) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("save_memory", {"content": "ok", "tags": TOO_MANY})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert result.is_error and LIMIT in text, text

    session(db_path, body)
    _unchanged(db_path, [])


def test_langchain_tool_refuses_too_many_tags(db_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from remd.langchain import memory_tools  # noqa: PLC0415 (an optional extra)

    with Memory(db_path, embedder=None) as m:
        save = next(t for t in memory_tools(m) if t.name == "save_memory")
        answer = save.invoke({"content": "ok", "tags": TOO_MANY})  # told to the model
        assert LIMIT in answer
    _unchanged(db_path, [])
