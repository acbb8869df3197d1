"""LoCoMo evidence recall: remd's inject against BM25, dense, RRF and recency at equal budgets.

Per conversation: every turn is saved as one memory (one namespace per conversation), then each
QA's question is asked at each budget and the share of its evidence turns whose memory is in the
pack is counted. Baselines rank the same turn texts and pack them with the same exact tokenizer.

Time: each memory is created at its session's date (the clock is moved session by session while
saving), and questions are asked one day after the conversation's last session. That is what an
agent that lived through the conversation would hold; the content carries the date as well.
``--dates ingest`` instead saves everything at one instant (recency is then neutral).
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.eval import baselines, locomo
from benchmarks.eval.report import mean, percentile, table
from benchmarks.pg_local import schema_url
from remd import Config, Memory
from remd.text.tokens import TokenCounter

DAY = 86400.0
BASELINES = ("bm25", "dense", "rrf", "recency")
# remd's inject packed to the budget (fill=True, comparable with the baselines at equal tokens)
# and stopped at its default relevance floor.
REMD = {"remd": True, "remd-floor": False}


@dataclass
class Outcome:
    """One question at one budget for one method."""

    recall: float
    tokens: int
    seconds: float
    found: tuple[str, ...] = ()  # the evidence dia_ids that were in the pack
    first: bool = False  # the pack's first item is (or carries) evidence


@dataclass
class Results:
    """method -> budget -> qid -> Outcome, plus the QA they are about."""

    qa: dict[str, locomo.QA] = field(default_factory=dict)
    by: dict[str, dict[int, dict[str, Outcome]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(dict)))
    notes: list[str] = field(default_factory=list)

    def add(self, method: str, budget: int, qa: locomo.QA, outcome: Outcome) -> None:
        self.qa[qa.qid] = qa
        self.by[method][budget][qa.qid] = outcome

    def recall(self, method: str, budget: int, categories: Iterable[int]) -> tuple[float, int]:
        wanted = set(categories)
        vals = [o.recall for qid, o in self.by[method][budget].items()
                if self.qa[qid].category in wanted]
        return mean(vals), len(vals)


def evidence_recall(evidence: Sequence[str], packed: Iterable[str]
                    ) -> tuple[float, tuple[str, ...]]:
    got = set(packed)
    found = tuple(e for e in evidence if e in got)
    return len(found) / len(evidence), found


# -- remd ----------------------------------------------------------------------------------------


def has_inject() -> bool:
    """Is remd's inject there to be measured (as Memory.inject or remd.query.inject.inject)?"""
    if hasattr(Memory, "inject"):
        return True
    try:
        from remd.query.inject import inject as _  # noqa: F401
    except ImportError:
        return False
    return True


def inject(mem: Memory, query: str, budget: int, fill: bool = False) -> Any:
    """``mem.inject(query, budget, fill=fill)``."""
    return mem.inject(query, budget, fill=fill)


def fresh_db(workdir: Path, name: str) -> Path:
    """``workdir/name``, with any database a previous run left there removed."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / name
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


class RemdSubject:
    """One Memory file with a namespace per conversation; inject is the method under test."""

    def __init__(self, path: Path | str, config: Config, embedder: baselines.CachedEmbedder,
                 *, dates: str = "real") -> None:
        self.now = 0.0
        self.mem_path = path
        self.config = config
        self.embedder = embedder
        self.dates = dates
        self.ids: dict[str, dict[str, str]] = {}  # namespace -> node id -> dia_id
        self.last_text = ""  # the text of the last pack ask() got
        self.mems: dict[str, Memory] = {}

    def clock(self) -> float:
        return self.now

    def ingest(self, conv: locomo.Conversation) -> Memory:
        ns = conv.sample_id
        mem = Memory(self.mem_path, namespace=ns, config=self.config, embedder=self.embedder,
                     clock=self.clock)
        self.mems[ns] = mem
        by_session: dict[int, list[locomo.Turn]] = defaultdict(list)
        for t in conv.turns:
            by_session[t.session].append(t)
        id_map: dict[str, str] = {}
        flat_time = conv.end + DAY
        for session in sorted(by_session):
            turns = by_session[session]
            self.now = turns[0].at if self.dates == "real" else flat_time
            ids = mem.save_many([t.content for t in turns], embed=False)
            id_map.update(zip(ids, (t.dia_id for t in turns), strict=True))
        self.embedder.recording = True
        mem.embed_pending()
        self.ids[ns] = id_map
        self.now = conv.end + DAY
        return mem

    def members(self, mem: Memory, node_id: str) -> list[str]:
        """The saved memories a synthesis item stands for (DERIVED_FROM, transitively)."""
        out: list[str] = []
        seen = {node_id}
        frontier = [node_id]
        while frontier:
            marks = ",".join("?" * len(frontier))
            rows = mem.store.query(
                f"SELECT dst FROM edges WHERE namespace = ? AND type = 'DERIVED_FROM' "
                f"AND src IN ({marks})", (mem.namespace, *frontier))
            frontier = []
            for (dst,) in rows:
                if dst not in seen:
                    seen.add(dst)
                    frontier.append(dst)
                    out.append(dst)
        return out

    def ask(self, conv: locomo.Conversation, question: str, budget: int, fill: bool = True
            ) -> tuple[set[str], int, float, list[str], set[str]]:
        """Inject once: (dia_ids credited, tokens used, seconds, problems seen, dia_ids the
        first item carries)."""
        mem = self.mems[conv.sample_id]
        id_map = self.ids[conv.sample_id]
        contents = {t.dia_id: t.content for t in conv.turns}
        self.embedder.recording = False
        t0 = time.perf_counter()
        pack = inject(mem, question, budget, fill)
        dt = time.perf_counter() - t0
        self.last_text = str(pack.text)
        credited: set[str] = set()
        first: set[str] = set()
        problems: list[str] = []
        for item in pack.items:
            dia = id_map.get(item.id)
            mine = set()
            if dia is not None:
                mine.add(dia)
                if item.content != contents[dia]:
                    problems.append(f"item {item.id} does not carry its saved text verbatim")
            else:
                mine.update(id_map[m] for m in self.members(mem, item.id) if m in id_map)
            if not credited and not first:
                first = mine
            credited |= mine
        return credited, int(pack.tokens_used), dt, problems, first

    def close(self) -> None:
        for mem in self.mems.values():
            mem.close()


# -- the run -------------------------------------------------------------------------------------


@dataclass
class Setup:
    budgets: tuple[int, ...]
    methods: tuple[str, ...]  # "remd" and/or baseline names
    config: Config
    embedder: baselines.CachedEmbedder
    dates: str = "real"
    workdir: Path | None = None
    progress: Callable[[str], None] = print
    db: str | None = None  # a postgresql:// URL: the subject's database instead of a file


def run(conversations: Sequence[locomo.Conversation], setup: Setup) -> Results:
    """Every QA with evidence (all five categories) at every budget, for every method."""
    counter = TokenCounter(setup.config.store.encoding)
    results = Results()
    workdir = setup.workdir or Path(tempfile.mkdtemp(prefix="remd-eval-"))
    mine = [m for m in REMD if m in setup.methods]
    where: Path | str = (schema_url(setup.db, "remd_eval", fresh=True) if setup.db
                         else fresh_db(workdir, "locomo.db"))
    subject = (RemdSubject(where, setup.config, setup.embedder, dates=setup.dates)
               if mine else None)
    problems: set[str] = set()
    try:
        for conv in conversations:
            t0 = time.perf_counter()
            questions = [q for q in conv.qa if q.evidence]
            run_baselines(conv, questions, setup, counter, results)
            if subject is not None:
                subject.ingest(conv)
                for q in questions:
                    for budget in setup.budgets:
                        for method in mine:
                            credited, used, dt, bad, first = subject.ask(
                                conv, q.question, budget, REMD[method])
                            problems.update(bad)
                            r, found = evidence_recall(q.evidence, credited)
                            results.add(method, budget, q, Outcome(
                                r, used, dt, found, bool(first & set(q.evidence))))
            setup.embedder.save()
            setup.progress(f"  {conv.sample_id}: {len(conv.turns)} turns, {len(questions)} QA, "
                           f"{time.perf_counter() - t0:.1f}s")
    finally:
        if subject is not None:
            subject.close()
    results.notes.extend(sorted(problems)[:5])
    return results


def run_baselines(conv: locomo.Conversation, questions: Sequence[locomo.QA], setup: Setup,
                  counter: TokenCounter, results: Results) -> None:
    wanted = [m for m in BASELINES if m in setup.methods]
    if not wanted:
        return
    texts = [t.content for t in conv.turns]
    dia = [t.dia_id for t in conv.turns]
    tab = baselines.TokenTable(texts, counter)
    setup.embedder.recording = True
    corpus = setup.embedder.embed(texts)
    bm25 = baselines.BM25Ranker(texts)
    recent = baselines.recency_rank([t.at for t in conv.turns])
    setup.embedder.recording = False
    for q in questions:
        rankings: dict[str, tuple[list[int], float]] = {}
        t0 = time.perf_counter()
        lexical = bm25.rank(q.question)
        t_bm25 = time.perf_counter() - t0
        t0 = time.perf_counter()
        qvec = setup.embedder.embed([q.question])[0]
        semantic = baselines.dense_rank(np.asarray(qvec), corpus)
        t_dense = time.perf_counter() - t0
        t0 = time.perf_counter()
        fused = baselines.rrf([lexical, semantic])
        t_fuse = time.perf_counter() - t0
        rankings = {"bm25": (lexical, t_bm25), "dense": (semantic, t_dense),
                    "rrf": (fused, t_bm25 + t_dense + t_fuse), "recency": (recent, 0.0)}
        for name in wanted:
            ranking, t_rank = rankings[name]
            for budget in setup.budgets:
                t0 = time.perf_counter()
                packed = baselines.pack(ranking, tab, budget)
                t_pack = time.perf_counter() - t0
                r, found = evidence_recall(q.evidence, (dia[i] for i in packed.indices))
                results.add(name, budget, q, Outcome(r, packed.tokens, t_rank + t_pack, found))


# -- tables --------------------------------------------------------------------------------------


def headline_table(results: Results, budgets: Sequence[int], methods: Sequence[str]) -> str:
    rows = []
    n = 0
    for m in methods:
        row: list[object] = [m]
        for b in budgets:
            value, n = results.recall(m, b, locomo.HEADLINE_CATEGORIES)
            row.append(value)
        rows.append(row)
    header = ["method", *(f"recall@{b}" for b in budgets)]
    return f"Evidence recall, categories 1-4 (n={n} QA):\n\n" + table(header, rows)


def category_table(results: Results, budgets: Sequence[int], methods: Sequence[str]) -> str:
    cats = (4, 1, 2, 3)
    header = ["method", "budget", *(f"{locomo.CATEGORIES[c]}" for c in cats), "overall 1-4",
              "adversarial (5)"]
    rows = []
    counts = {c: results.recall(methods[0], budgets[0], [c])[1] for c in (*cats, 5)}
    for b in budgets:
        for m in methods:
            rows.append([m, b, *(results.recall(m, b, [c])[0] for c in cats),
                         results.recall(m, b, locomo.HEADLINE_CATEGORIES)[0],
                         results.recall(m, b, [5])[0]])
    sizes = ", ".join(f"{locomo.CATEGORIES[c]} {counts[c]}" for c in (*cats, 5))
    return f"Evidence recall per category ({sizes}):\n\n" + table(header, rows)


def first_item_table(results: Results, budgets: Sequence[int], methods: Sequence[str]) -> str:
    """First-item precision: the share of single-hop QA whose pack starts with evidence."""
    rows = []
    n = 0
    for m in methods:
        row: list[object] = [m]
        for b in budgets:
            outs = [o for qid, o in results.by[m][b].items() if results.qa[qid].category == 4]
            n = len(outs)
            row.append(mean([float(o.first) for o in outs]))
        rows.append(row)
    return (f"First-item precision: the share of single-hop QA (n={n}) whose first item is "
            "evidence:\n\n" + table(["method", *(f"@{b}" for b in budgets)], rows))


def cost_table(results: Results, budgets: Sequence[int], methods: Sequence[str]) -> str:
    header = ["method", "budget", "mean tokens", "p50 ms", "p95 ms"]
    rows = []
    for b in budgets:
        for m in methods:
            outs = list(results.by[m][b].values())
            ms = [o.seconds * 1000 for o in outs]
            rows.append([m, b, f"{mean([o.tokens for o in outs]):.0f}",
                         f"{percentile(ms, 50):.1f}", f"{percentile(ms, 95):.1f}"])
    return ("Tokens used and latency per query (all scored QA, categories 1-5; baselines: "
            "ranking incl. query embedding + packing):\n\n" + table(header, rows))
