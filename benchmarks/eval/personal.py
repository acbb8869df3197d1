"""Personal memories: the right memory first at a tight budget, and no filler.

Forty first-person memories a user might tell an agent over a few weeks (family, work, food,
plans, gadgets), two of which change a fact ("I moved to Hyderabad", "My manager is now
Karthik Rao"), then sixteen questions that one or two memories answer and three about nothing
stored. Per question: is the answer's memory first in a pack of 40 tokens, how many tokens a
pack of 200 uses with the default relevance floor (and with ``fill=True``), and whether a
superseded value shows up anywhere in it. The issue's hold-out set is a different one; these
memories and questions were written for this benchmark, not taken from it.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.eval.report import mean, table
from remd import Memory

MEMORIES = (
    "My name is Arjun and I work as a data engineer.",
    "I live in Bangalore.",
    "My mother lives in Pune.",
    "I drive a blue Honda City.",
    "I'd like to visit Iceland someday.",
    "I love gulab jamun and rasmalai, my favourite sweets.",
    "My manager is Priya Nair.",
    "I work at Flipkart.",
    "My sister Meera is studying medicine in Chennai.",
    "I'm allergic to peanuts.",
    "I go running every Sunday morning at Cubbon Park.",
    "My dog is called Bruno, he's a beagle.",
    "I really want to learn the guitar this year.",
    "My birthday is on 14 March.",
    "I usually take the metro to work.",
    "My favourite movie is Interstellar.",
    "I changed my phone to a Pixel 8 last month.",
    "I prefer tea over coffee, especially masala chai.",
    "My best friend Rahul lives in Mumbai.",
    "I'm learning Spanish on Duolingo.",
    "The thing I hate most is traffic on Outer Ring Road.",
    "My wife Ananya is an architect.",
    "We are planning a trip to Japan in April.",
    "I play badminton on Wednesdays with colleagues.",
    "My laptop is a ThinkPad X1 Carbon.",
    "I have been reading Sapiens by Yuval Noah Harari.",
    "My blood group is O positive.",
    "I moved to Hyderabad.",
    "My manager is now Karthik Rao.",
    "I like spicy food, especially Andhra cuisine.",
    "My son Vivaan started kindergarten in June.",
    "I'm saving up to buy an apartment.",
    "My favourite cricketer is Rahul Dravid.",
    "I don't eat beef.",
    "My car insurance renews in November.",
    "I use Neovim for coding.",
    "I volunteer at an animal shelter once a month.",
    "My dentist appointment is on the 3rd of next month.",
    "My father retired from the Indian Railways.",
    "Grandma's recipe for sambar uses tamarind from Kerala.",
)
# (question, a phrase of the memory that answers it)
QUESTIONS = (
    ("where do I live?", "Hyderabad"),
    ("which city am I based in?", "Hyderabad"),
    ("what sweets do I like?", "gulab jamun"),
    ("who is my manager?", "Karthik"),
    ("what is my dog's name?", "Bruno"),
    ("what car do I drive?", "Honda City"),
    ("what am I allergic to?", "peanuts"),
    ("which country do I want to visit?", "Iceland"),
    ("what phone do I have?", "Pixel"),
    ("where does my mother live?", "Pune"),
    ("what language am I learning?", "Spanish"),
    ("what instrument do I want to learn?", "guitar"),
    ("when is my birthday?", "14 March"),
    ("do I drink tea or coffee?", "masala chai"),
    ("what editor do I code in?", "Neovim"),
    ("who is my wife?", "Ananya"),
)
UNKNOWN = ("what is my favourite football club?", "how tall am I?",
           "what's the wifi password at the office?")
STALE = ("I live in Bangalore.", "My manager is Priya Nair.")
FIRST_BUDGET, BUDGET = 40, 200


@dataclass
class Row:
    question: str
    first_ok: bool
    tokens: int
    tokens_fill: int
    stale: bool
    first: str


def run(workdir: Path | None = None) -> tuple[list[Row], list[Row]]:
    """(answerable rows, unknown rows), in a fresh file with a day between memories."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-personal-"))
    now = [1_700_000_000.0]
    rows: list[Row] = []
    unknown: list[Row] = []
    with Memory(workdir / "personal.db", clock=lambda: now[0]) as mem:
        for text in MEMORIES:
            now[0] += 86_400.0
            mem.save(text)
        now[0] += 86_400.0
        for question, answer in QUESTIONS:
            first = mem.inject(question, FIRST_BUDGET)
            top = first.items[0].content if first.items else ""
            pack = mem.inject(question, BUDGET)
            full = mem.inject(question, BUDGET, fill=True)
            rows.append(Row(question, answer.lower() in top.lower(), pack.tokens_used,
                            full.tokens_used, any(s in pack.text for s in STALE), top))
        for question in UNKNOWN:
            pack = mem.inject(question, BUDGET)
            full = mem.inject(question, BUDGET, fill=True)
            top = pack.items[0].content if pack.items else ""
            unknown.append(Row(question, not pack.items, pack.tokens_used, full.tokens_used,
                               any(s in pack.text for s in STALE), top))
    return rows, unknown


def section() -> None:
    rows, unknown = run()
    print("## Personal memories\n")
    print(f"{len(MEMORIES)} first-person memories (two facts changed later), {len(QUESTIONS)} "
          f"questions one or two of them answer, {len(UNKNOWN)} about nothing stored "
          f"(benchmarks/eval/personal.py). First = the answer's memory is the first item of a "
          f"{FIRST_BUDGET}-token pack; tokens = o200k tokens of a {BUDGET}-token pack with the "
          f"default relevance floor (fill: packed to the budget); stale = a superseded value "
          f"is in the pack.\n")
    print(table(["question", "first", "tokens", "tokens (fill)", "stale", "first item"],
                [[r.question, "yes" if r.first_ok else "no", r.tokens, r.tokens_fill,
                  "yes" if r.stale else "no", r.first[:48]] for r in rows + unknown]) + "\n")
    print(table(["measure", "value"], [
        ["right memory first at 40 tokens", f"{sum(r.first_ok for r in rows)}/{len(rows)}"],
        ["mean tokens at 200 (floor)", f"{mean([r.tokens for r in rows]):.1f}"],
        ["mean tokens at 200 (fill)", f"{mean([r.tokens_fill for r in rows]):.1f}"],
        ["tokens for a question about nothing stored (max)",
         str(max(r.tokens for r in unknown))],
        ["packs with a stale value", str(sum(r.stale for r in rows + unknown))],
    ]) + "\n")
