"""Scratch: where remd's inject loses LoCoMo evidence, and what variants of it would gain.

Not part of the engine. ``Probe`` replays inject's read path (remd/inject.py ``_Injector.run``:
seeds, walk, candidates, score) once per question, then packs at every budget from the same
scored candidates, and writes nothing (no pack rows, no access counts), so variants can be
compared on one ingested database. A variant is a config override, a hook that rescores the
candidates, or both.

    python -m benchmarks.eval.scratch_inject                 # all variants, all conversations
    python -m benchmarks.eval.scratch_inject --quick --variants base recency0
    python -m benchmarks.eval.scratch_inject --diagnose      # misses by cause, per category
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from benchmarks.eval import baselines, locomo
from benchmarks.eval.locomo_run import RemdSubject, fresh_db
from benchmarks.eval.report import mean, table
from remd import Config, Memory
from remd.config import InjectConfig
from remd.embed import MiniLMEmbedder
from remd.inject import _Candidate, _Injector
from remd.tagging import extract_query_tags

BUDGETS = (256, 512, 1024, 2048)
Hook = Callable[["Probe", apsw.Connection, dict[int, _Candidate], str], None]


@dataclass
class Probed:
    """One question: the scored candidates and, per budget, the rids packed."""

    cands: dict[int, _Candidate]
    packed: dict[int, list[int]]
    seeds: list[str] = field(default_factory=list)


class Probe(_Injector):
    """inject's read path with a swappable config and an optional rescoring hook."""

    def __init__(self, memory: Memory, cfg: InjectConfig, hook: Hook | None = None) -> None:
        super().__init__(memory, memory.namespace, memory.clock())
        self.cfg = cfg
        self.hook = hook

    def probe(self, query: str, budgets: Sequence[int]) -> Probed:
        cfg = self.cfg
        counter = self.mem.counter
        with self.mem.store.snapshot() as conn:
            self.n = self._size(conn)
            qseeds = self._query_seeds(conn, query)
            near = self._vector_hits(conn, query)
            cands: dict[int, _Candidate] = {}
            near = self._resolve(conn, near)[: cfg.vector_k]
            vseeds = self._vector_seeds(conn, near, set(qseeds))
            walk = self._propagate(conn, {**qseeds, **vseeds})
            self._graph_candidates(conn, walk, cands)
            for rid, sim in near:
                cands.setdefault(rid, _Candidate(rid)).vector = max(sim, 1e-9)
            for rid, score in self._lexical_hits(conn, query):
                cands.setdefault(rid, _Candidate(rid)).lexical = max(score, 1e-9)
            self._load(conn, cands)
            self._score(cands)
            if self.hook is not None:
                self.hook(self, conn, cands, query)
            sep = counter.count(cfg.separator) if cfg.separator else 0
            packed: dict[int, list[int]] = {}
            for b in budgets:
                picked = self._pack(conn, cands, b, sep)
                contents, _ = self._texts(conn, [c.rid for c, _, _ in picked])
                picked, _, _ = self._fit(picked, contents, b)
                packed[b] = [c.rid for c, _, _ in picked]
        seeds = [n for n, _ in qseeds.values()] + [f"~{n}" for n, _ in vseeds.values()]
        return Probed(cands, packed, seeds)


# -- hooks: structural variants ------------------------------------------------------------------


def neighbours(weight: float = 0.25, window: float = 3600.0) -> Hook:
    """Spread relevance to the memories saved just before and after (same namespace, saved
    within ``window`` seconds): a turn's answer is the next turn, its question the previous."""

    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, _Candidate], q: str) -> None:
        base = {rid: c.base for rid, c in cands.items()}
        want = {r + d for r in base for d in (-1, 1)} - set(base)
        extra: dict[int, _Candidate] = {r: _Candidate(r) for r in want}
        probe._load(conn, extra)
        for rid, c in extra.items():
            c.parts = {"relevance": 0.0, "recency": 1.0, "importance": 1.0}
            cands[rid] = c
        when = {rid: c.created_at for rid, c in cands.items()}
        for rid, c in cands.items():
            add = 0.0
            for d in (-1, 1):
                other = rid + d
                if other in base and abs(when.get(other, -1e18) - c.created_at) <= window:
                    add += weight * base[other]
            c.base = base.get(rid, 0.0) + add

    return hook


def chain(*hooks: Hook) -> Hook:
    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, _Candidate], q: str) -> None:
        for h in hooks:
            h(probe, conn, cands, q)

    return hook


def entity_boost(factor: float = 1.15) -> Hook:
    """Memories that open with a name the query carries ("Caroline: ...") score ``factor``x:
    the named person is the speaker, not just someone addressed."""

    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, _Candidate], q: str) -> None:
        names = {n for n, _ in extract_query_tags(q)}
        if not names:
            return
        rids = list(cands)
        marks = ",".join("?" * len(rids))
        for rid, content in conn.execute(
                f"SELECT rid, content FROM nodes WHERE rid IN ({marks})", rids):
            head = content.split("] ", 1)[-1].split(":", 1)[0].strip().lower()
            if head in names:
                cands[rid].base *= factor

    return hook


def lead_tag_boost(factor: float = 1.15) -> Hook:
    """The generic form of entity_boost: a memory whose top tag (weight 1.0: the first entity
    it names) is one of the query's tags scores ``factor``x. In LoCoMo that tag is the speaker."""

    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, _Candidate], q: str) -> None:
        names = {n for n, _ in extract_query_tags(q)}
        if not names or not cands:
            return
        rids = list(cands)
        marks = ",".join("?" * len(rids))
        marks_n = ",".join("?" * len(names))
        for (rid,) in conn.execute(
                f"SELECT nt.rid FROM node_tags nt JOIN tags t ON t.tid = nt.tid "
                f"WHERE nt.rid IN ({marks}) AND nt.weight >= 0.999 AND t.name IN ({marks_n})",
                (*rids, *names)):
            cands[rid].base *= factor

    return hook


# -- variants ------------------------------------------------------------------------------------


def variants() -> dict[str, tuple[dict[str, Any], Hook | None]]:
    """name -> (InjectConfig overrides, hook)."""
    k64 = {"vector_k": 64, "fts_k": 64}
    k200 = {"vector_k": 200, "fts_k": 200}
    flat = {"recency_weight": 0.0, "importance_weight": 0.0, "diversity_penalty": 0.0}
    g5 = {"graph_weight": 0.5}
    return {
        "base": ({}, None),
        "recency0": ({"recency_weight": 0.0}, None),
        "k64": (k64, None),
        "graph.5": (g5, None),
        "graph0": ({"graph_weight": 0.0}, None),
        "graph.5+k64": ({**g5, **k64}, None),
        "div0": ({"diversity_penalty": 0.0}, None),
        "nbr": ({}, neighbours(0.25)),
        "lead": ({}, lead_tag_boost(1.15)),
        "nbr+lead": ({}, chain(neighbours(0.25), lead_tag_boost(1.15))),
        "graph.5+nbr+lead": (g5, chain(neighbours(0.25), lead_tag_boost(1.15))),
        "graph.5+k64+nbr+lead": ({**g5, **k64}, chain(neighbours(0.25), lead_tag_boost(1.15))),
        "vector-only200": ({"graph_weight": 0.0, "lexical_weight": 0.0, **k200}, None),
        "lexical-only200": ({"graph_weight": 0.0, "vector_weight": 0.0, **k200}, None),
        "graph-only": ({"vector_weight": 0.0, "lexical_weight": 0.0}, None),
        "vector-only200-flat": ({"graph_weight": 0.0, "lexical_weight": 0.0, "recency_weight": 0.0,
                                 "importance_weight": 0.0, "diversity_penalty": 0.0, **k200},
                                None),
        "graph0+k64": ({"graph_weight": 0.0, **k64}, None),
        "flat200": ({"graph_weight": 0.0, **flat, **k200}, None),
        "g.25-flat200": ({"graph_weight": 0.25, **flat, **k200}, None),
        "g.25-flat200+nbr+lead": ({"graph_weight": 0.25, **flat, **k200},
                                  chain(neighbours(0.25), lead_tag_boost(1.15))),
        "g0-flat200+nbr+lead": ({"graph_weight": 0.0, **flat, **k200},
                                chain(neighbours(0.25), lead_tag_boost(1.15))),
        "g.25-flat200+nbr.15+lead": ({"graph_weight": 0.25, **flat, **k200},
                                     chain(neighbours(0.15), lead_tag_boost(1.15))),
        "g.25-flat200+nbr+lead1.3": ({"graph_weight": 0.25, **flat, **k200},
                                     chain(neighbours(0.25), lead_tag_boost(1.3))),
        "div0-rec0": ({**flat}, None),
        "graph0+k200": ({"graph_weight": 0.0, **k200}, None),
        "graph.25+k200": ({"graph_weight": 0.25, **k200}, None),
        "graph.5+k200": ({**g5, **k200}, None),
        "graph.25+k200+nbr+lead": ({"graph_weight": 0.25, **k200},
                                   chain(neighbours(0.25), lead_tag_boost(1.15))),
        "graph.5+k200+nbr+lead": ({**g5, **k200}, chain(neighbours(0.25), lead_tag_boost(1.15))),
        "lex1.5": ({"lexical_weight": 1.5}, None),
        "lex1.5+g.7": ({"lexical_weight": 1.5, "graph_weight": 0.7}, None),
        "g.7": ({"graph_weight": 0.7}, None),
        "ctx.15": ({"context_weight": 0.15}, None),
        "ctx.45": ({"context_weight": 0.45}, None),
        "vec1.3": ({"vector_weight": 1.3}, None),
        "fk30": ({"fusion_k": 30.0}, None),
        "fk120": ({"fusion_k": 120.0}, None),
        "lex1.5+fk30": ({"lexical_weight": 1.5, "fusion_k": 30.0}, None),
        "lex2+fk30": ({"lexical_weight": 2.0, "fusion_k": 30.0}, None),
        "lex1.5+fk15": ({"lexical_weight": 1.5, "fusion_k": 15.0}, None),
        "lex1.5+fk8": ({"lexical_weight": 1.5, "fusion_k": 8.0}, None),
        "fk8+k32": ({"fts_k": 32, "vector_k": 32}, None),
        "fk8+k24": ({"fts_k": 24, "vector_k": 24}, None),
        "fk8+fts32": ({"fts_k": 32}, None),
        "lex2+fk15": ({"lexical_weight": 2.0, "fusion_k": 15.0}, None),
        "lex1.5+fk15+k32": ({"lexical_weight": 1.5, "fusion_k": 15.0, "fts_k": 32,
                             "vector_k": 32}, None),
    }


@dataclass
class Tally:
    recall: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    cause: dict[tuple[int, int], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter))
    seconds: list[float] = field(default_factory=list)


def evaluate(subject: RemdSubject, convs: Sequence[locomo.Conversation], names: Sequence[str],
             budgets: Sequence[int], diagnose: bool = False,
             examples: list[str] | None = None) -> dict[str, Tally]:
    table_ = variants()
    out = {name: Tally() for name in names}
    for conv in convs:
        mem = subject.mems[conv.sample_id]
        rid_of = {}
        for rid, node_id in mem.store.query("SELECT rid, id FROM nodes WHERE namespace = ?",
                                            (mem.namespace,)):
            if node_id in subject.ids[conv.sample_id]:
                rid_of[subject.ids[conv.sample_id][node_id]] = int(rid)
        for name in names:
            overrides, hook = table_[name]
            cfg = mem.config.inject.model_copy(update=overrides)
            tally = out[name]
            for q in locomo.scored(conv.qa, (1, 2, 3, 4, 5)):
                subject.embedder.recording = False
                t0 = time.perf_counter()
                probed = Probe(mem, cfg, hook).probe(q.question, budgets)
                tally.seconds.append(time.perf_counter() - t0)
                want = [rid_of[e] for e in q.evidence]
                ranked = sorted(probed.cands, key=lambda r: -probed.cands[r].base)
                pos = {r: i for i, r in enumerate(ranked)}
                for b in budgets:
                    got = set(probed.packed[b])
                    tally.recall[(q.category, b)].append(sum(r in got for r in want) / len(want))
                    if not diagnose:
                        continue
                    for r in want:
                        if r in got:
                            tally.cause[(q.category, b)]["packed"] += 1
                        elif r not in probed.cands:
                            tally.cause[(q.category, b)]["not a candidate"] += 1
                        else:
                            tally.cause[(q.category, b)]["candidate, cut"] += 1
                if examples is not None and diagnose and name == names[0] and len(examples) < 40:
                    b = budgets[len(budgets) // 2]
                    missing = [e for e, r in zip(q.evidence, want, strict=True)
                               if r not in probed.packed[b]]
                    if missing and q.category in (1, 3):
                        detail = ", ".join(
                            f"{e}: " + (f"rank {pos[rid_of[e]]}" if rid_of[e] in pos
                                        else "not a candidate") for e in missing)
                        examples.append(f"[{locomo.CATEGORIES[q.category]}] {q.question} | "
                                        f"seeds {probed.seeds} | missed at {b}: {detail}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.scratch_inject")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared"
                    / "data")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--conversations", type=int, nargs="+")
    ap.add_argument("--variants", nargs="+", default=list(variants()))
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--dates", choices=["real", "ingest"], default="real")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "remd-eval-cache" / "minilm.npz")
    args = ap.parse_args(argv)
    convs = locomo.load(args.data)
    pick = args.conversations or ((0, 1) if args.quick else None)
    if pick is not None:
        convs = [convs[i] for i in pick]
    embedder = baselines.CachedEmbedder(MiniLMEmbedder(), args.cache)
    workdir = Path(tempfile.mkdtemp(prefix="remd-scratch-"))
    subject = RemdSubject(fresh_db(workdir, "scratch.db"), Config(), embedder, dates=args.dates)
    examples: list[str] = []
    try:
        for conv in convs:
            subject.ingest(conv)
        embedder.save()
        tallies = evaluate(subject, convs, args.variants, BUDGETS, args.diagnose, examples)
    finally:
        subject.close()
    rows = []
    for name, t in tallies.items():
        head = [mean([x for c in (1, 2, 3, 4) for x in t.recall[(c, b)]]) for b in BUDGETS]
        cats = [mean(t.recall[(c, 1024)]) for c in (4, 1, 2, 3, 5)]
        ms = sorted(t.seconds)
        rows.append([name, *head, *cats, f"{1000 * ms[len(ms) // 2]:.0f}"])
    print(table(["variant", *(f"@{b}" for b in BUDGETS), "1024 single", "1024 multi",
                 "1024 temporal", "1024 open", "1024 adv", "probe ms p50"], rows))
    if args.diagnose:
        name = args.variants[0]
        t = tallies[name]
        print(f"\nWhere evidence turns went ({name}), per category and budget:\n")
        crow = []
        for c in (4, 1, 2, 3, 5):
            for b in BUDGETS:
                k = t.cause[(c, b)]
                total = sum(k.values()) or 1
                crow.append([locomo.CATEGORIES[c], b, f"{k['packed'] / total:.3f}",
                             f"{k['candidate, cut'] / total:.3f}",
                             f"{k['not a candidate'] / total:.3f}"])
        print(table(["category", "budget", "packed", "candidate, cut", "not a candidate"], crow))
        print("\nExamples (multi-hop / open-domain misses):\n")
        for line in examples:
            print(f"- {line}")
    print(f"\n{len(convs)} conversations; {math.fsum(len(locomo.scored(c.qa)) for c in convs):.0f}"
          " scored QA (categories 1-4)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
