"""Child process for crash tests: saves memories forever, printing each id once save returned.

    python -m tests.crash_writer DB NAMESPACE [bulk]
"""

from __future__ import annotations

import itertools
import sys

from remd import Memory


def main() -> None:
    db, ns = sys.argv[1], sys.argv[2]
    bulk = len(sys.argv) > 3 and sys.argv[3] == "bulk"
    with Memory(db, ns, embedder=None) as m:
        print("ready", flush=True)
        for i in itertools.count():
            if bulk:
                ids = m.save_many([f"{ns} bulk memory {i}-{j} about topic {j % 7}"
                                   for j in range(50)])
                print(" ".join(ids), flush=True)
            else:
                print(m.save(f"{ns} memory {i} about topic {i % 7}").id, flush=True)


if __name__ == "__main__":
    main()
