"""Print the tables of a results file written by ``python -m benchmarks.eval --json PATH``.

    python -m benchmarks.eval.tables results.json                  # everything, as printed
    python -m benchmarks.eval.tables results.json --only personal  # some sections

The file is ``{"machine": ..., "seconds": ..., "sections": {name: {"blocks": [...]}}}``; each
block is ``{"text": ...}`` (prose as printed) or ``{"table": {"header": [...], "rows": [[...]],
"align": [...]}}`` (one markdown table, its cells as values). The output is what the run printed
on stdout, character for character (``benchmarks/eval/report.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.eval.report import render


def text(results: dict[str, Any], only: list[str] | None = None) -> str:
    """The run's stdout: its first line, the sections (those in ``only``), the total time."""
    sections = results["sections"]
    names = [n for n in sections if only is None or n in only]
    out = f"remd evaluation — {results['machine']}\n\n"
    out += "".join(render(sections[n]["blocks"]) for n in names)
    return out + f"\n(total {results['seconds']:.0f} s)\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.tables", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path, help="a file written by python -m benchmarks.eval "
                                                "--json")
    ap.add_argument("--only", nargs="+", default=None, help="these sections only")
    args = ap.parse_args(argv)
    results = json.loads(args.results.read_text(encoding="utf-8"))
    missing = [n for n in args.only or [] if n not in results["sections"]]
    if missing:
        ap.error(f"not in {args.results}: {', '.join(missing)} "
                 f"(it has {', '.join(results['sections'])})")
    sys.stdout.write(text(results, args.only))
    return 0


if __name__ == "__main__":
    sys.exit(main())
