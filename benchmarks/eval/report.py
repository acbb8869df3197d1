"""Markdown tables and the small statistics the harness prints, and the results as JSON.

A :class:`Recorder` keeps what the sections of ``python -m benchmarks.eval --json PATH`` print,
section by section, as blocks: ``{"text": ...}`` for prose and ``{"table": {"header", "rows",
"align"}}`` for each table made by :func:`table`, its cells as values (numbers stay numbers).
:func:`render` gives the printed text back from the blocks, character for character
(``python -m benchmarks.eval.tables`` prints it from the JSON file).
"""

from __future__ import annotations

import io
import math
import os
import platform
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TextIO


def table(header: Sequence[str], rows: Sequence[Sequence[object]],
          align: Sequence[str] | None = None) -> str:
    """A markdown table; ``align`` holds "l" or "r" per column (numbers right by default)."""
    if align is None:
        align = ["l"] + ["r"] * (len(header) - 1)
    lines = ["| " + " | ".join(str(h) for h in header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    text = "\n".join(lines)
    if _RECORDER is not None:
        _RECORDER.made(text, header, rows, align)
    return text


def _fmt(cell: object) -> str:
    if isinstance(cell, float):
        return f"{cell:.3f}"
    return str(cell)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def machine_line() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    return (f"{today}, {platform.machine()} {cpu or platform.processor()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}")


def _value(cell: object) -> object:
    """A cell as JSON that :func:`table` prints the same: str, int, bool, None and finite floats
    as they are, anything else as its printed text."""
    if cell is None or type(cell) in (str, int, bool):
        return cell
    if isinstance(cell, float) and math.isfinite(cell):
        return float(cell)
    return _fmt(cell)


class _Tee(io.TextIOBase):
    def __init__(self, out: TextIO, keep: list[str]) -> None:
        self.out, self.keep = out, keep

    def write(self, text: str) -> int:
        self.keep.append(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.out.encoding

    def isatty(self) -> bool:
        return self.out.isatty()


class Recorder:
    """What each section prints, as blocks (see the module docstring)."""

    def __init__(self) -> None:
        self.sections: dict[str, dict[str, Any]] = {}
        self._made: list[tuple[str, dict[str, Any]]] = []

    def made(self, text: str, header: Sequence[str], rows: Sequence[Sequence[object]],
             align: Sequence[str]) -> None:
        self._made.append((text, {"header": [str(h) for h in header],
                                  "rows": [[_value(c) for c in row] for row in rows],
                                  "align": list(align)}))

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        """Record what is printed to stdout inside the block (it is printed as well)."""
        global _RECORDER
        keep: list[str] = []
        out, self._made = sys.stdout, []
        sys.stdout, _RECORDER = _Tee(out, keep), self
        try:
            yield
        finally:
            sys.stdout, _RECORDER = out, None
            self.sections[name] = {"blocks": _blocks("".join(keep), self._made)}


def _blocks(text: str, made: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The printed text cut into prose and the tables found in it, in order (a table made but
    not printed as made stays out)."""
    blocks: list[dict[str, Any]] = []
    pos = 0
    for rendered, tab in made:
        at = text.find(rendered, pos)
        if at < 0:
            continue
        if at > pos:
            blocks.append({"text": text[pos:at]})
        blocks.append({"table": tab})
        pos = at + len(rendered)
    if pos < len(text):
        blocks.append({"text": text[pos:]})
    return blocks


def render(blocks: Sequence[dict[str, Any]]) -> str:
    """The text a section printed, from its recorded blocks."""
    return "".join(b["text"] if "text" in b else
                   table(b["table"]["header"], b["table"]["rows"], b["table"]["align"])
                   for b in blocks)


_RECORDER: Recorder | None = None
