"""Fact consolidation: a long numbered list of facts in which later facts overwrite earlier ones.

Imitates the FactConsolidation split of MemoryAgentBench (Hu et al., arXiv 2507.05257): the
agent reads a long list of numbered facts, some of which are later restated with a new value,
and must answer with the newest value, single-hop and multi-hop. The data here is NOT taken
from MAB: it is synthetic, an invented world built from a fixed seed by
``benchmarks/eval/fact_world.py`` (its names and phrasings: ``benchmarks/eval/data/
fact_edits.json``): 43 entities with ten relations, each written in four or five phrasings.

About 40% of the facts get one to three later edits, written plainly, with a change cue or
with a reference to the list (``fact_world.py``). Every numbered statement ("27. The CEO of
Quendle Systems is Corvin Ashholt.") is one memory, saved ten clock minutes after the previous
one.

Measures, once everything is saved:

- single-hop (about 60 facts, most of them edited): the first item of ``inject(q, 40)`` is
  classified by the statement it is: the newest statement of the asked fact (right), an older
  statement of that fact (stale), or something else; a first item that is not a saved
  statement verbatim falls back to naming the subject and the newest (or an older) value. Also
  the share of ``inject(q, 200)`` packs (default relevance floor) that hold an older statement.
- two-hop (40 chains, "In which city is the company Tarin Brinford works for headquartered?",
  where either hop may have been edited), measured the way an agent iterates: ask hop 1's own
  question, check the first item is hop 1's newest statement; ask hop 2's question about hop 1's
  newest value, check the first item is hop 2's newest statement; the chain is right when both
  are. Also, for the whole two-hop question in one ``inject(q, 200)`` (default floor): is the
  final answer anywhere in the pack, and are both newest statements in it.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.eval.fact_world import (
    RELATIONS,
    SEED,
    TWO_HOP_MIX,
    WORLD,
    Fact,
    Statement,
    World,
)
from benchmarks.eval.report import mean, table
from remd import Memory

STEP = 600.0  # ten minutes between statements
FIRST_BUDGET, BUDGET = 40, 200


def _names(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(value)}(?![\w]|,\d)", text, re.IGNORECASE) is not None


def classify(content: str, fact: Fact, by_text: dict[str, Statement]) -> str:
    """What an item is to a question about ``fact``: newest, older or other."""
    st = by_text.get(content)
    if st is not None:
        if st.key != fact.key:
            return "other"
        return "newest" if st.version == len(fact.values) - 1 else "older"
    if not _names(content, fact.subject):  # not a saved statement (rewritten): by names
        return "other"
    if any(_names(content, v) for v in fact.values[:-1]):
        return "older"
    return "newest" if _names(content, fact.newest) else "other"


@dataclass
class SingleRow:
    question: str
    relation: str
    edits: int
    newest_kind: str  # how the newest statement was written
    first: str  # newest / older / other
    stale_in_pack: bool
    newest_in_pack: bool
    tokens: int
    first_text: str


@dataclass
class TwoHopRow:
    question: str
    kind: str
    hop1_first: str
    hop2_first: str
    answer_in_pack: bool
    both_in_pack: bool
    tokens: int
    hop1_text: str
    hop2_text: str

    @property
    def ok(self) -> bool:
        return self.hop1_first == "newest" and self.hop2_first == "newest"


@dataclass
class Result:
    single: list[SingleRow]
    two_hop: list[TwoHopRow]
    measures: dict[str, float] = field(default_factory=dict)


def _newest_kind(world: World, key: tuple[str, str]) -> str:
    return [s for s in world.statements if s.key == key][-1].kind


def run(workdir: Path | None = None, world: World = WORLD) -> Result:
    """Save every statement ten minutes apart in a fresh file, then ask the questions."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-fact-edits-"))
    by_text = {s.text: s for s in world.statements}
    now = [1_700_000_000.0]
    single: list[SingleRow] = []
    two_hop: list[TwoHopRow] = []

    with Memory(workdir / "fact_edits.db", clock=lambda: now[0]) as mem:
        for st in world.statements:
            now[0] += STEP
            mem.save(st.text)
        now[0] += STEP

        def first(question: str, fact: Fact) -> tuple[str, str]:
            pack = mem.inject(question, FIRST_BUDGET)
            top = pack.items[0].content if pack.items else ""
            return (classify(top, fact, by_text) if top else "none"), top

        for q in world.single:
            fact = world.facts[q.key]
            got, top = first(q.question, fact)
            pack = mem.inject(q.question, BUDGET)
            kinds = [classify(i.content, fact, by_text) for i in pack.items]
            single.append(SingleRow(q.question, fact.relation, len(fact.values) - 1,
                                    _newest_kind(world, q.key), got, "older" in kinds,
                                    "newest" in kinds, pack.tokens_used, top))
        for q in world.two_hop:
            f1, f2 = world.facts[q.hop1], world.facts[q.hop2]
            q1 = RELATIONS[f1.relation].questions[0].format(s=f1.subject)
            q2 = RELATIONS[f2.relation].questions[0].format(s=f2.subject)
            got1, top1 = first(q1, f1)
            got2, top2 = first(q2, f2)
            pack = mem.inject(q.question, BUDGET)
            k1 = [classify(i.content, f1, by_text) for i in pack.items]
            k2 = [classify(i.content, f2, by_text) for i in pack.items]
            two_hop.append(TwoHopRow(q.question, q.kind, got1, got2, _names(pack.text, f2.newest),
                                     "newest" in k1 and "newest" in k2, pack.tokens_used,
                                     top1, top2))

    res = Result(single, two_hop)
    n, m = len(single), len(two_hop)
    res.measures = {
        "statements": len(world.statements),
        "facts": len(world.facts),
        "edited facts": sum(len(f.values) > 1 for f in world.facts.values()),
        "single newest first": sum(r.first == "newest" for r in single) / n,
        "single older first": sum(r.first == "older" for r in single) / n,
        "single other first": sum(r.first not in ("newest", "older") for r in single) / n,
        "single packs with an outdated value": sum(r.stale_in_pack for r in single) / n,
        "single packs with the newest value": sum(r.newest_in_pack for r in single) / n,
        "single mean pack tokens": mean([r.tokens for r in single]),
        "two-hop right (iterated)": sum(r.ok for r in two_hop) / m,
        "two-hop hop 1 right": sum(r.hop1_first == "newest" for r in two_hop) / m,
        "two-hop hop 2 right": sum(r.hop2_first == "newest" for r in two_hop) / m,
        "two-hop answer in pack": sum(r.answer_in_pack for r in two_hop) / m,
        "two-hop both statements in pack": sum(r.both_in_pack for r in two_hop) / m,
        "two-hop mean pack tokens": mean([r.tokens for r in two_hop]),
    }
    return res


def _share(rows: list, pred) -> str:
    return f"{sum(1 for r in rows if pred(r))}/{len(rows)}" if rows else "-"


def section() -> None:
    res = run()
    ms = res.measures
    print("## Fact consolidation (MAB-style, synthetic)\n")
    print(f"{ms['statements']} numbered statements about {ms['facts']} facts of an invented "
          f"world, {ms['edited facts']} of them edited one to three times later in the list "
          f"(benchmarks/eval/fact_edits.py, seed {SEED}; imitates MemoryAgentBench's "
          f"FactConsolidation, data built here). One memory per statement, ten minutes apart. "
          f"First = first item of a {FIRST_BUDGET}-token pack is the fact's newest statement / "
          f"an older one / something else; pack = {BUDGET} tokens at the default floor.\n")
    s = res.single
    rows = []
    groups: list[tuple[str, list[SingleRow]]] = [
        ("all", s), ("never edited", [r for r in s if r.edits == 0]),
        ("edited once", [r for r in s if r.edits == 1]),
        ("edited 2-3 times", [r for r in s if r.edits >= 2]),
        ("newest written plainly", [r for r in s if r.newest_kind == "plain"]),
        ("newest with a change cue", [r for r in s if r.newest_kind == "cue"]),
        ("newest marked as update or correction", [r for r in s if r.newest_kind == "reference"]),
    ]
    for rel in RELATIONS:
        groups.append((f"relation: {rel}", [r for r in s if r.relation == rel]))
    for name, g in groups:
        if g:
            rows.append([name, len(g), _share(g, lambda r: r.first == "newest"),
                         _share(g, lambda r: r.first == "older"),
                         _share(g, lambda r: r.stale_in_pack),
                         _share(g, lambda r: r.newest_in_pack),
                         f"{mean([r.tokens for r in g]):.1f}"])
    print("### Single-hop\n")
    print(table(["questions", "n", "newest first", "older first", "pack has outdated",
                 "pack has newest", "pack tokens"], rows) + "\n")

    t = res.two_hop
    rows = []
    for name in ("all", *TWO_HOP_MIX):
        g = t if name == "all" else [r for r in t if r.kind == name]
        if g:
            rows.append([name, len(g), _share(g, lambda r: r.hop1_first == "newest"),
                         _share(g, lambda r: r.hop2_first == "newest"), _share(g, lambda r: r.ok),
                         _share(g, lambda r: r.answer_in_pack), _share(g, lambda r: r.both_in_pack),
                         f"{mean([r.tokens for r in g]):.1f}"])
    print("### Two-hop\n")
    print("Iterated: hop 1's question, then hop 2's question about hop 1's newest value, each "
          f"judged on the first item of a {FIRST_BUDGET}-token pack. Pack: the whole two-hop "
          f"question in one {BUDGET}-token pack (default floor).\n")
    print(table(["chains", "n", "hop 1 first", "hop 2 first", "both (right)",
                 "answer in pack", "both newest in pack", "pack tokens"], rows) + "\n")

    print("### Summary\n")
    print(table(["measure", "value"],
                [[k, f"{v:.3f}" if isinstance(v, float) else str(v)] for k, v in ms.items()])
          + "\n")
    wrong = [r for r in s if r.first != "newest"][:10]
    if wrong:
        print("### Single-hop misses (first 10)\n")
        print(table(["question", "edits", "first", "first item"],
                    [[r.question, r.edits, r.first, r.first_text[:70]] for r in wrong],
                    align=["l", "r", "l", "l"]) + "\n")
    wrong2 = [r for r in t if not r.ok][:8]
    if wrong2:
        print("### Two-hop misses (first 8)\n")
        print(table(["question", "hop 1", "hop 2", "hop 1 first item", "hop 2 first item"],
                    [[r.question, r.hop1_first, r.hop2_first, r.hop1_text[:48],
                      r.hop2_text[:48]] for r in wrong2], align=["l"] * 5) + "\n")


if __name__ == "__main__":
    section()
