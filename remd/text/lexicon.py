"""The lexicon tagging reads: plural rules and their exceptions, a derivational map, and a small
category lexicon; :func:`lemma`, the one dictionary form every tag word is reduced to.

Table look-ups only: tagging runs on the bulk-save hot path.
"""

from __future__ import annotations

from functools import lru_cache

from remd.text.words import word_set as _words


def _pairs(text: str) -> dict[str, str]:
    """``"a:b c:d"`` -> ``{"a": "b", "c": "d"}``."""
    return dict(pair.split(":", 1) for pair in text.split())


# Plurals that are not to be singularised: invariant nouns, plural-only nouns, and common proper
# names ending in "s" (tags are lemmatised whatever their case, so "James" must survive).
NO_STRIP = _words(
    """
    news series species means physics mathematics maths politics economics ethics athletics
    gymnastics graphics genetics linguistics electronics aerobics diabetes measles mumps rabies
    herpes clothes jeans pants shorts trousers scissors pajamas pyjamas thanks fries headquarters
    always perhaps sometimes towards afterwards besides whereas lens canvas atlas alias chaos
    cosmos christmas texas kansas arkansas dallas vegas athens wales mars los angeles netherlands
    philippines bahamas maldives barbados honduras james charles thomas nicholas douglas lucas
    carlos williams jones adams evans edwards roberts phillips hughes stevens matthews collins
    """
)

# Singulars ending in "ie" / "che", whose plurals must not become "-y" / "-ch".
_IE_WORDS = _words(
    """
    movie cookie brownie zombie rookie selfie smoothie hoodie auntie calorie pie tie lie die genie
    veggie foodie goodie sweetie birdie newbie hippie indie prairie eerie
    """
)
_CHE_WORDS = _words(
    "ache headache niche cache avalanche psyche moustache mustache cliche quiche creche"
)

_IRREGULAR = _pairs(
    """
    children:child grandchildren:grandchild people:person men:man women:woman gentlemen:gentleman
    mice:mouse feet:foot teeth:tooth geese:goose oxen:ox wolves:wolf knives:knife wives:wife
    leaves:leaf halves:half shelves:shelf loaves:loaf thieves:thief selves:self potatoes:potato
    tomatoes:tomato heroes:hero echoes:echo mosquitoes:mosquito volcanoes:volcano buses:bus
    viruses:virus campuses:campus bonuses:bonus statuses:status focuses:focus geniuses:genius
    quizzes:quiz analyses:analysis crises:crisis theses:thesis cacti:cactus fungi:fungus
    criteria:criterion phenomena:phenomenon indices:index matrices:matrix appendices:appendix
    """
)

# Derivational map: verb and adjective forms of the concepts memories are about meet their noun,
# so "I prefer tea" and "what are my preferences?" share the tag ``preference``.
_DERIVED: dict[str, str] = {}
for _target, _forms in {
    "preference": "prefer prefers preferred preferring preference preferences",
    "allergy": "allergic allergy allergies",
    "like": "like likes liked liking",
    "love": "love loves loved loving",
    "live": "live lives lived living",
    "work": "work works worked working",
    "move": "move moves moved moving",
    "favorite": "favorite favorites favourite favourites",
    "hate": "hate hates hated hating",
    "enjoy": "enjoy enjoys enjoyed enjoying",
    "eat": "eat eats ate eaten eating",
    "travel": "travel travels traveled travelled traveling travelling",
}.items():
    for _form in _forms.split():
        _DERIVED[_form] = _target
TABLE = {**_IRREGULAR, **_DERIVED}

# Category lexicon: a member word (as lemmatised) adds the broader category tag. Kept small and
# unambiguous on purpose; words with two common senses ("rock", "game", "cold") are left out.
CATEGORIES: dict[str, str] = {
    "food": "food peanut chocolate pizza coffee tea vegan vegetarian pasta sushi burger cheese "
    "bread cake cookie fruit salad meat chicken rice noodle soup dessert snack dinner restaurant "
    "recipe dairy gluten eat",
    "pet": "pet dog cat puppy kitten hamster parrot rabbit bunny goldfish vet leash",
    "family": "family mother mom mum father dad sister brother sibling kid child son daughter "
    "husband wife spouse parent grandma grandmother grandpa grandfather aunt uncle cousin baby "
    "niece nephew twin grandchild",
    "work": "work job boss office career salary colleague coworker manager employer employee "
    "company promotion interview deadline client startup internship workplace overtime",
    "home": "home city move apartment house flat neighborhood neighbourhood rent landlord "
    "roommate live relocate mortgage suburb town",
    "hobby": "hobby guitar painting hiking knitting drawing photography gardening fishing camping "
    "chess pottery crochet sewing woodworking climbing surfing skating puzzle lego",
    "health": "health doctor therapy therapist allergy hospital medicine medication illness "
    "disease surgery anxiety depression diabetes asthma nurse clinic injury symptom dentist "
    "pregnancy vaccine headache migraine cancer flu fever prescription",
    "travel": "travel trip vacation holiday flight airport hotel passport visa tourist abroad "
    "cruise luggage suitcase backpacking itinerary journey resort",
    "music": "music song concert band guitar piano violin drum singer album playlist jazz opera "
    "choir musician lyric melody instrument",
    "sport": "sport football soccer basketball baseball tennis golf marathon gym yoga swimming "
    "cycling workout coach hockey volleyball cricket boxing skiing athlete fitness",
    "education": "education school college university course degree teacher professor student "
    "exam homework lecture graduation diploma tuition semester thesis classroom scholarship "
    "kindergarten",
    "money": "money salary budget saving bank loan debt investment stock tax income dollar "
    "credit cash finance mortgage retirement crypto bitcoin expensive",
    "reading": "reading book novel author library chapter poetry poem kindle fiction memoir "
    "biography bookstore magazine",
    "movie": "movie film cinema netflix actor actress series television episode documentary "
    "theater theatre hollywood anime cartoon sitcom",
    "friend": "friend friendship buddy pal bestie bff",
    "weather": "weather rain snow sunny cloudy storm temperature forecast humid windy hurricane "
    "tornado climate",
    "vehicle": "vehicle car truck bike bicycle motorcycle scooter driving driver taxi van suv "
    "parking commute subway",
    "tech": "tech computer laptop phone smartphone software app coding programming python "
    "javascript internet website robot gadget tablet",
    "relationship": "relationship boyfriend girlfriend dating wedding marriage married divorce "
    "romance crush engaged anniversary",
    "art": "art painting drawing sketch artist museum gallery sculpture photography pottery",
    "shopping": "shopping shop store mall clothes dress shoe fashion outfit",
    "nature": "nature park forest mountain lake river ocean beach camping garden hiking",
    "charity": "charity volunteer volunteering donation donate fundraiser nonprofit",
}
CATEGORY_OF: dict[str, tuple[str, ...]] = {}
for _cat, _members in CATEGORIES.items():
    for _member in _members.split():
        CATEGORY_OF[_member] = (*CATEGORY_OF.get(_member, ()), _cat)


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """Lower-case *word* and reduce it to a deterministic dictionary form.

    English plurals are singularised (``allergies`` -> ``allergy``, ``boxes`` -> ``box``) unless
    the word is invariant or a known name (``news``, ``glass``, ``James``); a few irregular plurals
    and the derivational map (``preferred`` -> ``preference``) are looked up. Only ASCII words are
    changed by rule: this is not a stemmer, and a missed merge costs less than a wrong one.
    Idempotent: ``lemma(lemma(w)) == lemma(w)``. Never raises.
    """
    w = word.lower()
    while w.endswith("'s"):  # possessive: "Caroline's" files under "caroline"
        w = w[:-2]
    mapped = TABLE.get(w)
    if mapped is not None:
        return mapped
    if len(w) <= 3 or not w.isascii() or not w.isalpha() or w in NO_STRIP:
        return w
    if w.endswith(("ss", "us", "is")):
        return w
    if w.endswith("ies"):
        stem = w[:-1] if w[:-1] in _IE_WORDS else (w[:-3] + "y" if len(w) > 4 else w[:-1])
    elif w.endswith(("sses", "xes", "zzes", "shes")):
        stem = w[:-2]
    elif w.endswith("ches"):
        stem = w[:-1] if w[:-1] in _CHE_WORDS else w[:-2]
    elif w.endswith("s"):
        stem = w[:-1]
    else:
        return w
    # "childrens" -> "children" -> "child": re-look-up so the result is a fixed point.
    return TABLE.get(stem, stem)
