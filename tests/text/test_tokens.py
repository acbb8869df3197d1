"""Token counts: remd's encodings against stock tiktoken's, and the seam rule of
TokenCounter.count_joined against tiktoken on the joined text."""

from __future__ import annotations

import dataclasses

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from remd.errors import ConfigError
from remd.text import tokens
from remd.text.tokens import TokenCounter, get_encoding

# Characters that meet at seams in awkward ways: letters with and without case, digits,
# combining marks, apostrophes (contractions), slashes (o200k's punctuation run takes them
# after line breaks), whitespace of every kind, CJK, emoji, and non-ASCII digits.
_ALPHABET = list("aZqé ß'’sStT.,!?/-_\"()[]0123456789 \t\n\r") + [
    "\u0301", "\u0308", "\u00a0", "\u3000", "日", "本", "٣", "²", "😀", "ǅ", "ʰ"]
# Most texts start with a letter or digit, so most joins take the seam rule's fast path.
_TEXT = st.tuples(st.sampled_from(["", "a", "Z", "é", "日", "٣", "5", "Ⅻ"]),
                  st.text(alphabet=_ALPHABET, max_size=12)).map("".join)
_SEPS = ["\n", "\n\n", " \n", "\r\n", "\n---\n", "\n/", ". \n", ", ", " ", ""]


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    return TokenCounter(request.param)


SAMPLES = [
    "", "hello world", "I water the basil on Sundays.\n",
    "Café au lait, naïve façade — 日本語のテキスト", "  indented\tline\r\nnext   ",
    "don't won't they'll I'M", "1234567890 3.14159 ٣٤٥ ²", "def f(x):\n    return x ** 2  # 😀",
    "https://example.com/a/b?c=d&e=f", "<|endoftext|> is text",
]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encodings_equal_stock_tiktoken(name: str,
                                        stock_tiktoken: dict[str, tiktoken.Encoding]) -> None:
    """remd builds the encoding from the shipped file itself; stock tiktoken downloads (here:
    reads a seeded cache). Same file, pattern and special tokens, so the same counts."""
    ours, stock = get_encoding(name), stock_tiktoken[name]
    assert ours is not stock and ours.name == stock.name == name
    assert ours._pat_str == stock._pat_str
    assert ours._special_tokens == stock._special_tokens
    assert ours._mergeable_ranks == stock._mergeable_ranks
    for text in SAMPLES + [" ".join(SAMPLES) * 20]:
        assert ours.encode_ordinary(text) == stock.encode_ordinary(text)
        assert TokenCounter(name).count(text) == len(stock.encode_ordinary(text))
        assert ours.encode(text, allowed_special="all") == stock.encode(text, allowed_special="all")


def test_a_shipped_file_that_is_not_the_official_one_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tokens._SPECS["cl100k_base"]
    monkeypatch.setitem(tokens._SPECS, "cl100k_base", dataclasses.replace(spec, sha256="0" * 64))
    with pytest.raises(ConfigError, match="sha256"):
        tokens._build.__wrapped__("cl100k_base")


@settings(max_examples=600, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=6), sep=st.sampled_from(_SEPS))
@pytest.mark.slow
def test_count_joined_equals_counting_the_joined_text(
        counter: TokenCounter, stock_tiktoken: dict[str, tiktoken.Encoding], texts: list[str],
        sep: str) -> None:
    enc = stock_tiktoken[counter.name]  # independent of remd's counter
    counts = [len(enc.encode_ordinary(t)) for t in texts]
    assert counter.count_joined(texts, counts, sep) == len(enc.encode_ordinary(sep.join(texts)))


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.from_regex(r"[A-Za-z0-9][\w '.,!?-]{0,30}[.!?]?", fullmatch=True),
                      min_size=2, max_size=8))
@pytest.mark.slow
def test_count_joined_on_sentences(counter: TokenCounter,
                                   stock_tiktoken: dict[str, tiktoken.Encoding],
                                   texts: list[str]) -> None:
    """Sentences (the usual memory) take the seam rule's fast path; the count stays exact."""
    enc = stock_tiktoken[counter.name]
    counts = [len(enc.encode_ordinary(t)) for t in texts]
    assert counter.count_joined(texts, counts, "\n") == len(enc.encode_ordinary("\n".join(texts)))


def test_seams_that_merge_are_counted() -> None:
    """A sentence's full stop and the line break after it are one o200k token: the joined
    count is below the sum of the parts, and count_joined says so."""
    counter = TokenCounter("o200k_base")
    texts = ["I like dogs.", "Fish swim.", "Café time!"]
    counts = [counter.count(t) for t in texts]
    joined = counter.count("\n".join(texts))
    assert joined < sum(counts) + 2 * counter.count("\n")
    assert counter.count_joined(texts, counts, "\n") == joined


def test_count_joined_edges() -> None:
    counter = TokenCounter("o200k_base")
    assert counter.count_joined([], [], "\n") == 0
    assert counter.count_joined(["hello"], [1], "\n") == 1
    with pytest.raises(ValueError):
        counter.count_joined(["a", "b"], [1], "\n")


def test_unknown_encoding_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        get_encoding("r50k_base")
