"""Updates said in everyday words: detected when a memory is saved, applied at inject, undone
by the user, and judged by an optional LLM (against the loopback OpenAI-compatible server).

The statements here were written for these tests; the evaluation sets are in
benchmarks/eval/data (everyday, everyday_check, life, fact_edits).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from remd import Memory
from remd.cli.main import main
from remd.config import Config
from remd.errors import InvalidInput
from remd.models import EdgeType, NodeStatus
from remd.text.updates import judge, read
from remd.write.supersede import Fresh, judge_pending
from tests.http.test_app import serve

DAY = 86_400.0
START = 1_700_000_000.0

pytestmark = pytest.mark.backends


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def step(self, days: float = 1.0) -> float:
        self.now += days * DAY
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


UNRELATED = ["My sister Ines lives in Lisbon near the river.",
             "I'm allergic to penicillin, found out as a kid.",
             "Our cat is called Biscuit and she hides from the vacuum.",
             "I play five-a-side football on Tuesday evenings.",
             "My passport expires in March 2027."]


def saved(m: Memory, clock: Clock, *texts: str) -> list[str]:
    ids = []
    for text in texts:
        clock.step(0.5)
        ids.append(m.save(text).id)
    return ids


# -- the judgment, pair by pair ------------------------------------------------------------------
@pytest.mark.parametrize(("old", "new", "cos"), [
    ("I'm on lesson 40 of my Japanese course.", "Finished lesson 95 of Japanese last night!",
     0.78),
    ("I take 50 mg of sertraline every morning.", "The doctor bumped my sertraline up to 100 mg.",
     0.7),
    ("Our standup is at 9:30.", "Standup moved to 10:15 so the Porto folks can join.", 0.6),
    ("I gave the spare key to Marta.", "Marta gave the spare key back, it's with Joao now.", 0.6),
    ("I volunteer at the food bank on Saturdays, sorting donations.",
     "I gave up the food bank sorting, I'm coaching kids' chess there instead.", 0.5),
])
@pytest.mark.sqlite_only("no store: the detector alone")
def test_everyday_updates_are_judged_updates(old: str, new: str, cos: float) -> None:
    verdict = judge(read(old), read(new), cos, nearest=True)
    assert verdict is not None and verdict.reason


@pytest.mark.parametrize(("old", "new", "cos"), [
    ("I like jazz.", "I also got really into hip hop lately.", 0.46),  # an addition
    ("My brother lives in Madrid.", "My sister lives in Lisbon.", 0.57),  # two people
    ("The party is for about 30 guests.", "The theme of the party is 80s disco.", 0.47),
    ("Lena's wedding is on 14 June.", "Lena's wedding will be at a vineyard.", 0.7),
    ("Worked from home today, mostly emails.", "Worked at the office today, meetings.", 0.55),
    ("I'm a Union fan through and through.",
     "Went to a Hertha game on Saturday, fun, but I'm still Union all the way.", 0.5),
    ("Alice moved to Berlin for Acme.", "Alice relocated to Berlin when Acme opened there.", 0.9),
    ("Should I switch to Neovim?", "I use VS Code for everything.", 0.4),
    ("Weekly note 3 about the garden.", "Weekly note 4 about the garden.", 0.95),
])
@pytest.mark.sqlite_only("no store: the detector alone")
def test_additions_other_subjects_details_and_events_are_not(old: str, new: str,
                                                             cos: float) -> None:
    assert judge(read(old), read(new), cos, nearest=True) is None


# -- on save --------------------------------------------------------------------------------------
def test_an_everyday_update_supersedes_with_a_reason_and_stays_in_history(
        db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "I'm on lesson 40 of my Japanese course.")
        saved(m, clock, *UNRELATED)
        (new,) = saved(m, clock, "Finished lesson 95 of Japanese last night!")
        assert m.get(old).status is NodeStatus.SUPERSEDED
        (edge,) = [e for e in m.links(old) if e.type is EdgeType.SUPERSEDES]
        assert (edge.src, edge.dst) == (new, old) and 0 < edge.weight <= 1
        assert edge.context and "40 -> 95" in edge.context
        assert [n.id for n in m.history(new)] == [old, new]
        clock.step()
        first = m.inject("Which lesson of my Japanese course am I on?", 40)
        assert first.items and "95" in first.items[0].content
        assert "lesson 40" not in m.inject("Japanese course lesson", 200).text
        assert "lesson 40" not in m.inject("Japanese course lesson", 200, fill=True).text


def test_a_probable_update_ranks_after_the_newer_and_the_floor_leaves_it_out(
        db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "For my hay fever I take cetirizine.")
        saved(m, clock, *UNRELATED)
        (new,) = saved(m, clock, "I'm on fexofenadine for the allergies now, the other tablets "
                                 "made me drowsy.")
        kinds = {e.type for e in m.links(old)}
        assert m.get(old).status is NodeStatus.LIVE and EdgeType.CONTRADICTS in kinds
        clock.step()
        pack = m.inject("What do I take for hay fever?", 200)
        assert [i.id for i in pack.items][:1] == [new] and old not in [i.id for i in pack.items]
        full = [i.id for i in m.inject("What do I take for hay fever?", 400, fill=True).items]
        assert full.index(new) < full.index(old)  # kept, after its newer version
        # The contradiction trigger and find_contradictions read the same decision.
        ((newer, older, confidence, reason),) = m.contradictions()
        assert (newer.id, older.id) == (new, old) and confidence > 0 and reason


def test_an_old_export_never_supersedes_what_is_newer(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        clock.step(30)
        (now,) = saved(m, clock, "Finished lesson 95 of Japanese last night!")
        # A line of an old history, saved after it but dated before it: it is the older one.
        m.import_lines([json.dumps({"content": "I'm on lesson 40 of my Japanese course.",
                                    "created_at": "2023-11-01T10:00:00Z"})])
        assert m.get(now).status is NodeStatus.LIVE
        old = m.store.scalar("SELECT id FROM nodes WHERE content LIKE '%lesson 40%'")
        assert m.get(old).status is NodeStatus.SUPERSEDED


def test_a_save_left_unjudged_is_judged_with_the_embedding_backlog(
        db_path: Path, clock: Clock) -> None:
    cfg = Config.model_validate({"embed": {"embed_on_save": False}})
    with Memory(db_path, config=cfg, clock=clock) as m:
        (old,) = saved(m, clock, "Our CI pipelines run on Jenkins.")
        (new,) = saved(m, clock, "Since the migration, every CI job runs on GitHub Actions.")
        assert m.get(old).status is NodeStatus.LIVE  # no vector yet: not judged yet
        assert m.store.scalar("SELECT count(*) FROM nodes WHERE judged = 0") == 2
        m.embed_pending()
        assert m.store.scalar("SELECT count(*) FROM nodes WHERE judged = 0") == 0
        assert {e.type for e in m.links(old)} & {EdgeType.SUPERSEDES, EdgeType.CONTRADICTS}


def test_without_an_embedder_updates_are_judged_at_save(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock, embedder=None) as m:
        (old,) = saved(m, clock, "I take 50 mg of sertraline every morning.")
        saved(m, clock, *UNRELATED)
        (new,) = saved(m, clock, "The doctor bumped my sertraline up to 100 mg.")
        assert m.get(old).status is NodeStatus.SUPERSEDED
        assert m.store.scalar("SELECT count(*) FROM nodes WHERE judged = 0") == 0


def test_facts_of_two_keys_stay_and_a_new_city_replaces_the_old(
        db_path: Path, clock: Clock) -> None:
    # The fact grammar reads both: another key is another attribute, whatever the words share;
    # the same key with another value is a change, whatever the value's capitals say.
    with Memory(db_path, clock=clock) as m:
        (weakest, grade, city) = saved(m, clock, "My weakest subject is history.",
                                       "My grade is 10th grade.", "My city is Shanghai.")
        saved(m, clock, *UNRELATED)
        (grade_now,) = saved(m, clock, "Actually, my grade has changed to 11th grade.")
        saved(m, clock, "Actually, my favourite subject has changed to physics.",
              "Actually, my current GPA has changed to 3.6.")
        (city_now,) = saved(m, clock, "Actually, my city has changed to Beijing.")
        assert m.get(weakest).status is NodeStatus.LIVE
        assert m.get(grade).status is NodeStatus.SUPERSEDED
        assert m.get(grade_now).status is NodeStatus.LIVE
        assert m.get(city).status is NodeStatus.SUPERSEDED
        assert m.get(city_now).status is NodeStatus.LIVE


def test_a_series_said_in_one_shape_is_not_a_chain_of_updates(
        db_path: Path, clock: Clock) -> None:
    # An ops agent's notes about many services, each fact in the same words: another city or
    # amount beside another service's name belongs to that service.
    services = [("payments", "Frankfurt", 5400), ("search", "Dublin", 3100),
                ("billing", "Warsaw", 2750), ("auth", "Lisbon", 1900),
                ("reports", "Madrid", 4600), ("mailer", "Oslo", 800)]
    with Memory(db_path, clock=clock) as m:
        for name, city, cost in services:
            saved(m, clock, f"The servers behind {name.title()} sit in {city}.",
                  f"{cost} USD/month is the budget line for {name.title()}.")
        assert m.stats().superseded == 0 and not m.contradictions()


def test_the_question_an_old_version_answered_finds_its_update(
        db_path: Path, clock: Clock) -> None:
    # The update shares no word with the question; the version it replaced does. Its match
    # counts for the update (remd.query.standins), as a folded fragment's counts for its synthesis.
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "My side project, a recipe scaler app, is hosted on GitLab.")
        saved(m, clock, *UNRELATED)
        (new,) = saved(m, clock, f"Moved the repo over to Codeberg, replaces [[memory:{old}]]")
        assert m.get(old).status is NodeStatus.SUPERSEDED
        clock.step()
        for budget in (40, 200):
            pack = m.inject("Where is my side project hosted?", budget)
            assert pack.items and pack.items[0].id == new
            assert "GitLab" not in pack.text
        with Memory(db_path, clock=clock, embedder=None) as lexical_only:
            got = lexical_only.inject("side project hosted", 200)  # words only: bm25
            assert new in [it.id for it in got.items] and "GitLab" not in got.text


def test_controls_stay(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        saved(m, clock, "I like jazz, mostly old Blue Note records.", *UNRELATED,
              "My brother Tiago lives in Madrid.", "Dad's 60th party will be about 30 guests.")
        saved(m, clock, "I also got really into hip hop lately, mostly 90s stuff.",
              "The theme for Dad's 60th is 80s disco, he doesn't know yet.")
        assert m.stats().superseded == 0 and not m.contradictions()
        clock.step()
        assert {"jazz", "hip hop"} <= {w for w in ("jazz", "hip hop") if w in m.inject(
            "What kind of music do I like?", 200).text}


# -- undone by the user ---------------------------------------------------------------------------
def test_restore_undoes_a_decision_and_it_stays_undone(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "I'm on lesson 40 of my Japanese course.")
        (new,) = saved(m, clock, "Finished lesson 95 of Japanese last night!")
        result = m.restore(old)
        assert result.status_before == "superseded" and result.by == (new,)
        assert m.get(old).status is NodeStatus.LIVE and m.get(old).valid_until is None
        assert not [e for e in m.links(old) if e.type is EdgeType.SUPERSEDES]
        # Judged again (a backlog rerun, a bug): the pair the user decided is left alone.
        with m.store.transaction() as conn:
            rows = conn.execute("SELECT rid, id, content, created_at FROM nodes "
                                "WHERE namespace = ?", (m.namespace,)).fetchall()
            fresh = [Fresh(rid=r, id=i, content=c, created_at=t) for r, i, c, t in rows]
            assert judge_pending(conn, m.namespace, fresh, clock()) == []
        assert m.get(old).status is NodeStatus.LIVE
        with pytest.raises(InvalidInput, match="nothing says it was updated"):
            m.restore(old)
        with pytest.raises(InvalidInput, match="not superseded"):
            m.restore(m.forget(new).id)


def test_restore_over_the_cli_and_http(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        (old,) = saved(m, clock, "Our main API service runs on Python 3.9.")
        (new,) = saved(m, clock, "We upgraded the API service to Python 3.12 last sprint.")
        assert m.get(old).status is NodeStatus.SUPERSEDED
    runner = CliRunner()
    got = runner.invoke(main, ["--db", str(db_path), "get", new])
    assert got.exit_code == 0 and f"updates: {old}" in got.stdout
    as_json = json.loads(runner.invoke(main, ["--db", str(db_path), "get", new,
                                              "--json"]).stdout)
    assert any(link["type"] == "SUPERSEDES" and link["context"] for link in as_json["links"])
    history = runner.invoke(main, ["--db", str(db_path), "history", old])
    assert history.exit_code == 0 and f"updated by: {new}" in history.stdout
    out = runner.invoke(main, ["--db", str(db_path), "restore", old])
    assert out.exit_code == 0 and "was superseded" in out.stdout
    again = runner.invoke(main, ["--db", str(db_path), "restore", old])
    assert again.exit_code == 1 and "nothing says it was updated" in again.stderr
    with Memory(db_path, clock=clock) as m:
        (again_new,) = saved(m, clock, "We upgraded the API service to Python 3.13 this week.")
    server, pool = serve(db_path)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as api:
            missing = api.post("/v1/memories/nope/restore", json={})
            assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFound"
            done = api.post(f"/v1/memories/{new}/restore", json={})
            assert done.status_code == 200 and done.json()["by"] == [again_new]
            assert api.get(f"/v1/memories/{new}").json()["status"] == "live"
    finally:
        server.stop()
        pool.close()
