"""The inspector's tag graph in a real browser (the system's Chromium, as in
tests/http/test_inspector_page.py): on a graph of 30-40 tags of varied lengths, every label is
whole, inside the drawing, and clear of every other label and every other tag's circle, measured
by Chromium itself (getBoundingClientRect of each drawn label and circle).

The test saves a screenshot of the page to its temporary directory; with
``REMD_SCREENSHOTS=DIR`` set it writes ``DIR/inspector-tag-graph.png`` (the picture in
docs/http.md: ``REMD_SCREENSHOTS=docs/img``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remd import Memory
from tests.http.test_app import serve
from tests.http.test_inspector_page import CHROMIUM, TOKEN, Page, browser  # noqa: F401 (a fixture)
from tests.sleep.test_rem import NOW

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no system Chromium (apt-get install chromium; .ci/run does)")

# Topics around "maintenance": the hub carries each topic and the first tag of each; a topic
# carries its tags, each beside the next; a few memories bridge neighbouring topics. 40 tags,
# all within depth 2. Memory text ("note N") adds no tag of its own.
TOPICS = {
    "cluster": ["kubernetes", "deployment", "observability", "prometheus", "alerting", "on-call"],
    "database": ["postgresql", "replication", "backup", "vacuum", "schema-migration", "index"],
    "security": ["authentication", "certificate", "key-rotation", "firewall", "audit-log"],
    "schedule": ["weekend", "change-freeze", "calendar", "downtime-window"],
    "hardware": ["disk", "raid", "firmware", "power-supply", "cooling", "datacenter-east"],
    "people": ["vendor", "contractor", "runbook", "postmortem", "incident-review"],
}


def memories() -> list[list[str]]:
    """The tags of each memory."""
    out: list[list[str]] = []
    names = list(TOPICS)
    for k, (topic, tags) in enumerate(TOPICS.items()):
        out += [["maintenance", topic]] * 2 + [["maintenance", tags[0]]]
        out += [[topic, tag, tags[(i + 1) % len(tags)]] for i, tag in enumerate(tags)]
        out.append([topic, TOPICS[names[(k + 1) % len(names)]][-1]])
    return out


@pytest.fixture
def graph_server(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "graph.db"
    with Memory(db, clock=lambda: NOW, embedder=None) as m:
        for i, tags in enumerate(memories()):
            m.save(f"note {i}", tags=tags)
    server, host = serve(db, token=TOKEN)
    yield f"http://127.0.0.1:{server.port}"
    server.stop()
    host.close()


MEASURE = """() => {
    const box = (el) => { const r = el.getBoundingClientRect();
                          return { l: r.left, t: r.top, r: r.right, b: r.bottom }; };
    const svg = document.getElementById('tag-graph');
    return { frame: box(svg), nodes: [...svg.querySelectorAll('g.node')].map((g) => ({
        tag: g.dataset.tag, text: g.querySelector('text').textContent,
        label: box(g.querySelector('text')), circle: box(g.querySelector('circle')) })) };
}"""


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    """Boxes that share more than a hair (a touch is not an overlap)."""
    eps = 0.5
    return (min(a["r"], b["r"]) - max(a["l"], b["l"]) > eps
            and min(a["b"], b["b"]) - max(a["t"], b["t"]) > eps)


def inside(a: dict[str, float], frame: dict[str, float]) -> bool:
    eps = 0.5
    return (a["l"] >= frame["l"] - eps and a["r"] <= frame["r"] + eps
            and a["t"] >= frame["t"] - eps and a["b"] <= frame["b"] + eps)


def problems(drawn: dict[str, Any]) -> list[str]:
    out: list[str] = []
    nodes, frame = drawn["nodes"], drawn["frame"]
    for i, a in enumerate(nodes):
        if a["text"] != a["tag"]:
            out.append(f"label {a['text']!r} is not the whole tag {a['tag']!r}")
        if not inside(a["label"], frame) or not inside(a["circle"], frame):
            out.append(f"{a['tag']} leaves the frame: {a['label']} / {frame}")
        for b in nodes[i + 1:]:
            if overlap(a["label"], b["label"]):
                out.append(f"labels {a['tag']} and {b['tag']} overlap")
        for b in nodes:
            if b is not a and overlap(a["label"], b["circle"]):
                out.append(f"label {a['tag']} covers the circle of {b['tag']}")
    return out


@pytest.mark.parametrize("width", [1100, 700])
def test_tag_graph_labels_are_whole_apart_and_inside_the_frame(
        browser: object, graph_server: str, tmp_path: Path, width: int) -> None:  # noqa: F811
    tab = Page(browser, graph_server)
    tab.page.set_viewport_size({"width": width, "height": 800})
    tab.open("#/ns/default/tags/maintenance", "tag-graph")
    drawn = tab.page.evaluate(MEASURE)
    tags = [n["tag"] for n in drawn["nodes"]]
    assert 30 <= len(tags) <= 40 and "maintenance" in tags
    assert max(len(t) for t in tags) >= 15  # long labels are part of the test
    assert problems(drawn) == []
    shot = tmp_path / "inspector-tag-graph.png"
    tab.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    target = os.environ.get("REMD_SCREENSHOTS")
    if target and width == 1100:
        shutil.copyfile(shot, Path(target) / shot.name)
    tab.page.close()
    assert tab.errors == []
