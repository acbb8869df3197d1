"""The invented world of the fact-consolidation set (``benchmarks/eval/fact_edits.py``).

Synthetic, built here from a fixed seed (``SEED``) over 43 entities (24 people, 9 companies, 10
products; names made from the small lists in ``benchmarks/eval/data/fact_edits.json``, no real
persons) with ten relations: a person's employer, city, spouse, manager and favourite sport; a
company's headquarters city and CEO; a product's maker, price and designer. Each relation is
written in four or five phrasings ("X works for Y", "Y employs X", "X's employer is Y", ...),
kept in that file with the names.

About 40% of the facts get one to three later edits, interleaved with the rest of the list
after its first stretch. An edit is written plainly with a new value and a different phrasing
(no cue at all), with a change cue ("now", "has moved to", "took over", "relocated", ...), or
with a reference to the list ("Correction to fact 12: ...", "As of fact 80, ..."). Every
numbered statement ("27. The CEO of Quendle Systems is Corvin Ashholt.") is one memory.
:func:`build` also picks the questions: about 60 single-hop ones (most of them about edited
facts) and 40 two-hop chains.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.eval import datafiles

SEED = 20250705
EDITED_SHARE = 0.4
EDIT_COUNTS = (1, 1, 1, 2, 2, 3)  # drawn per edited fact
QUIET_PREFIX = 0.45  # this share of first statements comes before any edit
MIN_GAP = 8  # an edit comes at least this many statements after the version it replaces
N_SINGLE_EDITED, N_SINGLE_PLAIN = 46, 14
TWO_HOP_MIX = {"hop 1 edited": 12, "hop 2 edited": 12, "both edited": 10, "neither edited": 6}

_DATA = datafiles.read("fact_edits")  # benchmarks/eval/data/fact_edits.json
FIRST_NAMES: tuple[str, ...] = tuple(_DATA["first_names"])
SURNAME_HEADS: tuple[str, ...] = tuple(_DATA["surname_heads"])
SURNAME_TAILS: tuple[str, ...] = tuple(_DATA["surname_tails"])
COMPANIES: tuple[str, ...] = tuple(_DATA["companies"])
CITIES: tuple[str, ...] = tuple(_DATA["cities"])
PRODUCTS: tuple[str, ...] = tuple(_DATA["products"])
PRICES: tuple[str, ...] = tuple(_DATA["prices"])
SPORTS: tuple[str, ...] = tuple(_DATA["sports"])
N_PEOPLE, N_MARRIED = 24, 10  # the first N_MARRIED people have a spouse fact


@dataclass(frozen=True)
class Relation:
    name: str
    plain: tuple[str, ...]  # a fact stated flatly: {s} subject, {v} value
    cue: tuple[str, ...]  # a change, said as one
    questions: tuple[str, ...]


RELATIONS = {r["name"]: Relation(r["name"], tuple(r["plain"]), tuple(r["cue"]),
                                  tuple(r["questions"])) for r in _DATA["relations"]}
# an edit that points back into the list: {p} the replaced statement's number, {n} its own
REFERENCES: tuple[str, ...] = tuple(_DATA["references"])
# two-hop chain kinds: (hop 1 relation, hop 2 relation, question about hop 1's subject)
CHAINS: tuple[tuple[str, str, str], ...] = tuple((c["hop1"], c["hop2"], c["question"])
                                                 for c in _DATA["chains"])


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
