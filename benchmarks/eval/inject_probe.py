"""Inject probe: where remd's inject loses LoCoMo evidence, and what a variant of it would gain.

A diagnostic, not part of the engine. ``Probe`` runs inject's read path (``_Injector.rank`` in
remd/query/inject.py: seeds, walk, candidates, scores, neighbouring-turn context) once per question,
then packs at every budget from the same scored candidates, and writes nothing (no pack rows, no
access counts), so variants can be compared on one ingested database. A variant is a named
entry of ``variants()`` (config overrides and/or a hook that rescores the candidates) or
InjectConfig overrides given inline.

    python -m benchmarks.eval.inject_probe --quick                  # defaults vs named variants
    python -m benchmarks.eval.inject_probe --variants base date_weight=0 fts_k=64,vector_k=64
    python -m benchmarks.eval.inject_probe --diagnose --examples 1 3  # misses by cause, examples

``--diagnose`` splits every evidence turn of the first variant into packed / a candidate that
the budget cut / never a candidate, per category and budget, and lists missed questions of the
``--examples`` categories with their seeds and the evidence's rank. The date boost
(``date_weight``) and the defaults ``fusion_k = 8``, ``lexical_weight = 1.5``,
``vector_k = fts_k = 32`` were chosen with it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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
from benchmarks.eval.report import Recorder, machine_line, mean, table
from remd import Config, Memory
from remd.config import InjectConfig
from remd.query import packer
from remd.query.candidates import Candidate
from remd.query.inject import _Injector
from remd.text.embed import MiniLMEmbedder
from remd.text.tagging import extract_query_tags

BUDGETS = (256, 512, 1024, 2048)
Hook = Callable[["Probe", apsw.Connection, dict[int, Candidate], str], None]


@dataclass
class Probed:
    """One question: the scored candidates and, per budget, the rids packed."""

    cands: dict[int, Candidate]
    packed: dict[int, list[int]]
    seeds: list[str] = field(default_factory=list)


class Probe(_Injector):
    """inject's read path with a swappable config and an optional rescoring hook."""

    def __init__(self, memory: Memory, cfg: InjectConfig, hook: Hook | None = None,
                 fill: bool = True) -> None:
        engine = memory.engine
        super().__init__(engine, memory.namespace, memory.clock(),
                         engine.caches.view(memory.namespace))
        self.mem = memory
        self.cfg = cfg
        self.hook = hook
        self.fill = fill

    def probe(self, query: str, budgets: Sequence[int]) -> Probed:
        cfg = self.cfg
        counter = self.mem.counter
        with self.engine.caches.use(self.ns) as view, self.mem.store.snapshot() as conn:
            self.view, self.cache, self.nodes = view, view.graph, view.mirror
            ranked = self.rank(conn, query)
            cands = ranked.cands
            if self.hook is not None:
                self.hook(self, conn, cands, query)
            packed: dict[int, list[int]] = {}
            for b in budgets:
                picked, _ = self.pack(conn, ranked, b, self.fill)
                contents, _ = self._texts(conn, [c.rid for c, _, _ in picked])
                picked, _ = packer.fit(picked, contents, b, counter, cfg.separator,
                                       self.engine.tokens_exact)
                packed[b] = [c.rid for c, _, _ in picked]
        seeds = [s.tag if s.origin == "query" else f"~{s.tag}" for s in ranked.seeds]
        return Probed(cands, packed, seeds)


# -- hooks: structural variants ------------------------------------------------------------------


def lead_tag_boost(factor: float = 1.15) -> Hook:
    """The generic form of entity_boost: a memory whose top tag (weight 1.0: the first entity
    it names) is one of the query's tags scores ``factor``x. In LoCoMo that tag is the speaker."""

    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, Candidate], q: str) -> None:
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


def prf(top: int = 3, beta: float = 1.0, k: int = 32) -> Hook:
    """Pseudo-relevance feedback: a second vector search from the query plus the centroid of
    the best ``top`` candidates; its similarities are vector evidence too."""

    def hook(probe: Probe, conn: apsw.Connection, cands: dict[int, Candidate], q: str) -> None:
        import numpy as np

        from remd.index import vectors
        from remd.store import quantisation

        best = sorted(cands.values(), key=lambda c: -c.base)[:top]
        if not best or probe.mem.embedder is None:
            return
        qv = np.asarray(probe.mem.embedder.embed([q])[0], np.float32)
        marks = ",".join("?" * len(best))
        rows = list(conn.execute(f"SELECT vec FROM node_vec_bit WHERE rid IN ({marks})",
                                 [c.rid for c in best]))
        if not rows:
            return
        mat = quantisation.from_int8([r[0] for r in rows])
        q2 = qv / np.linalg.norm(qv) + beta * mat.mean(axis=0)
        hits = vectors.knn(probe.view.bits, conn, q2, k, rerank=probe.cfg.vector_rerank)
        hits = probe._resolve(conn, hits)[:k]
        fresh = {rid: Candidate(rid) for rid, _ in hits if rid not in cands}
        probe._load(fresh)
        cands.update(fresh)
        for rid, sim in hits:
            if rid in cands:
                cands[rid].vector = max(cands[rid].vector, sim)
        probe._score(cands)
        probe._context(conn, cands)

    return hook


# -- variants ------------------------------------------------------------------------------------


def variants() -> dict[str, tuple[dict[str, Any], Hook | None]]:
    """name -> (InjectConfig overrides, hook): the structural alternatives worth re-checking.

    Measured on all ten conversations (recall@256/512/1024/2048, categories 1-4) when the
    defaults were set: ``base`` .577/.693/.780/.853; ``k64`` (deeper vector and lexical lists)
    and ``prf`` (a second vector search from the best candidates' centroid) change no budget
    by more than a point; ``lead`` (speaker boost) and ``graph.5`` were no better.
    """
    return {
        "base": ({}, None),
        "no-date": ({"date_weight": 0.0}, None),
        "no-context": ({"context_weight": 0.0}, None),
        "k64": ({"vector_k": 64, "fts_k": 64}, None),
        "graph.5": ({"graph_weight": 0.5}, None),
        "graph0": ({"graph_weight": 0.0}, None),
        "flat": ({"recency_weight": 0.0, "importance_weight": 0.0, "diversity_penalty": 0.0},
                 None),
        "vector-only": ({"graph_weight": 0.0, "lexical_weight": 0.0, "context_weight": 0.0,
                         "vector_k": 200}, None),
        "lexical-only": ({"graph_weight": 0.0, "vector_weight": 0.0, "context_weight": 0.0,
                          "fts_k": 200}, None),
        "lead": ({}, lead_tag_boost(1.15)),
        "prf": ({}, prf(3, 1.0)),
    }


@dataclass
class Tally:
    recall: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    cause: dict[tuple[int, int], Counter[str]] = field(
        default_factory=lambda: defaultdict(Counter))
    seconds: list[float] = field(default_factory=list)


def parse_variant(spec: str) -> tuple[dict[str, Any], Hook | None]:
    """A named variant, or InjectConfig overrides written ``key=value,key=value``."""
    if "=" not in spec:
        named = variants()
        if spec not in named:
            raise SystemExit(f"unknown variant {spec!r}: one of {', '.join(named)}, or key=value")
        return named[spec]
    defaults = InjectConfig()
    overrides: dict[str, Any] = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        if key not in InjectConfig.model_fields:
            raise SystemExit(f"unknown InjectConfig key {key!r} in variant {spec!r}")
        overrides[key] = type(getattr(defaults, key))(value)
    InjectConfig(**overrides)  # validated here, not half-way through a run
    return overrides, None


def evaluate(subject: RemdSubject, convs: Sequence[locomo.Conversation], names: Sequence[str],
             budgets: Sequence[int], diagnose: bool = False,
             examples: list[str] | None = None,
             example_categories: Sequence[int] = (1, 3)) -> dict[str, Tally]:
    out = {name: Tally() for name in names}
    for conv in convs:
        mem = subject.mems[conv.sample_id]
        rid_of = {}
        for rid, node_id in mem.store.query("SELECT rid, id FROM nodes WHERE namespace = ?",
                                            (mem.namespace,)):
            if node_id in subject.ids[conv.sample_id]:
                rid_of[subject.ids[conv.sample_id][node_id]] = int(rid)
        for name in names:
            overrides, hook = parse_variant(name)
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
                    if missing and q.category in example_categories:
                        detail = ", ".join(
                            f"{e}: " + (f"rank {pos[rid_of[e]]}" if rid_of[e] in pos
                                        else "not a candidate") for e in missing)
                        examples.append(f"[{locomo.CATEGORIES[q.category]}] {q.question} | "
                                        f"seeds {probed.seeds} | missed at {b}: {detail}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.inject_probe",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared"
                    / "data")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--conversations", type=int, nargs="+")
    ap.add_argument("--variants", nargs="+", default=["base", "no-date", "k64"],
                    help="named variants, or InjectConfig overrides such as date_weight=1,fts_k=64")
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--examples", type=int, nargs="+", default=[1, 3],
                    help="LoCoMo categories whose misses --diagnose lists (1 multi-hop, "
                         "2 temporal, 3 open-domain, 4 single-hop)")
    ap.add_argument("--dates", choices=["real", "ingest"], default="real")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH",
                    help="also write the printed tables here (benchmarks.eval.tables reads it)")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "remd-eval-cache" / "minilm.npz")
    args = ap.parse_args(argv)
    for spec in args.variants:  # a typo stops here, not after the ingestion
        parse_variant(spec)
    started = time.perf_counter()
    convs = locomo.load(args.data)
    pick = args.conversations or ((0, 1) if args.quick else None)
    if pick is not None:
        convs = [convs[i] for i in pick]
    embedder = baselines.CachedEmbedder(MiniLMEmbedder(), args.cache)
    workdir = tempfile.TemporaryDirectory(prefix="remd-probe-")
    subject = RemdSubject(fresh_db(Path(workdir.name), "probe.db"),
                          Config(inject=InjectConfig(query_cache=0)), embedder,
                          dates=args.dates)
    examples: list[str] = []
    try:
        for conv in convs:
            subject.ingest(conv)
        embedder.save()
        tallies = evaluate(subject, convs, args.variants, BUDGETS, args.diagnose, examples,
                           args.examples)
    finally:
        subject.close()
        workdir.cleanup()
    recorder = Recorder() if args.json else None
    with recorder.section("probe") if recorder else contextlib.nullcontext():
        _report(tallies, args, examples)
    if recorder is not None:
        given = sys.argv[1:] if argv is None else argv
        command = " ".join(["python -m benchmarks.eval.inject_probe",
                            *(a for a in given if a not in (str(args.json), "--json"))])
        results = {"machine": machine_line(), "seconds": time.perf_counter() - started,
                   "command": command, "sections": recorder.sections}
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    print(f"\n{len(convs)} conversations; {math.fsum(len(locomo.scored(c.qa)) for c in convs):.0f}"
          " scored QA (categories 1-4)", file=sys.stderr)
    return 0


def _report(tallies: dict[str, Any], args: argparse.Namespace, examples: list[str]) -> None:
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
        print("\nExamples (misses of categories " + ", ".join(map(str, args.examples)) + "):\n")
        for line in examples:
            print(f"- {line}")


if __name__ == "__main__":
    sys.exit(main())
