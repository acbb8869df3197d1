"""[[memory:ID]] links: ids, inferred edge types, uniqueness, order and context."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remd.errors import InvalidInput
from remd.models import EdgeType
from remd.text.links import MAX_CONTEXT, Link, parse_links

pytestmark = pytest.mark.backends

S, E, C, D, M = (EdgeType.SUPERSEDES, EdgeType.EXTENDS, EdgeType.CONTRADICTS,
                 EdgeType.DEPENDS_ON, EdgeType.MENTIONS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The MGA seed's examples.
        ("This supersedes [[memory:old-plan]].", [("old-plan", S)]),
        ("See also [[memory:related-note]] for context.", [("related-note", M)]),
        ("This plan supersedes [[memory:old-docker-plan]] because it is simpler.",
         [("old-docker-plan", S)]),
        # Every cue of every type.
        ("Supersede [[memory:a]]", [("a", S)]),
        ("This replaces [[memory:a]]", [("a", S)]),
        ("It obsoletes [[memory:a]]", [("a", S)]),
        ("This memory replaced [[memory:a]] last week", [("a", S)]),
        ("It extends [[memory:a]]", [("a", E)]),
        ("This elaborates on [[memory:a]]", [("a", E)]),
        ("It builds on [[memory:a]]", [("a", E)]),
        ("This expands on [[memory:a]] with examples", [("a", E)]),
        ("This contradicts [[memory:a]]", [("a", C)]),
        ("I disagree with [[memory:a]]", [("a", C)]),
        ("This challenges [[memory:a]]", [("a", C)]),
        ("It conflicts with [[memory:a]]", [("a", C)]),
        ("Step 3 depends on [[memory:a]]", [("a", D)]),
        ("Deploying requires [[memory:a]]", [("a", D)]),
        ("This needs [[memory:a]] first", [("a", D)]),
        ("It relies on [[memory:a]]", [("a", D)]),
        ("Nothing special about [[memory:a]]", [("a", M)]),
        ("[[memory:a]]", [("a", M)]),
        # Case and the rest of the sentence.
        ("THIS SUPERSEDES [[memory:a]]", [("a", S)]),
        ("Per the team, this extends the API notes in [[memory:a]]", [("a", E)]),
        # Cues only reach back within their sentence.
        ("This replaces the old flow. Unrelated: [[memory:a]]", [("a", M)]),
        ("It replaces everything; [[memory:a]] is background", [("a", M)]),
        ("It replaces everything\n[[memory:a]]", [("a", M)]),
        # The nearest cue wins.
        ("This supersedes [[memory:a]], see also [[memory:b]]", [("a", S), ("b", M)]),
        ("Extends [[memory:a]] and contradicts [[memory:b]]", [("a", E), ("b", C)]),
        ("This supersedes [[memory:a]] and [[memory:b]]", [("a", S), ("b", S)]),
        # Negated cues state no relationship.
        ("This does not depend on [[memory:a]]", [("a", M)]),
        ("It no longer replaces [[memory:a]]", [("a", M)]),
        ("This doesn't contradict [[memory:a]]", [("a", M)]),
        # Ids: dots and colons are part of the id, not sentence ends.
        ("Builds on [[memory:v1.2]] and [[memory:ns:item_7]]", [("v1.2", E), ("ns:item_7", E)]),
        ("Replaces [[memory:01HZX3-abc.DEF_9]]", [("01HZX3-abc.DEF_9", S)]),
        ("Extends [[memory:a|the auth overview]]", [("a", E)]),
        # Not links.
        ("[[memory:]] [[memory:has space]] [[memory:a/b]] [[note:x]] [memory:x] [[Memory:x]]", []),
        ("[[memory:" + "x" * 65 + "]]", []),
        ("no links here, it supersedes nothing", []),
    ],
)
def test_parse_links(text: str, expected: list[tuple[str, EdgeType]]) -> None:
    assert [(link.target, link.type) for link in parse_links(text)] == expected


def test_id_of_64_chars_is_accepted() -> None:
    ident = "x" * 64
    assert [link.target for link in parse_links(f"see [[memory:{ident}]]")] == [ident]


def test_unique_per_target_and_type_in_order_of_appearance() -> None:
    text = ("See [[memory:b]]. This supersedes [[memory:a]]. Again [[memory:b]]. "
            "Also this contradicts [[memory:b]]. It supersedes [[memory:a]] too.")
    assert [(link.target, link.type) for link in parse_links(text)] == [
        ("b", M), ("a", S), ("b", C),
    ]


def test_context_is_the_text_around_the_link() -> None:
    (link,) = parse_links("Intro sentence. API v2 supersedes [[memory:v1]] because of pagination. "
                          "Outro.")
    assert link.context == "API v2 supersedes [[memory:v1]] because of pagination."


def test_context_starts_at_a_word_and_not_inside_an_earlier_link() -> None:
    text = ("This plan supersedes [[memory:old-plan]] because the deploy now depends on "
            "[[memory:db-migration]] finishing first.")
    second = parse_links(text)[1]
    assert second.context == ("because the deploy now depends on [[memory:db-migration]] "
                              "finishing first.")


def test_context_is_bounded_and_keeps_the_cue() -> None:
    text = ("word " * 80) + "and this replaces [[memory:x]] " + ("tail " * 80)
    (link,) = parse_links(text)
    assert len(link.context) <= MAX_CONTEXT
    assert "replaces [[memory:x]]" in link.context
    assert "  " not in link.context and "\n" not in link.context


def test_link_value_is_frozen_and_validated() -> None:
    link = Link(target="a", type=M, context="see [[memory:a]]")
    with pytest.raises(AttributeError):
        link.target = "b"  # type: ignore[misc]
    with pytest.raises(InvalidInput):
        Link(target="", type=M, context="")
    with pytest.raises(InvalidInput):
        Link(target="a", type=M, context="x" * (MAX_CONTEXT + 1))


def test_many_links_in_a_big_text_are_all_read() -> None:
    # (No timing is asserted here: the suite never does; the VM's speed drifts.)
    text = "This extends [[memory:n0]]. " + " ".join(
        f"item {i} needs [[memory:n{i}]] and more words" for i in range(1, 5000)
    )
    links = parse_links(text)
    assert len(links) == 5000
    assert links[0].type is E and all(link.type is D for link in links[1:])


_IDS = st.text(alphabet="abcXYZ0189_.:-", min_size=1, max_size=64)
_ANY = st.text(alphabet=st.characters(exclude_categories=()))


@settings(max_examples=300, deadline=None)
@given(_ANY)
def test_parse_links_never_raises(text: str) -> None:
    links = parse_links(text)
    assert len({(link.target, link.type) for link in links}) == len(links)
    for link in links:
        assert len(link.context) <= MAX_CONTEXT


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ANY, _IDS), min_size=1, max_size=5), _ANY)
def test_every_embedded_link_is_found(parts: list[tuple[str, str]], tail: str) -> None:
    text = "".join(f"{before} [[memory:{ident}]] " for before, ident in parts) + tail
    targets = {link.target for link in parse_links(text)}
    assert {ident for _, ident in parts} <= targets
