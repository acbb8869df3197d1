"""Fact-update drift: long synthetic conversations where facts are stated, restated and changed.

In the spirit of memorylens-bench, but phrased many ways ("I moved to X", "my city has changed to
X", "I'm based in X these days", "I joined X", "my car is now a X", ...), so a fact parser tuned to
one update phrase does not pass. Each conversation is one user's turns: a fact statement or a
filler turn (small talk that shares the facts' topics but names none of their values). At each
checkpoint every fact stated so far is asked with a question that never names the value, and the
pack is checked by case-insensitive substring match, as memorylens does:

- recall: the current value is in the pack;
- stale: an earlier value of that fact is in the pack (the failure facts must never have);
- both: current and stale together (the agent has to arbitrate).

remd (``inject``) and the flat baselines see the same turns and pack with the same tokenizer.
The attributes' values, phrasings and questions and the filler turns are
``benchmarks/eval/data/drift.json``; the conversations are built from them with a seed.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.eval import baselines, datafiles
from benchmarks.eval.locomo_run import has_inject, inject
from benchmarks.eval.report import mean, table
from remd import Memory
from remd.config import EmbedConfig
from remd.text.embed import make_embedder
from remd.text.tokens import TokenCounter

BUDGETS = (64, 128, 256, 512)
METHODS = ("remd", "bm25", "dense", "rrf", "recency")
MINUTE = 60.0


@dataclass(frozen=True)
class Attribute:
    name: str
    values: tuple[str, ...]  # one persona draws its sequence from these
    state: tuple[str, ...]  # first statement / restatement of the current value
    change: tuple[str, ...]  # a new value replaces the old one
    questions: tuple[str, ...]


_DATA = datafiles.read("drift")  # benchmarks/eval/data/drift.json
ATTRIBUTES = tuple(Attribute(a["name"], tuple(a["values"]), tuple(a["state"]), tuple(a["change"]),
                             tuple(a["questions"])) for a in _DATA["attributes"])
# Filler shares the facts' topics (cities, work, food, cars, phones, pets) but no values.
FILLER: tuple[str, ...] = tuple(_DATA["filler"])


@dataclass
class Clock:
    """The conversation's time: five minutes per turn."""

    now: float

    def __call__(self) -> float:
        return self.now


@dataclass
class Event:
    turn: int
    text: str
    attr: str | None = None  # set for fact statements
    value: str | None = None


@dataclass
class Script:
    """One persona's conversation and the truth about its facts."""

    events: list[Event]
    history: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # attr -> (turn, v)

    def current(self, attr: str, turn: int) -> tuple[str | None, list[str]]:
        """(value at turn, earlier different values)."""
        seen = [v for t, v in self.history.get(attr, []) if t <= turn]
        if not seen:
            return None, []
        cur = seen[-1]
        stale = []
        for v in seen[:-1]:
            if v.casefold() != cur.casefold() and v not in stale:
                stale.append(v)
        return cur, stale


def generate(seed: int, turns: int = 240, changes: int = 2) -> Script:
    """A persona: every attribute stated early, restated and changed ``changes`` times later."""
    rng = random.Random(seed)
    plan: dict[int, tuple[Attribute, str, str]] = {}  # turn -> (attribute, kind, value)
    free = list(range(turns))
    for attr in ATTRIBUTES:
        values = rng.sample(attr.values, changes + 1)
        start = rng.randrange(0, turns // 6)
        spots = sorted(rng.sample(range(start + 5, turns - 10), changes * 2))
        moments = [(start, "state", values[0])]
        for k in range(changes):
            moments.append((spots[2 * k], "restate", values[k]))
            moments.append((spots[2 * k + 1], "change", values[k + 1]))
        for turn, kind, value in moments:
            while turn in plan:  # two facts never share a turn
                turn += 1
            plan[turn] = (attr, kind, value)
    events: list[Event] = []
    script = Script(events)
    filler = list(FILLER)
    rng.shuffle(filler)
    f = 0
    for turn in range(max(free[-1] + 1, max(plan) + 1)):
        if turn in plan:
            attr, kind, value = plan[turn]
            template = rng.choice(attr.change if kind == "change" else attr.state)
            events.append(Event(turn, template.format(v=value), attr.name, value))
            script.history.setdefault(attr.name, []).append((turn, value))
        else:
            events.append(Event(turn, filler[f % len(filler)]))
            f += 1
    return script


@dataclass
class Score:
    recall: list[float] = field(default_factory=list)
    stale: list[float] = field(default_factory=list)
    both: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def _judge(text: str, current: str, stale: Sequence[str]) -> tuple[float, float, float]:
    low = text.casefold()
    hit = current.casefold() in low
    old = any(v.casefold() in low for v in stale)
    return float(hit), float(old), float(hit and old)


def run(seeds: Sequence[int], checkpoints: Sequence[int], workdir: Path,
        budgets: Sequence[int] = BUDGETS, methods: Sequence[str] = METHODS
        ) -> dict[tuple[str, int], Score]:
    counter = TokenCounter()
    embedder = make_embedder(EmbedConfig())
    assert embedder is not None
    scores: dict[tuple[str, int], Score] = {(m, b): Score() for m in methods for b in budgets}
    for seed in seeds:
        script = generate(seed, turns=max(checkpoints))
        clock = Clock(1_700_000_000.0)
        mem = Memory(workdir / f"drift-{seed}.db", clock=clock)
        texts: list[str] = []
        vecs: list[np.ndarray] = []
        times: list[float] = []
        rng = random.Random(seed * 7 + 1)
        try:
            for event in script.events:
                clock.now += 5 * MINUTE
                mem.save(event.text)
                texts.append(event.text)
                times.append(clock.now)
                if event.turn + 1 in checkpoints:
                    vecs_now = embedder.embed(texts[len(vecs):])
                    vecs.extend(vecs_now)
                    _checkpoint(script, event.turn, mem, texts, np.stack(vecs), times, budgets,
                                counter, embedder, rng, scores, methods)
        finally:
            mem.close()
    return scores


def _checkpoint(script: Script, turn: int, mem: Memory, texts: list[str], corpus: np.ndarray,
                times: list[float], budgets: Sequence[int], counter: TokenCounter,
                embedder: object, rng: random.Random,
                scores: dict[tuple[str, int], Score], methods: Sequence[str]) -> None:
    tab = baselines.TokenTable(texts, counter)
    bm25 = baselines.BM25Ranker(texts)
    recent = baselines.recency_rank(times)
    for attr in ATTRIBUTES:
        current, stale = script.current(attr.name, turn)
        if current is None:
            continue
        question = rng.choice(attr.questions)
        t0 = time.perf_counter()
        lexical = bm25.rank(question)
        qvec = embedder.embed([question])[0]  # type: ignore[attr-defined]
        semantic = baselines.dense_rank(qvec, corpus)
        t_rank = time.perf_counter() - t0
        rankings = {"bm25": lexical, "dense": semantic,
                    "rrf": baselines.rrf([lexical, semantic]), "recency": recent}
        for budget in budgets:
            for name, ranking in rankings.items():
                if name not in methods:
                    continue
                packed = baselines.pack(ranking, tab, budget)
                text = "\n".join(texts[i] for i in packed.indices)
                _add(scores[(name, budget)], _judge(text, current, stale), packed.tokens, t_rank,
                     bool(stale))
            if "remd" not in methods:
                continue
            t0 = time.perf_counter()
            pack = inject(mem, question, budget)
            dt = time.perf_counter() - t0
            text = "\n".join(item.content for item in pack.items)
            _add(scores[("remd", budget)], _judge(text, current, stale), pack.tokens_used, dt,
                 bool(stale))


def _add(score: Score, judged: tuple[float, float, float], tokens: int, seconds: float,
         changed: bool) -> None:
    score.recall.append(judged[0])
    if changed:  # stale and both are rates over the questions asked after a change
        score.stale.append(judged[1])
        score.both.append(judged[2])
    score.tokens.append(tokens)
    score.seconds.append(seconds)


def section(*, quick: bool = False) -> None:
    seeds = (1, 2) if quick else (1, 2, 3, 4, 5, 6)
    checkpoints = (60, 120, 180, 240)
    workdir = Path(tempfile.mkdtemp(prefix="remd-drift-"))
    methods = METHODS if has_inject() else METHODS[1:]
    scores = run(seeds, checkpoints, workdir, methods=methods)
    n = len(scores[(methods[0], BUDGETS[0])].recall)
    stale_n = sum(1 for s in seeds for cp in checkpoints for a in ATTRIBUTES
                  if generate(s, max(checkpoints)).current(a.name, cp - 1)[1])
    print("## Fact-update drift (synthetic, varied phrasing)\n")
    print(f"{len(seeds)} personas x {max(checkpoints)} turns, {len(ATTRIBUTES)} facts each "
          f"stated, restated and changed twice in varied phrasing; checkpoints at "
          f"{', '.join(map(str, checkpoints))}; {n} fact questions per method and budget "
          f"({stale_n} asked after the fact changed). recall = the current value is in the "
          "pack; stale rate = an earlier value is in the pack, and current+stale = both "
          "are, over the questions asked after a change.\n")
    rows = []
    for b in BUDGETS:
        for m in methods:
            s = scores[(m, b)]
            rows.append([m, b, mean(s.recall), mean(s.stale), mean(s.both),
                         f"{mean(s.tokens):.0f}"])
    print(table(["method", "budget", "recall (current)", "stale rate", "current+stale",
                 "tokens/query"], rows) + "\n")
