"""Child process for the REM crash tests: one REM cycle on DB at a fixed ``now``, then exit.

    python -m tests.crash_rem DB NOW [LLM_BASE_URL]

Prints ``ready`` once the file is open (the parent times its SIGKILL from then), a line per
cluster written, and ``done RUN_ID`` when the run returned. With LLM_BASE_URL the clusters are
synthesised by that OpenAI-compatible server (make it slow and kills land mid-call), else by
the offline synthesiser (kills land in planning, between clusters and inside their writes).
"""

from __future__ import annotations

import sys

from remd import Memory
from remd.llm import LLMClient, LLMSettings
from remd.synthesis import LLMSynthesiser, Synthesiser


def main() -> None:
    db, now = sys.argv[1], float(sys.argv[2])
    synth: Synthesiser | None = None
    if len(sys.argv) > 3:
        synth = LLMSynthesiser(LLMClient(LLMSettings(
            base_url=sys.argv[3], api_key="sk-test", model="test-model", max_retries=0,
            timeout=30.0)))
    with Memory(db, clock=lambda: now) as m:
        print("ready", flush=True)
        run = m.run_rem(now=now, synthesiser=synth,
                        progress=lambda o: print(f"cluster {o.done}/{o.total}", flush=True))
        print(f"done {run.run_id}", flush=True)


if __name__ == "__main__":
    main()
