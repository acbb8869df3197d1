"""The documentation stays true: every page is linked from the README, every relative link and
#anchor resolves, every `remd` command and option is on the CLI page, and the code blocks of
the README and docs run as written (the soak tier: each page's blocks take seconds to
minutes).

A fenced block tagged ```sh, ```bash or ```python runs, in order within its page, in a fresh
directory of its own (HOME is that directory, no REMD_* variable is set, the venv's bin first on
PATH), unless the line before it is `<!-- not run: REASON -->`: those are listed as skipped with
their reason. Blocks of other tags (```text, ```toml, ```json, ```yaml...) are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from remd.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
RUN = {"sh", "bash", "python"}
OTHER = {"sql", "text", "toml", "ini", "json", "jsonl", "yaml", "dot", "promql"}
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the reason, when marked

    @property
    def id(self) -> str:
        return f"{_name(self.page)}:{self.line}"


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        i += 1
        while not lines[i].startswith("```"):
            i += 1
        before = next((x for x in reversed(lines[:start]) if x.strip()), "")
        marked = NOT_RUN.fullmatch(before.strip())
        found.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:i]) + "\n",
                           marked.group(1) if marked else None))
        i += 1
    return found


def prose(page: Path) -> str:
    """The page without its code blocks and inline code (a `[x](y)` there is no link)."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link: its text
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose_lines(page):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def prose_lines(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return re.sub(r"^```.*?^```[ \t]*$", "", text, flags=re.M | re.S).split("\n")


LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(page: Path) -> list[str]:
    return LINK.findall(prose(page))


ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README)}
    missing = [_name(p) for p in PAGES[1:] if p.resolve() not in linked]
    assert missing == []


@pytest.mark.parametrize("page", PAGES[1:], ids=_name)
def test_each_page_starts_with_a_summary_and_a_link_back(page: Path) -> None:
    head = page.read_text(encoding="utf-8").split("\n")[:8]
    assert head[0].startswith("# "), head[0]
    assert any("](../README.md)" in line for line in head), "no link back to the README"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or (anchor and dest.suffix == ".md"
                                 and anchor not in anchors(dest)):
            broken.append(target)
    assert broken == []


def _commands(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        out.append((path, command))
        if isinstance(command, click.Group):
            out += _commands(command, path)
    return out


def _options(command: click.Command) -> list[str]:
    return [opt for p in command.params if isinstance(p, click.Option)
            for opt in p.opts if opt != "--help"]


def test_every_command_and_option_is_on_the_cli_page() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### (remd [a-z -]+?)\s*\n(.*?)(?=^#{1,3} |\Z)", text,
                               flags=re.M | re.S))
    missing = [opt for opt in _options(main) if opt not in text]
    for path, command in _commands(main, "remd"):
        if path not in sections:
            missing.append(path)
            continue
        missing += [f"{path} {opt}" for opt in _options(command) if opt not in sections[path]]
    assert missing == []


def test_every_fenced_block_has_a_tag() -> None:
    untagged = [b.id for b in ALL_BLOCKS if b.lang not in RUN | OTHER]
    assert untagged == []


def _env(home: Path) -> dict[str, str]:
    """A clean environment: nothing of the caller's but the venv's bin and this checkout."""
    return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin",
                                     "/usr/bin", "/bin"]),
            "HOME": str(home), "TMPDIR": str(home), "LANG": "C.UTF-8",
            "PYTHONPATH": str(ROOT)}


RUNNABLE = {page: [b for b in blocks(page) if b.lang in RUN and b.not_run is None]
            for page in PAGES}


@pytest.mark.parametrize("page", [p for p in PAGES if RUNNABLE[p]], ids=_name)
@pytest.mark.soak
def test_code_blocks_run(page: Path, tmp_path: Path) -> None:
    for block in RUNNABLE[page]:
        argv = ([sys.executable, "-c", block.code] if block.lang == "python"
                else ["bash", "-e", "-o", "pipefail", "-c", block.code])
        done = subprocess.run(argv, cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, (
            f"{block.id} exited {done.returncode}\n--- stdout\n{done.stdout}"
            f"\n--- stderr\n{done.stderr}")


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang in RUN and b.not_run],
                         ids=lambda b: b.id)
def test_blocks_marked_not_run(block: Block) -> None:
    pytest.skip(f"{block.id} not run: {block.not_run}")


def _signature(name: str, fn: object) -> str:
    """``name(a, b=1, *, c=None)`` as docs/python-api.md writes a method (defaults as Python
    writes them, strings in double quotes, the clock as ``time.time``)."""
    import inspect

    parts: list[str] = []
    star = False
    for p in list(inspect.signature(fn).parameters.values())[1:]:  # type: ignore[arg-type]
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.default is p.empty:
            parts.append(p.name)
            continue
        default = p.default
        shown = ("time.time" if getattr(default, "__name__", "") == "time"
                 else f'"{default}"' if isinstance(default, str) else repr(default))
        parts.append(f"{p.name}={shown}")
    return f"{name}({', '.join(parts)})"


def test_every_memory_method_is_on_the_python_api_page_with_its_signature() -> None:
    """docs/python-api.md shows every public method of Memory with every parameter and its
    default, so a keyword (``clock=``, ``dated=``) can't be added without being documented."""
    import inspect

    from remd import Memory

    page = (DOCS / "python-api.md").read_text(encoding="utf-8")
    flat = " ".join(page.split())  # a signature may wrap across lines
    missing = [_signature("Memory" if name == "__init__" else name, fn)
               for name, fn in inspect.getmembers(Memory, predicate=inspect.isfunction)
               if (not name.startswith("_") or name == "__init__")
               and _signature("Memory" if name == "__init__" else name, fn) not in flat]
    assert missing == []


def test_a_marked_block_is_written_from_its_results_file(tmp_path: Path) -> None:
    """benchmarks/eval/docs.py fills a marked block with the table a run recorded, and says
    when the docs no longer agree with the file."""
    import json

    from benchmarks.eval import docs as tables

    results = tmp_path / "run.json"
    results.write_text(json.dumps({"machine": "2026-11-28, x86_64, 2 cores", "seconds": 12.0,
                                   "command": "python -m benchmarks.eval --only personal",
                                   "sections": {"personal": {"blocks": [
                                       {"text": "Personal memories\n"},
                                       {"table": {"header": ["a", "b"], "rows": [["x", 1.5]],
                                                  "align": ["l", "r"]}}]}}}))
    page = tmp_path / "page.md"
    page.write_text(f"# T\n\n<!-- results: {results} machine -->\n<!-- /results -->\n\n"
                    f"<!-- results: {results} personal 0 -->\nold\n<!-- /results -->\n")
    assert len(tables.differences((page,))) == 2
    assert tables.write((page,)) == 2 and tables.differences((page,)) == []
    text = page.read_text()
    assert "| x | 1.500 |" in text and "12 s" in text and "--only personal" in text
    page.write_text(text.replace("| x | 1.500 |", "| x | 1.600 |"))
    assert tables.differences((page,)) == [f"{page}: {results} personal 0"]


def test_the_docs_tables_agree_with_the_recorded_results() -> None:
    """Every evaluation table of docs/evaluation.md (and the marked ones elsewhere) is the one
    its results file in benchmarks/results/ recorded (`python -m benchmarks.eval.docs`)."""
    from benchmarks.eval import docs as tables

    marked = [b for page in tables.PAGES for b in tables.blocks(page)]
    assert any(b.page.name == "evaluation.md" for b in marked)
    assert tables.differences() == []
