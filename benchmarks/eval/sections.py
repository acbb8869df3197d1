"""The LoCoMo-based sections of ``python -m benchmarks.eval``: recall tables and REM retention."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence

from benchmarks.eval import baselines, locomo, locomo_run
from remd import Config
from remd.config import EmbedConfig, InjectConfig
from remd.text.embed import MiniLMEmbedder, OpenAIEmbedder

QUICK_CONVERSATIONS = (0, 1)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_locomo(args: argparse.Namespace) -> list[locomo.Conversation]:
    convs = locomo.load(args.data, use_audit=not args.no_audit)
    pick = args.conversations or (QUICK_CONVERSATIONS if args.quick else None)
    if pick is not None:
        convs = [convs[i] for i in pick]
    return convs


_EMBEDDER: baselines.CachedEmbedder | None = None


def embedder(args: argparse.Namespace) -> baselines.CachedEmbedder:
    global _EMBEDDER
    if _EMBEDDER is None:
        url = getattr(args, "embed_url", None)
        if url is None:
            _EMBEDDER = baselines.CachedEmbedder(MiniLMEmbedder(), args.cache)
        else:  # a second embedder: its own cache file beside MiniLM's
            inner = OpenAIEmbedder(EmbedConfig(  # a CPU server: small requests, patience
                provider="openai", base_url=url, model=args.embed_model,
                dimensions=args.embed_dimensions, batch_size=8, timeout=300))
            slug = re.sub(r"[^A-Za-z0-9.-]+", "-", f"{args.embed_model}-{args.embed_dimensions}")
            _EMBEDDER = baselines.CachedEmbedder(inner, args.cache.with_name(f"{slug}.npz"))
    return _EMBEDDER


def _methods(args: argparse.Namespace) -> tuple[str, ...]:
    methods = tuple(args.methods)
    return methods


def locomo_section(args: argparse.Namespace, convs: Sequence[locomo.Conversation]) -> None:
    methods = _methods(args)
    # query_cache=0: each budget asks the same question; every ask pays its embedding, as the
    # baselines do (CachedEmbedder keeps corpus vectors only), so latency compares like with like.
    setup = locomo_run.Setup(budgets=tuple(args.budgets), methods=methods,
                             config=Config(inject=InjectConfig(query_cache=0)),
                             embedder=embedder(args), dates=args.dates, workdir=args.workdir,
                             progress=log, db=getattr(args, "db", None))
    where = "PostgreSQL" if setup.db else "SQLite"
    log(f"LoCoMo: {len(convs)} conversations, methods {', '.join(methods)}, remd on {where}")
    results = locomo_run.run(convs, setup)
    audit = "without the audit" if args.no_audit else (
        "with the audit's correct_evidence for its 156 questions")
    print("## LoCoMo evidence recall\n")
    inner = setup.embedder.inner
    print(f"remd on {where}, embeddings by {inner.name} ({inner.dim or 'its own'} dimensions). "
          f"{len(convs)} conversation(s), {sum(len(c.turns) for c in convs)} turns; evidence "
          f"{audit}; memories dated {args.dates}; exact o200k tokens, items joined by newlines.\n")
    print(locomo_run.headline_table(results, args.budgets, methods) + "\n")
    print(locomo_run.category_table(results, args.budgets, methods) + "\n")
    print(locomo_run.first_item_table(results, args.budgets, methods) + "\n")
    print(locomo_run.cost_table(results, args.budgets, methods) + "\n")
    for note in results.notes:
        print(f"- note: {note}")


def rem_section(args: argparse.Namespace, convs: Sequence[locomo.Conversation]) -> None:
    from benchmarks.eval import rem_eval

    rem_eval.section(args, convs, embedder(args))
