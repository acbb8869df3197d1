"""The web inspector (/ui) in a real browser: the system's headless Chromium driven by
Playwright (never a downloaded browser), over a real HTTP server on a real SQLite file that
holds an update chain and a REM run that folded fragments. Every test fails on any console
error or uncaught page error, and on a write (POST, DELETE) the page sent without a JSON body
and ``Content-Type: application/json``. Each page's render time (navigation to its content
shown) is printed, never asserted."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from remd import Memory, NodeStatus
from tests.http.test_app import serve
from tests.sleep.test_rem import NOW, fragments, old_lines

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no system Chromium (apt-get install chromium; .ci/run does)")

TOKEN = "inspector-t0ken-9c2e"
HOSTILE = '<img src=x id=pwned onerror="document.title=1"><script>document.title=2</script> & me'
RLO = "My phone is a Nokia \u202e (the old one)"  # U+202E: right-to-left override
LONG = "\n".join(f"Line {i}: the quarterly maintenance log of the falcon cluster, entry {i}."
                  for i in range(340))  # about 24,000 characters


@dataclass
class Served:
    db: Path
    base: str
    pune: str  # "My city is Pune": superseded
    berlin: str  # "My city has changed to Berlin": supersedes it
    hostile: str
    rlo: str  # "My phone is a Nokia <RLO> (the old one)": superseded by `pixel`
    pixel: str
    long: str  # a 24,000-character memory
    run_id: str  # a REM run that folded the year-old fragments
    folded: tuple[str, ...]


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "agent.db"
    with Memory(db, clock=lambda: NOW) as m:
        m.import_lines(old_lines(fragments(3)))
        pune = m.save("My city is Pune", tags=["home"])
        berlin = m.save("My city has changed to Berlin")
        hostile = m.save(HOSTILE, tags=["home"])
        rlo = m.save(RLO)
        pixel = m.save("My phone has changed to a Pixel")
        long = m.save(LONG)
        run = m.run_rem()
        assert run.synthesised > 0 and run.run_id is not None
        assert m.get(pune.id).status is NodeStatus.SUPERSEDED
        assert m.get(rlo.id).status is NodeStatus.SUPERSEDED
        folded = tuple(str(r[0]) for r in m.store.query(
            "SELECT id FROM nodes WHERE status = 'deprecated' ORDER BY rid"))
        assert folded
    server, host = serve(db, token=TOKEN)
    yield Served(db=db, base=f"http://127.0.0.1:{server.port}", pune=pune.id,
                 berlin=berlin.id, hostile=hostile.id, rlo=rlo.id, pixel=pixel.id,
                 long=long.id, run_id=run.run_id, folded=folded)
    server.stop()
    host.close()


class Page:
    """A browser tab on the inspector that records console errors and page errors."""

    def __init__(self, browser: object, base: str) -> None:
        self.base = base
        self.page = browser.new_page()  # type: ignore[attr-defined]
        self.errors: list[str] = []
        self.writes: list[str] = []  # "METHOD path" of each POST/DELETE/PUT the page sent
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(
            f"console: {msg.text}"))
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("request", self._check_write)

    def _check_write(self, request: object) -> None:
        """A state-changing request must carry a JSON body and say so (the server accepts
        only application/json there)."""
        method = request.method  # type: ignore[attr-defined]
        if method in ("GET", "HEAD"):
            return
        path = request.url.removeprefix(self.base)  # type: ignore[attr-defined]
        self.writes.append(f"{method} {path}")
        kind = request.headers.get("content-type", "")  # type: ignore[attr-defined]
        body = request.post_data  # type: ignore[attr-defined]
        if kind != "application/json":
            self.errors.append(f"{method} {path}: Content-Type {kind!r}")
        try:
            json.loads(body or "")
        except ValueError:
            self.errors.append(f"{method} {path}: body {body!r} is not JSON")

    def open(self, hash_: str, page: str, *, token: bool = True) -> float:
        """Load /ui at ``hash_`` and wait for ``page`` to be shown; the render time in ms."""
        started = time.perf_counter()
        fragment = f"#token={TOKEN}&" + hash_.lstrip("#") if token else hash_
        self.page.goto(f"{self.base}/ui{fragment}")
        return self.wait(page, started)

    def go(self, hash_: str, page: str) -> float:
        """Navigate within the open inspector (a hash change)."""
        started = time.perf_counter()
        self.page.evaluate("h => { location.hash = h; }", hash_)
        return self.wait(page, started)

    def wait(self, page: str, started: float) -> float:
        self.page.wait_for_selector(f"body[data-state=ready][data-page={page}]")
        return round((time.perf_counter() - started) * 1000, 1)

    def text(self, selector: str) -> str:
        return str(self.page.inner_text(selector))


@pytest.fixture
def tab(browser: object, served: Served) -> Iterator[Page]:
    page = Page(browser, served.base)
    yield page
    page.page.close()
    assert page.errors == []


def status_of(db: Path, node_id: str) -> str:
    with Memory(db, embedder=None) as m:
        return m.get(node_id).status.value


def test_every_page_renders_and_a_search_explains_its_pack(tab: Page, served: Served,
                                                            capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    ms = {"namespaces": tab.open("#/", "namespaces")}
    assert "default" in tab.text("#namespaces")
    assert tab.page.url.endswith("/ui#/")  # the token left the address bar
    ms["namespace"] = tab.go("#/ns/default", "namespace")
    assert "My city has changed to Berlin" in tab.text("#recent")

    tab.page.fill("#query", "where do I live?")
    tab.page.click("#search button[type=submit]")
    tab.page.wait_for_selector("#results[data-state=ready]")
    assert "Berlin" in tab.text("#results .item")
    assert "seeds:" in str(tab.page.text_content("#results pre.explain"))

    ms["memory"] = tab.go(f"#/ns/default/m/{served.berlin}", "memory")
    assert tab.text("#memory-text") == "My city has changed to Berlin"
    ms["tags"] = tab.go("#/ns/default/tags", "tags")
    assert "falcon" in tab.text("#top-tags")
    ms["tag-graph"] = tab.go("#/ns/default/tags/falcon", "tag-graph")
    assert tab.page.locator("#tag-graph g.node").count() > 3
    assert tab.page.locator("#tag-graph line").count() > 3
    tab.page.click("#tag-graph g.node[data-tag=timeout] circle")  # a node recentres the drawing
    tab.wait("tag-graph", time.perf_counter())
    tab.page.wait_for_selector("h1:has-text('Tags around timeout')")
    ms["rem"] = tab.go("#/ns/default/rem", "rem")
    assert served.run_id in tab.text("#runs")
    ms["run"] = tab.go(f"#/ns/default/rem/{served.run_id}", "run")
    assert tab.page.locator("#folds .fold-card").count() > 0
    assert "tokens before → after" in tab.text("#run-numbers")
    ms["stats"] = tab.go("#/ns/default/stats", "stats")
    assert "node_count" in tab.text("#triggers") and "live" in tab.text("#stats")
    with capsys.disabled():
        print("\ninspector render ms (navigation to content shown): "
              + ", ".join(f"{k} {v}" for k, v in ms.items()))


def test_follow_a_supersession_chain_and_undo_it(tab: Page, served: Served) -> None:
    tab.open(f"#/ns/default/m/{served.pune}", "memory")
    assert "superseded" in tab.text("#memory-meta")
    tab.page.click("#superseded-by a")
    tab.page.wait_for_selector("body[data-state=ready] #memory-text:has-text('Berlin')")
    assert "My city is Pune" in tab.text("#supersedes")
    assert tab.page.locator("#history li").count() == 2
    tab.page.click("#supersedes a")
    tab.page.wait_for_selector("#memory-text:has-text('Pune')")

    tab.page.click("#restore")  # undo a wrong supersession, from the page
    tab.page.wait_for_selector("#action-result[data-state=done]")
    assert status_of(served.db, served.pune) == "live"
    assert tab.writes == [f"POST /v1/memories/{served.pune}/restore?namespace=default"]


def test_roll_back_a_run_from_the_page(tab: Page, served: Served) -> None:
    tab.open(f"#/ns/default/rem/{served.run_id}", "run")
    before = tab.text("#run-numbers")
    assert "completed" in before
    tab.page.click("#folds .synthesis a >> nth=0")  # a synthesis lists its sources
    tab.wait("memory", time.perf_counter())
    assert tab.page.locator("#sources li").count() > 1
    tab.page.go_back()
    tab.page.wait_for_selector("body[data-state=ready][data-page=run] #rollback button")
    tab.page.click("#rollback button.rollback")
    # it asks first, and says what it will undo; nothing has changed yet
    tab.page.wait_for_selector("#rollback-confirm", timeout=5000)
    assert "memories" in tab.text("#rollback")
    assert status_of(served.db, served.folded[0]) == "deprecated"
    tab.page.click("#rollback-confirm")
    tab.page.wait_for_selector("#action-result[data-state=done]")
    assert "Rolled back" in tab.text("#action-result")
    assert tab.writes == [f"POST /v1/rem/runs/{served.run_id}/rollback?namespace=default"]

    with Memory(served.db, embedder=None) as m:
        run = m.store.one("SELECT status FROM rem_runs WHERE run_id = ?", (served.run_id,))
        assert run == ("rolled_back",)
        assert {m.get(i).status for i in served.folded} == {NodeStatus.LIVE}
        assert m.store.scalar("SELECT count(*) FROM nodes WHERE kind = 'synthesis'") == 0
    tab.page.click("#reload")
    tab.wait("run", time.perf_counter())
    tab.page.wait_for_selector("#rollback:has-text('already rolled back')")


def test_roll_back_from_the_list_of_runs_asks_first(tab: Page, served: Served) -> None:
    tab.open("#/ns/default/rem", "rem")
    tab.page.click(f"#runs tr[data-run='{served.run_id}'] button.rollback")
    tab.page.wait_for_selector("#rollback-confirm", timeout=5000)
    assert tab.writes == [] and status_of(served.db, served.folded[0]) == "deprecated"
    tab.page.click("#rollback-cancel")  # changing one's mind brings the button back
    tab.page.wait_for_selector(f"#runs tr[data-run='{served.run_id}'] button.rollback")
    assert tab.page.locator("#rollback-confirm").count() == 0
    tab.page.click(f"#runs tr[data-run='{served.run_id}'] button.rollback")
    tab.page.click("#rollback-confirm")
    tab.page.wait_for_selector("#action-result[data-state=done]")
    assert status_of(served.db, served.folded[0]) == "live"


def test_forget_from_the_page(tab: Page, served: Served) -> None:
    tab.open(f"#/ns/default/m/{served.berlin}", "memory")
    tab.page.click("#forget")
    tab.page.click("#forget-confirm")
    tab.page.wait_for_selector("#action-result[data-state=done]")
    assert status_of(served.db, served.berlin) == "forgotten"
    assert tab.writes == [f"DELETE /v1/memories/{served.berlin}?namespace=default"]


def test_memory_text_is_shown_as_text_never_as_html(tab: Page, served: Served) -> None:
    tab.open(f"#/ns/default/m/{served.hostile}", "memory")
    assert tab.text("#memory-text") == HOSTILE
    tab.go("#/ns/default", "namespace")
    assert HOSTILE in tab.text("#recent")
    assert tab.page.locator("#pwned").count() == 0
    assert tab.page.title() == "remd inspector"


def test_a_long_memory_is_clipped_in_lists_and_whole_on_its_page(tab: Page,
                                                                   served: Served) -> None:
    tab.open("#/ns/default", "namespace")
    card = tab.page.locator(f"#recent .memory[data-id='{served.long}']")
    shown = str(card.locator(".text").inner_text())
    assert shown.startswith("Line 0: the quarterly maintenance log")
    assert len(shown) < 600 and shown.count("\n") <= 6
    assert "24," in str(card.inner_text())  # it says how long the whole text is
    box = card.bounding_box()
    assert box is not None and box["height"] < 300
    card.locator("a.open").click()
    tab.wait("memory", time.perf_counter())
    assert tab.text("#memory-text") == LONG


def char_x(tab: Page, selector: str, text: str) -> tuple[float, float]:
    """Where the first and the last character of ``text`` (a text node inside ``selector``)
    are drawn: left to right reads first < last."""
    return tuple(tab.page.evaluate("""([sel, text]) => {
        const root = document.querySelector(sel);
        const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        let node;
        while ((node = walk.nextNode()) && node.data !== text) {}
        const at = (i) => { const r = document.createRange(); r.setStart(node, i);
                            r.setEnd(node, i + 1); return r.getBoundingClientRect().left; };
        return [at(0), at(text.length - 1)];
    }""", [selector, text]))


def test_a_right_to_left_override_stays_inside_its_memory(tab: Page, served: Served) -> None:
    tab.open(f"#/ns/default/m/{served.pixel}", "memory")
    link = tab.page.locator("#supersedes li a")
    assert "Nokia" in str(link.inner_text())
    first, last = char_x(tab, "#supersedes li", "superseded")  # the status after the text
    assert first < last, "the memory's U+202E reversed the page's own text after it"
    first, last = char_x(tab, "#history", "superseded")
    assert first < last
    isolated = tab.page.evaluate("""() => [...document.querySelectorAll(
        '#memory-text, #supersedes li a, #history li b, #history li a')].map((el) =>
        el.tagName === 'BDI' || ['isolate', 'isolate-override', 'plaintext'].includes(
            getComputedStyle(el).unicodeBidi))""")
    assert isolated and all(isolated)
    tab.go("#/ns/default?all=1", "namespace")
    assert tab.page.evaluate("""() => [...document.querySelectorAll('#recent .text')].every(
        (el) => el.dir === 'auto' && getComputedStyle(el).unicodeBidi === 'isolate')""")


def test_a_server_without_a_token_opens_without_asking(browser: object, served: Served) -> None:
    server, host = serve(served.db)  # the same file, served with no token
    try:
        tab = Page(browser, f"http://127.0.0.1:{server.port}")
        tab.open("#/", "namespaces", token=False)
        assert "default" in tab.text("#namespaces")
        assert tab.page.locator("#token").count() == 0
        assert tab.page.is_hidden("#logout")  # no token to forget
        tab.page.close()
        assert tab.errors == []
    finally:
        server.stop()
        host.close()


def test_without_a_token_the_page_asks_for_one(tab: Page, served: Served) -> None:
    tab.open("#/", "login", token=False)
    assert "asks for a token" in tab.text("#login-why")  # it says why it asks
    tab.page.fill("#token", "not-the-token-1234")  # a wrong token is refused, and said so
    tab.page.click("#login button")
    tab.page.wait_for_selector("body[data-page=login] #login-why:has-text('refused')")
    assert all("status of 401" in e for e in tab.errors)  # Chromium logs the refused request
    tab.errors.clear()
    tab.page.fill("#token", TOKEN)
    tab.page.click("#login button")
    tab.page.wait_for_selector("body[data-state=ready][data-page=namespaces]")
    assert "default" in tab.text("#namespaces")
    # kept for this tab only: a reload needs no token again
    tab.page.reload()
    tab.wait("namespaces", time.perf_counter())
