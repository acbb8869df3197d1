"""``python -m benchmarks.eval``: every evaluation table, as markdown on stdout.

    python -m benchmarks.eval                      # everything (LoCoMo ~ minutes on 2 cores)
    python -m benchmarks.eval --quick              # 2 conversations, for iterating
    python -m benchmarks.eval --only locomo drift  # some sections
    python -m benchmarks.eval --data DIR           # where locomo10.json lives
    python -m benchmarks.eval --json results.json  # the same, and the results as JSON
    python -m benchmarks.eval.tables results.json  # the tables again, from that file

Sections: ``locomo`` (evidence recall vs BM25 / dense / RRF / recency), ``drift`` (synthetic fact
updates with varied phrasing), ``memorylens`` (memorylens-bench 0.4.0 with remd as a backend),
``rem`` (LoCoMo recall and live nodes before and after a forced REM cycle), ``personal``
(forty personal memories: the right one first at 40 tokens, tokens used with the relevance
floor, nothing stale), ``truth`` (everyday updates, fact edits, no-loss consolidation and a
simulated life against the truth issue's targets: benchmarks/eval/truth.py), ``llm`` (the update
judge, tagging and REM beside a real model given by ``--llm-url``: benchmarks/eval/llm_eval.py),
``answers`` (a reader model given by ``--llm-url`` answers from remd's pack and the baselines':
right, stale and unknown answers; benchmarks/eval/answers.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.eval.report import Recorder, machine_line
from remd.logs import configure_logging

SECTIONS = ("locomo", "drift", "memorylens", "rem", "personal", "truth", "llm", "answers")
REPO = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data",
                    help="directory holding locomo10.json and locomo_audit_errors.json")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--quick", action="store_true", help="2 LoCoMo conversations, fewer seeds")
    ap.add_argument("--conversations", type=int, nargs="+", default=None,
                    help="LoCoMo conversation indices (0-9) to run")
    ap.add_argument("--budgets", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--methods", nargs="+",
                    default=["remd", "remd-floor", "bm25", "dense", "rrf", "recency"],
                    help="remd: packed to the budget (fill); remd-floor: the default floor")
    ap.add_argument("--dates", choices=["real", "ingest"], default="real",
                    help="memories created at their session date (real) or all at once")
    ap.add_argument("--no-audit", action="store_true", help="use LoCoMo's evidence as given")
    ap.add_argument("--cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "remd-eval-cache" / "minilm.npz",
                    help="embedding cache (content hash -> vector) for LoCoMo turns")
    ap.add_argument("--embed-url", default=None, metavar="URL",
                    help="LoCoMo and REM sections: embed with this OpenAI-compatible endpoint "
                         "(python -m benchmarks.llm_local start --embeddings serves one) "
                         "instead of the built-in MiniLM, for remd and the dense baselines")
    ap.add_argument("--embed-model", default="local", help="the endpoint's embedding model")
    ap.add_argument("--embed-dimensions", type=int, default=None,
                    help="the size asked of the endpoint (default: the model's own)")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the databases here")
    ap.add_argument("--db", default=None, metavar="URL",
                    help="LoCoMo section: remd on this PostgreSQL database (its schema "
                         "remd_eval, made afresh) instead of a SQLite file")
    ap.add_argument("--densities", type=float, nargs="+", default=None,
                    help="REM section: offline synthesis densities to compare (default: the "
                         "config's rem.offline_density)")
    ap.add_argument("--llm-url", default=None, metavar="URL",
                    help="llm section: an OpenAI-compatible base URL (python -m "
                         "benchmarks.llm_local start serves a local model); without it the "
                         "section is skipped")
    ap.add_argument("--llm-model", default="local", help="llm section: the model name")
    ap.add_argument("--llm-parts", nargs="+", choices=["judge", "tagging", "rem"],
                    default=["judge", "tagging", "rem"], help="llm section: which parts")
    ap.add_argument("--answers-sets", nargs="*", default=None, metavar="NAME",
                    help="answers section: these everyday sets (default: every v* set)")
    ap.add_argument("--answers-locomo", type=int, default=1, metavar="N",
                    help="answers section: N LoCoMo questions of each category 1-4 per "
                         "conversation (0: none)")
    ap.add_argument("--json", type=Path, default=None, metavar="PATH",
                    help="also write each section's results here as JSON (its text and its "
                         "tables' rows); python -m benchmarks.eval.tables PATH prints them again")
    args = ap.parse_args(argv)
    # The tables go to stdout; remd's own log lines (REM runs, warnings) to stderr.
    configure_logging("console", "warning", stream=sys.stderr)

    machine = machine_line()
    print(f"remd evaluation — {machine}\n")
    t0 = time.perf_counter()
    recorder = Recorder() if args.json else None

    def section(name: str, run: Callable[[], object]) -> None:
        with recorder.section(name) if recorder else contextlib.nullcontext():
            run()

    convs: list[object] = []
    if "locomo" in args.only or "rem" in args.only or (
            "answers" in args.only and args.answers_locomo and args.llm_url):
        from benchmarks.eval import sections

        convs = list(sections.load_locomo(args))
        if "locomo" in args.only:
            section("locomo", lambda: sections.locomo_section(args, convs))
        if "rem" in args.only:
            section("rem", lambda: sections.rem_section(args, convs))
    if "drift" in args.only:
        from benchmarks.eval import drift

        section("drift", lambda: drift.section(quick=args.quick))
    if "memorylens" in args.only:
        from benchmarks.eval import memorylens_run

        section("memorylens", lambda: memorylens_run.section(quick=args.quick))
    if "personal" in args.only:
        from benchmarks.eval import personal

        section("personal", personal.section)
    if "truth" in args.only:
        from benchmarks.eval import truth

        section("truth", lambda: truth.main(["--skip", "life"] if args.quick else []))
    if "llm" in args.only:
        from benchmarks.eval import llm_eval

        section("llm", lambda: llm_eval.section(args.llm_url, args.llm_model,
                                                tuple(args.llm_parts)))
    if "answers" in args.only:
        from benchmarks.eval import answers

        section("answers", lambda: answers.section(
            args.llm_url, args.llm_model, sets=args.answers_sets,
            locomo_convs=convs if args.answers_locomo else (),
            per_category=args.answers_locomo))
    total = time.perf_counter() - t0
    print(f"\n(total {total:.0f} s)")
    if recorder is not None:
        given = sys.argv[1:] if argv is None else argv
        command = " ".join(["python -m benchmarks.eval",
                            *(a for a in given if a != str(args.json) and a != "--json")])
        args.json.write_text(json.dumps({"machine": machine, "seconds": total,
                                         "command": command,
                                         "sections": recorder.sections}, indent=1,
                                        ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
