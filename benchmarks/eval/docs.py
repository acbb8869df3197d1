"""The docs' evaluation tables, written from the results files that recorded them, so a figure
in the docs is always one that was measured.

    python -m benchmarks.eval.docs           # rewrite every marked block from its file
    python -m benchmarks.eval.docs --check   # exit 1 naming each block that differs

A results file is what ``python -m benchmarks.eval --json FILE`` (or another runner using
:class:`benchmarks.eval.report.Recorder`) wrote; the recorded ones are kept in
``benchmarks/results/``. In a page of :data:`PAGES`, a block between

    <!-- results: benchmarks/results/NAME.json SECTION N -->
    ...
    <!-- /results -->

is the N-th table (from 0) that SECTION printed in that run, as it printed it; with ``machine``
in place of ``SECTION N`` it is one line saying which command ran, when, on what machine and
for how long. Everything between the two comments is replaced; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.eval.report import table

REPO = Path(__file__).resolve().parents[2]
PAGES = (REPO / "docs" / "evaluation.md", REPO / "docs" / "benchmarks.md", REPO / "README.md")
MARK = re.compile(r"^<!-- results: (\S+) (\S+)(?: (\d+))? -->\n(.*?)^<!-- /results -->$",
                  re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    file: str
    section: str  # or "machine"
    index: int | None
    body: str

    @property
    def name(self) -> str:
        where = self.section if self.index is None else f"{self.section} {self.index}"
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}: {self.file} {where}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    return [Block(page, m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None,
                  m.group(4)) for m in MARK.finditer(text)]


def _load(file: str) -> dict[str, Any]:
    """A results file, by its path from the repository's root (or an absolute path)."""
    return json.loads((REPO / file).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def rendered(block: Block) -> str:
    """What the block must hold, from its results file. Raises KeyError or IndexError (with
    the block's name) when the file does not have it."""
    results = _load(block.file)
    if block.section == "machine":
        command = results.get("command", "python -m benchmarks.eval")
        return (f"Recorded in `{block.file}`: `{command}`, {results['machine']}; "
                f"{results['seconds']:.0f} s.\n")
    try:
        section = results["sections"][block.section]
        tables = [b["table"] for b in section["blocks"] if "table" in b]
        tab = tables[block.index or 0]
    except (KeyError, IndexError) as exc:
        raise type(exc)(f"{block.name}: not in the file") from exc
    return table(tab["header"], tab["rows"], tab["align"]) + "\n"


def differences(pages: tuple[Path, ...] = PAGES) -> list[str]:
    """The blocks whose text is not what their results file says (none: the docs agree)."""
    return [b.name for page in pages if page.exists() for b in blocks(page)
            if b.body != rendered(b)]


def write(pages: tuple[Path, ...] = PAGES) -> int:
    """Rewrite every marked block; returns how many changed."""
    changed = 0
    for page in pages:
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")

        def fill(m: re.Match[str], page: Path = page) -> str:
            nonlocal changed
            block = Block(page, m.group(1), m.group(2),
                          int(m.group(3)) if m.group(3) else None, m.group(4))
            body = rendered(block)
            changed += body != block.body
            head = m.group(0).split("\n", 1)[0]
            return f"{head}\n{body}<!-- /results -->"

        new = MARK.sub(fill, text)
        if new != text:
            page.write_text(new, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.docs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a "
                                                         "difference")
    args = ap.parse_args(argv)
    if args.check:
        wrong = differences()
        for name in wrong:
            print(f"differs from its results file: {name}", file=sys.stderr)
        return 1 if wrong else 0
    print(f"{write()} block(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
