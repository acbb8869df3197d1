"""Everyday updates: a fact the user changes in passing, asked for later, before and after REM.

One person tells an agent about their life and work over a month, the way people do: a
statement that is true at first ("I cycle to the office every morning"), and, days later and
in other words, one that replaces it ("Since it got cold I've been taking the tram to work").
The set has 42 such updates across commute, food, hobbies, job and team, software versions,
devices, medication, a language course, projects that changed owner or platform or were shut
down, pets, home, relationships, routines, subscriptions, rotated passwords and keys, moved
plans and changed counts. About a third say so with a cue word ("now", "instead", "took over",
"moved", "rotated", ...), a third only hint at it ("since the migration", "after the reorg",
"down to"), and a third just state a different value with no cue ("I report to Dmitri
Volkov."). Old and new sometimes share the subject noun and sometimes only the meaning
("vegetarian" -> "started eating fish and chicken again"). Around them: 39 unrelated memories
of the same person (some share words with the updates' topics but are about something else)
and 13 controls that must NOT be treated as updates: additions ("I like jazz" / "I also got
into hip hop"), two people with different values, two details of one thing, side remarks that
look like a change but are not, and single facts that must simply stay. Every memory and
question was written for this benchmark, not taken from any dataset.

Protocol (``run``), in a fresh file with a hand-moved clock starting at 1_700_000_000:

1. The old statements, the unrelated memories and the first text of each control are saved in
   a shuffled order (fixed seed), a few hours apart, over about two weeks.
2. Over the next two weeks the updates' new statements, the controls' second texts and a few
   more unrelated memories are saved one at a time (shuffled, fixed seed), a few hours to a day
   apart, as an agent saves them while the user talks.
3. A day later every question is asked. Per update: ``first`` = the first item of
   ``inject(question, 40)`` contains the ``current`` phrase; ``stale`` = the text of
   ``inject(question, 200)`` (default relevance floor) contains the ``stale`` phrase;
   ``tokens`` = that pack's ``tokens_used``. Per control: every one of its ``answers`` is in
   ``inject(question, 200).text``. All matches are case-insensitive substrings. Also
   recorded: whether any live memory still holds the new value (REM must not lose it).
4. The clock moves 40 days on, one REM cycle runs (``mem.run_rem(now=...)``, the default
   offline synthesiser), and a day later everything is asked again.
"""

from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.eval.report import mean, table
from remd import Memory


@dataclass(frozen=True)
class Update:
    old: str  # true at first
    new: str  # said later, replaces it
    question: str
    current: str  # a phrase only ``new`` contains (case-insensitive)
    stale: str  # a phrase only ``old`` contains
    cue: str = ""  # "explicit" (a cue word), "subtle" (a hint), "none" (just a different value)


@dataclass(frozen=True)
class Control:
    texts: tuple[str, ...]  # saved at different times; all stay true
    question: str
    answers: tuple[str, ...]  # every one must be in the 200-token pack
    kind: str


UPDATES = (
    Update("I cycle to the office every morning, it's about twenty minutes along the canal.",
           "Since it got cold I've been taking the tram to work.",
           "How do I get to work?", "tram", "cycle to the office", "subtle"),
    Update("I've been vegetarian for about six years.",
           "I started eating fish and chicken again after my iron levels came back low.",
           "Do I eat meat?", "fish and chicken", "vegetarian", "explicit"),
    Update("Most weekends you'll find me bouldering at the climbing gym with Tomasz.",
           "Saturdays are pottery days for me, I'm slowly getting the hang of the wheel.",
           "What do I do on weekends?", "pottery", "bouldering", "none"),
    Update("I'm on the payments team, mostly backend work on refunds.",
           "After the reorg I ended up on the fraud detection team.",
           "Which team am I on?", "fraud detection", "payments team", "subtle"),
    Update("My manager is Helen Park, she's great about protecting our focus time.",
           "I report to Dmitri Volkov.",
           "Who's my boss?", "Dmitri", "Helen", "none"),
    Update("Our main API service runs on Python 3.9.",
           "We upgraded the API service to Python 3.12 last sprint.",
           "Which Python version does our API run on?", "3.12", "3.9", "explicit"),
    Update("I write all my code in Sublime Text.",
           "VS Code has pretty much become my only editor, the remote dev stuff won me over.",
           "What editor do I code in?", "VS Code", "Sublime", "subtle"),
    Update("I've got an iPhone 12 with a cracked corner that I keep meaning to fix.",
           "Picked up a Galaxy S24 on Saturday after the old phone wouldn't turn on.",
           "What phone do I have?", "Galaxy", "iPhone", "subtle"),
    Update("For work I use a 2019 MacBook Pro the company gave me.",
           "My work laptop is a Dell XPS 13.",
           "Which laptop do I use for work?", "Dell", "MacBook", "none"),
    Update("I take 50 mg of sertraline every morning.",
           "The doctor bumped my sertraline up to 100 mg.",
           "What dose of sertraline am I on?", "100 mg", "50 mg", "subtle"),
    Update("For my hay fever I take cetirizine.",
           "I'm on fexofenadine for the allergies now, the other tablets made me drowsy.",
           "What do I take for hay fever?", "fexofenadine", "cetirizine", "explicit"),
    Update("I'm on lesson 40 of my Japanese course.",
           "Finished lesson 95 of Japanese last night!",
           "How far am I in my Japanese course?", "lesson 95", "lesson 40", "subtle"),
    Update("Marco owns the billing dashboard project.",
           "Aisha took over the billing dashboard this week.",
           "Who owns the billing dashboard?", "Aisha", "Marco", "explicit"),
    Update("Our CI pipelines run on Jenkins.",
           "Since the migration, every CI job runs on GitHub Actions.",
           "What do we use for CI?", "GitHub Actions", "Jenkins", "subtle"),
    Update("The weekly finance emails are sent by Ledgerline, our old reporting service.",
           "The legacy reporting service was shut down, so the finance reports go out from "
           "Metabase.",
           "What sends the weekly finance emails?", "Metabase", "Ledgerline", "explicit"),
    Update("My side project, a recipe scaler app, lives on GitLab.",
           "I moved the recipe scaler repo to Codeberg.",
           "Where is my side project hosted?", "Codeberg", "GitLab", "explicit"),
    Update("Our dog Rufus eats dry kibble twice a day.",
           "The vet put Rufus on a wet food diet for his kidneys.",
           "What does Rufus eat?", "wet food", "kibble", "subtle"),
    Update("I've got 3 houseplants on the kitchen windowsill.",
           "My plant collection is up to 14 pots, it's getting out of hand.",
           "How many plants do I have?", "up to 14", "3 houseplants", "subtle"),
    Update("I rent a one-bedroom flat in Kreuzberg.",
           "We got the keys to the two-bedroom in Neukölln and the boxes are finally unpacked.",
           "Where do I live?", "Neukölln", "Kreuzberg", "subtle"),
    Update("I'm seeing someone called Jonas, it's still early days.",
           "Jonas and I split up a couple of weeks ago, it was mutual.",
           "Am I dating anyone?", "split up", "seeing someone", "explicit"),
    Update("I usually go to bed around 1am.",
           "Lights out at 10:30 every night for me.",
           "What time do I go to sleep?", "10:30", "1am", "none"),
    Update("On weekdays I go for a run before breakfast.",
           "I do twenty minutes of yoga in the mornings instead of running.",
           "What do I do for exercise in the morning?", "yoga", "go for a run", "explicit"),
    Update("I pay for Spotify Premium.",
           "For music I'm on Apple Music now, through my cousin's family plan.",
           "Which music streaming service do I use?", "Apple Music", "Spotify", "explicit"),
    Update("I have a McFit membership, the one near Ostbahnhof.",
           "My gym membership is Urban Sports Club, so I can hop between studios.",
           "Which gym am I a member of?", "Urban Sports Club", "McFit", "none"),
    Update("The staging database password lives in 1Password under staging-db-2023.",
           "I rotated the staging DB credentials; the 1Password entry is staging-db-2024-q2.",
           "Where do I find the staging database password?", "2024-q2", "staging-db-2023",
           "explicit"),
    Update("The Stripe test key in our .env ends in 4f9a.",
           "The Stripe test key on the dev machines ends in c21e.",
           "What does the Stripe test key end with?", "c21e", "4f9a", "none"),
    Update("The home wifi password is sunflower88.",
           "Wifi password is on the fridge magnet: Otter-Lake-47.",
           "What's our wifi password?", "Otter-Lake-47", "sunflower88", "none"),
    Update("Our family trip to Portugal is booked for July.",
           "We pushed the Portugal trip back to September because of a work deadline.",
           "When are we going to Portugal?", "September", "July", "explicit"),
    Update("My dentist appointment is Tuesday the 12th at 8.",
           "I have the dentist on Thursday the 21st at 9am.",
           "When's my dentist appointment?", "21st", "12th", "none"),
    Update("There are six people on my team.",
           "With the three new hires we're a team of nine.",
           "How many people are on my team?", "team of nine", "six people", "subtle"),
    Update("I drink about four coffees a day.",
           "I'm down to one coffee in the morning.",
           "How much coffee do I drink?", "one coffee", "four coffees", "subtle"),
    Update("I usually have a couple of beers on Friday nights.",
           "I'm doing a dry year, not a drop since January.",
           "Do I drink alcohol?", "dry year", "beers", "none"),
    Update("I drive a 2012 VW Golf.",
           "I don't own a car anymore, I just book a car-share when I need one.",
           "What car do I drive?", "car-share", "Golf", "explicit"),
    Update("Our office is on Friedrichstraße, fourth floor.",
           "The company moved us into the new building at Alexanderplatz.",
           "Where is our office?", "Alexanderplatz", "Friedrichstraße", "explicit"),
    Update("I'm halfway through The Three-Body Problem.",
           "Just started Piranesi, a friend swore I'd love it.",
           "What book am I reading?", "Piranesi", "Three-Body", "subtle"),
    Update("Our internet is a 100 Mbit line from Telekom.",
           "We have 1 Gbit fibre from Deutsche Glasfaser at home.",
           "What internet do we have at home?", "Glasfaser", "Telekom", "none"),
    Update("I work from home on Fridays.",
           "My home office days are Tuesday and Thursday.",
           "Which days do I work from home?", "Tuesday and Thursday", "Fridays", "none"),
    Update("Our daily standup is at 9:30.",
           "Standup moved to 10:15 so the Porto folks can join.",
           "What time is standup?", "10:15", "9:30", "explicit"),
    Update("I keep all my passwords in LastPass.",
           "Everything's in Bitwarden since the breach.",
           "Which password manager do I use?", "Bitwarden", "LastPass", "subtle"),
    Update("Customer uploads are stored in an S3 bucket in eu-west-1.",
           "After the region move, customer uploads sit in eu-central-1.",
           "Which AWS region holds the customer uploads?", "eu-central-1", "eu-west-1",
           "subtle"),
    Update("The frontend builds with Node 16.",
           "The frontend is on Node 20 LTS.",
           "Which Node version does the frontend use?", "Node 20", "Node 16", "none"),
    Update("My resting heart rate is around 72.",
           "Resting heart rate is down to 58 since I took up swimming.",
           "What's my resting heart rate?", "down to 58", "around 72", "subtle"),
)

UNRELATED = (
    "The coffee machine on our floor is broken again, someone put descaler in the milk tank.",
    "My mum phones every Sunday around noon, so I keep that hour free.",
    "I can't stand coriander, it tastes like soap to me.",
    "My best friend Lena is getting married in Austria next year.",
    "I'm red-green colourblind, which makes some dashboards a nightmare.",
    "This year's team offsite is at a castle near Leipzig.",
    "Shakshuka is my go-to when people come over for brunch.",
    "I still have my grandfather's watch; it needs a new battery.",
    "My grandmother turns 90 in November and we're planning a lunch for her.",
    "I'm shortsighted, about minus 2.5 in both eyes.",
    "Seeing the northern lights is high on my bucket list.",
    "I only learned to swim properly in my twenties.",
    "We need two approvals before anything gets merged into main.",
    "I hate flying, so for holidays I take the train whenever I can.",
    "My first programming language was Pascal, back in school.",
    "I bought a standing desk during the pandemic and mostly use it sitting down.",
    "Radiohead is my favourite band, I've seen them live twice.",
    "I get migraines if I skip lunch.",
    "I do most of the grocery shopping at the Turkish market on Maybachufer.",
    "My brother-in-law flies for Lufthansa, so he's never around at Christmas.",
    "Horror movies are a hard no for me.",
    "My handwriting is so bad I can't read my own meeting notes.",
    "We track tickets in Jira and I complain about it daily.",
    "I back up my photos to an external drive on the first of every month.",
    "pandas is probably my favourite Python library, even though it drives me mad.",
    "I organise the team's secret santa every December.",
    "The printer on our floor only works after you turn it off and on again.",
    "My birthday is on the 2nd of October.",
    "I'm trying to stay off my phone for the last hour before bed.",
    "My favourite thing to bake is sourdough, though my starter keeps dying.",
    "I have a scar on my left knee from a skateboarding accident when I was twelve.",
    "My old school friend Ravi just became a dad.",
    "I always grab the window seat on long train rides.",
)
# Saved during the update phase, between the changes.
LATE_UNRELATED = (
    "Lena asked me to be a witness at her wedding!",
    "There's a great pho place around the corner, we went twice this week.",
    "I've started keeping a paper journal, one page every night.",
    "Our quarterly planning is next Wednesday and I haven't prepared anything.",
    "My sister sent me a photo of her new puppy, a tiny dachshund.",
    "Can't believe how expensive the ICE tickets to Hamburg have got.",
)

CONTROLS = (
    Control(("I like jazz, mostly old Blue Note records.",
             "I also got really into hip hop lately, mostly 90s stuff."),
            "What kind of music do I like?", ("jazz", "hip hop"), "additive"),
    Control(("Our cat Biscuit is a grey tabby who hides from the vacuum.",
             "We adopted a second cat, a little black kitten called Pepper."),
            "What are our cats called?", ("Biscuit", "Pepper"), "additive"),
    Control(("I play the piano, badly but happily.",
             "Picked up the ukulele this summer as well."),
            "What instruments do I play?", ("piano", "ukulele"), "additive"),
    Control(("My brother Tiago lives in Madrid.",
             "My sister Inês lives in Lisbon, near the river."),
            "Where do my siblings live?", ("Madrid", "Lisbon"), "two people"),
    Control(("My dad is allergic to shellfish.",
             "Mum can't eat gluten, so the party food has to work for both of them."),
            "What can't my parents eat?", ("shellfish", "gluten"), "two people"),
    Control(("Dad's 60th birthday party will be about 30 guests.",
             "The theme for Dad's 60th is 80s disco, he doesn't know yet."),
            "What do I know about Dad's 60th party?", ("30 guests", "80s disco"),
            "two details"),
    Control(("Lena's wedding is on 14 June.",
             "Lena's wedding will be at a vineyard in the Wachau."),
            "When and where is Lena's wedding?", ("14 June", "vineyard"), "two details"),
    Control(("I'm a Union Berlin fan through and through.",
             "A colleague dragged me to a Hertha game on Saturday, fun day out, but I'm "
             "still Union all the way."),
            "Which football club do I support?", ("Union",), "side remark"),
    Control(("My dentist is Dr. Okafor on Sonnenallee.",
             "Dr. Okafor was on holiday, so one of her colleagues did my cleaning this time."),
            "Who is my dentist?", ("Okafor",), "side remark"),
    Control(("Ramen is my favourite food, no contest.",
             "Tried the new Georgian place for lunch, the khachapuri was unreal, though "
             "nothing beats ramen for me."),
            "What's my favourite food?", ("ramen",), "side remark"),
    Control(("I'm allergic to penicillin, found out as a kid.",),
            "Am I allergic to any medicine?", ("penicillin",), "single"),
    Control(("My blood type is A negative.",),
            "What's my blood type?", ("A negative",), "single"),
    Control(("My passport expires in March 2026.",),
            "When does my passport expire?", ("March 2026",), "single"),
)

START = 1_700_000_000.0
HOUR, DAY = 3600.0, 86_400.0
FIRST_BUDGET, BUDGET = 40, 200
REM_AFTER_DAYS = 40
SEED = 20240611


def data_problems() -> list[str]:
    """What is wrong with the frozen data (empty when the phrases do what they claim): each
    update's ``current`` is only in its new text and ``stale`` only in its old one, among
    every text saved; each control's answers are in its own texts."""
    texts = ([u.old for u in UPDATES] + [u.new for u in UPDATES] + list(UNRELATED)
             + list(LATE_UNRELATED) + [t for c in CONTROLS for t in c.texts])
    low = [t.lower() for t in texts]
    problems = []
    for u in UPDATES:
        for phrase, home in ((u.current, u.new), (u.stale, u.old)):
            holders = [t for t, lt in zip(texts, low, strict=True) if phrase.lower() in lt]
            if holders != [home]:
                problems.append(f"{phrase!r} is in {holders}, should be only in {home!r}")
    for c in CONTROLS:
        joined = " ".join(c.texts).lower()
        problems += [f"control answer {a!r} not in its texts" for a in c.answers
                     if a.lower() not in joined]
    return problems


@dataclass
class UpdateRow:
    question: str
    cue: str
    current: str
    stale: str
    first: dict[str, bool] = field(default_factory=dict)  # phase -> current first @40
    stale_in: dict[str, bool] = field(default_factory=dict)  # phase -> stale in @200 pack
    tokens: dict[str, int] = field(default_factory=dict)  # phase -> tokens of @200 pack
    top: dict[str, str] = field(default_factory=dict)  # phase -> first item @40
    current_live: dict[str, bool] = field(default_factory=dict)  # phase -> a live memory has it


@dataclass
class ControlRow:
    question: str
    kind: str
    present: dict[str, bool] = field(default_factory=dict)  # phase -> all answers @200
    missing: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class RemStats:
    flagged: int
    clusters: int
    synthesised: int
    skipped: int
    live_before: int
    live_after: int


@dataclass
class Result:
    updates: list[UpdateRow]
    controls: list[ControlRow]
    rem: RemStats
    saved: int  # memories saved
    live_tokens: dict[str, int]  # phase -> o200k tokens of the live memories

    def first_count(self, phase: str) -> int:
        return sum(r.first[phase] for r in self.updates)

    def stale_count(self, phase: str) -> int:
        return sum(r.stale_in[phase] for r in self.updates)

    def current_live_count(self, phase: str) -> int:
        return sum(r.current_live[phase] for r in self.updates)

    def control_count(self, phase: str) -> int:
        return sum(r.present[phase] for r in self.controls)

    def mean_tokens(self, phase: str) -> float:
        return mean([r.tokens[phase] for r in self.updates]
                    + [r.tokens[phase] for r in self.controls])


PHASES = ("before REM", "after REM")


def _schedule() -> list[tuple[float, str]]:
    """(time, text) of every save: the first fortnight, then the updates' fortnight."""
    rng = random.Random(SEED)
    first = ([u.old for u in UPDATES] + list(UNRELATED) + [c.texts[0] for c in CONTROLS])
    rng.shuffle(first)
    second = ([u.new for u in UPDATES] + [c.texts[1] for c in CONTROLS if len(c.texts) > 1]
              + list(LATE_UNRELATED))
    rng.shuffle(second)
    out, t = [], START
    for text in first:  # a few hours apart, ~2 weeks in all
        t += rng.uniform(2.0, 5.5) * HOUR
        out.append((t, text))
    for text in second:  # a few hours to a day apart
        t += (rng.uniform(18.0, 26.0) if rng.random() < 0.1 else rng.uniform(2.0, 6.5)) * HOUR
        out.append((t, text))
    return out


def _live_tokens(mem: Memory) -> int:
    return int(mem.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                                "AND status = 'live'", (mem.namespace,)))


def _ask(mem: Memory, phase: str, urows: list[UpdateRow], crows: list[ControlRow]) -> None:
    live = [r[0].lower() for r in mem.store.query(
        "SELECT content FROM nodes WHERE namespace = ? AND status = 'live'", (mem.namespace,))]
    for u, row in zip(UPDATES, urows, strict=True):
        first = mem.inject(u.question, FIRST_BUDGET)
        top = first.items[0].content if first.items else ""
        pack = mem.inject(u.question, BUDGET)
        row.first[phase] = u.current.lower() in top.lower()
        row.stale_in[phase] = u.stale.lower() in pack.text.lower()
        row.tokens[phase] = pack.tokens_used
        row.top[phase] = top
        row.current_live[phase] = any(u.current.lower() in t for t in live)
    for c, crow in zip(CONTROLS, crows, strict=True):
        pack = mem.inject(c.question, BUDGET)
        missing = tuple(a for a in c.answers if a.lower() not in pack.text.lower())
        crow.present[phase] = not missing
        crow.missing[phase] = missing
        crow.tokens[phase] = pack.tokens_used


def run(workdir: Path | None = None) -> Result:
    """Save, ask, run REM 40 days later, ask again (see the module docstring)."""
    problems = data_problems()
    if problems:
        raise ValueError("everyday data: " + "; ".join(problems))
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-everyday-"))
    urows = [UpdateRow(u.question, u.cue, u.current, u.stale) for u in UPDATES]
    crows = [ControlRow(c.question, c.kind) for c in CONTROLS]
    schedule = _schedule()
    now = [START]
    live_tokens: dict[str, int] = {}
    with Memory(workdir / "everyday.db", clock=lambda: now[0]) as mem:
        for at, text in schedule:
            now[0] = at
            mem.save(text)
        now[0] += DAY
        live_tokens[PHASES[0]] = _live_tokens(mem)
        _ask(mem, PHASES[0], urows, crows)
        now[0] += REM_AFTER_DAYS * DAY
        rem = mem.run_rem(now=now[0])
        now[0] += DAY
        live_tokens[PHASES[1]] = _live_tokens(mem)
        _ask(mem, PHASES[1], urows, crows)
    stats = RemStats(rem.flagged, rem.clusters, rem.synthesised, rem.skipped,
                     rem.live_before, rem.live_after)
    return Result(urows, crows, stats, len(schedule), live_tokens)


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100.0 * k / n:.0f}%)" if n else "0/0"


def _yn(flag: bool) -> str:
    return "yes" if flag else "no"


def section(result: Result | None = None) -> Result:
    res = result or run()
    n, nc = len(res.updates), len(res.controls)
    cues = {c: sum(u.cue == c for u in UPDATES) for c in ("explicit", "subtle", "none")}
    print("## Everyday updates\n")
    print(f"{n} facts a user changes in passing ({cues['explicit']} with a cue word, "
          f"{cues['subtle']} with a hint, {cues['none']} with none), "
          f"{len(UNRELATED) + len(LATE_UNRELATED)} unrelated memories and {nc} controls "
          f"that must all stay ({res.saved} saves over four weeks; "
          f"benchmarks/eval/everyday.py). Asked a day after the last save, then again after "
          f"one REM cycle {REM_AFTER_DAYS} days later. First = the new value is in the first "
          f"item of a {FIRST_BUDGET}-token pack; stale = the old value is in the "
          f"{BUDGET}-token pack (default floor); controls = all their answers are in the "
          f"{BUDGET}-token pack.\n")
    rows = [[p, _pct(res.first_count(p), n), f"{res.stale_count(p)}/{n}",
             f"{res.control_count(p)}/{nc}", f"{res.mean_tokens(p):.1f}",
             f"{res.current_live_count(p)}/{n}", res.live_tokens[p]] for p in PHASES]
    print(table(["phase", f"current first @{FIRST_BUDGET}", f"stale in @{BUDGET} pack",
                 "controls present", f"mean tokens @{BUDGET}", "new value still live",
                 "live tokens"], rows) + "\n")
    by_cue = [[c] + [_pct(sum(r.first[p] for r in res.updates if r.cue == c), cues[c])
                     for p in PHASES]
              + [f"{sum(r.stale_in[p] for r in res.updates if r.cue == c)}/{cues[c]}"
                 for p in PHASES] for c in cues]
    print(table(["cue", "first (before)", "first (after)", "stale (before)", "stale (after)"],
                by_cue) + "\n")
    r = res.rem
    print(table(["REM run", "flagged", "clusters", "synthesised", "skipped", "live before",
                 "live after"],
                [["one cycle", r.flagged, r.clusters, r.synthesised, r.skipped, r.live_before,
                  r.live_after]]) + "\n")
    print(table(["question", "cue", "first before", "first after", "stale before",
                 "stale after", "new live after", "first item before"],
                [[u.question, u.cue, _yn(u.first[PHASES[0]]), _yn(u.first[PHASES[1]]),
                  _yn(u.stale_in[PHASES[0]]), _yn(u.stale_in[PHASES[1]]),
                  _yn(u.current_live[PHASES[1]]), u.top[PHASES[0]][:60]] for u in res.updates],
                align=["l", "l", "r", "r", "r", "r", "r", "l"]) + "\n")
    print(table(["control", "kind", "present before", "present after", "missing"],
                [[c.question, c.kind, _yn(c.present[PHASES[0]]), _yn(c.present[PHASES[1]]),
                  ", ".join(sorted(set(c.missing[PHASES[0]]) | set(c.missing[PHASES[1]])))
                  or "-"] for c in res.controls],
                align=["l", "l", "r", "r", "l"]) + "\n")
    return res


if __name__ == "__main__":
    section()
