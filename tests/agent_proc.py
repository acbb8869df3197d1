"""One agent process for tests/suites/test_multiprocess.py: saves and injects through its own
``Memory`` on the shared file while the daemon consolidates it.

Usage: python -m tests.agent_proc DB NAMESPACE AGENT_NO OPS DEADLINE_SECONDS STOP_FILE OUT.json

Runs OPS operations, or fewer once STOP_FILE exists (the test creates it when it has seen the
daemon consolidate enough) or DEADLINE_SECONDS have passed — but always at least MIN_OPS, so a
loaded machine still exercises every call. Writes ``{"saved": [ids], "packs": n,
"feedback": n, "errors": [...]}`` to OUT.json. Every
RemdError (e.g. DatabaseLocked) is recorded as an error; anything else crashes the process,
which the test sees as a non-zero exit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from remd import Memory, RemdError

PROJECTS = ["Falcon", "Heron", "Juniper", "Quartz", "Marlin", "Cobalt"]
PEOPLE = ["Priya Sharma", "Lars Olsen", "Mei Chen", "Tomas Novak", "Aisha Bello", "Diego Ruiz"]
# Restatements (what REM folds), a distinct fact per agent and op, and a changing fact.
TEMPLATES = [
    "Project {p} had timeouts again.",
    "Saw timeouts on project {p} again.",
    "Budget for {p} approved: {n} thousand euros.",
    "Project {p} timed out once more, {who} looked at it.",
    "Timeouts on project {p} again.",
    "My favourite colour is now {colour}.",
]
COLOURS = ["teal", "amber", "crimson", "olive", "violet"]
MIN_OPS = 6


def main() -> int:
    db, namespace, agent, ops, deadline_s, stop_file, out = sys.argv[1:8]
    n_agent, n_ops = int(agent), int(ops)
    deadline = time.monotonic() + float(deadline_s)
    saved: list[str] = []
    errors: list[str] = []
    packs = feedback = 0
    with Memory(db, namespace) as mem:
        for i in range(n_ops):
            if i >= MIN_OPS and (time.monotonic() > deadline or os.path.exists(stop_file)):
                break
            p = PROJECTS[(n_agent + i) % len(PROJECTS)]
            text = TEMPLATES[i % len(TEMPLATES)].format(
                p=p, who=PEOPLE[i % len(PEOPLE)], n=1000 * n_agent + i,
                colour=COLOURS[(n_agent + i) % len(COLOURS)])
            try:
                saved.append(mem.save(text, source=f"agent-{n_agent}").id)
                if i % 3 == 1:
                    pack = mem.inject(f"what happened with project {p}?", 120)
                    packs += 1
                    if pack.items:
                        mem.feedback(pack.pack_id, i % 2 == 0)
                        feedback += 1
            except RemdError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
    Path(out).write_text(json.dumps({"saved": saved, "packs": packs, "feedback": feedback,
                                     "errors": errors}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
