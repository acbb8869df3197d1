"""SIGKILL a REM cycle at random moments and check what it leaves behind.

The machinery shared by tests/suites/test_crash.py (24 kills) and benchmarks/crash_soak.py (100):

- :func:`build_db`: year-old fragments (10 per topic, one project each) with typed edges to and
  from fresh "hub" memories, inside a topic and across topics, so every cluster has edges to
  re-point, and some are re-pointed twice in one run (both ends are in clusters).
- :class:`Zygote`, the child side: ``python -m tests.crash_rem DB NOW`` imports remd once, then
  forks one REM run per command and reports how it ended. A fresh interpreter costs ~1.2 s to
  start; a fork costs milliseconds, which is what makes 24 kills fit in a test.
- :class:`EchoLLM`: a slow OpenAI-compatible server whose answer is the fragments it was sent,
  so LLM clusters pass the coverage check and commit while other calls are still in flight.
- :func:`check`: the invariants no kill may break; :class:`CrashLoop`: the kill loop itself.

What an interrupted run looks like (the design this checks): a killed run stays ``running`` in
rem_runs, its lease naming it, until the next run starts in the namespace and marks it
``interrupted`` (remd/sleep/remruns.py ``start_run``). Its committed clusters stay: each is whole,
and a
rollback of the run undoes them exactly. The cluster in flight leaves nothing.

Every run here starts over the memories the previous rollback restored, on purpose: they run
with ``include_held=True``, as a person would redo a rolled-back run by hand (remd/sleep/holds.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from remd import Memory
from remd.config import LLMSettings
from remd.index.vectors import BitIndex
from remd.llm.client import LLMClient
from remd.sleep.consolidate import ClusterWriter
from remd.sleep.synthesis import LLMSynthesiser, Synthesiser
from remd.store import is_url
from remd.store.quantisation import from_int8
from remd.text.tokens import TokenCounter
from remd.wire import iso
from tests.helpers import KeepAll, knn
from tests.llm_server import Behaviour, LLMServer, merged_answer, slow
from tests.sleep.test_rem import DAY, NOW, PROJECTS, YEAR_AGO, fragments, line
from tests.sleep.test_rem import dump as rem_dump

ROOT = Path(__file__).parent.parent
MODES = ("random", "in-write", "llm-random", "llm-after-cluster")


# -- the database ---------------------------------------------------------------------------------
def build_db(path: Path, topics: int = 12) -> None:
    """``topics`` × 10 year-old fragments (ids tT fJ) and one fresh hub memory per topic, with
    edges that a REM run must re-point: fragment → hub, hub → fragment, fragment → fragment
    inside a topic (stays as it is) and fragment → fragment of the next topic."""
    lines = [line(text, YEAR_AGO - (10 * t + j) * DAY, id=f"t{t}f{j}")
             for t, topic in enumerate(fragments(topics)) for j, text in enumerate(topic)]
    lines += [line(f"Weekly review of project {PROJECTS[t]}: open risks and owners.", NOW,
                   id=f"hub{t}") for t in range(topics)]
    edges = []
    for t in range(topics):
        hub, f, nxt = f"hub{t}", f"t{t}f", f"t{(t + 1) % topics}f"
        edges += [(f"{f}0", hub, "DEPENDS_ON", 0.4), (f"{f}1", hub, "DEPENDS_ON", 0.9),
                  (hub, f"{f}2", "MENTIONS", 0.7), (f"{f}3", f"{f}4", "EXTENDS", 1.0),
                  (f"{f}5", f"{nxt}6", "MENTIONS", 0.5)]
    lines += [json.dumps({"edge": {"src": s, "dst": d, "type": k, "weight": w,
                                   "created_at": iso(YEAR_AGO)}}) for s, d, k, w in edges]
    with Memory(path, clock=lambda: NOW) as m:
        m.import_lines(lines)
        m.refresh_importance(NOW)  # every run refreshes at NOW first: compare after that


def dump(m: Memory) -> dict[str, Any]:
    """The graph a rollback must restore, row by row (tests/sleep/test_rem.py's dump), importance
    refreshed at NOW first: a rollback does not undo the run's refresh, a pure function of the
    graph and ``now``."""
    m.refresh_importance(NOW)
    return rem_dump(m)


def roll_back_all(m: Memory) -> int:
    """Roll back every run of the namespace that is not rolled back yet, newest first."""
    runs = m.store.query("SELECT run_id FROM rem_runs WHERE namespace = ? AND "
                         "status != 'rolled_back' ORDER BY rowid DESC", (m.namespace,))
    for (run_id,) in runs:
        m.rollback(run_id)
    return len(runs)


@dataclass(frozen=True)
class Baseline:
    """What was there before any run: the live memories and the edges among them."""

    live: frozenset[str]
    edges: tuple[tuple[int, str, str, str, float], ...]  # eid, src, dst, type, weight

    @classmethod
    def of(cls, m: Memory) -> Baseline:
        q, ns = m.store.query, m.namespace
        return cls(
            live=frozenset(r[0] for r in q("SELECT id FROM nodes WHERE namespace = ? AND "
                                           "status = 'live'", (ns,))),
            edges=tuple((int(e), s, d, t, float(w)) for e, s, d, t, w in q(
                "SELECT eid, src, dst, type, weight FROM edges WHERE namespace = ? AND live = 1",
                (ns,))))


# -- the invariants -------------------------------------------------------------------------------
def check(m: Memory, base: Baseline) -> tuple[int, int]:
    """Assert everything a crash must never break; returns (synthesis nodes, edges checked).

    Integrity of the file and of the FTS index; every memory live before is still live or
    deprecated by an existing synthesis with a DERIVED_FROM edge to it; every synthesis belongs
    to a committed cluster of a run that is not rolled back, derives from exactly that
    cluster's members (all deprecated by it) and has its vector; no deprecated node without its
    synthesis; every edge live before is still live (untouched, or inside one cluster) or was
    retired by a live run and has a live copy between the nodes that now stand for its ends,
    at least as heavy; every run's counters match its cluster rows; at most one run is left
    ``running``, the newest, and the lease names it. The graph is read in one snapshot, so
    agents may keep writing meanwhile.
    """
    if is_url(m.store.path):  # the term index holds exactly the nodes
        assert m.store.query("SELECT count(*) FROM nodes n LEFT JOIN node_terms_len l "
                             "ON l.rid = n.rid WHERE l.rid IS NULL") == [(0,)]
        assert m.store.query("SELECT count(*) FROM node_terms_len l LEFT JOIN nodes n "
                             "ON n.rid = l.rid WHERE n.rid IS NULL") == [(0,)]
    else:
        assert m.store.scalar("PRAGMA integrity_check") == "ok"
        with m.store.transaction() as conn:  # FTS5 checks its index against the nodes table
            conn.execute("INSERT INTO node_fts (node_fts, rank) VALUES ('integrity-check', 1)")
    with m.store.snapshot():
        return _check_graph(m, base)


def _check_graph(m: Memory, base: Baseline) -> tuple[int, int]:
    q, ns = m.store.query, m.namespace
    nodes = {i: (k, s, d, r, rid, e) for i, k, s, d, r, rid, e in q(
        "SELECT id, kind, status, deprecated_by, rem_run, rid, embedded FROM nodes "
        "WHERE namespace = ?", (ns,))}
    runs = {r: (s, c, sy, sk) for r, s, c, sy, sk in q(
        "SELECT run_id, status, clusters, synthesised, skipped FROM rem_runs "
        "WHERE namespace = ? ORDER BY started_at, run_id", (ns,))}
    live_runs = {r for r, v in runs.items() if v[0] != "rolled_back"}
    derived: dict[str, set[str]] = {}
    for src, dst in q("SELECT src, dst FROM edges WHERE namespace = ? AND live = 1 AND "
                      "type = 'DERIVED_FROM'", (ns,)):
        derived.setdefault(src, set()).add(dst)
    clusters = q("SELECT c.run_id, c.status, c.synthesis_id, c.members, c.cluster_no "
                 "FROM rem_clusters c JOIN rem_runs r ON r.run_id = c.run_id "
                 "WHERE r.namespace = ?", (ns,))
    committed = {sid: (run, {x["id"] for x in json.loads(members)})
                 for run, status, sid, members, _ in clusters
                 if status == "committed" and run in live_runs}

    for node in base.live:  # nothing lost
        assert node in nodes, f"memory {node} is gone"
        kind, status, by = nodes[node][:3]
        if status != "live":
            assert status == "deprecated" and by in nodes and nodes[by][0] == "synthesis", \
                f"{node} is {status} by {by!r}, which is no synthesis"
            assert node in derived.get(by, set()), f"{by} lacks DERIVED_FROM {node}"
    with_vec = {r[0] for r in q("SELECT rid FROM node_vec_bit WHERE namespace = ?", (ns,))}
    for sid, (kind, status, by, run, rid, embedded) in nodes.items():
        if status == "deprecated":  # never a member without its synthesis
            assert by in nodes and nodes[by][0] == "synthesis", f"{sid} deprecated by {by!r}"
        if kind != "synthesis":
            continue
        assert sid in committed, f"synthesis {sid} has no committed cluster of a live run"
        assert committed[sid][0] == run, sid
        members = committed[sid][1]
        assert len(members) >= 2 and derived.get(sid, set()) == members, \
            f"synthesis {sid} lacks some DERIVED_FROM edges"
        assert all(nodes[x][1:3] == ("deprecated", sid) for x in members), sid
        assert embedded == 1 and rid in with_vec, f"synthesis {sid} has no vector"

    def now_for(node: str) -> str:  # the node that stands for ``node`` now
        while nodes[node][1] == "deprecated":
            node = nodes[node][2]
        return node

    edges = {e: (s, d, t, w, lv, rb, rr) for e, s, d, t, w, lv, rb, rr in q(
        "SELECT eid, src, dst, type, weight, live, retired_by, rem_run FROM edges "
        "WHERE namespace = ?", (ns,))}
    heaviest: dict[tuple[str, str, str], float] = {}
    for s, d, t, w, lv, _, rr in edges.values():
        if lv:
            heaviest[(s, d, t)] = max(heaviest.get((s, d, t), w), w)
            if rr is not None:  # a copy a run wrote: its run is live, its ends exist
                assert rr in live_runs and s in nodes and d in nodes, (s, d, t, rr)
    for eid, src, dst, type_, weight in base.edges:  # no re-pointed edge lost
        assert eid in edges, f"edge {eid} {src}->{dst} deleted"
        a, b = now_for(src), now_for(dst)
        if edges[eid][4]:
            assert (a, b) == (src, dst) or a == b, f"edge {src}->{dst} left on a member"
        else:
            assert edges[eid][5] in live_runs, f"edge {src}->{dst} retired by a dead run"
            assert a != b and heaviest.get((a, b, type_), -1.0) >= weight, \
                f"edge {src}->{dst} {type_} lost: no live copy {a}->{b}"

    for run in live_runs:  # the audit rows agree with what is in the graph
        status, n_clusters, synthesised, skipped = runs[run]
        rows = [c for c in clusters if c[0] == run]
        done = sum(1 for c in rows if c[1] == "committed")
        assert synthesised == done == sum(1 for v in nodes.values() if v[3] == run), run
        assert skipped == len(rows) - done, run
        # The planned clusters, then (numbered after them) what splits left out, merged again.
        planned = [c for c in rows if c[4] < n_clusters]
        assert len(planned) <= n_clusters and (status != "completed"
                                               or len(planned) == n_clusters)
        assert status in ("running", "completed", "interrupted"), (run, status)
    running = [r for r in live_runs if runs[r][0] == "running"]
    assert len(running) <= 1 and (not running or running[0] == list(runs)[-1]), running
    lease = m.store.scalar("SELECT value FROM remd_meta WHERE key = ?", (f"rem_lease:{ns}",))
    if running:
        assert lease is not None and json.loads(lease)["run_id"] == running[0]
    return sum(1 for v in nodes.values() if v[0] == "synthesis"), len(base.edges)


def bit_index_matches(m: Memory) -> int:
    """The in-process bit index of this Memory equals one built fresh from the file, and every
    stored vector finds its own node among its three nearest by the index's bits (a stale
    row there would not). Returns how many vectors were probed."""
    mine, fresh = m.engine.caches.view(m.namespace).bits, BitIndex(m.namespace)
    with m.store.snapshot() as conn:
        mine.refresh(conn)
        fresh.refresh(conn)
    rows = m.store.query("SELECT rid, vec FROM node_vec_bit WHERE namespace = ?", (m.namespace,))
    assert len(mine) == len(fresh) == len(rows), \
        f"in-process index holds {len(mine)} vectors, the file {len(rows)}"
    for rid, blob in rows:
        vec = from_int8([blob])[0]
        got = [int(r) for r in mine.candidates(vec, 3)]
        assert got == [int(r) for r in fresh.candidates(vec, 3)] and rid in got, \
            f"stale bits for rid {rid}"
    return len(rows)


# -- the slow, faithful LLM -----------------------------------------------------------------------
_FRAGMENT = re.compile(r"<fragment [^>]*>\n(.*?)\n</fragment>", re.S)
_TARGET = re.compile(r"at most (\d+) tokens")
_COUNT = TokenCounter()


class EchoLLM(LLMServer):
    """tests/llm_server.py's server, answering each synthesis after ``delay`` seconds with the
    fragments it was sent merged (tests.llm_server.merged_answer: every detail kept, within
    the target), so the cluster commits.
    ``in_flight[model]`` counts the calls being answered now per model name
    (each child asks under its own, so calls a killed child left behind are not counted)."""

    def __init__(self, delay: float) -> None:
        super().__init__(default=slow(delay))
        self.in_flight: Counter[str] = Counter()
        self._count = threading.Lock()
        self._model = threading.local()

    def begin(self, body: dict[str, Any], headers: dict[str, str], *rest: Any) -> Behaviour:
        behaviour = super().begin(body, headers, *rest)
        self._model.name = str(body.get("model"))
        with self._count:
            self.in_flight[self._model.name] += 1
        return replace(behaviour, content=merged_answer(body))

    def end(self) -> None:
        super().end()
        with self._count:
            self.in_flight[self._model.name] -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A killed child resets the connection it kept alive: expected here, not worth a
        traceback on stderr. Anything else is still reported."""
        if not isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            super().handle_error(request, client_address)


# -- the child side -------------------------------------------------------------------------------
def _pause_in_write(where: str, fraction: float, total: Callable[[], int]) -> None:
    """Make cluster number ``1 + fraction × (total - 1)`` stop inside its write transaction
    (so one cluster at least has committed before it: a run folds a topic per cluster, and a
    dozen topics are only a dozen clusters), after ``ClusterWriter._inherit`` (the synthesis
    node, its tags and the re-pointed edges are written, its DERIVED_FROM edges and the
    deprecations not yet) or after ``_commit`` (all written, nothing committed), and say so,
    so the parent's SIGKILL lands exactly there.
    Patched in this forked child only: remd itself has no test hook."""
    original = getattr(ClusterWriter, where)
    calls = 0

    def paused(self: ClusterWriter, *args: Any) -> Any:
        nonlocal calls
        result = original(self, *args)
        n = total()
        if calls == (0 if n < 2 else 1 + int(fraction * (n - 1))):
            print(f"in-write {calls} {where}", flush=True)
            time.sleep(60)  # the parent kills us long before
        calls += 1
        return result

    setattr(ClusterWriter, where, paused)


def _run_child(db: str, now: float, cmd: dict[str, Any]) -> None:
    print(f"pid {os.getpid()}", flush=True)
    # Offline: every cluster folds (the merging default would leave some alone), so there are
    # many committed clusters to be killed among.
    synth: Synthesiser | None = KeepAll()
    if cmd.get("llm"):
        synth = LLMSynthesiser(LLMClient(LLMSettings(
            base_url=cmd["llm"], api_key="sk-test", model=cmd["model"], max_retries=0,
            timeout=30.0)))
    total = [0]
    if cmd.get("pause"):
        _pause_in_write(cmd["pause"], float(cmd.get("fraction", 0.0)), lambda: total[0])

    def progress(outcome: Any) -> None:
        total[0] = outcome.total
        print(f"cluster {outcome.done}/{outcome.total} {outcome.status.value}", flush=True)

    with Memory(db, clock=lambda: now) as m:
        print("ready", flush=True)
        run = m.run_rem(now=now, synthesiser=synth, progress=progress, include_held=True)
        print(f"done {run.run_id}", flush=True)


def zygote_main(db: str, now: float) -> None:
    """Import remd and warm it up once, then per command line (JSON) fork a child that runs one
    REM cycle; after each fork wait for ``reap`` and report ``exit CODE`` (negative: signal).
    The child stays unreaped (a zombie at worst) until then, so its pid cannot be reused
    before the parent's SIGKILL."""
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp) / "warm.db", embedder=None):
        pass  # loads the tokenizer, the schema code, sqlite-vec
    print("zygote", flush=True)
    for raw_cmd in sys.stdin:
        cmd = json.loads(raw_cmd)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _run_child(db, now, cmd)
            except BaseException as exc:  # noqa: BLE001 - report, then leave at once
                print(f"error {type(exc).__name__}: {exc}", flush=True)
                traceback.print_exc()
                code = 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        sys.stdin.readline()  # "reap"
        _, status = os.waitpid(pid, 0)
        # A newline first: a kill in the middle of the child's print leaves a torn line.
        print(f"\nexit {os.waitstatus_to_exitcode(status)}", flush=True)


# -- the parent side ------------------------------------------------------------------------------
class Zygote:
    """The parent's handle on ``python -m tests.crash_rem``: start a run, wait for a line, kill."""

    def __init__(self, db: Path, now: float, log: IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_rem", str(db), repr(now)], cwd=ROOT,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.pid = 0  # the child forked last; not reaped while ``unreaped``
        self.unreaped = False
        self.seen: list[str] = []
        self._expect("zygote", timeout=120)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            self._lines.put(text.rstrip("\n"))
        self._lines.put(None)

    def _next(self, timeout: float) -> str:
        text = self._lines.get(timeout=timeout)
        if text is None:
            raise RuntimeError("the crash_rem zygote died (see its log)")
        self.seen.append(text)
        return text

    def _read_until(self, prefix: str, timeout: float, stop: tuple[str, ...] = ()) -> str | None:
        """The first line starting with ``prefix``, or None at a line starting with ``stop``."""
        deadline = time.monotonic() + timeout
        while True:
            text = self._next(max(deadline - time.monotonic(), 0.01))
            if text.startswith(prefix):
                return text
            if stop and text.startswith(stop):
                return None

    def _expect(self, prefix: str, timeout: float = 60.0) -> str:
        text = self._read_until(prefix, timeout)
        assert text is not None
        return text

    def start(self, **cmd: Any) -> None:
        """Fork a REM run; returns once it has opened the file (its ``ready``)."""
        assert self.proc.stdin is not None
        self.seen, self.pid = [], 0
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        self.unreaped = True
        self.pid = int(self._expect("pid ").split()[1])
        self._expect("ready")

    def wait_for(self, prefix: str, timeout: float = 60.0) -> bool:
        """Read the child's lines until one starts with ``prefix`` (True) or it is done (False)."""
        return self._read_until(prefix, timeout, stop=("done ", "error ")) is not None

    def finished(self) -> bool:
        """Read the lines already there, without waiting; whether the child is done."""
        while not self._lines.empty():
            if self._next(0.01).startswith(("done ", "error ")):
                return True
        return False

    def kill(self) -> int:
        """SIGKILL the child (not reaped yet, so the pid is still ours) and return its exit code
        (-9 when the kill landed, 0 when it had finished first)."""
        os.kill(self.pid, signal.SIGKILL)
        return self.reap()

    def reap(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write("reap\n")
        self.proc.stdin.flush()
        self.unreaped = False
        return int(self._expect("exit ").split()[1])

    def committed_lines(self) -> int:
        """How many clusters the child reported committed before it stopped (a cluster the
        synthesis of which would not read well, or lose a detail, is skipped)."""
        return sum(1 for t in self.seen if t.startswith("cluster ") and not
                   t.startswith("cluster 0/") and t.endswith(" committed"))

    def close(self) -> None:
        """Kill the child still running (a failed check left it), then let the zygote go."""
        if self.unreaped and self.pid:
            with contextlib.suppress(OSError, RuntimeError, queue.Empty):
                self.kill()
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Tally:
    """What a :class:`CrashLoop` did and saw (the soak prints it as its table)."""

    kills: int = 0
    kills_inside_a_write: int = 0
    kills_during_llm_calls: int = 0
    finished_before_the_kill: int = 0
    interrupted_runs_marked: int = 0
    runs_completed_after_crashes: int = 0
    runs_rolled_back: int = 0
    exact_rollbacks: int = 0
    synthesis_nodes_checked: int = 0
    memory_checks: int = 0
    edge_checks: int = 0
    vectors_probed: int = 0
    by_mode: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


class CrashLoop:
    """Kill REM runs in rounds of one to three kills, each run starting over what the previous
    killed one left; after each kill, :func:`check`. At the end of a round, a run in this
    process must complete over the remains (marking the killed runs ``interrupted``), its
    rollback must restore the graph as it was just before it, and rolling back every run must
    restore the graph as it was before any.

    With ``strict`` the first failure raises (the test); else it is counted, the state reset
    by rolling everything back, and the loop goes on (the soak)."""

    def __init__(self, db: Path, zygote: Zygote, llm: EchoLLM, rng: random.Random,
                 *, strict: bool) -> None:
        self.db, self.zygote, self.llm, self.rng, self.strict = db, zygote, llm, rng, strict
        self.tally = Tally()
        with Memory(db, clock=lambda: NOW) as m:
            self.base = Baseline.of(m)
            self.graph = dump(m)
        self.span = {False: self._full_run(llm=False), True: self._full_run(llm=True)}

    def _memory(self) -> Memory:
        return Memory(self.db, clock=lambda: NOW, embedder=None)

    def _full_run(self, *, llm: bool) -> float:
        """Time one unkilled run from ``ready`` to ``done`` (kills are spread over it); check
        it, and that rolling it back restores the graph exactly."""
        self.zygote.start(llm=self.llm.base_url if llm else None, model="full-run")
        t0 = time.perf_counter()
        assert self.zygote.wait_for("done "), self.zygote.seen
        span = time.perf_counter() - t0
        assert self.zygote.reap() == 0
        with self._memory() as m:
            synthesis, _ = check(m, self.base)
            assert synthesis >= 5 and synthesis == self.zygote.committed_lines()
            assert roll_back_all(m) == 1
            assert dump(m) == self.graph, "rolling back a full run is not exact"
        return span

    def run(self, kills: int, progress: Callable[[Tally], None] | None = None) -> Tally:
        n = 0
        while self.tally.kills < kills:
            try:
                for _ in range(1 + n % 3):
                    self._kill_once(MODES[self.tally.kills % len(MODES)])
                self._finish_round()
            except (AssertionError, TimeoutError, queue.Empty) as exc:
                if self.strict:
                    raise
                self.tally.failures.append(f"round {n}: {type(exc).__name__}: {exc}")
                with contextlib.suppress(Exception), self._memory() as m:
                    roll_back_all(m)
            n += 1
            if progress:
                progress(self.tally)
        return self.tally

    def _kill_once(self, mode: str) -> None:
        t = self.tally
        llm = mode.startswith("llm")
        with self._memory() as m:
            before = [r[0] for r in m.store.query("SELECT run_id FROM rem_runs WHERE status = "
                                                  "'running' AND namespace = ?", (m.namespace,))]
        where = self.rng.choice(("_inherit", "_commit"))
        model = f"crash-{self.tally.kills}-{self.tally.finished_before_the_kill}"
        self.zygote.start(llm=self.llm.base_url if llm else None, model=model,
                          pause=where if mode == "in-write" else None,
                          fraction=self.rng.random())
        in_write = in_call = False
        if mode == "in-write":
            in_write = self.zygote.wait_for("in-write")
        elif mode == "llm-after-cluster":  # and once the server is answering its next call
            if self.zygote.wait_for("cluster 0/"):
                total = int(self.zygote.seen[-1].split("/")[1].split()[0])
                self.zygote.wait_for(f"cluster {self.rng.randint(1, max(total - 2, 1))}/")
            deadline = time.monotonic() + 5.0
            while (not self.llm.in_flight[model] and not self.zygote.finished()
                   and time.monotonic() < deadline):
                time.sleep(0.002)
            in_call = self.llm.in_flight[model] > 0
        else:
            extra = self.span[True] - self.span[False] if llm else 0.0
            time.sleep(self.rng.uniform(0.0, self.span[False] + extra))
            in_call = llm and self.llm.in_flight[model] > 0
        code = self.zygote.kill()
        assert code in (0, -signal.SIGKILL), f"the REM child failed: {self.zygote.seen}"
        if code == 0 or any(x.startswith("done ") for x in self.zygote.seen):
            t.finished_before_the_kill += 1  # a kill after "done" is no mid-cycle kill
        else:
            t.kills += 1
            t.by_mode[mode] = t.by_mode.get(mode, 0) + 1
            t.kills_inside_a_write += in_write
            t.kills_during_llm_calls += in_call
        with self._memory() as m:
            synthesis, edges = check(m, self.base)
            t.synthesis_nodes_checked += synthesis
            t.memory_checks += len(self.base.live)
            t.edge_checks += edges
            newest = m.store.one("SELECT run_id, status FROM rem_runs WHERE namespace = ? "
                                 "ORDER BY rowid DESC LIMIT 1", (m.namespace,))
            for run in before:  # the new run found the killed one and marked it
                if newest is not None and newest[0] != run:
                    assert m.store.scalar("SELECT status FROM rem_runs WHERE run_id = ?",
                                          (run,)) == "interrupted", run
                    t.interrupted_runs_marked += 1
            if in_write:  # the cluster in flight left nothing; those reported done are there
                assert newest is not None and newest[1] == "running"
                assert m.store.scalar("SELECT count(*) FROM rem_clusters WHERE run_id = ?",
                                      (newest[0],)) == self.zygote.committed_lines()

    def _finish_round(self) -> None:
        t = self.tally
        with self._memory() as m:
            snapshot = dump(m)
            dead = [r[0] for r in m.store.query(
                "SELECT run_id FROM rem_runs WHERE status = 'running' AND namespace = ?",
                (m.namespace,))]
            run = m.run_rem(now=NOW, include_held=True)
            assert run.status.value == "completed", run
            t.runs_completed_after_crashes += 1
            for r in dead:
                assert m.store.one("SELECT status, finished_at IS NOT NULL FROM rem_runs "
                                   "WHERE run_id = ?", (r,)) == ("interrupted", 1), r
                t.interrupted_runs_marked += 1
            check(m, self.base)
            knn(m, m.namespace, [1.0] * 384, 8)  # load this process's vector index
            t.vectors_probed += bit_index_matches(m)
            m.rollback(run.run_id or "")
            assert dump(m) == snapshot, "rolling back a completed run is not exact"
            t.runs_rolled_back += 1 + roll_back_all(m)
            assert dump(m) == self.graph, "rolling back every run is not exact"
            t.exact_rollbacks += 2
            t.vectors_probed += bit_index_matches(m)  # rows were deleted: reloaded in full

    def rid_reuse(self) -> int:
        """After a rollback, SQLite hands the rids of the deleted synthesis nodes to new
        memories: the in-process vector index must not keep the old bits for them. Saves one
        memory (real embedder), so run it last. Returns the reused rid."""
        with Memory(self.db, clock=lambda: NOW) as m:
            run = m.run_rem(now=NOW, include_held=True)
            knn(m, m.namespace, [1.0] * 384, 8)
            freed = {r[0] for r in m.store.query("SELECT rid FROM nodes WHERE rem_run = ?",
                                                 (run.run_id,))}
            m.rollback(run.run_id or "")
            node = m.save("Crash drill: the Falcon budget review moved to Oslo next week.")
            rid = m.store.scalar("SELECT rid FROM nodes WHERE id = ?", (node.id,))
            # PostgreSQL's identity never hands a rid out twice; the index must still match.
            assert rid in freed or is_url(self.db), "the new memory did not reuse a freed rid"
            self.tally.vectors_probed += bit_index_matches(m)
            return int(rid)


if __name__ == "__main__":
    zygote_main(sys.argv[1], float(sys.argv[2]))
