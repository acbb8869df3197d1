"""A synthesis is reachable by every question its members answered (issue: REM that
consolidates again, item 3), as a property: for any namespace drawn from the no-loss topics
(benchmarks/eval/data/noloss.json: each fragment with the question it answers) and one REM run,
every question whose first item was a member the run folded still gets that member's details
(remd.text.details) in the pack at the budget it needed. Real SQLite, MiniLM, o200k; the
offline synthesiser."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.eval.noloss import TOPICS, UNRELATED
from remd import Memory
from remd.text.details import missing

LADDER = (40, 60, 80, 120, 200)  # the budgets a question may need
START, DAY, HOUR = 1_700_000_000.0, 86_400.0, 3_600.0


@st.composite
def namespaces(draw: st.DrawFn) -> list[tuple[float, str, str]]:
    """(saved at, text, question): some topics, some of their fragments, some unrelated
    memories, in a drawn order over three weeks."""
    topics = draw(st.lists(st.sampled_from(range(len(TOPICS))), min_size=3, max_size=8,
                           unique=True))
    items = []
    for t in topics:  # two to four fragments of each
        keep = draw(st.lists(st.booleans(), min_size=4, max_size=4))
        items += [(text, question) for j, (text, _, question) in enumerate(TOPICS[t][1])
                  if j < 2 or keep[j]]
    items += [(u, "") for u in draw(st.lists(st.sampled_from(UNRELATED), max_size=6,
                                             unique=True))]
    order = draw(st.permutations(range(len(items))))
    return [(START + k * 5 * HOUR, *items[i]) for k, i in enumerate(order)]


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(said=namespaces())
def test_a_folded_members_question_still_finds_it_at_the_budget_it_needed(
        tmp_path: Path, said: list[tuple[float, str, str]]) -> None:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    db, before = root / "after.db", root / "before.db"
    clock = [START]
    with Memory(db, clock=lambda: clock[0]) as m:
        ids = []
        for at, text, _ in said:
            clock[0] = at
            ids.append(m.save(text).id)
    shutil.copy(db, before)  # an inject is a use: the budgets needed are asked of a copy
    clock[0] = said[-1][0] + 60 * DAY
    needed: dict[str, tuple[int, str, str]] = {}
    with Memory(before, clock=lambda: clock[0]) as m:
        for (_, text, question), node in zip(said, ids, strict=True):
            for budget in LADDER if question else ():
                pack = m.inject(question, budget)
                if pack.items and pack.items[0].id == node:
                    needed[node] = (budget, question, text)
                    break
    with Memory(db, clock=lambda: clock[0]) as m:
        m.run_rem(now=clock[0])
        folded = {node: v for node, v in needed.items()
                  if m.get(node).status.value == "deprecated"}
        for budget, question, text in folded.values():
            pack = m.inject(question, budget)
            assert not missing(text, pack.text), (question, budget, text, pack.text)
