"""Update detection pair by pair: how :func:`remd.text.updates.judge` decides on labelled pairs.

``python -m benchmarks.eval.update_pairs [--sets everyday fact_edits life] [--show N]``

For each statement of a set, in the order it is saved, the candidates are the earlier
statements nearest to it by cosine (the packaged MiniLM, :data:`remd.write.supersede.JUDGED` of
them,
as the write path judges), and each (earlier, later) pair is labelled: an update (the set says
the later one replaces the earlier one) or not (everything else: unrelated statements,
controls, other details of the same thing). Prints, per set, how many updates are decided
``update`` or ``maybe`` and how many other pairs are (false decisions), and ``--show`` lists
missed and false ones. The sets the engine was developed on are ``everyday``, ``fact_edits``
and ``life``; ``everyday_check`` is held out.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.eval import everyday
from benchmarks.eval.report import table
from remd.text.embed import MiniLMEmbedder
from remd.text.updates import WEIGHTS, Verdict, VerdictKind, evidence, judge, probability, read
from remd.write.supersede import JUDGED


@dataclass(frozen=True)
class Pair:
    older: str
    newer: str
    cos: float
    update: bool
    verdict: Verdict | None
    features: dict[str, float] | None


def statements(name: str) -> tuple[list[str], set[tuple[str, str]]]:
    """A set's statements in save order and its (older, newer) update pairs."""
    if name in everyday.SETS:  # in the order its run() saves them
        s = everyday.load(name)
        return [text for _, text in everyday.schedule(s)], {(u.old, u.new) for u in s.updates}
    mod = importlib.import_module(f"benchmarks.eval.{name}")
    if name == "fact_edits":
        world = mod.WORLD
        order = [s.text for s in world.statements]
        by_key: dict[tuple[str, str], list[str]] = {}
        for s in sorted(world.statements, key=lambda s: (s.key, s.version)):
            by_key.setdefault(s.key, []).append(s.text)
        pairs = {(a, b) for texts in by_key.values() for i, b in enumerate(texts)
                 for a in texts[:i]}
        return order, pairs
    if name == "life":
        return mod.update_pairs()
    raise SystemExit(f"unknown set {name!r}")


def pairs_of(order: Sequence[str], updates: set[tuple[str, str]],
             embedder: MiniLMEmbedder) -> list[Pair]:
    vectors = embedder.embed(list(order))
    out: list[Pair] = []
    for i in range(1, len(order)):
        sims = vectors[:i] @ vectors[i]
        near = np.argsort(-sims)[:JUDGED]
        for rank, j in enumerate(near):
            older, newer = order[int(j)], order[i]
            if older == newer:
                continue
            cos = float(sims[j])
            margin = cos - float(sims[near[1]]) if rank == 0 and len(near) > 1 else 0.0
            kw = {"nearest": rank == 0, "margin": margin}
            ev = evidence(read(older), read(newer), cos, **kw)
            out.append(Pair(older, newer, cos, (older, newer) in updates,
                            judge(read(older), read(newer), cos, **kw),
                            ev.features if ev else None))
    return out


def fit(pairs: list[Pair], l2: float = 1.0, steps: int = 50) -> dict[str, float]:
    """Logistic regression over the pairs that have evidence (blocked ones are never updates),
    classes weighted equally, L2-regularised; the "asked" weight is kept as it is (no pair of
    the sets is asked)."""
    keys = [k for k in WEIGHTS if k != "asked"]
    rows = [p for p in pairs if p.features is not None]
    x = np.array([[p.features[k] for k in keys] for p in rows])
    y = np.array([1.0 if p.update else 0.0 for p in rows])
    w_pos = 0.5 / max(1.0, y.sum())
    w_neg = 0.5 / max(1.0, (1 - y).sum())
    sw = np.where(y == 1, w_pos, w_neg)
    sw = sw / sw.mean()
    reg = l2 * np.eye(len(keys))
    reg[0, 0] = 0.0
    w = np.zeros(len(keys))
    for _ in range(steps):  # Newton's method (IRLS)
        p = 1 / (1 + np.exp(-(x @ w)))
        grad = x.T @ (sw * (p - y)) + reg @ w
        hess = (x * (sw * p * (1 - p))[:, None]).T @ x + reg
        w -= np.linalg.solve(hess, grad)
    return {k: round(float(v), 2) for k, v in zip(keys, w, strict=True)}


def report(name: str, pairs: list[Pair], updates: int, show: int) -> list[str]:
    found = [p for p in pairs if p.update]
    def kinds(ps: list[Pair], kind: VerdictKind) -> int:
        return sum(1 for p in ps if p.verdict and p.verdict.kind is kind)
    others = [p for p in pairs if not p.update]
    row = [name, updates, len(found), kinds(found, VerdictKind.UPDATE),
           kinds(found, VerdictKind.MAYBE), len(others), kinds(others, VerdictKind.UPDATE),
           kinds(others, VerdictKind.MAYBE)]
    if show:
        print(f"\n### {name}: missed updates")
        for p in [p for p in found if p.verdict is None][:show]:
            print(f"- {p.cos:.2f} {p.older!r} -> {p.newer!r}")
        print(f"\n### {name}: false decisions")
        for p in [p for p in others if p.verdict][:show]:
            assert p.verdict is not None
            print(f"- {p.verdict.kind.value} {p.verdict.confidence:.2f} {p.older!r} -> "
                  f"{p.newer!r} ({p.verdict.reason})")
    return [str(x) for x in row]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", nargs="+", default=["everyday", "fact_edits"])
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--fit", action="store_true", help="fit the weights on these sets")
    args = ap.parse_args(argv)
    embedder = MiniLMEmbedder()
    rows = []
    every: list[Pair] = []
    for name in args.sets:
        order, updates = statements(name)
        pairs = pairs_of(order, updates, embedder)
        every += pairs
        rows.append(report(name, pairs, len(updates), args.show))
    if args.fit:
        print(fit(every))
    pos = [probability(p.features) for p in every if p.update and p.features]
    neg = [probability(p.features) for p in every if not p.update and p.features]
    total = sum(1 for p in every if p.update)
    print(table(["probability >=", "updates above", "other pairs above"],
                [[f"{t:.2f}", f"{sum(x >= t for x in pos)}/{total}", sum(x >= t for x in neg)]
                 for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)]))
    print(table(["set", "updates", "among candidates", "-> update", "-> maybe",
                 "other pairs", "false update", "false maybe"], rows))


if __name__ == "__main__":
    main()
