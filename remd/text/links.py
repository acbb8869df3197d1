"""``[[memory:ID]]`` links in a memory's text, and the typed edges they become.

An agent writes "This supersedes [[memory:old-plan]]" and the graph gets a SUPERSEDES edge; the
relationship is read from the words just before the link, in the same sentence. A link with no
relationship word is a plain MENTIONS edge.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from remd.errors import InvalidInput
from remd.models import EdgeType

__all__ = ["Link", "parse_links"]

MAX_CONTEXT = 100
_CONTEXT_BEFORE = 50  # the relationship word sits before the link, so the context leans left
_CUE_REACH = 200  # a cue further back than this is about something else (and keeps this linear)

# [[memory:ID]] or [[memory:ID|label]]; the label is for human readers only.
_LINK_RE = re.compile(r"\[\[memory:(?P<id>[A-Za-z0-9_.:-]{1,64})(?:\|[^\]\n]{0,100})?\]\]")

# Cue phrases per type. The cue nearest to the link wins, so in "replaces [[memory:a]], see also
# [[memory:b]]" the second link is a mention, not a second replacement.
_CUES: dict[EdgeType, str] = {
    EdgeType.SUPERSEDES: r"supersed(?:e|es|ed|ing)|replac(?:e|es|ed|ing)|obsolet(?:e|es|ed|ing)"
    r"|(?:is |as )?(?:a )?replacement (?:for|of)|(?:a )?newer version of"
    r"|updated version of|deprecat(?:e|es|ed|ing)",
    EdgeType.EXTENDS: r"extend(?:s|ed|ing)?|elaborat(?:e|es|ed|ing)(?: on| upon)?"
    r"|(?:builds?|built|building) (?:on|upon)|expand(?:s|ed|ing)? (?:on|upon)"
    r"|follow[- ]up (?:to|on)|adds? detail to",
    EdgeType.CONTRADICTS: r"contradict(?:s|ed|ing)?|disagree(?:s|d|ing)? with"
    r"|challeng(?:e|es|ed|ing)|conflict(?:s|ed|ing)? with|in conflict with|at odds with"
    r"|refut(?:e|es|ed|ing)",
    EdgeType.DEPENDS_ON: r"depend(?:s|ed|ing)? on|requir(?:e|es|ed|ing)|needs?|needed"
    r"|rel(?:y|ies|ied|ying) on|prerequisites?",
    EdgeType.MENTIONS: r"see(?: also)?|cf\.?|related(?: to)?|mentioned in|refer to|as in",
}
_CUE_RE = re.compile(
    "|".join(rf"\b(?P<{t.name}>{src})\b" for t, src in _CUES.items()), re.IGNORECASE
)
# "does not depend on [[memory:x]]" states no dependency: a negation just before the cue.
_NEGATED_RE = re.compile(r"\b(?:not|never|no longer|no)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$",
                         re.IGNORECASE)
# Sentence and clause ends. A "." counts only before whitespace, so "v1.2" is not a boundary.
_BOUNDARY_RE = re.compile(r"[.!?](?=\s)|[;\n]")
_WORD_AND_SPACE_RE = re.compile(r"\S*\s+")


@dataclass(frozen=True, kw_only=True)
class Link:
    """One typed link found in a memory's text."""

    target: str
    type: EdgeType
    context: str  # <= 100 characters of the text around the link

    def __post_init__(self) -> None:
        if not self.target:
            raise InvalidInput("link target must not be empty")
        if len(self.context) > MAX_CONTEXT:
            raise InvalidInput(f"link context is longer than {MAX_CONTEXT} characters")


def parse_links(text: str) -> list[Link]:
    """Return the ``[[memory:ID]]`` links of *text* in order of appearance.

    Each link's type comes from the relationship cue nearest before it in its sentence:
    supersedes/replaces/obsoletes -> SUPERSEDES, extends/elaborates/builds on/expands on ->
    EXTENDS, contradicts/disagrees with/challenges/conflicts with -> CONTRADICTS, depends
    on/requires/needs/relies on -> DEPENDS_ON, anything else (or a negated cue) -> MENTIONS.
    A (target, type) pair is reported once, at its first occurrence. Never raises.
    """
    matches = list(_LINK_RE.finditer(text))
    if not matches:
        return []
    # Blank out the links themselves so that ids ("v1.2", "a;b") hold no boundaries or cues.
    masked = _LINK_RE.sub(lambda m: " " * len(m.group()), text)
    bounds = [b.end() for b in _BOUNDARY_RE.finditer(masked)]
    links: list[Link] = []
    seen: set[tuple[str, EdgeType]] = set()
    for m in matches:
        i = bisect_right(bounds, m.start())
        start = bounds[i - 1] if i else 0
        edge_type = _infer_type(masked[max(start, m.start() - _CUE_REACH):m.start()])
        ident = (m.group("id"), edge_type)
        if ident in seen:
            continue
        seen.add(ident)
        j = bisect_left(bounds, m.end() + 1)
        end = bounds[j] if j < len(bounds) else len(text)
        links.append(Link(target=m.group("id"), type=edge_type,
                          context=_context(text, masked, start, end, m.start())))
    return links


def _infer_type(prefix: str) -> EdgeType:
    last: re.Match[str] | None = None
    for cue in _CUE_RE.finditer(prefix):
        last = cue  # the nearest cue before the link decides
    if last is None or last.lastgroup is None:
        return EdgeType.MENTIONS
    if _NEGATED_RE.search(prefix[: last.start()]):
        return EdgeType.MENTIONS
    return EdgeType[last.lastgroup]


def _context(text: str, masked: str, start: int, end: int, link_start: int) -> str:
    """Up to 100 characters of the link's sentence, from a word a little before the link."""
    begin = max(start, link_start - _CONTEXT_BEFORE)
    if begin > start:  # do not open mid-word or inside an earlier link (blank in *masked*)
        skip = _WORD_AND_SPACE_RE.match(masked, begin)
        if skip is not None and skip.end() <= link_start:
            begin = skip.end()
    window = text[begin:min(end, link_start + 4 * MAX_CONTEXT)]
    return " ".join(window.split())[:MAX_CONTEXT].rstrip()
