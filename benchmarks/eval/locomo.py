"""LoCoMo loading: turns as memories, QA with (audit-corrected) evidence.

The data (CC BY-NC 4.0) is read from ``../shared/data/`` and never copied into the repo. The
rules follow ``shared/data/README.md``:

- a turn becomes the memory ``[<session date>] <speaker>: <text>``, plus
  `` [shared a photo: <blip_caption>]`` when the turn carries a caption;
- evidence strings are split on ``[;\\s]+`` and pieces that match no ``dia_id`` of the
  conversation are dropped (``"D8:6; D9:17"`` -> two ids, ``"D:11:26"`` -> none);
- for the 156 questions of the audit (``question_id`` = ``locomo_<i>_qa<j>``, 0-based), the
  audit's ``correct_evidence`` replaces ``evidence``;
- a QA left with no evidence is kept in the file but not scored (LoCoMo's own ``recall_acc``
  averages over QA that have evidence).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
HEADLINE_CATEGORIES = (1, 2, 3, 4)
DATA_FILE = "locomo10.json"
AUDIT_FILE = "locomo_audit_errors.json"
_EVIDENCE_SPLIT = re.compile(r"[;\s]+")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


@dataclass(frozen=True, kw_only=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    content: str  # the memory text, in the protocol's format
    at: float  # POSIX seconds: the session's date plus the turn's position in seconds


@dataclass(frozen=True, kw_only=True)
class QA:
    qid: str  # locomo_<i>_qa<j>, the audit's naming
    question: str
    category: int
    evidence: tuple[str, ...]  # dia_ids, after parsing and the audit override
    audited: bool
    answer: str = ""  # the golden answer (the audit's where it gives one)


@dataclass(frozen=True, kw_only=True)
class Conversation:
    index: int
    sample_id: str
    turns: tuple[Turn, ...]
    qa: tuple[QA, ...]

    @property
    def end(self) -> float:
        """When the conversation's last turn was said."""
        return max(t.at for t in self.turns)


def format_turn(date_text: str, turn: Mapping[str, Any]) -> str:
    """The protocol's memory text for one turn.

    Stripped of surrounding white space (62 turns end in a tab or space), as remd stores every
    memory, so baselines and remd pack the very same strings.
    """
    text = f"[{date_text}] {turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared a photo: {caption}]"
    return text.strip()


def parse_date(date_text: str) -> float:
    """``"1:56 pm on 8 May, 2023"`` -> POSIX seconds (read as UTC). Raises ValueError."""
    return datetime.strptime(date_text, _DATE_FORMAT).replace(tzinfo=UTC).timestamp()


def parse_evidence(raw: Iterable[object], known: Iterable[str]) -> tuple[str, ...]:
    """The dia_ids a QA cites: each string split on ``[;\\s]+``, unknown pieces dropped.

    Order is kept and duplicates removed.
    """
    valid = set(known)
    out: list[str] = []
    for item in raw:
        for piece in _EVIDENCE_SPLIT.split(str(item)):
            if piece in valid and piece not in out:
                out.append(piece)
    return tuple(out)


def audit_overrides(records: Sequence[Mapping[str, Any]]) -> dict[str, list[object]]:
    """question_id -> correct_evidence, from the audit's records."""
    return {str(r["question_id"]): list(r["correct_evidence"] or []) for r in records}


def _sessions(conv: Mapping[str, Any]) -> list[tuple[int, str, list[Mapping[str, Any]]]]:
    out = []
    for key, value in conv.items():
        m = _SESSION_KEY.fullmatch(key)
        if m and isinstance(value, list):
            out.append((int(m.group(1)), conv[f"{key}_date_time"], value))
    return sorted(out)


def build_conversation(index: int, sample: Mapping[str, Any],
                       overrides: Mapping[str, Sequence[object]],
                       answers: Mapping[str, str] | None = None) -> Conversation:
    """One sample of locomo10.json as turns and scored QA (``answers``: the audit's corrected
    answers by question id)."""
    answers = answers or {}
    turns: list[Turn] = []
    for session, date_text, raw_turns in _sessions(sample["conversation"]):
        start = parse_date(date_text)
        for pos, turn in enumerate(raw_turns):
            turns.append(Turn(dia_id=turn["dia_id"], session=session, speaker=turn["speaker"],
                              content=format_turn(date_text, turn), at=start + pos))
    ids = [t.dia_id for t in turns]
    qa: list[QA] = []
    for j, item in enumerate(sample["qa"]):
        qid = f"locomo_{index}_qa{j}"
        audited = qid in overrides
        raw = overrides[qid] if audited else item.get("evidence", [])
        qa.append(QA(qid=qid, question=str(item["question"]), category=int(item["category"]),
                     evidence=parse_evidence(raw, ids), audited=audited,
                     answer=str(answers.get(qid, item.get("answer", "")) or "")))
    return Conversation(index=index, sample_id=str(sample["sample_id"]), turns=tuple(turns),
                        qa=tuple(qa))


def load(data_dir: Path, *, use_audit: bool = True) -> list[Conversation]:
    """All conversations of the data set. Raises FileNotFoundError naming the missing file."""
    path = data_dir / DATA_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pass --data DIR (see shared/data/README.md)")
    samples = json.loads(path.read_text(encoding="utf-8"))
    overrides: dict[str, list[object]] = {}
    answers: dict[str, str] = {}
    if use_audit:
        audit = data_dir / AUDIT_FILE
        if not audit.exists():
            raise FileNotFoundError(f"{audit} not found (or run with --no-audit)")
        records = json.loads(audit.read_text(encoding="utf-8"))
        overrides = audit_overrides(records)
        answers = {str(r["question_id"]): str(r["correct_answer"]) for r in records
                   if r.get("correct_answer")}
    return [build_conversation(i, s, overrides, answers) for i, s in enumerate(samples)]


def literal_answer(qa: QA, turns: Mapping[str, str]) -> str | None:
    """The answer, lower-cased, if it appears word for word in the QA's evidence turns (so
    whether a pack's text still holds it can be checked); else None. 542 of the 1,535 scored
    QA, mostly single-hop."""
    answer = qa.answer.strip().rstrip(".").lower()
    if not answer:
        return None
    evidence = " ".join(turns.get(e, "") for e in qa.evidence).lower()
    return answer if answer in evidence else None


def scored(qa: Iterable[QA], categories: Iterable[int] = HEADLINE_CATEGORIES) -> list[QA]:
    """The QA that count: in the given categories and with at least one evidence turn."""
    wanted = set(categories)
    return [q for q in qa if q.category in wanted and q.evidence]
