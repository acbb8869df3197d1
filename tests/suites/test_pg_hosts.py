"""Many hosts on one PostgreSQL database: 8 agent processes and 2 `remd serve` daemons (as if
on different machines) for a bounded time, REM running again and again (the soak tier; the
default tier runs the same code with 2 agents until 3 runs).

Zero errors anywhere; every acknowledged memory present (live, superseded, or folded into a
synthesis that exists); both daemons consolidated; and no namespace was ever consolidated by
two daemons at once, checked from the run table's times.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from remd import Memory
from tests.pg_server import PgServer
from tests.service.test_daemon import Served
from tests.suites.test_multiprocess import AGENTS, Agents

NAMESPACES = ("alpha", "beta", "gamma", "delta")
CYCLES = 8  # runs seen across both daemons before the agents are told to stop



def _daemon(url: str) -> Served:
    return Served(url, "--interval", "0.5", env={
        "REMD_TRIGGERS__MAX_LIVE_NODES": "8",  # fires again and again as agents save
        "REMD_REM__MIN_AGE_DAYS": "0",
        "REMD_REM__TAU": "0.95",
        "REMD_DAEMON__LOG_LEVEL": "info",
    })


@pytest.mark.soak
def test_eight_agents_and_two_daemons_share_one_database(pg_server: PgServer,
                                                         tmp_path: Path) -> None:
    _share_one_database(pg_server, tmp_path, AGENTS, CYCLES)


def test_two_agents_and_two_daemons_share_one_database(pg_server: PgServer,
                                                       tmp_path: Path) -> None:
    _share_one_database(pg_server, tmp_path, 2, 3)


def _share_one_database(pg_server: PgServer, tmp_path: Path, count: int, cycles: int) -> None:
    url = pg_server.fresh_url()
    with Memory(url, embedder=None) as m:  # the schema, before anyone races to create it
        m.store.schema_version()
    daemons = [_daemon(url), _daemon(url)]
    pids = []
    for d in daemons:
        d.wait_for("daemon.ready")
        pids.append(d.proc.pid)

    agents = Agents(url, NAMESPACES[:count], tmp_path, count)
    agents.work_until(daemons, cycles)
    results = agents.finish()
    for d in daemons:
        while not d.events.empty():
            d.seen.append(d.events.get())
        d.wait_for("tick.evaluated", timeout=120)
        assert d.stop(signal.SIGTERM) == 0

    # Zero errors in any process (a daemon finding a namespace claimed by the other logs
    # rem.busy at info: that is the sharing working, not an error).
    assert [r["errors"] for r in results] == [[]] * count
    for d in daemons:
        bad = [e for e in d.seen if e.get("level") in ("warning", "error", "critical")
               or e.get("event") in ("rem.failed", "tick.failed", "triggers.failed")]
        assert bad == [], [e.get("reason") or e.get("event") for e in bad[:3]]
    finished = [[e for e in d.seen if e.get("event") == "cycle.finished"] for d in daemons]
    assert all(finished), [len(f) for f in finished]  # the work spread over both daemons

    with Memory(url, embedder=None) as m:
        q = m.store.query
        rows = {r[0]: r[1:] for r in q("SELECT id, status, deprecated_by, kind FROM nodes")}
        runs = q("SELECT namespace, status, started_at, finished_at, synthesised "
                 "FROM rem_runs ORDER BY namespace, started_at")
    saved = [i for r in results for i in r["saved"]]
    assert len(saved) >= count * 6
    for node_id in saved:  # every acknowledged memory is there, or folded into one that is
        status, by, _ = rows[node_id]
        seen = {node_id}
        while status == "deprecated":
            assert by in rows and by not in seen, f"{node_id} deprecated into {by}"
            seen.add(by)
            status, by, _ = rows[by]
        assert status in ("live", "superseded"), (node_id, status)

    # Every run completed, but for one in flight when a daemon got SIGTERM (it then stops
    # between clusters): the last of its namespace, interrupted; at most one per daemon.
    last = {ns: start for ns, _, start, _, _ in runs}  # ordered by start within a namespace
    stopped = [r for r in runs if r[1] == "interrupted"]
    assert all(r[2] == last[r[0]] for r in stopped) and len(stopped) <= len(daemons), runs
    assert {s for _, s, *_ in runs} <= {"completed", "interrupted"}, runs
    assert sum(r[4] for r in runs) > 0
    by_ns: dict[str, list[tuple[float, float]]] = {}
    for ns, _, start, end, _ in runs:
        by_ns.setdefault(ns, []).append((start, end))
    for ns, spans in by_ns.items():  # never two runs of one namespace at once
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start, f"two runs of {ns} overlapped: {spans}"


def test_a_read_only_connection_serves_injects_unrecorded(pg_server: PgServer) -> None:
    """What a read replica gives: every transaction read-only. Inject still answers (its pack
    is not recorded, with a warning); a save is a typed ReadOnlyStore error."""
    from urllib.parse import quote

    from remd.errors import ReadOnlyStore
    from remd.logs import capture_events

    url = pg_server.fresh_url()
    with Memory(url, embedder=None) as m:
        m.save("The staging server is called kestrel.")
    replica = url + quote(" -cdefault_transaction_read_only=on")
    with Memory(replica, embedder=None) as r, capture_events() as events:
        pack = r.inject("what is the staging server called?", 200, fill=True)
        assert [i.content for i in pack.items] == ["The staging server is called kestrel."]
        assert pack.recorded is False
        with pytest.raises(ReadOnlyStore):
            r.save("this write needs the primary")
    assert any(e["event"] == "inject.not_recorded" for e in events)
    with Memory(url, embedder=None) as m:
        assert [n.content for n in m.recent(5)] == ["The staging server is called kestrel."]
