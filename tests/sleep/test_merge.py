"""The merging offline synthesiser (remd/sleep/merge.py) and the text module it reads with
(remd/text/words.py): real MiniLM sentence vectors, real o200k token counts."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from remd import Memory, NodeStatus
from remd.errors import NotDenser
from remd.logs import capture_events
from remd.sleep.merge import anchors_of, merge, target_tokens
from remd.text.embed import MiniLMEmbedder
from remd.text.tokens import TokenCounter
from remd.text.words import find_dates, format_days, names, sentences
from remd.wire import iso

COUNT = TokenCounter().count
NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()
DAY = 86400.0


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def at(d: str) -> float:
    return datetime.fromisoformat(d).replace(tzinfo=UTC).timestamp()


def run(embedder: MiniLMEmbedder, frags: list[tuple[str, str]]) -> tuple[str, tuple[int, ...]]:
    texts = [t for t, _ in frags]
    merged = merge(texts, [at(d) for _, d in frags], count=COUNT,
                   vectors=list(embedder.embed(texts)), embed=embedder.embed)
    return merged.text, merged.fragments


RESTATED = [
    ("The payments service had timeouts again on 2025-01-12.", "2025-01-12"),
    ("Saw timeouts in the payments service on 3 Feb 2025; it uses Redis.", "2025-02-03"),
    ("The payments service had timeouts on March 14, 2025.", "2025-03-14"),
    ("Timeouts hit the payments service on 2025-04-02.", "2025-04-02"),
    ("The payments service had timeouts again on 2025-05-20.", "2025-05-20"),
    ("Saw timeouts in the payments service on 2025-06-08.", "2025-06-08"),
    ("The payments service timed out again on 2025-07-01.", "2025-07-01"),
    ("Timeouts hit the payments service on 2025-08-15.", "2025-08-15"),
    ("The payments service had timeouts on 2 Sep 2025.", "2025-09-02"),
    ("Saw timeouts in the payments service again on 2025-10-21.", "2025-10-21"),
]


def test_restatements_become_one_statement_with_every_date(embedder: MiniLMEmbedder) -> None:
    text, folded = run(embedder, RESTATED)
    assert folded == tuple(range(len(RESTATED)))
    members = [COUNT(t) for t, _ in RESTATED]
    assert COUNT(text) <= target_tokens(members) < sum(members)
    assert text.count("payments service") == 1 and "Redis" in text
    written = {d.key for d in find_dates(text)}
    assert {d for _, d in RESTATED} <= written  # every date, whatever format it came in
    assert anchors_of([t for t, _ in RESTATED]).kept_by(text) >= 0.95


def test_distinct_events_are_never_merged_away(embedder: MiniLMEmbedder) -> None:
    """'broken on Tuesday' and 'broken on Thursday' both stay (the REM seed's example), and a
    negation is never folded into its opposite."""
    frags = [("The build was broken on Tuesday.", "2025-01-07"),
             ("The build was broken on Thursday.", "2025-01-09"),
             ("The build is not broken now.", "2025-01-10"),
             ("The build was broken on Tuesday.", "2025-01-07")]
    text, folded = run(embedder, frags)
    assert 0 in folded and "Tuesday" in text
    # Thursday's breakage and the repair are other facts: written, or left as they were.
    assert (1 not in folded) or "Thursday" in text
    assert (2 not in folded) or "not broken" in text


def test_different_subjects_are_two_facts_however_alike(embedder: MiniLMEmbedder) -> None:
    frags = [("Sulren went live on 7 Jul 2022.", "2022-07-07"),
             ("Sulmiren went live on 25 Aug 2022.", "2022-08-25"),
             ("Sulren went live on July 7, 2022.", "2022-07-08"),
             ("Go-live for Sulren was 2022-07-07.", "2022-07-09")]
    text, folded = run(embedder, frags)
    # Sulmiren's date is never written as Sulren's: either it stays out of the synthesis or
    # it is written with its own name.
    if 1 in folded:
        assert "Sulmiren" in text and text.index("Sulmiren") < text.index("25 Aug")
    assert "25 Aug" not in text.split("Sulmiren")[0]


def test_a_cluster_of_distinct_facts_is_left_alone(embedder: MiniLMEmbedder) -> None:
    frags = [("Priya Sharma leads the Falcon project from Lisbon.", "2024-01-02"),
             ("The Heron budget is 310 thousand euros.", "2024-01-05"),
             ("Kafka was chosen for the Quartz ingestion pipeline.", "2024-02-01")]
    with pytest.raises(NotDenser, match="can't be merged"):
        run(embedder, frags)


def test_a_cluster_is_split_to_fold_what_is_restated(embedder: MiniLMEmbedder) -> None:
    frags = [*RESTATED, ("Note to self: the Falcon wiki hint is amber-4242.", "2025-09-01"),
             ("Mei Chen joined the Heron team in Oslo.", "2025-09-02")]
    text, folded = run(embedder, frags)
    assert set(folded) <= set(range(len(RESTATED))) and len(folded) >= 2
    assert "amber-4242" not in text and "Mei Chen" not in text  # left as they were


def test_text_module_reads_back_the_lists_it_writes() -> None:
    days = [date(2024, 3, 6), date(2024, 3, 26), date(2024, 6, 6), date(2024, 6, 16),
            date(2023, 12, 30)]
    written = format_days(days)
    assert written == "30 Dec 2023, 6 Mar, 26 Mar, 6 Jun and 16 Jun 2024"
    assert {d.key for d in find_dates(written)} == {d.isoformat() for d in days}
    grouped = "6 and 26 Mar; 6, 16 and 26 Jun 2024"  # as people write lists too
    assert [d.key for d in find_dates(grouped)] == [
        "2024-03-06", "2024-03-26", "2024-06-06", "2024-06-16", "2024-06-26"]
    assert sentences("Dr. Smith came; we left! New line\nnext") == [
        "Dr. Smith came;", "we left!", "New line", "next"]
    assert names("On 14 March 2025 Priya Sharma met Lars in New York.") == [
        "Priya Sharma", "Lars", "New York"]


def test_a_cluster_left_alone_keeps_its_members_logs_at_debug_and_is_held(db_path: Path
                                                                       ) -> None:
    lines = [json.dumps({"content": t, "created_at": iso(NOW - (400 + i) * DAY)}) for i, t in
             enumerate(["Priya Sharma leads the Falcon project from Lisbon.",
                        "Priya Sharma runs Falcon out of the Lisbon office now.",
                        "Priya Sharma leads Falcon; the Lisbon team reports to her.",
                        "The Falcon budget is 310 thousand euros, approved by Priya Sharma.",
                        "Falcon picked Kafka for ingestion, Priya Sharma signed it off."])]
    with Memory(db_path, clock=lambda: NOW) as m:
        m.import_lines(lines)
        before = {n: m.get(n).content for (n,) in m.store.query("SELECT id FROM nodes")}
        with capture_events() as logs:
            run_ = m.run_rem(now=NOW)
        skipped = [e for e in logs if e["event"] == "rem.cluster_skipped"]
        assert run_.skipped == len(skipped)
        assert all(e["log_level"] == "debug" and "NotDenser" in e["reason"] for e in skipped)
        for (members,) in m.store.query(
                "SELECT members FROM rem_clusters WHERE status = 'skipped'"):
            for member in json.loads(members):
                node = m.get(member["id"])
                assert node.status is NodeStatus.LIVE and node.content == before[node.id]
        if run_.skipped:  # nothing denser: later automatic runs leave them alone
            assert m.run_rem(now=NOW + DAY, dry_run=True).held >= 2
