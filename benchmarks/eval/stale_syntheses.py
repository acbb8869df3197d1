"""Does any synthesis state as current what stopped being true?

    python -m benchmarks.eval.stale_syntheses [--llm-url URL]

Every synthesis a REM run writes on our sets is checked against the members it folded: it is
*stale* when it folds a member and a later member that ends what the first said (a problem
fixed, a plan cancelled, a state that is over: words of change, listed here on their own, not
remd's list) about the same things, unless the synthesis writes the ending too and writes the
earlier statement as past or with its day; or when it folds two values of one attribute (an
old value and its update: :func:`remd.text.updates.frame_slot`) and writes both without days.

Sets: the restated incidents (benchmarks/bench_restated.py), one hairball namespace, the
no-loss topics, the simulated life with nightly REM (benchmarks/eval/life.py), the everyday
update sets (benchmarks/eval/everyday_sets.py) with one REM run forty days after, and the LLM
fragment sets with the model's synthesiser when ``--llm-url`` is given. Prints one row per set:
syntheses written, and the stale ones with their text.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks import bench_hairball as hb
from benchmarks import bench_restated as br
from benchmarks.eval import everyday_sets, life, noloss
from benchmarks.eval.report import machine_line, table
from remd import Memory
from remd.config import Config
from remd.text import words as tx
from remd.text.updates import frame_slot, read
from remd.wire import iso

_ENDS = re.compile(
    r"\b(fixed|repaired|resolved|solved|sorted|bled|mended|replaced|cancell?ed|called off|"
    r"no longer|not any ?more|stopped|quit|ended|finished|closed|works? again|working again|"
    r"back to normal|back up|back together|is over|gave up|"
    r"(?:is|are) (?:warm|fine|ok|okay|better|gone|done) now)\b",
    re.IGNORECASE)
_PAST = re.compile(r"\b(was|were|had|until|used to|before|earlier|previously|formerly)\b",
                   re.IGNORECASE)


def _about(text: str) -> set[str]:
    names = {w.casefold() for n in tx.names(text) for w in n.split()}
    return {w for w in tx.content_words(text) if w not in names and len(w) > 3
            and not any(c.isdigit() for c in w)}


def stale(synthesis: str, members: list[tuple[float, str]]) -> str | None:
    """Why ``synthesis`` states something that stopped being true, or None."""
    ordered = sorted(members)
    for i, (_, older) in enumerate(ordered):
        if _ENDS.search(older):
            continue
        for _, newer in ordered[i + 1:]:
            shared = _about(older) & _about(newer)
            if not (_ENDS.search(newer) and shared):
                continue
            ends_written = _ENDS.search(synthesis) is not None
            if not ends_written or not _PAST.search(synthesis):
                return f"folds {older!r} and the later {newer!r}"
    for i, (_, a) in enumerate(ordered):
        ra = read(a)
        for _, b in ordered[i + 1:]:
            rb = read(b)
            if ra and rb and frame_slot(ra, rb, ra.words & rb.words) is not None and not (
                    tx.find_dates(synthesis)):
                return f"folds two values {a!r} / {b!r} with no day"
    return None


def check(mem: Memory) -> tuple[int, list[str]]:
    """(syntheses, the stale ones) of a namespace, every synthesis a run wrote (live or not)
    against the members it folded (``deprecated_by``)."""
    members: dict[str, list[tuple[float, str]]] = {}
    for sid, at, content in mem.store.query(
            "SELECT deprecated_by, created_at, content FROM nodes WHERE namespace = ? "
            "AND deprecated_by IS NOT NULL", (mem.namespace,)):
        members.setdefault(str(sid), []).append((float(at), str(content)))
    bad = []
    rows = mem.store.query("SELECT id, content FROM nodes WHERE namespace = ? "
                           "AND kind = 'synthesis'", (mem.namespace,))
    for sid, content in rows:
        why = stale(str(content), members.get(str(sid), []))
        if why:
            bad.append(f"{content} ({why})")
    return len(rows), bad


def _imported(lines: list[str], now: float, config: Config | None = None
              ) -> Callable[[], tuple[int, list[str]]]:
    def go() -> tuple[int, list[str]]:
        with Memory(Path(tempfile.mkdtemp()) / "s.db", clock=lambda: now,
                    config=config) as m:
            m.import_lines(lines)
            m.run_rem(now=now)
            return check(m)
    return go


def sets(llm_url: str | None) -> dict[str, Callable[[], tuple[int, list[str]]]]:
    out: dict[str, Callable[[], tuple[int, list[str]]]] = {}
    topics = br.make_topics(30, 10, 11)
    out["restated incidents"] = _imported(
        [json.dumps({"content": t, "created_at": iso(at)}) for _, fr in topics for t, at in fr],
        br.NOW)
    subjects = hb.make_subjects("h", 40, random.Random(7), set())
    out["hairball (40 services)"] = _imported(
        [json.dumps({"content": t, "created_at": iso(at)}) for s in subjects
         for t, at in s.fragments], hb.NOW)
    start, day = noloss.START, noloss.DAY
    lines = [json.dumps({"content": text, "created_at": iso(start + k * 7 * 3600.0)})
             for k, (text, _, _) in enumerate(f for _, fs in noloss.TOPICS for f in fs)]
    out["no-loss topics"] = _imported(lines, start + 70 * day)
    for f in everyday_sets.files():
        s = everyday_sets.load(f)
        steps = [st for it in (*s.updates, *s.controls) for st in it.steps] + list(s.unrelated)
        said = [json.dumps({"content": st.text,
                            "created_at": iso(everyday_sets.START + st.day * day)})
                for st in steps]
        last = everyday_sets.START + max(st.day for st in steps) * day
        out[f"everyday: {s.name}"] = _imported(said, last + 40 * day)

    def lived() -> tuple[int, list[str]]:
        workdir = Path(tempfile.mkdtemp())
        life.run(workdir=workdir)
        with Memory(workdir / "life-rem.db") as m:
            return check(m)
    out["simulated life, nightly REM"] = lived
    if llm_url:
        from benchmarks.eval import llm_eval

        data = json.loads((llm_eval.DATA / "llm_fragments.json").read_text())["sets"]
        config = llm_eval._config(llm_url, "local")
        out["LLM fragment sets (local model)"] = _imported(
            [json.dumps({"content": t, "created_at": iso(llm_eval.START - (10 * s + j) * day)})
             for s, item in enumerate(data) for j, t in enumerate(item["fragments"])],
            llm_eval.START + 400 * day, config)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.eval.stale_syntheses",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llm-url", default=None)
    args = ap.parse_args(argv)
    print(f"## Syntheses that state what stopped being true\n\n{machine_line()}\n")
    rows, shown = [], []
    for name, go in sets(args.llm_url).items():
        n, bad = go()
        rows.append([name, n, len(bad)])
        shown += [f"- {name}: {b}" for b in bad[:5]]
    print(table(["set", "syntheses", "stale"], rows) + "\n")
    print("\n".join(shown) or "(none)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
