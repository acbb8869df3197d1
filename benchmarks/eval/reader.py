"""A reader: a chat model that answers a question from a pack of memories, and the grading of
its answers (benchmarks/eval/answers.py).

The reader is any OpenAI-compatible chat endpoint (``python -m benchmarks.llm_local start``
serves the 1.5B model this project measures with). Its replies are cached on disk by (model,
prompt, pack), so a rerun costs only the calls whose pack or prompt changed. Greedy decoding
(temperature 0), a short answer.

Grading:
- an update question is **right** when the answer holds the current value (its words, after
  :func:`normalise`; or one of its accepted forms), **stale** when it holds an older value
  and not the current one, **unknown** when the reader says the notes don't say;
- a question with several answers (two things both true) is right when every one is named,
  half when some are;
- a date question is right when the answer names the day and month (any common form);
- a LoCoMo question is scored by token F1 against the gold answer, as the LoCoMo paper does
  (SQuAD's normalisation: lower case, no punctuation, no articles).
"""

from __future__ import annotations

import hashlib
import json
import re
import string
import time
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

PROMPT_VERSION = "answers-1"
SYSTEM = ("You are a personal assistant. Answer the question using only the notes about the "
          "user below. Reply with the answer only, in at most 15 words. If the notes do not "
          "say, reply: unknown.")
_UNKNOWN = re.compile(r"\b(unknown|not (?:mentioned|specified|stated|say|said)|no information"
                      r"|don't know|do not know|cannot|can't tell|not sure)\b", re.I)


@dataclass(frozen=True)
class Reply:
    text: str
    seconds: float  # of the call (0 when it came from the cache)
    cached: bool


def messages(question: str, notes: str, today: str) -> list[dict[str, str]]:
    body = notes.strip() or "(no notes)"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Today is {today}.\n\nNotes:\n{body}\n\n"
                                        f"Question: {question}"}]


class Reader:
    """Answers from a pack, through an OpenAI-compatible endpoint, cached in ``cache`` (a JSON
    lines file: one reply per line, keyed by a hash of the model and the whole prompt)."""

    def __init__(self, base_url: str, model: str, cache: Path, *, max_tokens: int = 40,
                 timeout: float = 600.0) -> None:
        from openai import OpenAI

        self.model = model
        self.max_tokens = max_tokens
        self.client = OpenAI(base_url=base_url, api_key="sk-local", timeout=timeout,
                             max_retries=2)
        self.cache_path = cache
        self.cache: dict[str, str] = {}
        if cache.exists():
            for line in cache.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.cache[row["key"]] = row["reply"]
        self.calls = 0
        self.seconds = 0.0

    def _key(self, msgs: list[dict[str, str]]) -> str:
        raw = json.dumps([self.model, PROMPT_VERSION, self.max_tokens, msgs], sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    def answer(self, question: str, notes: str, today: str) -> Reply:
        msgs = messages(question, notes, today)
        key = self._key(msgs)
        if key in self.cache:
            return Reply(self.cache[key], 0.0, True)
        t0 = time.perf_counter()
        out = self.client.chat.completions.create(
            model=self.model, messages=msgs,  # type: ignore[arg-type]
            temperature=0.0, max_tokens=self.max_tokens)
        seconds = time.perf_counter() - t0
        text = (out.choices[0].message.content or "").strip()
        self.calls += 1
        self.seconds += seconds
        self.cache[key] = text
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "model": self.model, "question": question,
                                 "reply": text}, ensure_ascii=False) + "\n")
        return Reply(text, seconds, False)


# -- grading --------------------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "£€$")
_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
                 "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
                 "eleven": "11", "twelve": "12"}


def normalise(text: str) -> str:
    """SQuAD's answer normalisation (lower case, no punctuation, no articles, single spaces),
    with small number words as digits and thousands separators dropped."""
    low = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower().replace("\u2019", "'"))
    low = _ARTICLES.sub(" ", low.translate(_PUNCT))
    return " ".join(_NUMBER_WORDS.get(w, w) for w in low.split())


def holds(answer: str, phrase: str) -> bool:
    """Does ``answer`` name ``phrase``: every word of it, in any order (a phrase of one
    number must match that number, not a longer one)?"""
    have = set(normalise(answer).split())
    want = normalise(phrase).split()
    return bool(want) and all(w in have for w in want)


def is_unknown(answer: str) -> bool:
    return not answer.strip() or _UNKNOWN.search(answer) is not None


def grade_update(answer: str, current: str, accept: tuple[str, ...],
                 stale: tuple[str, ...]) -> str:
    """"right", "stale", "unknown" or "wrong" for a question about something that changed.
    The accepted forms are looked for last: they may be short words ("no" for "do I still
    have Mubi?") that an unknown or stale answer holds too."""
    if holds(answer, current):
        return "right"
    if is_unknown(answer):
        return "unknown"
    if any(holds(answer, p) for p in stale):
        return "stale"
    return "right" if any(holds(answer, p) for p in accept) else "wrong"


def grade_all(answer: str, answers: tuple[str, ...]) -> str:
    """"right" (every answer named), "half" (some), "unknown" or "wrong"."""
    named = sum(holds(answer, a) for a in answers)
    if named == len(answers):
        return "right"
    if named:
        return "half"
    return "unknown" if is_unknown(answer) else "wrong"


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")


def grade_date(answer: str, day: date) -> str:
    """"right" when the answer names ``day``'s day of the month and its month (words, short
    words or numbers: "17 March", "Mar 17th", "2025-03-17", "17/03")."""
    low = answer.lower()
    month, mday = _MONTHS[day.month - 1], day.day
    words = re.findall(r"[a-z]+|\d+", low)
    named_month = any(w.startswith(month[:3]) and month.startswith(w[:3]) for w in words
                      if w.isalpha() and len(w) >= 3)
    numbers = [int(w) for w in words if w.isdigit()]
    if named_month and mday in numbers:
        return "right"
    iso = rf"\b{day.year}-0?{day.month}-0?{mday}\b"
    slashed = rf"\b0?{mday}/0?{day.month}\b|\b0?{day.month}/0?{mday}\b"
    if re.search(iso, low) or re.search(slashed, low):
        return "right"
    return "unknown" if is_unknown(answer) else "wrong"


def token_f1(answer: str, gold: str) -> float:
    """SQuAD/LoCoMo token F1 between an answer and the gold answer."""
    a, g = normalise(answer).split(), normalise(str(gold)).split()
    if not a or not g:
        return float(a == g)
    common = Counter(a) & Counter(g)
    same = sum(common.values())
    if not same:
        return 0.0
    precision, recall = same / len(a), same / len(g)
    return 2 * precision * recall / (precision + recall)


def summary(reader: Reader | Any) -> str:
    calls = getattr(reader, "calls", 0)
    seconds = getattr(reader, "seconds", 0.0)
    per = f", {seconds / calls:.1f} s a call" if calls else ""
    return f"{calls} new reader calls{per} (the rest from the cache)"
