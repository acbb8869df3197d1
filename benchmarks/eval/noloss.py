"""No-loss consolidation: topics told in fragments, one REM run, and every detail must survive.

Sixteen topics (work, home, family, hobbies, health, travel, money, events), each told in exactly
four fragments a person drops to an assistant over several days: each fragment adds ONE detail
about the topic (a name, a number with its unit, a date, a weekday, a place, a brand or model, a
plain word like "backyard"). Twenty unrelated single memories sit in the same namespace. The 84
memories are saved hours apart over three weeks, a topic's fragments on different days
(interleaved with a fixed seed), in a fresh file. The topics, fragments and unrelated memories
are ``benchmarks/eval/data/noloss.json``.

A day after the last save, per fragment: is its ``detail`` (a phrase written in that fragment
only) in the live memories' text, and in the text of ``inject(question, 200)`` (default relevance
floor) for a question that asks for it; plus live memories and their o200k tokens. Then 40 days
pass without use, ONE REM cycle runs at that time (offline synthesiser), and a day later the same
is measured again. A consolidation that loses nothing keeps 64/64 details in some live memory's
text (case-insensitive) and in the packs; a useful one also makes memory denser (fewer live
memories, live tokens ratio after/before below 1). The per-topic table lists the details lost
from live text, the ones the pack no longer finds, the REM plan's clusters that held the topic's
fragments (from a dry run at the same time) with what became of each, and the synthesis text(s)
made from them (DERIVED_FROM, followed transitively). ``run(density=...)`` runs REM with an
offline synthesiser at that density instead (a lossy extract below 1: the check must see it).
"""

from __future__ import annotations

import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.eval import datafiles
from benchmarks.eval.report import mean, table
from remd import Memory

_DATA = datafiles.read("noloss")  # benchmarks/eval/data/noloss.json
# (topic, ((fragment, detail, question), x4)); the detail is a case-insensitive substring of its
# fragment and of no other memory of the set (checked by _check()).
TOPICS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = tuple(
    (t["topic"], tuple((f["text"], f["detail"], f["question"]) for f in t["fragments"]))
    for t in _DATA["topics"])
UNRELATED: tuple[str, ...] = tuple(_DATA["unrelated"])

SEED = 7
DAYS = 21  # the saves span three weeks
BUDGET = 200
START = 1_700_000_000.0
DAY = 86_400.0
HOUR = 3_600.0
IDLE_DAYS = 40  # unused long enough for REM to flag them


def _check() -> None:
    """Each detail is in its own fragment and in no other memory of the set."""
    texts = [f for _, frags in TOPICS for f, _, _ in frags] + list(UNRELATED)
    for _, frags in TOPICS:
        assert len(frags) == 4
        for text, detail, _ in frags:
            hits = [t for t in texts if detail.lower() in t.lower()]
            assert hits == [text], (detail, hits)


@dataclass
class Fragment:
    topic: str
    text: str
    detail: str
    question: str
    node_id: str = ""
    live_before: bool = False
    found_before: bool = False
    live_after: bool = False
    found_after: bool = False


@dataclass
class State:
    """Live memories, their tokens, and the mean tokens of the 200-token packs."""
    live: int
    live_tokens: int
    pack_tokens: float


@dataclass
class TopicRow:
    topic: str
    live_after: int
    found_before: int
    found_after: int
    lost: list[str]  # details in no live memory after REM
    missed: list[str]  # details still live but not in their question's pack after REM
    syntheses: list[str]  # live synthesis texts derived from the topic's fragments
    clusters: list[str]  # the REM plan's clusters holding its fragments, and what became of them


@dataclass
class Result:
    fragments: list[Fragment]
    before: State
    after: State
    rem: dict[str, int]
    topics: list[TopicRow]
    syntheses: list[str] = field(default_factory=list)  # every live synthesis text
    mixed: int = 0  # syntheses derived from more than one topic (or a topic and an unrelated one)
    pure_clusters: int = 0  # planned clusters whose members are all fragments of one topic
    skip_reasons: dict[str, int] = field(default_factory=dict)  # skipped clusters per reason


def _schedule(rng: random.Random) -> list[tuple[float, str, int | None]]:
    """(time, text, fragment index or None): a topic's four fragments on four different days
    (in order), the unrelated memories on random days, hours apart within a day."""
    by_day: dict[int, list[tuple[str, int | None]]] = {d: [] for d in range(DAYS)}
    k = 0
    for _, frags in TOPICS:
        for day, (text, _, _) in zip(sorted(rng.sample(range(DAYS), 4)), frags, strict=True):
            by_day[day].append((text, k))
            k += 1
    for text in UNRELATED:
        by_day[rng.randrange(DAYS)].append((text, None))
    out = []
    for day, items in by_day.items():
        rng.shuffle(items)  # a topic has one fragment a day, so its order holds
        gap = min(3 * HOUR, 14 * HOUR / max(len(items), 1))
        for slot, (text, idx) in enumerate(items):
            out.append((START + day * DAY + 8 * HOUR + slot * gap, text, idx))
    return out


def _live_texts(mem: Memory) -> list[str]:
    return [str(r[0]).lower() for r in mem.store.query(
        "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (mem.namespace,))]


def _measure(mem: Memory, frags: list[Fragment], after: bool) -> State:
    texts = _live_texts(mem)
    pack_tokens = []
    for f in frags:
        d = f.detail.lower()
        live = any(d in t for t in texts)
        pack = mem.inject(f.question, BUDGET)
        pack_tokens.append(pack.tokens_used)
        found = d in pack.text.lower()
        if after:
            f.live_after, f.found_after = live, found
        else:
            f.live_before, f.found_before = live, found
    live_tokens = int(mem.store.scalar(
        "SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? AND status = 'live'",
        (mem.namespace,)))
    return State(len(texts), live_tokens, mean(pack_tokens))


def _leaves(mem: Memory, node_id: str) -> set[str]:
    """The saved memories a synthesis derives from (DERIVED_FROM, followed transitively)."""
    out: set[str] = set()
    todo, seen = [node_id], {node_id}
    while todo:
        src = todo.pop()
        kids = [str(r[0]) for r in mem.store.query(
            "SELECT dst FROM edges WHERE namespace = ? AND src = ? AND type = 'DERIVED_FROM'",
            (mem.namespace, src))]
        if not kids and src != node_id:
            out.add(src)
        for k in kids:
            if k not in seen:
                seen.add(k)
                todo.append(k)
    return out


def run(workdir: Path | None = None, density: float | None = None) -> Result:
    """The measurements, in a fresh file; ``density`` runs REM with an offline synthesiser at
    that density instead of the default one (as benchmarks/eval/rem_eval.py does)."""
    _check()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-noloss-"))
    frags = [Fragment(topic, text, detail, question)
             for topic, items in TOPICS for text, detail, question in items]
    now = [START]
    with Memory(workdir / "noloss.db", clock=lambda: now[0]) as mem:
        for at, text, idx in sorted(_schedule(random.Random(SEED)), key=lambda x: x[0]):
            now[0] = at
            node = mem.save(text)
            if idx is not None:
                frags[idx].node_id = node.id
        now[0] += DAY
        before = _measure(mem, frags, after=False)
        now[0] += IDLE_DAYS * DAY
        topic_of = {f.node_id: f.topic for f in frags}
        plan = mem.run_rem(now=now[0], dry_run=True).plan  # the same clusters, nothing written
        outcomes: dict[int, Any] = {}
        extra: dict[str, Any] = {}
        if density is not None:
            from remd.sleep.rem import sentence_embed
            from remd.sleep.synthesis import OfflineSynthesiser
            extra["synthesiser"] = OfflineSynthesiser(
                density, count=mem.engine.counter.count, embed=sentence_embed(mem.engine))
        rem = mem.run_rem(now=now[0], progress=lambda o: outcomes.__setitem__(o.cluster_no, o),
                          **extra)
        now[0] += DAY
        after = _measure(mem, frags, after=True)
        synth: list[tuple[str, set[str]]] = []
        for sid, content in mem.store.query(
                "SELECT id, content FROM nodes WHERE namespace = ? AND status = 'live' "
                "AND kind = 'synthesis' ORDER BY rid", (mem.namespace,)):
            synth.append((str(content), _leaves(mem, str(sid))))
    rows = []
    made: dict[str, list[str]] = {topic: [] for topic, _ in TOPICS}
    pure = 0
    for cluster in plan:
        topics = [topic_of.get(m.id, "(unrelated)") for m in cluster.members]
        pure += len(set(topics)) == 1 and topics[0] != "(unrelated)"
        out = outcomes.get(cluster.cluster_no)
        fate = _fate(out if out is None or out.size == len(cluster.members) else None)
        for topic in dict.fromkeys(topics):
            if topic in made:
                others = len(topics) - topics.count(topic)
                made[topic].append(f"{topics.count(topic)}" + (f"+{others} other" if others
                                                                else "") + f": {fate}")
    reasons: dict[str, int] = {}
    for out in outcomes.values():
        if str(out.status.value) == "skipped":
            key = str(out.reason or "").split(":", 1)[0] or "?"
            reasons[key] = reasons.get(key, 0) + 1
    for topic, _ in TOPICS:
        mine = [f for f in frags if f.topic == topic]
        ids = {f.node_id for f in mine}
        rows.append(TopicRow(
            topic, sum(f.live_after for f in mine), sum(f.found_before for f in mine),
            sum(f.found_after for f in mine), [f.detail for f in mine if not f.live_after],
            [f.detail for f in mine if f.live_after and not f.found_after],
            [text for text, leaves in synth if leaves & ids], made[topic]))
    mixed = sum(1 for _, leaves in synth
                if len({topic_of.get(i, "(unrelated)") for i in leaves}) > 1)
    counts = {"flagged": rem.flagged, "clusters": rem.clusters, "synthesised": rem.synthesised,
              "skipped": rem.skipped, "live_before": rem.live_before,
              "live_after": rem.live_after}
    return Result(frags, before, after, counts, rows, [t for t, _ in synth], mixed, pure,
                  reasons)


def _fate(out: Any) -> str:
    """A planned cluster's outcome in a few words."""
    if out is None:
        return "not run as planned"
    status = str(out.status.value)
    m = re.search(r"into (\d+) tokens.*densest: (\d+)", out.reason or "")
    if m:
        return f"{status}, not denser ({m.group(2)} > {m.group(1)} tok)"
    return status + (f" ({(out.reason or '')[:40]})" if out.reason else "")


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def section() -> None:
    res = run()
    n = len(res.fragments)
    print("## No-loss consolidation\n")
    print(f"{len(TOPICS)} topics told in 4 fragments each ({n} fragments, one new detail per "
          f"fragment) and {len(UNRELATED)} unrelated memories, saved hours apart over {DAYS} "
          f"days (benchmarks/eval/noloss.py). Measured a day after the last save, then "
          f"{IDLE_DAYS} days later one REM run (offline synthesiser) and measured again a day "
          f"after it. live = the detail is in some live memory's text; @{BUDGET} = it is in the "
          f"text of inject(question, {BUDGET}) with the default floor.\n")
    b, a, r = res.before, res.after, res.rem
    print(table(["measure", "before REM", "after REM"], [
        ["details in live text", f"{sum(f.live_before for f in res.fragments)}/{n}",
         f"{sum(f.live_after for f in res.fragments)}/{n}"],
        [f"details found @{BUDGET}", f"{sum(f.found_before for f in res.fragments)}/{n}",
         f"{sum(f.found_after for f in res.fragments)}/{n}"],
        ["live memories", b.live, a.live],
        ["live tokens", b.live_tokens, a.live_tokens],
        ["live tokens ratio (after/before)", "",
         f"{a.live_tokens / b.live_tokens:.3f}" if b.live_tokens else "n/a"],
        [f"mean pack tokens @{BUDGET}", f"{b.pack_tokens:.1f}", f"{a.pack_tokens:.1f}"],
        ["REM flagged / clusters / synthesised / skipped", "",
         f"{r['flagged']} / {r['clusters']} / {r['synthesised']} / {r['skipped']}"],
        ["planned clusters of one topic only", "", f"{res.pure_clusters}/{r['clusters']}"],
        ["skip reasons", "", ", ".join(f"{k} {v}" for k, v in res.skip_reasons.items()) or "-"],
        ["syntheses mixing topics", "", res.mixed],
    ]) + "\n")
    print(table(["topic", "live after", f"@{BUDGET} before", f"@{BUDGET} after",
                 "lost from live text", f"missed @{BUDGET} after", "REM clusters",
                 "synthesis text(s)"],
                [[t.topic, f"{t.live_after}/4", f"{t.found_before}/4", f"{t.found_after}/4",
                  ", ".join(t.lost) or "-", ", ".join(t.missed) or "-",
                  "; ".join(t.clusters) or "-",
                  " // ".join(_cell(s) for s in t.syntheses) or "-"] for t in res.topics],
                align=["l", "r", "r", "r", "l", "l", "l", "l"]) + "\n")


if __name__ == "__main__":
    section()
