"""Fact recognition: many phrasings of one fact meet on one key; doubtful sentences yield none."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remd.errors import InvalidInput
from remd.text.facts import MAX_VALUE_LEN, FactStatement, parse_facts

pytestmark = pytest.mark.backends

# (text, key, value, change)
POSITIVE = [
    # The memorylens seed's two patterns.
    ("My city is Bangalore", "user/city", "Bangalore", False),
    ("My city has changed to Mumbai", "user/city", "Mumbai", True),
    # Change variants.
    ("my city is now Mumbai", "user/city", "Mumbai", True),
    ("My city changed to Pune.", "user/city", "Pune", True),
    ("My city was changed to Pune!", "user/city", "Pune", True),
    ("My new city is Lisbon", "user/city", "Lisbon", True),
    ("My email has been updated to bob@example.com", "user/email", "bob@example.com", True),
    ("I changed my email to bob@example.com", "user/email", "bob@example.com", True),
    ("I updated my phone number to 555-0100", "user/phone", "555-0100", True),
    ("My city is no longer Delhi, it's Mumbai", "user/city", "Mumbai", True),
    ("My city is no longer Delhi, it’s Mumbai now.", "user/city", "Mumbai", True),
    ("My job changed from nurse to teacher", "user/job", "teacher", True),
    ("My role has been updated to team lead", "user/job", "team lead", True),
    ("My city is Mumbai now", "user/city", "Mumbai", True),
    # Life facts.
    ("I moved to Berlin last year", "user/city", "Berlin", True),
    ("I moved to Pune last week", "user/city", "Pune", True),
    ("I relocated to Austin, Texas in 2021", "user/city", "Austin, Texas", True),
    ("I have moved to Canberra", "user/city", "Canberra", True),
    ("I've relocated to Dublin", "user/city", "Dublin", True),
    ("I moved to the Netherlands", "user/city", "the Netherlands", True),
    ("I now live in Tokyo", "user/city", "Tokyo", True),
    ("I live in Oslo with my wife", "user/city", "Oslo", False),
    ("I'm living in Seattle these days", "user/city", "Seattle", False),
    ("i live in st. louis", "user/city", "st. louis", False),
    ("I work at Google", "user/employer", "Google", False),
    ("I now work at Stripe", "user/employer", "Stripe", True),
    ("I work for the BBC", "user/employer", "the BBC", False),
    ("I work at Google as a software engineer", "user/employer", "Google", False),
    ("I joined Microsoft last month", "user/employer", "Microsoft", True),
    ("I work as a nurse", "user/job", "nurse", False),
    ("I'm working as a data scientist", "user/job", "data scientist", False),
    ("I'm 34 years old", "user/age", "34", False),
    ("I am 27 years old.", "user/age", "27", False),
    ("I turned 40 last week", "user/age", "40", True),
    ("Call me Ishmael.", "user/name", "Ishmael", False),
    ("I'm from Lagos", "user/hometown", "Lagos", False),
    ("I grew up in Kyoto", "user/hometown", "Kyoto", False),
    ("We finally moved to Denver.", "user/city", "Denver", True),
    ("I started a new job at Initech last week", "user/employer", "Initech", True),
    ("I started working at Google.", "user/employer", "Google", True),
    ("I drive a Tesla Model 3", "user/car", "Tesla Model 3", False),
    ("I traded my car for a Subaru Outback.", "user/car", "Subaru Outback", True),
    ("I replaced my laptop with a ThinkPad", "user/laptop", "ThinkPad", True),
    ("My dog is called Pepper", "user's dog/name", "Pepper", False),
    ("My dog is now called Mochi.", "user's dog/name", "Mochi", True),
    ("My car is still a Honda Civic", "user/car", "Honda Civic", False),
    # Aliases.
    ("My location is Denver", "user/city", "Denver", False),
    ("My current city is Chicago", "user/city", "Chicago", False),
    ("My home city is Madrid", "user/city", "Madrid", False),
    ("My occupation is accountant", "user/job", "accountant", False),
    ("My profession is a lawyer", "user/job", "lawyer", False),
    ("My company is Acme Corp", "user/employer", "Acme Corp", False),
    ("My workplace is Initech", "user/employer", "Initech", False),
    ("My favourite food is sushi", "user/favorite food", "sushi", False),
    ("My fave colour is green", "user/favorite color", "green", False),
    ("My date of birth is 1990-05-03", "user/birthday", "1990-05-03", False),
    ("My age is 52", "user/age", "52", False),
    ("My hometown is Leeds", "user/hometown", "Leeds", False),
    # Third person.
    ("Caroline's city is Mumbai.", "caroline/city", "Mumbai", False),
    ("Melanie's job is painter", "melanie/job", "painter", False),
    ("Yesterday Caroline's job changed to nurse", "caroline/job", "nurse", True),
    ("Caroline Smith's employer is Initech", "caroline smith/employer", "Initech", False),
    ("My sister's name is Anna", "user's sister/name", "Anna", False),
    # Value cleaning, casing and context.
    ("Hi there! My name's Alice.", "user/name", "Alice", False),
    ("My name is Bob, nice to meet you", "user/name", "Bob", False),
    ("Just so you know, my birthday is May 3", "user/birthday", "May 3", False),
    ("My favorite book is The Hobbit", "user/favorite book", "The Hobbit", False),
    ("My favorite band is the Beatles", "user/favorite band", "the Beatles", False),
    ("My job is a baker", "user/job", "baker", False),
    ("my city is mumbai", "user/city", "mumbai", False),
    ('My nickname is "Bobby"', "user/nickname", "Bobby", False),
    ("My city is Paris because I love it", "user/city", "Paris", False),
    ("My employer is Globex but I want to leave", "user/employer", "Globex", False),
    ("MY CITY IS ROME", "user/city", "ROME", False),
    ("Ok. My   city   is   Rome", "user/city", "Rome", False),
]

NEGATIVE = [
    # Questions.
    "What is my city?",
    "Is my city Mumbai?",
    "is my city Mumbai",
    "Where do I live?",
    "Do you know what my city is",
    "My city is Mumbai, right?",
    # Negations.
    "My city is not Mumbai",
    "My city isn't Mumbai",
    "My city is definitely not Mumbai",
    "I don't live in London anymore",
    "I never moved to Rome",
    "I don't think my city is Mumbai",
    "don't call me Bob",
    # Hypotheticals and wishes.
    "If my city is Paris, I will be happy",
    "If I moved to Paris I'd be happy",
    "I wish I lived in Rome",
    "I'd like to move to Lisbon",
    "I want to work at Google",
    "Maybe my city is Mumbai",
    "My question is whether my city is Mumbai",
    # No possessive: generic statements.
    "The city is big",
    "The weather in Paris is lovely",
    "Her city is Mumbai",
    # Not attributes, not values, past tense, doubt.
    "my bad",
    "My god is this good",
    "Oh my god is that Mumbai",
    "My point is that we should go",
    "My favorite is pizza",
    "My job is great",
    "My city is Mumbai or Pune",
    "My city is probably Mumbai",
    "My city used to be Delhi",
    "I lived in Delhi for years",
    "It's my city",
    "I am 30",
    "I'm 200 years old",
    "My age is ²",
    "call me tomorrow",
    # Objects that are not places or employers.
    "I live in an apartment",
    "I moved to the city",
    "I work at home",
    "I work for a living",
    "I joined Caroline for lunch",
    "I joined the LGBTQ support group",
    "I drive a lot",
    "I started working at a bakery",
    "I started working with Caroline.",
    "We live in a bubble",
    "We moved to the city",
    "My city is still not Mumbai",
    "Today's weather is sunny",
    "",
    "my city is " + "x" * (MAX_VALUE_LEN + 1),
]


@pytest.mark.parametrize(("text", "key", "value", "change"), POSITIVE)
def test_recognised(text: str, key: str, value: str, change: bool) -> None:
    facts = parse_facts(text)
    assert [(f.key, f.value, f.change) for f in facts] == [(key, value, change)]


@pytest.mark.parametrize("text", NEGATIVE)
def test_not_a_fact(text: str) -> None:
    assert parse_facts(text) == []


def test_tables_are_large_enough() -> None:
    assert len(POSITIVE) >= 40 and len(NEGATIVE) >= 20


@pytest.mark.parametrize(
    "text",
    [
        "My city is Pune",
        "my location is Pune",
        "My current city is Pune.",
        "I moved to Pune",
        "I now live in Pune",
        "I relocated to Pune",
        "My city has changed to Pune",
        "my city is PUNE",
    ],
)
def test_phrasings_meet_on_one_key(text: str) -> None:
    (fact,) = parse_facts(text)
    assert fact.key == "user/city"
    assert fact.value.casefold() == "pune"


def test_several_facts_in_text_order() -> None:
    facts = parse_facts("My name is Bob and I live in Paris. Oh, and I work as a chef!")
    assert [(f.key, f.value) for f in facts] == [
        ("user/name", "Bob"), ("user/city", "Paris"), ("user/job", "chef"),
    ]


def test_update_sequence() -> None:
    facts = parse_facts("My city is Bangalore. Now my city has changed to Mumbai.")
    assert [(f.value, f.change) for f in facts] == [("Bangalore", False), ("Mumbai", True)]


def test_repeated_fact_is_reported_once() -> None:
    assert len(parse_facts("My city is Oslo. my city is oslo! I live in Oslo.")) == 1


def test_negation_in_another_clause_does_not_block() -> None:
    (fact,) = parse_facts("I don't know about you, but my city is Mumbai")
    assert fact.value == "Mumbai"


def test_key_normalises_case_and_spaces() -> None:
    fact = FactStatement(subject="Caroline  Smith", attribute="Favorite   Food", value="x",
                         change=False)
    assert fact.key == "caroline smith/favorite food"


def test_fact_statement_is_frozen_and_validated() -> None:
    fact = FactStatement(subject="user", attribute="city", value="Oslo", change=False)
    with pytest.raises(AttributeError):
        fact.value = "Bergen"  # type: ignore[misc]
    with pytest.raises(InvalidInput):
        FactStatement(subject="user", attribute=" ", value="Oslo", change=False)


def test_huge_text_stays_linear() -> None:
    text = ("Lorem ipsum dolor sit amet my " * 2000 + "\n") * 20 + "My city is Oslo."
    start = time.perf_counter()
    facts = parse_facts(text)
    assert time.perf_counter() - start < 2.0
    assert [(f.key, f.value) for f in facts] == [("user/city", "Oslo")]


_PIECES = st.sampled_from(
    ["my", "My", "city", "is", "now", "not", "has changed to", "I", "moved to", "live in", "Mumbai",
     "Caroline's", "job", "?", ".", ",", "if", "call me", "years old", "34", "no longer", "it's",
     "\x00", "\ud800", "🍕", "'s", "the", "from", "to", "\n", "age", "²", "٣٤", "turned",
     "joined", "work at", "I'm", "Google", "with", "years", "old", "is now", "changed from"]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.text(alphabet=st.characters(exclude_categories=())),
    st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=30).map(" ".join),
))
def test_parse_facts_property(text: str) -> None:
    for fact in parse_facts(text):
        assert 1 <= len(fact.attribute.split()) <= 3
        assert fact.value and fact.value == fact.value.strip()
        assert len(fact.value) <= MAX_VALUE_LEN
        subject, _, attribute = fact.key.partition("/")
        assert subject and attribute == fact.attribute
        assert fact.key == fact.key.lower()
