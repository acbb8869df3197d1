"""Statements per memory a save sends to PostgreSQL, counted by the server.

    python -m benchmarks.pg_statements URL [--n 200]

URL is a database whose server loads pg_stat_statements (benchmarks/pg_local.py starts one so):
its counters are reset, ``--n`` memories are saved one ``save()`` at a time (no embedder),
then as one ``save_many`` (no embedding), each in a fresh schema, and the calls counted
per memory: the statements the client sent (top level) and those the triggers ran (nested).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_save import corpus  # noqa: E402
from benchmarks.pg_local import schema_url  # noqa: E402
from remd import Memory  # noqa: E402


def _counts(url: str) -> tuple[int, int]:
    """(top-level calls, nested calls) of database remd since the last reset; resets."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0), "
            "coalesce(sum(calls) FILTER (WHERE NOT toplevel), 0) "
            "FROM public.pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = 'remd'").fetchone()
        conn.execute("SELECT public.pg_stat_statements_reset()")
    assert row is not None
    return int(row[0]), int(row[1])


def measure(url: str, n: int) -> dict[str, tuple[float, float]]:
    """{"save": (client statements per memory, trigger statements per memory), "save_many":
    ...}, opening and migrating excluded."""
    out: dict[str, tuple[float, float]] = {}
    texts = corpus(n, seed=11)
    for label in ("save", "save_many"):
        where = schema_url(url, f"stmts_{label}", fresh=True)
        with Memory(where, embedder=None) as m:
            m.save("warm-up")
            _counts(url)
            if label == "save":
                for text in texts:
                    m.save(text)
            else:
                m.save_many(texts, embed=False)
            top, nested = _counts(url)
        out[label] = (top / n, nested / n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    print("| operation | client statements/memory | trigger statements/memory |")
    print("|---|---:|---:|")
    for label, (top, nested) in measure(args.url, args.n).items():
        print(f"| {label} | {top:.1f} | {nested:.1f} |")


if __name__ == "__main__":
    main()
