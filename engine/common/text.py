"""Text normalisation and query validation shared by every matching stage."""

from __future__ import annotations

import re
import unicodedata

from ..errors import InvalidQueryError

MAX_QUERY_CHARS = 1000

_NON_WORD = re.compile(r"[^0-9a-z]+")
_TOKEN = re.compile(r"[0-9a-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

# Words that carry no meaning for capability matching; dropping them keeps
# "does it support X?" from matching everything that mentions "support".
STOPWORDS = frozenset(
    """a an and are as at be by can could do does for from has have how i in is it its
    me my of on or please should so that the their them there this to use using was what
    when where which who will with would you your yes no not any support supports
    supported feature features capability capabilities""".split()
)


_EXAMPLES = {
    "agent": "an agent id such as 'claude-code' or a name such as 'Claude Code'",
    "category": "a category such as 'security' or 'customization'",
}
_DEFAULT_EXAMPLE = "a capability name or a few words, e.g. 'MCP support'"


def clean_text(text: str) -> str:
    """Replace lone UTF-16 surrogates (invalid in UTF-8, fatal to the tokenizer) with U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def validate_query(query: object, *, field: str = "query") -> str:
    """Return ``query`` stripped, or raise ``InvalidQueryError`` saying why it is unusable."""
    example = _EXAMPLES.get(field, _DEFAULT_EXAMPLE)
    if not isinstance(query, str):
        raise InvalidQueryError(f"{field} must be a string, got {type(query).__name__}. Pass {example}.")
    cleaned = clean_text(_CONTROL.sub(" ", query)).strip()
    if not cleaned:
        raise InvalidQueryError(f"{field} is empty. Pass {example}.")
    if len(cleaned) > MAX_QUERY_CHARS:
        raise InvalidQueryError(
            f"{field} is {len(cleaned)} characters long; the limit is {MAX_QUERY_CHARS}. Pass {example}."
        )
    return cleaned


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+|\n+")
MAX_SEGMENTS = 6


# Where a long question states its need: a question, or a request ("I want", "is there a way", "please").
_ASKS = re.compile(
    r"\?|\b(?:i want|i'd like|i would like|i need|we need|we want|is there|are there|can (?:it|i|you|we)|"
    r"could (?:it|i|you|we)|how (?:do|can|would|should)|does (?:it|this|that)|what's the|"
    r"what is the|looking for|any way|way to|wish|should i|please|help me)\b",
    re.IGNORECASE,
)


def asks(sentence: str) -> bool:
    """True when a sentence asks for something (a question or a request), not only tells a story."""
    return bool(_ASKS.search(sentence))


def query_segments(text: str, min_words: int) -> list[str]:
    """The whole text, then each sentence of it that asks for something (at most ``MAX_SEGMENTS`` in all).

    A question with a backstory carries its need in the sentence that asks.
    The story around it often names features too ("I've been using Copilot for
    autocomplete for a year"), and such a sentence can look more like a
    capability than the need does, so only asking sentences compete with the
    whole text.
    """
    if len(text.split()) < min_words:
        return [text]
    # A sentence with fewer than three content words ("Does it support that?") cannot carry a need.
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text) if len(content_tokens(p)) >= 3 and asks(p)]
    parts = [p for p in dict.fromkeys(parts) if p != text.strip()]
    return [text, *parts[: MAX_SEGMENTS - 1]]


def fold(text: str) -> str:
    """Case-, accent- and punctuation-insensitive key: 'Sub-Agents!' -> 'sub agents'."""
    if not text.isascii():  # ASCII has no accents to strip; most queries skip this per-character pass
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return _NON_WORD.sub(" ", text.casefold()).strip()


def light(text: str) -> str:
    """Key that keeps symbols: '--debug', '/compact' and '#fetch' stay distinct from 'debug'."""
    return " ".join(text.casefold().split()).rstrip("?!. ")


def squash(text: str) -> str:
    """Key with every separator removed: 'Sub-agents' and 'subagents' both -> 'subagents'."""
    return fold(text).replace(" ", "")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (letters and digits only)."""
    return _TOKEN.findall(fold(text))


def content_tokens(text: str) -> list[str]:
    """Tokens minus stopwords, the words that can tell capabilities apart."""
    return [tok for tok in tokens(text) if tok not in STOPWORDS]


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count once), capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def closest(text: str, options: list[str]) -> str | None:
    """The option nearest to ``text`` by spelling, or None when nothing is close."""
    key = squash(text)
    best, best_distance = None, 4
    for option in options:
        other = squash(option)
        if key and (key in other or other in key):
            distance = 0 if key == other else 1
        else:
            distance = edit_distance(key, other, limit=3)
        if distance < best_distance:
            best, best_distance = option, distance
    return best
