"""The inspector's tag graph in a real browser (the system's Chromium, as in
tests/http/test_inspector_page.py), measured by Chromium itself (getBoundingClientRect of each
drawn label and circle):

- on a graph of 30-40 tags of varied lengths, every tag is labelled, and every label is whole,
  inside the drawing, and clear of every other label and every other tag's circle;
- on a graph of 300 tags (depth 3), every circle is inside the drawing and clear of the others;
  the labels drawn (the nearest and most used tags) are whole, inside, apart and at least 10px;
  every tag's name is its node's aria-label and <title>, and an unlabelled tag shows its name
  on keyboard focus and on hover. With "every tag" labelled, the drawing grows to hold them.

The tests save screenshots of the page to their temporary directory; with
``REMD_SCREENSHOTS=DIR`` set the 40-tag one is written to ``DIR/inspector-tag-graph.png`` and
the 300-tag one (1100 px wide, the labels that fit) to ``DIR/inspector-tag-graph-300.png`` (the
pictures in docs/http.md: ``REMD_SCREENSHOTS=docs/img``)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remd import Memory
from remd.query import taggraph
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
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const px = (el) => parseFloat(getComputedStyle(el).fontSize) * scale;  // as drawn
    return { frame: box(svg), labelled: Number(svg.dataset.labelled),
             nodes: [...svg.querySelectorAll('g.node')].map((g) => {
        const text = g.querySelector('text');
        return { tag: g.dataset.tag, name: g.getAttribute('aria-label'),
                 title: g.querySelector('title').textContent,
                 circle: box(g.querySelector('circle')),
                 text: text && text.textContent, label: text && box(text), px: text && px(text) };
    }) };
}"""

# The name an unlabelled tag shows on focus or hover: the drawing's tip.
TIP = """() => {
    const tip = document.querySelector('#tag-graph g.tip'), text = tip.querySelector('text');
    const r = text.getBoundingClientRect(), f = document.getElementById('tag-graph')
        .getBoundingClientRect();
    return { shown: getComputedStyle(tip).visibility === 'visible', text: text.textContent,
             inside: r.left >= f.left && r.right <= f.right && r.top >= f.top
                     && r.bottom <= f.bottom && r.width > 0 };
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
    """What makes the drawing unreadable: a circle outside the frame or on another, a drawn
    label cut, outside the frame, smaller than 10px, or on another label or another tag's
    circle; a tag whose name is neither its aria-label nor its title."""
    out: list[str] = []
    nodes, frame = drawn["nodes"], drawn["frame"]
    labels = [a for a in nodes if a["label"] is not None]
    for i, a in enumerate(nodes):
        if a["name"] != a["tag"] or not a["title"].startswith(f"{a['tag']}: "):
            out.append(f"{a['tag']} is not named: {a['name']!r} / {a['title']!r}")
        if not inside(a["circle"], frame):
            out.append(f"the circle of {a['tag']} leaves the frame: {a['circle']} / {frame}")
        for b in nodes[i + 1:]:
            if overlap(a["circle"], b["circle"]):
                out.append(f"circles {a['tag']} and {b['tag']} overlap")
    for i, a in enumerate(labels):
        if a["text"] != a["tag"]:
            out.append(f"label {a['text']!r} is not the whole tag {a['tag']!r}")
        if not inside(a["label"], frame):
            out.append(f"{a['tag']} leaves the frame: {a['label']} / {frame}")
        if a["px"] < 10:
            out.append(f"label {a['tag']} is drawn at {a['px']:.1f}px")
        for b in labels[i + 1:]:
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
    assert drawn["labelled"] == len(tags)  # a graph this size has every tag labelled
    assert all(n["text"] == n["tag"] for n in drawn["nodes"])
    assert problems(drawn) == []
    shot = tmp_path / "inspector-tag-graph.png"
    tab.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    target = os.environ.get("REMD_SCREENSHOTS")
    if target and width == 1100:
        shutil.copyfile(shot, Path(target) / shot.name)
    tab.page.close()
    assert tab.errors == []


# -- 300 tags ------------------------------------------------------------------------------------
# Around "maintenance": 12 areas (hop 1), 14 aspects of each (hop 2: "storage-backup"), two
# details of each aspect (hop 3: "storage-backup-west-coast-replica", up to 40 characters);
# areas side by side are bridged. 517 tags within depth 3; the drawing asks for 300.
AREAS = ["cluster", "database", "security", "schedule", "hardware", "vendor", "network",
         "storage", "billing", "frontend", "search", "mobile"]
ASPECTS = ["alerting", "capacity", "backup", "latency", "migration", "ownership", "runbook",
           "cost", "audit", "upgrade", "rollout-plan", "incident", "dashboard", "on-call-rotation"]
DETAILS = ["east", "west-coast-replica"]
MANY = 300


def many_memories() -> list[list[str]]:
    """The tags of each memory of the 300-tag graph."""
    out: list[list[str]] = []
    for k, area in enumerate(AREAS):
        out += [["maintenance", area], [area, AREAS[(k + 1) % len(AREAS)]]]
        for aspect in ASPECTS:
            out += [[area, f"{area}-{aspect}"],
                    [f"{area}-{aspect}", *(f"{area}-{aspect}-{d}" for d in DETAILS)]]
    return out


@pytest.fixture(scope="module")
def many_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose graph around "maintenance" has 300 tags at depth 3 (the most a drawing
    holds: remd.query.taggraph.MAX_NODES)."""
    assert taggraph.MAX_NODES >= MANY
    db = tmp_path_factory.mktemp("many") / "many.db"
    with Memory(db, clock=lambda: NOW, embedder=None) as m:
        for i, tags in enumerate(many_memories()):
            m.save(f"note {i}", tags=tags)
    server, host = serve(db, token=TOKEN)
    yield f"http://127.0.0.1:{server.port}"
    server.stop()
    host.close()


@pytest.mark.soak  # a Chromium page of 300 tags a case; the 40-tag test runs in the default tier
@pytest.mark.parametrize(("width", "labels"), [(1100, "fit"), (700, "fit"), (1100, "all")])
def test_a_300_tag_graph_keeps_every_tag_inside_and_its_labels_readable(
        browser: object, many_server: str, tmp_path: Path, width: int,  # noqa: F811
        labels: str) -> None:
    tab = Page(browser, many_server)
    tab.page.set_viewport_size({"width": width, "height": 800})
    tab.open(f"#/ns/default/tags/maintenance?depth=3&tags={MANY}"
                  + ("&labels=all" if labels == "all" else ""), "tag-graph")
    drawn = tab.page.evaluate(MEASURE)
    nodes = drawn["nodes"]
    assert len(nodes) == MANY and nodes[0]["tag"] == "maintenance"
    assert problems(drawn) == []
    labelled = [n["tag"] for n in nodes if n["label"] is not None]
    assert drawn["labelled"] == len(labelled)
    if labels == "all":
        assert len(labelled) == MANY
    else:
        # the centre and the areas around it are labelled, and many more besides
        assert {"maintenance", *AREAS} <= set(labelled)
        assert len(labelled) >= MANY // (3 if width > 1000 else 4)
        assert "hover or focus a circle for its name" in tab.text("main")
        quiet = [n["tag"] for n in nodes if n["label"] is None]
        first, last = (f"#tag-graph g.node[data-tag='{t}']" for t in (quiet[0], quiet[-1]))
        tab.page.focus(first)  # the keyboard: focus shows the name
        tip = tab.page.evaluate(TIP)
        assert tip == {"shown": True, "text": quiet[0], "inside": True}
        tab.page.hover(f"{last} circle")  # so does the pointer
        assert tab.page.evaluate(TIP) == {"shown": True, "text": quiet[-1], "inside": True}
        tab.page.evaluate("() => document.activeElement.blur()")
        tab.page.mouse.move(0, 0)
        assert tab.page.evaluate(TIP)["shown"] is False
    shot = tmp_path / f"inspector-tag-graph-{MANY}.png"
    tab.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    target = os.environ.get("REMD_SCREENSHOTS")
    if target and width == 1100 and labels == "fit":
        shutil.copyfile(shot, Path(target) / shot.name)
    tab.page.close()
    assert tab.errors == []
