"""memorylens-bench 0.4.0 (MIT, PyPI) with remd as one more backend, beside its own.

memorylens has no plug-in registry: ``run_benchmark`` builds backends with its module-level
``_make_memory(name)``. We wrap that factory so the name ``"remd"`` builds :class:`RemdMemory`
and every other name still reaches memorylens's own code.

Its embedding backends load ``SentenceTransformer("all-MiniLM-L6-v2")`` from the Hugging Face
hub, which is unreachable here; we hand its ``embeddings`` module the same model remd ships
(all-MiniLM-L6-v2, int8 ONNX) behind the ``encode`` method it calls. ``faiss`` (not installed)
and LLM-judged metrics are left out. Token figures are memorylens's own estimate (characters / 4)
for every backend, remd included, so the column compares like with like.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.eval.locomo_run import inject
from benchmarks.eval.report import mean, table
from remd import Memory
from remd.config import EmbedConfig
from remd.text.embed import make_embedder

BUDGET = 300  # tokens per get_context pack (the adapter budget)
THEIR_BACKENDS = ("naive", "rag", "rag_chunked", "cascading", "summary", "entity", "graph")
CHECKPOINTS = (10, 25, 50, 75, 100)


class _MiniLMForMemorylens:
    """The ``SentenceTransformer.encode`` subset memorylens calls, on remd's offline MiniLM."""

    def __init__(self) -> None:
        self._inner = make_embedder(EmbedConfig())

    def encode(self, texts: Sequence[str], normalize_embeddings: bool = True,
               show_progress_bar: bool = False) -> np.ndarray:
        assert self._inner is not None
        return np.asarray(self._inner.embed(list(texts)))


def _base_memory() -> type:
    from memorylens.memory.base import BaseMemory

    return BaseMemory


def make_remd_backend(workdir: Path, budget: int = BUDGET) -> Any:
    """A memorylens ``BaseMemory`` backed by a fresh remd file (built lazily: optional dep)."""

    class RemdMemory(_base_memory()):  # type: ignore[misc]
        """remd behind memorylens's interface: user turns are saved, get_context injects.

        The assistant's canned acknowledgements ("Understood.") are not saved: they carry
        nothing to remember. Time follows the turn number (one minute per turn).
        """

        name = "remd"

        def __init__(self) -> None:
            self._n = 0
            self._open()

        def _open(self) -> None:
            self._n += 1
            self._now = 1_700_000_000.0
            self.mem = Memory(workdir / f"memorylens-{id(self)}-{self._n}.db",
                              clock=lambda: self._now)

        def add_message(self, role: str, content: str, turn: int) -> None:
            self._now = 1_700_000_000.0 + 60.0 * turn
            if role == "user":
                self.mem.save(content)

        def get_context(self, query: str, current_turn: int) -> list[dict[str, str]]:
            self._now = 1_700_000_000.0 + 60.0 * current_turn + 30.0
            pack = inject(self.mem, query, budget)
            return [{"role": "system", "content": item.content} for item in pack.items]

        def reset(self) -> None:
            self.mem.close()
            self._open()

    return RemdMemory


def run(scenarios: Sequence[str] | None = None, personas: int | None = None,
        workdir: Path | None = None) -> dict[str, dict[str, list[Any]]]:
    """scenario -> backend -> [CheckpointResult of every persona, every checkpoint]."""
    from memorylens.evaluation import benchmark
    from memorylens.simulator.scenarios import SCENARIOS
    from memorylens.utils import embeddings

    embeddings._model = _MiniLMForMemorylens()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-memorylens-"))
    remd_cls = make_remd_backend(workdir)
    original = benchmark._make_memory

    def factory(name: str, decay: str = "ebbinghaus") -> Any:
        return remd_cls() if name == "remd" else original(name, decay)

    benchmark._make_memory = factory
    out: dict[str, dict[str, list[Any]]] = {}
    try:
        for name in scenarios or list(SCENARIOS):
            scenario = SCENARIOS[name]
            pool = scenario.persona_pool[:personas] if personas else scenario.persona_pool
            per: dict[str, list[Any]] = {b: [] for b in ("remd", *THEIR_BACKENDS)}
            for facts in pool:
                results = benchmark.run_benchmark(
                    total_turns=max(CHECKPOINTS), eval_checkpoints=list(CHECKPOINTS),
                    facts=facts, backends=list(per), filler_turns=scenario.filler_turns)
                for backend, res in results.items():
                    per[backend].extend(res.checkpoints)
            out[name] = per
    finally:
        benchmark._make_memory = original
    return out


def section(*, quick: bool = False) -> None:
    results = run(personas=1 if quick else None)
    print("## memorylens-bench 0.4.0\n")
    print(f"All scenarios and personas of memorylens-bench 0.4.0, {max(CHECKPOINTS)} turns, "
          f"checkpoints {', '.join(map(str, CHECKPOINTS))}; remd packs {BUDGET} tokens per "
          "query. Figures are means over personas and checkpoints; min recall, max drift and "
          "max contradiction are over every checkpoint of every persona. tokens = memorylens's "
          "own estimate (chars/4).\n")
    for scenario, per in results.items():
        rows = []
        for backend, cps in per.items():
            rows.append([backend, mean([c.recall for c in cps]), min(c.recall for c in cps),
                         mean([c.drift for c in cps]), max(c.drift for c in cps),
                         max(c.contradiction for c in cps), mean([c.precision for c in cps]),
                         mean([c.noise for c in cps]), f"{mean([c.tokens for c in cps]):.0f}"])
        personas = len(per["remd"]) // len(CHECKPOINTS)
        print(f"Scenario `{scenario}` ({personas} personas):\n")
        print(table(["backend", "recall", "min recall", "drift", "max drift",
                     "max contradiction", "precision@5", "noise", "tokens"], rows) + "\n")
