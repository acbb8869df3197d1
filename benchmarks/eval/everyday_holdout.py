"""Everyday updates, holdout set: does the newer fact win, before and after REM?

A third, independent set of everyday updates, kept as a final check that changes made for the
main and check sets generalise: the engine's developer does not read this file and nobody tunes
on it. The speaker is a 28-year-old paediatric nurse in a small town in northern Portugal who
is also doing a part-time master's, plays bass in a covers band, has asthma, rents a flat, has
a cat, and is in a long-distance relationship. She tells her assistant 21 things that change
later (shifts, medication, exams, rent, the band, her partner's city, ...): a third with a cue
word, a third with a subtle hint, a third with no cue at all (just a different value said
later), among 26 memories about other things and 8 controls that must NOT be treated as
changes: additive statements ("also", "too"), two people with different values, two details of
one thing, a one-off aside that leaves a standing habit alone, and a single fact.

Protocol (the same as ``everyday_check``): a fresh file, the clock at 1_700_000_000. The old
statements, the unrelated memories and each control's first text are saved shuffled (fixed
seed), three to eight hours apart (about two weeks); then the new statements and the controls'
second texts, shuffled, two hours to a day apart. A day later every question is asked: per
update, ``first`` = the first item of a 40-token pack holds the new value (``current``),
``stale`` = a 200-token pack with the default relevance floor holds the old value (``stale``),
and its tokens; per control, whether every answer is in the 200-token pack. Then 40 days pass,
one REM cycle runs at that time (default offline synthesiser), and the same questions are asked
a day later.
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
    kind: str  # additive | people | details | aside | single


UPDATES = (
    # --- a cue word ---
    Update("I'm on the night rotation on the paediatric ward, usually four nights on and three "
           "off.",
           "They moved me onto day shifts on the ward, so now I'm up at six instead of sleeping "
           "till two in the afternoon.",
           "What shifts am I working at the hospital?", "day shifts", "night rotation"),
    Update("For my asthma I only have the blue salbutamol inhaler, which I use when I get "
           "tight-chested.",
           "The pulmonologist switched me to Symbicort, two puffs every morning and evening.",
           "Which inhaler do I use for my asthma?", "Symbicort", "salbutamol"),
    Update("The band practises on Tuesday evenings in the garage behind Rui's parents' place.",
           "We don't rehearse at Rui's anymore, we rent a little room above the music shop on "
           "Rua Direita.",
           "Where does my band practise?", "music shop", "garage"),
    Update("Professor Antunes is supervising my master's thesis, he's lovely but slow to answer "
           "emails.",
           "My supervisor retired in January, so Dr. Carvalho took over my thesis.",
           "Who is supervising my thesis?", "Carvalho", "Antunes"),
    Update("My epidemiology exam is on the 14th of June, the morning after a shift of course.",
           "Epidemiology got rescheduled because of the teachers' strike, it's on the 2nd of "
           "July now.",
           "When do I sit my epidemiology exam?", "2nd of July", "14th of June"),
    Update("I get around on a second-hand Vespa my uncle sold me for almost nothing.",
           "Sold the scooter last month and bought a used Renault Clio, no more arriving at work "
           "soaked.",
           "What do I use to get around town?", "Clio", "Vespa"),
    Update("I still smoke three or four cigarettes a day, mostly after nights to wind down.",
           "Two months since I quit smoking and I haven't caved once, not even at the band's "
           "parties.",
           "Am I a smoker?", "quit smoking", "three or four cigarettes"),
    # --- a subtle hint ---
    Update("Rent on my flat is 450 euros a month, bills not included.",
           "The landlady sent over the renewed contract: 520 euros a month starting in March.",
           "How much is my rent?", "520 euros", "450 euros"),
    Update("Théo lives in Lyon, so we mostly see each other one weekend a month.",
           "Théo's transfer finally came through and he's living in Porto, forty minutes from "
           "me!",
           "Which city does Théo live in?", "Porto", "Lyon"),
    Update("My bass is a cheap black Squier I bought when I was nineteen.",
           "Treated myself to a Fender Jazz Bass with the Christmas bonus; the old one is going "
           "on OLX.",
           "What bass do I play?", "Fender Jazz", "Squier"),
    Update("I do pilates twice a week at the studio across from the hospital.",
           "These days I'm hooked on bouldering, three evenings a week at the climbing gym in "
           "Guimarães.",
           "What do I do for exercise?", "bouldering", "pilates"),
    Update("At her last check-up Pimenta weighed 4.1 kilos.",
           "The vet put Pimenta on the scale on Thursday: 5.3 kilos. She's officially a chunky "
           "cat and on a diet.",
           "How heavy is my cat?", "5.3 kilos", "4.1 kilos"),
    Update("My ward manager is Enfermeira Lurdes, strict but fair.",
           "Met the new head of the ward today, a guy called Paulo, seems much more relaxed.",
           "Who manages my ward?", "Paulo", "Lurdes"),
    Update("I'm learning French on Duolingo so I can talk to Théo's grandmother.",
           "Signed up for a proper French course at the Alliance Française on Saturday mornings, "
           "the app just wasn't cutting it.",
           "How am I learning French?", "Alliance", "Duolingo"),
    # --- no cue: the value simply differs ---
    Update("My coffee order is always a galão with one sugar.",
           "At the café I order an espresso, no sugar, drunk standing at the counter.",
           "How do I take my coffee?", "espresso", "galão"),
    Update("Our band is called Os Vizinhos.",
           "We play as Maré Baixa, mostly covers plus two songs Rui wrote.",
           "What's the name of my band?", "Maré Baixa", "Os Vizinhos"),
    Update("Our first gig is at Bar do Largo on 22 March.",
           "The Bar do Largo gig is on the 5th of April, doors at ten.",
           "When is our gig at Bar do Largo?", "5th of April", "22 March"),
    Update("My best friend Inês works as a pharmacist in Viana.",
           "Inês runs the counter at a pharmacy in Coimbra, near the old university.",
           "Where does Inês work?", "Coimbra", "Viana"),
    Update("Every morning I take 1000 IU of vitamin D, doctor's orders after a bad blood test.",
           "I take 4000 IU of vitamin D with breakfast.",
           "How much vitamin D do I take?", "4000 IU", "1000 IU"),
    Update("My thesis is about vaccination rates among Roma children in the north.",
           "The thesis looks at burnout among nurses in small district hospitals.",
           "What is my master's thesis about?", "burnout", "vaccination rates"),
    Update("Before bed I'm reading Os Maias, slowly.",
           "The book on my nightstand is Ensaio sobre a Cegueira and it's giving me nightmares.",
           "What book am I reading at the moment?", "Cegueira", "Os Maias"),
)

UNRELATED = (
    "I was born in Barcelos and my parents still live there, in the same house with the fig "
    "tree.",
    "Penicillin gives me a rash, found that out the hard way at fourteen.",
    "Pimenta is a tortoiseshell I adopted from the municipal shelter in 2021.",
    "My younger brother Tiago is doing his Erasmus in Ghent this year and sends me waffle "
    "photos.",
    "I'm O negative, so the blood bank calls me every few months.",
    "Coriander tastes like soap to me, I pick it out of everything.",
    "Sunday lunch at my grandmother's is non-negotiable; she makes roast kid and won't hear "
    "otherwise.",
    "I graduated in nursing from the University of Minho in 2018.",
    "Radiohead are my favourite band ever, I saw them once in Lisbon and cried through "
    "Nude.",
    "If I don't sleep enough I get migraines, and ibuprofen usually sorts them out.",
    "Théo and I met at a friend's wedding in Braga three years ago.",
    "I'm saving up for Japan, I want to see the cherry blossoms at least once in my life.",
    "My flat is on the third floor with no lift: great for my legs, terrible for groceries.",
    "The washing machine in our building's laundry room eats socks, I'm convinced of it.",
    "Every June I volunteer at the Red Cross first-aid tent during the São João festival.",
    "My salary lands in my Caixa Geral account on the 20th of each month.",
    "Motorways at night scare me, the lorries feel like they're about to swallow me.",
    "My godmother Fátima sends me a jar of homemade quince jam every Christmas.",
    "I'm hopeless with plants; the only survivor on my balcony is a rosemary bush.",
    "Rui, our guitarist, teaches at a primary school during the week.",
    "After a long shift I need at least two coffees before I'm a person again.",
    "Arroz de pato is my favourite dish, my mum's version especially.",
    "I wear monthly contact lenses, minus 2.5 in both eyes.",
    "My passport lives in the blue folder on top of the wardrobe.",
    "I support Sporting, which makes dinners with my Benfica-mad family interesting.",
    "My laptop is a five-year-old ThinkPad that only survives thanks to a new battery.",
)

CONTROLS = (
    Control(("I sing backing vocals on most of our songs.",
             "On a couple of tracks I play the keyboard parts too."),
            "What do I do in the band?", ("backing vocals", "keyboard"), "additive"),
    Control(("Shellfish gives me hives, so no prawns for me.",
             "I'm allergic to latex as well, which is a real pain when you work in a hospital."),
            "What am I allergic to?", ("shellfish", "latex"), "additive"),
    Control(("Théo's birthday is on the 19th of November.",
             "My brother Tiago turns 24 on the 3rd of October."),
            "When are Théo's and my brother's birthdays?", ("19th of November", "3rd of October"),
            "people"),
    Control(("My dad is a retired postman.",
             "Mum still works as a seamstress from home in Barcelos."),
            "What do my parents do for a living?", ("postman", "seamstress"), "people"),
    Control(("Inês is getting married at the Quinta da Aveleda.",
             "The wedding is on a Saturday in September, I've already asked for the day off."),
            "Where and when is Inês's wedding?", ("Quinta da Aveleda", "September"), "details"),
    Control(("My nursing licence number with the Ordem is 81234.",
             "The licence has to be renewed by December 2025."),
            "What's my nursing licence number and when does it need renewing?",
            ("81234", "December 2025"), "details"),
    Control(("I do my weekly grocery shopping at the Pingo Doce by the roundabout.",
             "Popped into Continente today only because detergent was half price."),
            "Where do I usually do my grocery shopping?", ("Pingo Doce",), "aside"),
    Control(("My locker at the hospital is number 117.",),
            "What's my locker number at work?", ("117",), "single"),
)

SEED = 2604
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
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-everyday-holdout-"))
    rng = random.Random(SEED)
    first_texts = ([u.old for u in UPDATES] + list(UNRELATED) + [c.texts[0] for c in CONTROLS])
    rng.shuffle(first_texts)
    later_texts = [u.new for u in UPDATES] + [t for c in CONTROLS for t in c.texts[1:]]
    rng.shuffle(later_texts)
    now = [START]
    with Memory(workdir / "everyday_holdout.db", clock=lambda: now[0]) as mem:
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
    print("## Everyday updates (holdout set)\n")
    print(f"A nurse and part-time student in northern Portugal: {n} facts that change later "
          f"(cue words, subtle, or no cue), {len(UNRELATED)} unrelated memories, {nc} controls "
          f"that must all stay (benchmarks/eval/everyday_holdout.py). Current first = the new "
          f"value is in the first item of a {FIRST_BUDGET}-token pack; stale in = the old value "
          f"is in a {BUDGET}-token pack (default floor); controls present = every answer in the "
          f"{BUDGET}-token pack. After REM = {REM_AFTER_DAYS} days later, one REM cycle, asked "
          f"a day after.\n")
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
