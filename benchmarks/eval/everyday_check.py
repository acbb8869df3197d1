"""Everyday updates, check set: does the newer fact win, before and after REM?

A second, independent set of everyday updates, kept only to check that changes made for the
main set generalise (nobody tunes on it). The speaker is a retired bridge engineer in
Centerville, Ohio: his wife Donna, two grown kids, grandkids, church, the Y, a dog, a truck,
and the pills and appointments of a man past seventy. He tells his assistant 23 things that
change later (a metformin dose, laps at the pool, his weight, a chapter, who runs the men's
breakfast, a reunion date, a mower that died, where his son lives, ...), some with a cue word
("now", "switched", "quit", "instead"), some subtle, some with no cue at all (just a different
value said later), among 28 memories about other things and 8 controls that must NOT be
treated as changes: additive statements (a second hobby), different people with different
values (his blood type and Donna's), different details of one thing (a party's venue and its
date) and single facts.

Protocol: a fresh file, the clock at 1_700_000_000. The old statements, the unrelated
memories and each control's first text are saved shuffled (fixed seed), three to eight hours
apart (about two weeks); then the new statements and the controls' second texts, shuffled,
two hours to a day apart. A day later every question is asked: per update, ``first`` = the
first item of a 40-token pack holds the new value (``current``), ``stale`` = a 200-token pack
with the default relevance floor holds the old value (``stale``), and its tokens; per
control, whether every answer is in the 200-token pack. Then 40 days pass, one REM cycle runs
at that time (default offline synthesiser), and the same questions are asked a day later.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from benchmarks.eval.report import mean, table
from remd import Memory


class Update(NamedTuple):
    old: str
    new: str
    question: str
    current: str  # a phrase only ``new`` holds (case-insensitive)
    stale: str  # a phrase only ``old`` holds (case-insensitive)


class Control(NamedTuple):
    texts: tuple[str, ...]
    question: str
    answers: tuple[str, ...]  # every one must be in the pack (case-insensitive)
    kind: str  # additive | people | details | single


UPDATES = (
    Update("Doc Okafor has me on metformin, 500 milligrams twice a day with meals.",
           "My A1C came back a little high so Dr. Okafor doubled the metformin. I take 1000 mg "
           "morning and night now.",
           "what dose of metformin am I on?", "1000 mg", "500 milligrams"),
    Update("I swim 20 laps at the YMCA pool Monday, Wednesday and Friday mornings.",
           "Did 32 laps at the Y this morning, and that's what I'm shooting for every swim day.",
           "how many laps do I swim at the Y?", "32 laps", "20 laps"),
    Update("Weighed in at 212 pounds at my physical in January.",
           "Stepped on the bathroom scale today: 198. Donna says the salads are working.",
           "how much do I weigh?", "198", "212 pounds"),
    Update("The church book club picked Lonesome Dove and I'm only on chapter 12.",
           "Stayed up way too late with Lonesome Dove, I'm at chapter 41.",
           "what chapter of Lonesome Dove am I on?", "chapter 41", "chapter 12"),
    Update("Pastor Whitfield runs the Thursday men's breakfast at church.",
           "Rick Santangelo took over the Thursday men's breakfast, the pastor had too much on "
           "his plate.",
           "who runs the men's breakfast on Thursdays?", "Santangelo", "Whitfield"),
    Update("Our son-in-law Trevor is a shift supervisor at the Honda plant in Marysville.",
           "Big news from Marysville: Trevor was made plant manager, first one from the floor in "
           "twenty years.",
           "what's Trevor's job at Honda?", "plant manager", "shift supervisor"),
    Update("The family reunion out at Caesar Creek is on July 20th.",
           "Half the cousins couldn't make July work, so the reunion got pushed to August 10th.",
           "when is the family reunion?", "August 10", "July 20"),
    Update("My old Craftsman riding mower still runs fine after fifteen years.",
           "The Craftsman threw a rod Saturday. Went to the dealer and came home with a John "
           "Deere X350.",
           "what riding mower do I have?", "John Deere", "still runs fine"),
    Update("Our son Greg lives in Columbus, about an hour up I-71.",
           "Greg took the job with the water utility and he and Shannon are out in Phoenix now.",
           "where does Greg live?", "Phoenix", "Columbus"),
    Update("I drive a 2009 Ford Ranger, silver, with a bed cap on it.",
           "Hauled the grandkids' bikes to the park in the back of my 2021 Tacoma yesterday.",
           "what truck do I drive?", "Tacoma", "Ranger"),
    Update("I smoke a pipe out on the back porch most evenings after supper.",
           "It's been six weeks since I quit the pipe. Gave the whole rack of them to Earl.",
           "do I still smoke my pipe?", "quit the pipe", "most evenings"),
    Update("All my prescriptions get filled at the Kroger pharmacy on Far Hills.",
           "I switched my prescriptions to the CVS by the house, the line at the old place was "
           "always a mile long.",
           "which pharmacy fills my prescriptions?", "CVS", "Far Hills"),
    Update("I'm no gardener, I pay the neighbor kid to keep the flower beds weeded.",
           "Started a vegetable patch behind the garage this spring: tomatoes, zucchini and pole "
           "beans.",
           "do I do any gardening?", "pole beans", "neighbor kid"),
    Update("My dentist is Dr. Patel, over in Kettering.",
           "Dr. Moreno cleaned my teeth on Tuesday, nice young gal, very gentle.",
           "who is my dentist?", "Moreno", "Kettering"),
    Update("I sing bass in the St. Luke's choir.",
           "The choir director moved me up to baritone. Says my low notes aren't what they used "
           "to be, and she's right.",
           "what part do I sing in the choir?", "baritone", "sing bass"),
    Update("The furnace is a Carrier I put in myself back in 2004.",
           "Had to replace the furnace before the cold snap hit. It's a Trane now, high "
           "efficiency.",
           "what kind of furnace do we have?", "Trane", "Carrier"),
    Update("Bowling league is Tuesday nights at Poelking Lanes.",
           "The league moved to Thursday nights this season since the lanes gave Tuesdays to the "
           "high school.",
           "what night is bowling league?", "Thursday nights", "Tuesday nights"),
    Update("On Wednesdays I volunteer at the senior center driving folks to their doctor "
           "appointments.",
           "I gave up the driving at the senior center. Helping with tax prep there instead, "
           "better use of an engineer.",
           "what do I volunteer doing at the senior center?", "tax prep", "driving folks"),
    Update("Donna and I both take our coffee black.",
           "Donna puts oat milk in her coffee since the cholesterol scare.",
           "how does Donna take her coffee?", "oat milk", "coffee black"),
    Update("We've got an old beagle mix named Rusty who sleeps at the foot of the bed.",
           "We lost Rusty in April. Brought home a little wire-haired terrier from the shelter "
           "and named her Pepper.",
           "what's our dog's name?", "Pepper", "beagle mix"),
    Update("My pension from the state comes to $2,340 a month.",
           "The cost-of-living raise kicked in, so the pension is $2,410 a month.",
           "how much is my monthly pension?", "2,410", "2,340"),
    Update("We spend January and February at Donna's sister's condo in Sarasota.",
           "This winter we're renting a little place in Gulf Shores, Alabama rather than going "
           "to Florida.",
           "where do we go for the winter?", "Gulf Shores", "Sarasota"),
    Update("Our granddaughter Kayla plays travel softball, catcher.",
           "Kayla's playing volleyball these days, she hung up the softball glove.",
           "what sport does Kayla play?", "volleyball", "travel softball"),
)

UNRELATED = (
    "I put in 31 years as a civil engineer at ODOT, mostly bridge inspection and repair.",
    "Donna and I will have been married 44 years come October.",
    "Cilantro tastes like soap to me, I pick it out of everything.",
    "I've been a Reds fan since the Big Red Machine days.",
    "My left hearing aid whistles whenever I put a hat on.",
    "I've got a ham radio rig in the basement and check in with the Sunday night net.",
    "Donna's birthday is June 3rd.",
    "I'm allergic to penicillin. Broke out in hives all over back in '88.",
    "We live on a quiet cul-de-sac in Centerville, just south of Dayton.",
    "Best fishing I know is crappie at Grand Lake St. Marys in the spring.",
    "My brother Ron is up in Toledo and we talk on the phone every Sunday.",
    "Every morning I take my blood pressure and write it in a little spiral notebook.",
    "If I could only eat one thing again it'd be a Skyline four-way with onions.",
    "Donna does the crossword in ink. I stick to the jumble.",
    "Drafted in '71, spent two years with the Army in Germany.",
    "Our grandson Tyler got into Ohio State for engineering, just like his grandpa.",
    "My right knee is shot. The orthopedic guy says a replacement is in my future.",
    "We never miss Jeopardy after supper.",
    "Earl and I are restoring a 1966 Mustang in his pole barn.",
    "I'm treasurer of the Centerville Rotary club.",
    "I keep losing my reading glasses, so I bought a three-pack of +2.25s at the drugstore.",
    "I still do our taxes by hand with a pencil and the paper forms, always have.",
    "No grapefruit for me, it doesn't mix with my statin.",
    "Saturday mornings I've got a standing tee time at Yankee Trace with three fellas from "
    "church.",
    "Donna handles the checkbook and the bills, I'd just lose the receipts.",
    "Our daughter Lisa teaches third grade.",
    "I built the deck out back in the summer of '96 and it's still solid as a rock.",
    "My hands get stiff in the cold, arthritis in the knuckles mostly.",
)

CONTROLS = (
    Control(("I whittle little songbirds out of basswood in the evenings.",
             "I've also started carving walking sticks. Sold two at the church bazaar."),
            "what do I carve?", ("songbirds", "walking sticks"), "additive"),
    Control(("Donna and I play pinochle with the Hendersons every other Friday.",
             "On top of the pinochle, we've got a euchre night going with the neighbors on "
             "Mondays."),
            "what card games do Donna and I play?", ("pinochle", "euchre"), "additive"),
    Control(("My blood type is A negative.",
             "Donna's blood type is O positive, in case anybody ever asks."),
            "what are my blood type and Donna's?", ("A negative", "O positive"), "people"),
    Control(("Greg's birthday is November 9th.",
             "Lisa was born on February 17th, right in the middle of the '78 blizzard."),
            "when are Greg's and Lisa's birthdays?", ("November 9", "February 17"), "people"),
    Control(("Kayla's graduation party is at the Moose Lodge in Xenia.",
             "The graduation party is Saturday the 14th, starting at two."),
            "where and when is Kayla's graduation party?", ("Moose Lodge", "14th"), "details"),
    Control(("The Mustang is getting a rebuilt 289 V8 from a machine shop in Troy.",
             "We settled on Wimbledon White for the Mustang's paint."),
            "what engine and what paint color is the Mustang getting?",
            ("289", "Wimbledon White"), "details"),
    Control(("I've got a pacemaker, so no MRIs for me.",),
            "can I have an MRI?", ("pacemaker",), "single"),
    Control(("The spare house key is under the concrete frog by the back door.",),
            "where is the spare house key?", ("concrete frog",), "single"),
)

SEED = 1971
START = 1_700_000_000.0
HOUR, DAY = 3_600.0, 86_400.0
FIRST_BUDGET, BUDGET = 40, 200
REM_AFTER_DAYS = 40


def check_data() -> None:
    """The phrases are where the benchmark says they are: ``current`` only in its new
    statement and ``stale`` only in its old one, among every text saved."""
    texts = ([u.old for u in UPDATES] + [u.new for u in UPDATES] + list(UNRELATED)
             + [t for c in CONTROLS for t in c.texts])
    for u in UPDATES:
        for phrase, home in ((u.current, u.new), (u.stale, u.old)):
            holders = [t for t in texts if phrase.lower() in t.lower()]
            if holders != [home]:
                raise ValueError(f"{phrase!r} is in {holders}, not only in {home!r}")
    for c in CONTROLS:
        for a in c.answers:
            if not any(a.lower() in t.lower() for t in c.texts):
                raise ValueError(f"{a!r} is in none of the texts of {c.question!r}")


@dataclass
class UpdateRow:
    question: str
    current: str
    stale: str
    first_ok: bool  # the first item of the 40-token pack holds ``current``
    stale_in: bool  # the 200-token pack (default floor) holds ``stale``
    tokens: int  # tokens of that 200-token pack
    first: str  # the first item of the 40-token pack


@dataclass
class ControlRow:
    question: str
    kind: str
    present: bool  # every answer is in the 200-token pack
    missing: tuple[str, ...]
    tokens: int


@dataclass
class Phase:
    updates: list[UpdateRow]
    controls: list[ControlRow]

    @property
    def first_ok(self) -> int:
        return sum(r.first_ok for r in self.updates)

    @property
    def stale_in(self) -> int:
        return sum(r.stale_in for r in self.updates)

    @property
    def controls_present(self) -> int:
        return sum(r.present for r in self.controls)

    @property
    def mean_tokens(self) -> float:
        return mean([r.tokens for r in self.updates] + [r.tokens for r in self.controls])


@dataclass
class Result:
    before: Phase
    after: Phase
    rem: dict[str, int] = field(default_factory=dict)  # the REM run's counts
    rem_status: str = ""


def _ask(mem: Memory) -> Phase:
    updates = []
    for u in UPDATES:
        first = mem.inject(u.question, FIRST_BUDGET)
        top = first.items[0].content if first.items else ""
        pack = mem.inject(u.question, BUDGET)
        updates.append(UpdateRow(u.question, u.current, u.stale,
                                 u.current.lower() in top.lower(),
                                 u.stale.lower() in pack.text.lower(), pack.tokens_used, top))
    controls = []
    for c in CONTROLS:
        pack = mem.inject(c.question, BUDGET)
        missing = tuple(a for a in c.answers if a.lower() not in pack.text.lower())
        controls.append(ControlRow(c.question, c.kind, not missing, missing, pack.tokens_used))
    return Phase(updates, controls)


def run(workdir: Path | None = None) -> Result:
    """Save, update, ask; 40 days later one REM cycle; ask again (see the module docstring)."""
    check_data()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-everyday-check-"))
    rng = random.Random(SEED)
    first_texts = ([u.old for u in UPDATES] + list(UNRELATED) + [c.texts[0] for c in CONTROLS])
    rng.shuffle(first_texts)
    later_texts = [u.new for u in UPDATES] + [t for c in CONTROLS for t in c.texts[1:]]
    rng.shuffle(later_texts)
    now = [START]
    with Memory(workdir / "everyday_check.db", clock=lambda: now[0]) as mem:
        for text in first_texts:
            now[0] += rng.uniform(3, 8) * HOUR
            mem.save(text)
        for text in later_texts:
            now[0] += rng.uniform(2, 24) * HOUR
            mem.save(text)
        now[0] += DAY
        before = _ask(mem)
        now[0] += REM_AFTER_DAYS * DAY
        rem = mem.run_rem(now=now[0])
        now[0] += DAY
        after = _ask(mem)
    counts = {k: int(getattr(rem, k)) for k in
              ("flagged", "clusters", "synthesised", "skipped", "live_before", "live_after")}
    return Result(before, after, counts, str(rem.status))


def section() -> None:
    res = run()
    b, a = res.before, res.after
    n, nc = len(UPDATES), len(CONTROLS)
    print("## Everyday updates (check set)\n")
    print(f"A retired engineer in Ohio: {n} facts that change later (cue words, subtle, or no "
          f"cue), {len(UNRELATED)} unrelated memories, {nc} controls that must all stay "
          f"(benchmarks/eval/everyday_check.py). Current first = the new value is in the first "
          f"item of a {FIRST_BUDGET}-token pack; stale in = the old value is in a {BUDGET}-token "
          f"pack (default floor); controls present = every answer in the {BUDGET}-token pack. "
          f"After REM = {REM_AFTER_DAYS} days later, one REM cycle, asked a day after.\n")
    print(table(["measure", "before REM", "after REM"], [
        [f"current first @{FIRST_BUDGET}", f"{b.first_ok}/{n}", f"{a.first_ok}/{n}"],
        [f"stale in @{BUDGET}", f"{b.stale_in}/{n}", f"{a.stale_in}/{n}"],
        ["controls present", f"{b.controls_present}/{nc}", f"{a.controls_present}/{nc}"],
        [f"mean tokens @{BUDGET} (all questions)", f"{b.mean_tokens:.1f}",
         f"{a.mean_tokens:.1f}"],
    ]) + "\n")
    print(table(["REM run", "value"], [[k, v] for k, v in res.rem.items()]
                + [["status", res.rem_status]]) + "\n")
    yn = {True: "yes", False: "no"}
    print(table(["question", "first", "stale", "tokens", "first (REM)", "stale (REM)",
                 "tokens (REM)", "first item (before REM)"],
                [[rb.question, yn[rb.first_ok], yn[rb.stale_in], rb.tokens, yn[ra.first_ok],
                  yn[ra.stale_in], ra.tokens, rb.first[:56]]
                 for rb, ra in zip(b.updates, a.updates, strict=True)],
                ["l", "l", "l", "r", "l", "l", "r", "l"]) + "\n")
    print(table(["control", "kind", "present", "tokens", "present (REM)", "tokens (REM)",
                 "missing"],
                [[cb.question, cb.kind, yn[cb.present], cb.tokens, yn[ca.present], ca.tokens,
                  ", ".join(cb.missing) + (" / REM: " + ", ".join(ca.missing)
                                           if ca.missing else "")]
                 for cb, ca in zip(b.controls, a.controls, strict=True)],
                ["l", "l", "l", "r", "l", "r", "l"]) + "\n")


if __name__ == "__main__":
    section()
