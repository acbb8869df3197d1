"""Importance: each component as a pure function of ``now``, and the stored bulk refresh."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from remd import Config, ConfigError, Memory, load_config
from remd.config import ImportanceConfig
from remd.sleep.importance import (
    DAY,
    access_freq,
    centrality,
    compute_importance,
    recency,
    refresh_importance,
    score,
)
from tests.conftest import Clock

pytestmark = pytest.mark.backends

YEAR = 365 * DAY


def test_recency_decays_exponentially_per_day() -> None:
    days = np.array([0.0, 1.0, 180.0, 365.0, -3.0])
    got = recency(days, 0.02)
    assert got[0] == 1.0 and got[4] == 1.0  # an access "after" now counts as now
    assert got[1] == pytest.approx(math.exp(-0.02))
    assert got[2] == pytest.approx(0.0273, abs=1e-3)
    assert got[3] == pytest.approx(math.exp(-7.3))


def test_access_frequency_is_normalised_within_the_namespace() -> None:
    assert access_freq(np.array([0, 0, 0])).tolist() == [0.0, 0.0, 0.0]
    got = access_freq(np.array([0, 1, 3, 100]))
    assert got[0] == 0.0 and got[-1] == 1.0
    assert 0 < got[1] < got[2] < 1
    # log scaling: one very popular memory does not flatten a memory used three times to ~0
    assert got[2] > 0.25


def test_centrality_where_every_degree_is_alike_marks_nobody_central() -> None:
    uniform = np.array([3, 3, 3, 3, 4, 3, 3])
    plain = centrality(uniform, "zero")
    assert plain.min() > 0.85  # degree / max degree: everybody "central", nothing flagged
    relative = centrality(uniform, "median")
    assert relative.tolist() == [0, 0, 0, 0, 1, 0, 0]  # only the one above the others
    assert centrality(np.array([2, 2, 2]), "median").tolist() == [0, 0, 0]
    hub = centrality(np.array([0, 0, 1, 0, 40]), "median")
    assert hub[4] == 1.0 and hub[0] == 0.0 and 0 < hub[2] < 0.25
    assert centrality(np.array([], np.int64)).size == 0


def test_score_is_the_weighted_sum() -> None:
    cfg = ImportanceConfig()
    s = score(days_since_access=np.array([0.0, 365.0]), window_accesses=np.array([4, 0]),
              degree=np.array([5, 0]), confidence=np.array([1.0, 0.5]), config=cfg)
    assert s.importance[0] == pytest.approx(1.0)
    expected = 0.25 * math.exp(-7.3) + 0.20 * 0 + 0.35 * 0 + 0.20 * 0.5
    assert s.importance[1] == pytest.approx(expected)


def test_weights_must_sum_to_one() -> None:
    with pytest.raises(ConfigError, match="sum to 1"):
        load_config(env={}, overrides={"importance": {"recency_weight": 0.5}})
    cfg = load_config(env={}, overrides={"importance": {
        "recency_weight": 0.4, "access_weight": 0.1, "centrality_weight": 0.3,
        "confidence_weight": 0.2}})
    assert cfg.importance.recency_weight == 0.4


def test_old_unused_fragments_score_low_and_fresh_ones_do_not(db_path: Path,
                                                             clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        old = m.save("The office printer on floor three jams on A3 paper")
        clock.advance(YEAR)
        fresh = m.save("Lunch with the Lisbon team is moved to Thursday")
        now = clock.now
        scores = refresh_importance(m.engine, m.namespace, now)
        by_id = dict(zip(scores.ids, scores.scores.importance, strict=True))
        assert by_id[old.id] == pytest.approx(0.25 * math.exp(-7.3) + 0.1, abs=1e-6)
        assert by_id[fresh.id] == pytest.approx(0.35, abs=1e-6)
        assert by_id[old.id] < m.config.rem.tau < by_id[fresh.id]
        assert m.get(old.id).importance == pytest.approx(by_id[old.id])  # stored
        # A pure function of now: the same now gives the same values; a later one decays.
        again = compute_importance(m.engine, m.namespace, now)
        assert np.array_equal(again.scores.importance, scores.scores.importance)
        later = compute_importance(m.engine, m.namespace, now + 30 * DAY)
        assert dict(zip(later.ids, later.scores.importance, strict=True))[fresh.id] < 0.35


def test_accesses_in_the_window_raise_importance(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        m.save("The Falcon deploy key rotates every 90 days")
        m.save("The Heron wiki moved to the new server")
        clock.advance(60 * DAY)
        pack = m.inject("When does the Falcon deploy key rotate?", token_budget=12, dated=False)
        used = {item.id for item in pack.items}
        assert len(used) == 1
        now = clock.now
        s = compute_importance(m.engine, m.namespace, now)
        imp = dict(zip(s.ids, s.scores.importance, strict=True))
        acc = dict(zip(s.ids, s.scores.access_freq, strict=True))
        (hit,) = used
        (miss,) = set(s.ids) - used
        assert acc[hit] == 1.0 and acc[miss] == 0.0
        assert imp[hit] > imp[miss]
        # Outside the 30-day window the access no longer counts towards the frequency.
        s2 = compute_importance(m.engine, m.namespace, now + 31 * DAY)
        assert dict(zip(s2.ids, s2.scores.access_freq, strict=True))[hit] == 0.0


def test_centrality_counts_only_edges_between_live_memories(db_path: Path,
                                                            clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        plain = [m.save(f"Unlinked note number {i} about gardening") for i in range(4)]
        hub = m.save("The architecture decision record for the billing service")
        for i in range(3):
            m.save(f"Billing detail {i} depends on [[memory:{hub.id}]]")
        m.save("My city is Pune")
        newer = m.save("My city has changed to Mumbai")  # SUPERSEDES an old, superseded node
        s = compute_importance(m.engine, m.namespace, clock.now)
        cen = dict(zip(s.ids, s.scores.centrality, strict=True))
        assert cen[hub.id] == 1.0
        assert all(cen[p.id] == 0.0 for p in plain)
        assert cen[newer.id] == 0.0  # its only edge points at a node that is no longer live


def test_contradicted_memories_lose_confidence_and_importance(db_path: Path,
                                                              clock: Clock) -> None:
    with Memory(db_path, clock=clock) as m:
        claim = m.save("The release train leaves every second Tuesday")
        m.save(f"That contradicts [[memory:{claim.id}]]: it is every Wednesday now")
        m.save(f"Also in conflict with [[memory:{claim.id}]], trains are weekly")
        s = compute_importance(m.engine, m.namespace, clock.now)
        conf = dict(zip(s.ids, s.scores.confidence, strict=True))
        assert conf[claim.id] < m.config.importance.low_confidence  # flagged whatever else


def test_refresh_touches_only_live_memories(db_path: Path, clock: Clock) -> None:
    with Memory(db_path, config=Config(), clock=clock) as m:
        gone = m.save("A note that will be forgotten")
        m.save("A note that stays")
        m.forget(gone.id)
        clock.advance(YEAR)
        scores = m.refresh_importance()
        assert gone.id not in scores.ids and len(scores) == 1
        assert m.get(gone.id).importance == 0.5  # untouched
