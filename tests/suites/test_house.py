"""The house rules, read from the source (nothing is imported): the layers' arrows point down,
there are no import circles, front ends stay apart, dialects stay in the store, modules stay
small.

The layers, top to bottom (docs/architecture.md): front ends (remd/cli, remd/http, remd/mcp,
remd/service, remd/langchain.py, remd/langgraph.py) -> the facade (remd/__init__.py,
remd/memory.py, remd/async_memory.py, remd/reembedding.py: a file moved to another embedder, and
remd/hosting.py: the engine a long-running front end holds) -> the engine (remd/engine.py,
remd/readiness.py) -> the sleep wing (remd/sleep) -> the write and query wings (remd/write,
remd/query: never each other) -> remd/parts.py (the engine as the wings see it) -> remd/index and
remd/llm -> remd/text and remd/store -> the base (the modules at the top of the package).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "remd"

FRONT_ENDS = ("cli", "http", "mcp", "service", "langchain", "langgraph")
FACADE = {"remd", "remd.memory", "remd.async_memory", "remd.hosting", "remd.reembedding"}
# The CLI is where the long-running front ends are put together: `remd serve` builds the HTTP
# server and hands it to the daemon, `remd mcp` starts the MCP server.
COMPOSITION_ROOT = "cli"
LAYERS = {  # a module may import its own layer and the layers below it (a higher number)
    "engine": 3, "readiness": 3,
    "sleep": 4,  # consolidation runs over the other two wings: it packs and writes the graph
    "write": 5, "query": 5,
    "parts": 6,  # the engine as its wings see it (they never import remd.engine)
    "index": 7, "llm": 7,
    "text": 8, "store": 8,
    "base": 9,
}
# Folders on one layer that never import each other.
SIBLINGS = [("write", "query"), ("index", "llm"), ("text", "store")]
BASE = {"config", "errors", "models", "ids", "logs", "checks", "telemetry", "wire"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Every remd module ``name`` imports, at the top, inside functions or under TYPE_CHECKING."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    out.add(full)
                elif node.module in MODULES:
                    out.add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in MODULES:
                    target = target.rpartition(".")[0]
                if target:
                    out.add(target)
    out.discard(name)
    return {t for t in out if not name.startswith(t + ".")}  # a package's parent __init__


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _group(name: str) -> str:
    """The top-level folder or module of ``name`` under remd ("remd" for the package itself)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "remd"


def _layer(name: str) -> str | None:
    group = _group(name)
    if group in LAYERS:
        return group
    return "base" if group in BASE else None


def test_the_layers_are_folders() -> None:
    for folder in ("store", "index", "text", "llm", "write", "query", "sleep", "cli", "http",
                   "mcp", "service"):
        assert (PKG / folder / "__init__.py").is_file(), folder
    loose = {_group(n) for n in MODULES if n.count(".") == 1 and (PKG / f"{_group(n)}.py").exists()}
    assert loose <= BASE | {"engine", "readiness", "parts", "memory", "async_memory", "hosting",
                            "reembedding", "langchain", "langgraph"}, loose


def test_no_import_circles() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in MODULES:
        if name not in index:
            visit(name)
    assert circles == []


def test_arrows_point_down() -> None:
    wrong = []
    for name, targets in GRAPH.items():
        mine = _layer(name)
        if mine is None:
            continue
        for target in targets:
            theirs = _layer(target)
            if target in FACADE or _group(target) in FRONT_ENDS or (
                    theirs is not None and LAYERS[theirs] < LAYERS[mine]):
                wrong.append(f"{name} -> {target}")
    assert wrong == []


def test_siblings_never_import_each_other() -> None:
    wrong = [f"{name} -> {target}" for name, targets in GRAPH.items() for target in targets
             for pair in SIBLINGS if {_group(name), _group(target)} == set(pair)]
    assert wrong == []


def test_front_ends_never_import_each_other() -> None:
    wrong = [f"{name} -> {target}" for name, targets in GRAPH.items() for target in targets
             if _group(name) in FRONT_ENDS and _group(target) in FRONT_ENDS
             and _group(name) != _group(target) and _group(name) != COMPOSITION_ROOT]
    assert wrong == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_under_500_lines(name: str) -> None:
    assert len(MODULES[name].read_text().splitlines()) <= 500


_SQL = re.compile(r"[\"'](?:SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|PRAGMA)\s")


def test_no_sql_above_the_engine() -> None:
    """The facade and the front ends call engine functions; none of them writes SQL or reaches
    into the store's connection."""
    wrong = []
    for name, path in MODULES.items():
        if name in FACADE or _group(name) in FRONT_ENDS:
            text = path.read_text()
            if _SQL.search(text) or re.search(r"\.store\.(query|one|scalar|tx|read)\(", text):
                wrong.append(name)
    assert wrong == []


def test_the_store_is_sealed() -> None:
    """Outside remd/store, the store is ``remd.store`` (its public face) and ``remd.store.seam``
    (the types): no module reaches a backend or a helper module of the store."""
    allowed = {"remd.store", "remd.store.seam"}
    wrong = [f"{name} -> {target}" for name, targets in GRAPH.items() if _group(name) != "store"
             for target in targets if _group(target) == "store" and target not in allowed]
    assert wrong == []


def test_front_ends_and_the_daemon_never_import_the_store() -> None:
    """The CLI, HTTP, MCP and the daemon reach the database through the library (``Memory``,
    the engine they hold, ``remd.backup_file``/``check_backup``, a store's ``where``), never
    through ``remd.store`` itself."""
    wrong = [f"{name} -> {target}" for name, targets in GRAPH.items()
             if _group(name) in ("cli", "http", "mcp", "service")
             for target in targets if _group(target) == "store"]
    assert wrong == []


def test_dialects_stay_in_the_store() -> None:
    """No module outside remd/store asks which database it is on."""
    wrong = [name for name, path in MODULES.items() if _group(name) != "store"
             and re.search(r"is_postgres\(|cast\(Any, *conn\)", path.read_text())]
    assert wrong == []


def test_schema_and_licence_at_the_top() -> None:
    top = PKG.parent
    assert (top / "schema.sql").is_file() and (top / "LICENSE").is_file()
    assert not (PKG / "schema.sql").exists()  # one schema file


TESTS = PKG.parent / "tests"
# Test folders that mirror no folder of remd: the facade and the SDK adapters (modules at the
# top of remd/), and the cross-cutting suites (contract, crash, docs, house, ...).
TEST_FOLDERS_OF_THEIR_OWN = {"facade", "adapters", "suites"}


def test_the_tests_mirror_the_package() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - TEST_FOLDERS_OF_THEIR_OWN <= {p.name for p in PKG.iterdir()
                                                  if (p / "__init__.py").is_file()}
    assert not list(TESTS.glob("test_*.py")), "every test module lives in a folder"


def test_the_backends_never_import_each_other() -> None:
    """remd/store/sqlite and remd/store/postgres share only what is above them in the store
    (base.py, seam.py, reads.py, quantisation.py, tokenizer.py, where.py)."""
    backends = ("remd.store.sqlite", "remd.store.postgres")
    wrong = [f"{name} -> {target}" for name, targets in GRAPH.items() for target in targets
             for mine in backends for theirs in backends
             if mine != theirs and name.startswith(mine) and target.startswith(theirs)]
    assert wrong == []
