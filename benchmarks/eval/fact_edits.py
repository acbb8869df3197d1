"""Fact consolidation: a long numbered list of facts in which later facts overwrite earlier ones.

Imitates the FactConsolidation split of MemoryAgentBench (Hu et al., arXiv 2507.05257): the
agent reads a long list of numbered facts, some of which are later restated with a new value,
and must answer with the newest value, single-hop and multi-hop. The data here is NOT taken
from MAB: it is synthetic and built in this module from a fixed seed (``SEED``), over an
invented world of 43 entities (24 people, 9 companies, 10 products; names made from the small
lists below, no real persons) with ten relations: a person's employer, city, spouse, manager
and favourite sport; a company's headquarters city and CEO; a product's maker, price and
designer. Each relation is written in four or five phrasings ("X works for Y", "Y employs X",
"X's employer is Y", ...).

About 40% of the facts get one to three later edits, interleaved with the rest of the list
after its first stretch. An edit is written plainly with a new value and a different phrasing
(no cue at all), with a change cue ("now", "has moved to", "took over", "relocated", ...), or
with a reference to the list ("Correction to fact 12: ...", "As of fact 80, ..."). Every
numbered statement ("27. The CEO of Quendle Systems is Corvin Ashholt.") is one memory, saved
ten clock minutes after the previous one.

Measures, once everything is saved:

- single-hop (about 60 facts, most of them edited): the first item of ``inject(q, 40)`` is
  classified by the statement it is: the newest statement of the asked fact (right), an older
  statement of that fact (stale), or something else; a first item that is not a saved
  statement verbatim falls back to naming the subject and the newest (or an older) value. Also
  the share of ``inject(q, 200)`` packs (default relevance floor) that hold an older statement.
- two-hop (40 chains, "In which city is the company Tarin Brinford works for headquartered?",
  where either hop may have been edited), measured the way an agent iterates: ask hop 1's own
  question, check the first item is hop 1's newest statement; ask hop 2's question about hop 1's
  newest value, check the first item is hop 2's newest statement; the chain is right when both
  are. Also, for the whole two-hop question in one ``inject(q, 200)`` (default floor): is the
  final answer anywhere in the pack, and are both newest statements in it.
"""

from __future__ import annotations

import random
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.eval.report import mean, table
from remd import Memory

SEED = 20250705
STEP = 600.0  # ten minutes between statements
FIRST_BUDGET, BUDGET = 40, 200
EDITED_SHARE = 0.4
EDIT_COUNTS = (1, 1, 1, 2, 2, 3)  # drawn per edited fact
QUIET_PREFIX = 0.45  # this share of first statements comes before any edit
MIN_GAP = 8  # an edit comes at least this many statements after the version it replaces
N_SINGLE_EDITED, N_SINGLE_PLAIN = 46, 14
TWO_HOP_MIX = {"hop 1 edited": 12, "hop 2 edited": 12, "both edited": 10, "neither edited": 6}

FIRST_NAMES = ("Tarin", "Odelia", "Brannoc", "Sefa", "Merrin", "Calix", "Junia", "Perrin",
               "Avel", "Rosmund", "Keld", "Lirae", "Dovan", "Essa", "Halvard", "Ysolde",
               "Corvin", "Maelis", "Tobin", "Wrenna", "Anselm", "Brisa", "Fenna", "Oskel")
SURNAME_HEADS = ("Ash", "Brin", "Cor", "Dal", "Fen", "Gar", "Hol", "Kes", "Lor", "Mar", "Orm",
                 "Pell", "Quar", "Rav", "Sel", "Thorn", "Vend", "Wick")
SURNAME_TAILS = ("by", "den", "ford", "holt", "ley", "mere", "ric", "sted", "wyn", "ett")
COMPANIES = ("Quendle Systems", "Brask Foods", "Orrin Freight", "Velt Textiles", "Halcyra Labs",
             "Dunvale Instruments", "Pellow Mills", "Strax Robotics", "Umbra Paper Works")
CITIES = ("Marrowby", "Caldreth", "Velmoor", "Astwick", "Orwen Bay", "Kelmar", "Brindlemoor",
          "Saltreach", "Greywater", "Fallowmere", "Ostrend", "Lindquay")
PRODUCTS = ("Lumo kettle", "Fennix drone", "Tallow desk lamp", "Orbel smartwatch",
            "Kestra blender", "Mirren camera", "Zephan scooter", "Quill-7 tablet",
            "Haddon heater", "Sable router")
PRICES = ("$39", "$64", "$89", "$120", "$149", "$199", "$240", "$310", "$425", "$560", "$75",
          "$18", "$1,050", "$27")
SPORTS = ("tennis", "rowing", "fencing", "curling", "handball", "squash", "archery", "badminton",
          "cricket", "lacrosse", "volleyball", "judo")
N_PEOPLE, N_MARRIED = 24, 10  # the first N_MARRIED people have a spouse fact


@dataclass(frozen=True)
class Relation:
    name: str
    plain: tuple[str, ...]  # a fact stated flatly: {s} subject, {v} value
    cue: tuple[str, ...]  # a change, said as one
    questions: tuple[str, ...]


RELATIONS = {r.name: r for r in (
    Relation("employer",
             ("{s} works for {v}.", "{s}'s employer is {v}.", "{v} employs {s}.",
              "{s} is on the payroll of {v}.", "{s} has a job at {v}."),
             ("{s} now works for {v}.", "{s} has left and joined {v}.", "{v} has since hired {s}.",
              "{s} changed jobs and is with {v} now."),
             ("Who does {s} work for?", "Which company employs {s}?")),
    Relation("city",
             ("{s} lives in {v}.", "{s}'s home is in {v}.", "{s} is a resident of {v}.",
              "{v} is where {s} lives."),
             ("{s} has moved to {v}.", "{s} now lives in {v}.", "{s} relocated to {v}."),
             ("Where does {s} live?", "In which city does {s} live?")),
    Relation("spouse",
             ("{s} is married to {v}.", "{s}'s spouse is {v}.", "{v} is the spouse of {s}.",
              "{s} and {v} are married."),
             ("{s} is now married to {v}.", "{s} has since married {v}.",
              "{s} remarried; the new spouse is {v}."),
             ("Who is {s} married to?", "Who is {s}'s spouse?")),
    Relation("manager",
             ("{s}'s manager is {v}.", "{s} reports to {v}.", "{v} manages {s}.",
              "{v} is the boss of {s}."),
             ("{s} now reports to {v}.", "{v} has taken over as {s}'s manager.",
              "{s} got a new manager: {v}."),
             ("Who is {s}'s manager?", "Who does {s} report to?")),
    Relation("sport",
             ("{s}'s favourite sport is {v}.", "{s} loves {v} more than any other sport.",
              "The sport {s} enjoys most is {v}.", "Of all sports, {s} likes {v} best."),
             ("{s}'s favourite sport these days is {v}.",
              "{s} has switched to {v} as a favourite sport.", "{s} now likes {v} best."),
             ("What is {s}'s favourite sport?", "Which sport does {s} like most?")),
    Relation("hq",
             ("{s} is headquartered in {v}.", "{s} has its head office in {v}.",
              "The headquarters of {s} are in {v}.", "{v} is home to the head office of {s}."),
             ("{s} has moved its headquarters to {v}.", "{s} is now headquartered in {v}.",
              "{s} relocated its head office to {v}."),
             ("Where is {s} headquartered?", "In which city is the head office of {s}?")),
    Relation("ceo",
             ("The CEO of {s} is {v}.", "{v} is the chief executive of {s}.",
              "{v} runs {s} as its CEO.", "{s} is led by CEO {v}."),
             ("{v} has taken over as CEO of {s}.", "The new CEO of {s} is {v}.",
              "{s} now has {v} as its chief executive."),
             ("Who is the CEO of {s}?", "Who runs {s}?")),
    Relation("maker",
             ("The {s} is made by {v}.", "{v} manufactures the {s}.",
              "The maker of the {s} is {v}.", "{v} builds the {s}."),
             ("The {s} is now made by {v}.", "Production of the {s} has moved to {v}.",
              "{v} took over manufacturing the {s}."),
             ("Who makes the {s}?", "Which company manufactures the {s}?")),
    Relation("price",
             ("The {s} costs {v}.", "The {s} sells for {v}.", "The price of the {s} is {v}.",
              "You can buy the {s} for {v}."),
             ("The {s} now costs {v}.", "The price of the {s} has changed to {v}.",
              "The {s} was repriced to {v}."),
             ("How much does the {s} cost?", "What is the price of the {s}?")),
    Relation("designer",
             ("The {s} was designed by {v}.", "{v} is the designer of the {s}.",
              "The designer behind the {s} is {v}."),
             ("{v} is now credited as the designer of the {s}.",
              "The {s} was redesigned, and its designer is now {v}."),
             ("Who designed the {s}?", "Who is the designer of the {s}?")),
)}
# an edit that points back into the list: {p} the replaced statement's number, {n} its own
REFERENCES = ("Correction to fact {p}: {plain}", "As of fact {n}, {plain}",
              "Update: {plain}", "This replaces fact {p}: {plain}")
# two-hop chain kinds: (hop 1 relation, hop 2 relation, question about hop 1's subject)
CHAINS = (
    ("employer", "hq", "In which city is the company {s} works for headquartered?"),
    ("employer", "ceo", "Who is the CEO of the company that employs {s}?"),
    ("manager", "city", "Where does {s}'s manager live?"),
    ("spouse", "employer", "Who does {s}'s spouse work for?"),
    ("manager", "sport", "What is the favourite sport of {s}'s manager?"),
    ("maker", "hq", "Where is the company that makes the {s} headquartered?"),
    ("maker", "ceo", "Who is the CEO of the company that makes the {s}?"),
    ("designer", "city", "In which city does the designer of the {s} live?"),
    ("ceo", "spouse", "Who is the CEO of {s} married to?"),
    ("spouse", "city", "Where does {s}'s spouse live?"),
)


@dataclass(frozen=True)
class Fact:
    subject: str
    relation: str
    values: tuple[str, ...]  # first value, then each edit's

    @property
    def key(self) -> tuple[str, str]:
        return self.subject, self.relation

    @property
    def newest(self) -> str:
        return self.values[-1]


@dataclass(frozen=True)
class Statement:
    number: int
    text: str  # as saved, number included
    key: tuple[str, str]
    version: int  # 0: first statement of the fact; k: its k-th edit
    kind: str  # "first", or an edit's style: "plain", "cue", "reference"


@dataclass(frozen=True)
class SingleQ:
    question: str
    key: tuple[str, str]


@dataclass(frozen=True)
class TwoHopQ:
    question: str
    kind: str  # which hop(s) were edited
    hop1: tuple[str, str]
    hop2: tuple[str, str]  # subject = hop 1's newest value


@dataclass(frozen=True)
class World:
    facts: dict[tuple[str, str], Fact]
    statements: tuple[Statement, ...]
    single: tuple[SingleQ, ...]
    two_hop: tuple[TwoHopQ, ...]


def _people(rng: random.Random) -> list[str]:
    surnames = [h + t for h in SURNAME_HEADS for t in SURNAME_TAILS]
    rng.shuffle(surnames)
    return [f"{first} {last}"
            for first, last in zip(FIRST_NAMES[:N_PEOPLE], surnames[:N_PEOPLE], strict=True)]


def _fill(template: str, s: str, v: str) -> str:
    return template.format(s=s, v=v)


def _first_facts(rng: random.Random, people: list[str]) -> list[Fact]:
    """Every fact's first value, before any edit."""
    values = {
        "employer": COMPANIES, "city": CITIES, "sport": SPORTS, "hq": CITIES,
        "maker": COMPANIES, "price": PRICES,
    }
    married = people[:N_MARRIED]
    unmarried = people[N_MARRIED:]
    spouses = rng.sample(unmarried, len(married))
    facts: list[Fact] = []
    for i, p in enumerate(people):
        facts.append(Fact(p, "employer", (rng.choice(values["employer"]),)))
        facts.append(Fact(p, "city", (rng.choice(values["city"]),)))
        facts.append(Fact(p, "manager", (rng.choice([q for q in people if q != p]),)))
        facts.append(Fact(p, "sport", (rng.choice(values["sport"]),)))
        if p in married:
            facts.append(Fact(p, "spouse", (spouses[i],)))
    ceos = rng.sample(people, len(COMPANIES))
    for c, ceo in zip(COMPANIES, ceos, strict=True):
        facts.append(Fact(c, "hq", (rng.choice(values["hq"]),)))
        facts.append(Fact(c, "ceo", (ceo,)))
    for prod in PRODUCTS:
        facts.append(Fact(prod, "maker", (rng.choice(values["maker"]),)))
        facts.append(Fact(prod, "price", (rng.choice(values["price"]),)))
        facts.append(Fact(prod, "designer", (rng.choice(people),)))
    return facts


def _candidates(fact: Fact, people: list[str]) -> list[str]:
    r = fact.relation
    pool = {"employer": COMPANIES, "maker": COMPANIES, "city": CITIES, "hq": CITIES,
            "sport": SPORTS, "price": PRICES}.get(r)
    if pool is None:
        pool = people[N_MARRIED:] if r == "spouse" else people
    return [v for v in pool if v not in fact.values and v != fact.subject]


def _edit_text(rng: random.Random, rel: Relation, s: str, v: str, used: set[str],
               number: int, previous: int) -> tuple[str, str]:
    """An edit's sentence and its style: plain (another phrasing, no cue), cue or reference."""
    roll = rng.random()
    plain = [t for t in rel.plain if t not in used] or list(rel.plain)
    if roll < 0.35:
        t = rng.choice(plain)
        used.add(t)
        return _fill(t, s, v), "plain"
    if roll < 0.75:
        return _fill(rng.choice(rel.cue), s, v), "cue"
    t = rng.choice(plain)
    used.add(t)
    body = _fill(t, s, v)
    ref = rng.choice(REFERENCES)
    if ref.startswith("As of") and body.startswith("The "):
        body = "the " + body[4:]
    return ref.format(p=previous, n=number, plain=body), "reference"


def build(seed: int = SEED) -> World:
    """The world, its numbered statements and its questions (deterministic for a seed)."""
    rng = random.Random(seed)
    people = _people(rng)
    names = [*people, *COMPANIES, *CITIES, *PRODUCTS, *SPORTS]
    clash = [(a, b) for a in names for b in names if a != b and a.lower() in b.lower()]
    assert not clash, clash  # a value never hides inside another name
    first = _first_facts(rng, people)
    edited = set(rng.sample(range(len(first)), round(EDITED_SHARE * len(first))))
    values: dict[tuple[str, str], list[str]] = {f.key: list(f.values) for f in first}
    for i in sorted(edited):
        f = first[i]
        for _ in range(rng.choice(EDIT_COUNTS)):
            cur = Fact(f.subject, f.relation, tuple(values[f.key]))
            values[f.key].append(rng.choice(_candidates(cur, people)))
    _fix_spouses(rng, values, people)
    facts = {k: Fact(k[0], k[1], tuple(v)) for k, v in values.items()}

    # order: a quiet stretch of first statements, then the rest mixed with the edits
    order = [f.key for f in first]
    rng.shuffle(order)
    quiet = round(QUIET_PREFIX * len(order))
    pending_first = order[quiet:]
    emitted: list[tuple[tuple[str, str], int]] = [(k, 0) for k in order[:quiet]]
    pos: dict[tuple[str, str], int] = {k: i for i, k in enumerate(order[:quiet])}
    next_version = {k: 1 for k in order[:quiet]}
    while pending_first or any(next_version[k] < len(facts[k].values) for k in next_version):
        ready = [k for k, v in next_version.items()
                 if v < len(facts[k].values) and len(emitted) - pos[k] >= MIN_GAP]
        if pending_first and (not ready or rng.random() < 0.45):
            k = pending_first.pop(0)
            pos[k] = len(emitted)
            next_version[k] = 1
            emitted.append((k, 0))
        elif ready:
            k = rng.choice(ready)
            emitted.append((k, next_version[k]))
            pos[k] = len(emitted) - 1
            next_version[k] += 1
        else:  # only edits left, all too close to their previous version: let time pass
            k = min((k for k in next_version if next_version[k] < len(facts[k].values)),
                    key=lambda k: pos[k])
            emitted.append((k, next_version[k]))
            pos[k] = len(emitted) - 1
            next_version[k] += 1

    statements: list[Statement] = []
    used: dict[tuple[str, str], set[str]] = {}
    number_of: dict[tuple[tuple[str, str], int], int] = {}
    for n, (k, version) in enumerate(emitted, start=1):
        f, rel = facts[k], RELATIONS[k[1]]
        v = f.values[version]
        if version == 0:
            t = rng.choice(rel.plain)
            used[k] = {t}
            text, kind = _fill(t, f.subject, v), "first"
        else:
            text, kind = _edit_text(rng, rel, f.subject, v, used[k], n,
                                    number_of[(k, version - 1)])
        number_of[(k, version)] = n
        statements.append(Statement(n, f"{n}. {text}", k, version, kind))

    # single-hop: mostly edited facts, some never edited, spread over relations
    by_edit = sorted(facts, key=lambda k: (len(facts[k].values) == 1, k))
    changed = [k for k in by_edit if len(facts[k].values) > 1]
    unchanged = [k for k in by_edit if len(facts[k].values) == 1]
    picks = _spread(rng, changed, N_SINGLE_EDITED) + _spread(rng, unchanged, N_SINGLE_PLAIN)
    single = tuple(SingleQ(rng.choice(RELATIONS[k[1]].questions).format(s=k[0]), k)
                   for k in picks)

    # two-hop: hop 2 is about hop 1's newest value
    pools: dict[str, list[TwoHopQ]] = {kind: [] for kind in TWO_HOP_MIX}
    for r1, r2, q in CHAINS:
        for k1 in sorted(k for k in facts if k[1] == r1):
            k2 = (facts[k1].newest, r2)
            if k2 not in facts:
                continue
            e1, e2 = len(facts[k1].values) > 1, len(facts[k2].values) > 1
            kind = ("both edited" if e1 and e2 else "hop 1 edited" if e1
                    else "hop 2 edited" if e2 else "neither edited")
            pools[kind].append(TwoHopQ(q.format(s=k1[0]), kind, k1, k2))
    two_hop: list[TwoHopQ] = []
    for kind, want in TWO_HOP_MIX.items():
        two_hop += _spread(rng, pools[kind], want, group=lambda t: (t.hop1[1], t.hop2[1]))
    return World(facts, tuple(statements), single, tuple(two_hop))


def _fix_spouses(rng: random.Random, values: dict[tuple[str, str], list[str]],
                 people: list[str]) -> None:
    """Give each married person a final spouse no other married person ends with."""
    taken: set[str] = set()
    for k in sorted(k for k in values if k[1] == "spouse"):
        hist = values[k]
        if hist[-1] in taken:
            free = [p for p in people[N_MARRIED:] if p not in taken and p not in hist]
            hist[-1] = rng.choice(free)
        taken.add(hist[-1])


def _spread(rng: random.Random, items: list, want: int, group=lambda k: k[1]) -> list:
    """``want`` items drawn round-robin over groups (relations or chain kinds)."""
    groups: dict[object, list] = {}
    for it in items:
        groups.setdefault(group(it), []).append(it)
    for g in groups.values():
        rng.shuffle(g)
    out: list = []
    keys = sorted(groups, key=str)
    while len(out) < want and any(groups.values()):
        for g in keys:
            if groups[g] and len(out) < want:
                out.append(groups[g].pop())
    return out


WORLD = build()


def _names(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(value)}(?![\w]|,\d)", text, re.IGNORECASE) is not None


def classify(content: str, fact: Fact, by_text: dict[str, Statement]) -> str:
    """What an item is to a question about ``fact``: newest, older or other."""
    st = by_text.get(content)
    if st is not None:
        if st.key != fact.key:
            return "other"
        return "newest" if st.version == len(fact.values) - 1 else "older"
    if not _names(content, fact.subject):  # not a saved statement (rewritten): by names
        return "other"
    if any(_names(content, v) for v in fact.values[:-1]):
        return "older"
    return "newest" if _names(content, fact.newest) else "other"


@dataclass
class SingleRow:
    question: str
    relation: str
    edits: int
    newest_kind: str  # how the newest statement was written
    first: str  # newest / older / other
    stale_in_pack: bool
    newest_in_pack: bool
    tokens: int
    first_text: str


@dataclass
class TwoHopRow:
    question: str
    kind: str
    hop1_first: str
    hop2_first: str
    answer_in_pack: bool
    both_in_pack: bool
    tokens: int
    hop1_text: str
    hop2_text: str

    @property
    def ok(self) -> bool:
        return self.hop1_first == "newest" and self.hop2_first == "newest"


@dataclass
class Result:
    single: list[SingleRow]
    two_hop: list[TwoHopRow]
    measures: dict[str, float] = field(default_factory=dict)


def _newest_kind(world: World, key: tuple[str, str]) -> str:
    return [s for s in world.statements if s.key == key][-1].kind


def run(workdir: Path | None = None, world: World = WORLD) -> Result:
    """Save every statement ten minutes apart in a fresh file, then ask the questions."""
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-fact-edits-"))
    by_text = {s.text: s for s in world.statements}
    now = [1_700_000_000.0]
    single: list[SingleRow] = []
    two_hop: list[TwoHopRow] = []

    with Memory(workdir / "fact_edits.db", clock=lambda: now[0]) as mem:
        for st in world.statements:
            now[0] += STEP
            mem.save(st.text)
        now[0] += STEP

        def first(question: str, fact: Fact) -> tuple[str, str]:
            pack = mem.inject(question, FIRST_BUDGET)
            top = pack.items[0].content if pack.items else ""
            return (classify(top, fact, by_text) if top else "none"), top

        for q in world.single:
            fact = world.facts[q.key]
            got, top = first(q.question, fact)
            pack = mem.inject(q.question, BUDGET)
            kinds = [classify(i.content, fact, by_text) for i in pack.items]
            single.append(SingleRow(q.question, fact.relation, len(fact.values) - 1,
                                    _newest_kind(world, q.key), got, "older" in kinds,
                                    "newest" in kinds, pack.tokens_used, top))
        for q in world.two_hop:
            f1, f2 = world.facts[q.hop1], world.facts[q.hop2]
            q1 = RELATIONS[f1.relation].questions[0].format(s=f1.subject)
            q2 = RELATIONS[f2.relation].questions[0].format(s=f2.subject)
            got1, top1 = first(q1, f1)
            got2, top2 = first(q2, f2)
            pack = mem.inject(q.question, BUDGET)
            k1 = [classify(i.content, f1, by_text) for i in pack.items]
            k2 = [classify(i.content, f2, by_text) for i in pack.items]
            two_hop.append(TwoHopRow(q.question, q.kind, got1, got2, _names(pack.text, f2.newest),
                                     "newest" in k1 and "newest" in k2, pack.tokens_used,
                                     top1, top2))

    res = Result(single, two_hop)
    n, m = len(single), len(two_hop)
    res.measures = {
        "statements": len(world.statements),
        "facts": len(world.facts),
        "edited facts": sum(len(f.values) > 1 for f in world.facts.values()),
        "single newest first": sum(r.first == "newest" for r in single) / n,
        "single older first": sum(r.first == "older" for r in single) / n,
        "single other first": sum(r.first not in ("newest", "older") for r in single) / n,
        "single packs with an outdated value": sum(r.stale_in_pack for r in single) / n,
        "single packs with the newest value": sum(r.newest_in_pack for r in single) / n,
        "single mean pack tokens": mean([r.tokens for r in single]),
        "two-hop right (iterated)": sum(r.ok for r in two_hop) / m,
        "two-hop hop 1 right": sum(r.hop1_first == "newest" for r in two_hop) / m,
        "two-hop hop 2 right": sum(r.hop2_first == "newest" for r in two_hop) / m,
        "two-hop answer in pack": sum(r.answer_in_pack for r in two_hop) / m,
        "two-hop both statements in pack": sum(r.both_in_pack for r in two_hop) / m,
        "two-hop mean pack tokens": mean([r.tokens for r in two_hop]),
    }
    return res


def _share(rows: list, pred) -> str:
    return f"{sum(1 for r in rows if pred(r))}/{len(rows)}" if rows else "-"


def section() -> None:
    res = run()
    ms = res.measures
    print("## Fact consolidation (MAB-style, synthetic)\n")
    print(f"{ms['statements']} numbered statements about {ms['facts']} facts of an invented "
          f"world, {ms['edited facts']} of them edited one to three times later in the list "
          f"(benchmarks/eval/fact_edits.py, seed {SEED}; imitates MemoryAgentBench's "
          f"FactConsolidation, data built here). One memory per statement, ten minutes apart. "
          f"First = first item of a {FIRST_BUDGET}-token pack is the fact's newest statement / "
          f"an older one / something else; pack = {BUDGET} tokens at the default floor.\n")
    s = res.single
    rows = []
    groups: list[tuple[str, list[SingleRow]]] = [
        ("all", s), ("never edited", [r for r in s if r.edits == 0]),
        ("edited once", [r for r in s if r.edits == 1]),
        ("edited 2-3 times", [r for r in s if r.edits >= 2]),
        ("newest written plainly", [r for r in s if r.newest_kind == "plain"]),
        ("newest with a change cue", [r for r in s if r.newest_kind == "cue"]),
        ("newest marked as update or correction", [r for r in s if r.newest_kind == "reference"]),
    ]
    for rel in RELATIONS:
        groups.append((f"relation: {rel}", [r for r in s if r.relation == rel]))
    for name, g in groups:
        if g:
            rows.append([name, len(g), _share(g, lambda r: r.first == "newest"),
                         _share(g, lambda r: r.first == "older"),
                         _share(g, lambda r: r.stale_in_pack),
                         _share(g, lambda r: r.newest_in_pack),
                         f"{mean([r.tokens for r in g]):.1f}"])
    print("### Single-hop\n")
    print(table(["questions", "n", "newest first", "older first", "pack has outdated",
                 "pack has newest", "pack tokens"], rows) + "\n")

    t = res.two_hop
    rows = []
    for name in ("all", *TWO_HOP_MIX):
        g = t if name == "all" else [r for r in t if r.kind == name]
        if g:
            rows.append([name, len(g), _share(g, lambda r: r.hop1_first == "newest"),
                         _share(g, lambda r: r.hop2_first == "newest"), _share(g, lambda r: r.ok),
                         _share(g, lambda r: r.answer_in_pack), _share(g, lambda r: r.both_in_pack),
                         f"{mean([r.tokens for r in g]):.1f}"])
    print("### Two-hop\n")
    print("Iterated: hop 1's question, then hop 2's question about hop 1's newest value, each "
          f"judged on the first item of a {FIRST_BUDGET}-token pack. Pack: the whole two-hop "
          f"question in one {BUDGET}-token pack (default floor).\n")
    print(table(["chains", "n", "hop 1 first", "hop 2 first", "both (right)",
                 "answer in pack", "both newest in pack", "pack tokens"], rows) + "\n")

    print("### Summary\n")
    print(table(["measure", "value"],
                [[k, f"{v:.3f}" if isinstance(v, float) else str(v)] for k, v in ms.items()])
          + "\n")
    wrong = [r for r in s if r.first != "newest"][:10]
    if wrong:
        print("### Single-hop misses (first 10)\n")
        print(table(["question", "edits", "first", "first item"],
                    [[r.question, r.edits, r.first, r.first_text[:70]] for r in wrong],
                    align=["l", "r", "l", "l"]) + "\n")
    wrong2 = [r for r in t if not r.ok][:8]
    if wrong2:
        print("### Two-hop misses (first 8)\n")
        print(table(["question", "hop 1", "hop 2", "hop 1 first item", "hop 2 first item"],
                    [[r.question, r.hop1_first, r.hop2_first, r.hop1_text[:48],
                      r.hop2_text[:48]] for r in wrong2], align=["l"] * 5) + "\n")


if __name__ == "__main__":
    section()
