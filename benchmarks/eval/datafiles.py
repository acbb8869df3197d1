"""The evaluation sets' data: one JSON file per set in ``benchmarks/eval/data/``, read by name.

The format of each file is described in ``benchmarks/eval/data/README.md``. The data is for
evaluation only and is not packaged (``benchmarks/`` is not part of the wheel).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
REPO = DATA.parents[2]


def path(name: str) -> Path:
    """The file of the set called ``name`` (``benchmarks/eval/data/<name>.json``)."""
    return DATA / f"{name}.json"


def read(name: str) -> dict[str, Any]:
    """The parsed file of the set called ``name``."""
    return read_path(path(name))


def read_path(file: Path) -> dict[str, Any]:
    """A parsed data file."""
    data: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return data
