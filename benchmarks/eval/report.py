"""Markdown tables and the small statistics the harness prints."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime


def table(header: Sequence[str], rows: Sequence[Sequence[object]],
          align: Sequence[str] | None = None) -> str:
    """A markdown table; ``align`` holds "l" or "r" per column (numbers right by default)."""
    if align is None:
        align = ["l"] + ["r"] * (len(header) - 1)
    lines = ["| " + " | ".join(str(h) for h in header) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


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
