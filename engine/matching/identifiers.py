"""Product identifiers as a matching signal: a pasted command, flag, key or file name names its record.

People paste what they typed or saw: "`/compact` hangs indefinitely",
"mcp.json not honored", "GEMINI_SANDBOX ignored". Records already name these
identifiers in their setup notes, so a table from identifier to record gives a
signal that needs no training data, works for every agent the data covers and
can be explained ("the query names `/compact`, which Context Compaction's setup
uses"). An identifier that several records name counts for each of them in
proportion, so a shared word like ``settings.json`` decides nothing on its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Set

import numpy as np

MAX_IDENTIFIER_CHARS = 80  # longer spans are commands or prose, not identifiers
MAX_PER_TEXT = 32  # bound the work a pasted log can cause
MAX_TEXT_CHARS = 20_000  # plain words are looked up in this much of a text, no more

# What an identifier looks like in running text: a slash command, a long flag, an @- or #-mention,
# a dotted settings key or file name, a path, an ENV_VAR, camelCase or snake_case.
_SHAPES = re.compile(
    r"""(?x)
    (?<![\w/.-])/[a-z][\w:-]*(?![\w/])      # /compact, /mcp, /agents:create
    | (?<![\w-])--[a-z][\w-]+               # --resume, --dangerously-skip-permissions
    | (?<!\w)[@#][a-z][\w.-]*               # @workspace, #codebase
    | ~?/?(?:[\w.-]+/)+[\w.*-]+             # .claude/settings.json, ~/.codex/config.toml
    | \.?[a-z][\w-]*(?:\.[a-z][\w-]*)+      # settings.json, chat.agent.enabled, AGENTS.md
    | (?<![\w./~-])\.[a-z][\w-]{2,}(?![\w/]) # .geminiignore, .clinerules: a dotfile with no extension
    | \b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b     # GEMINI_SANDBOX, CLAUDE_CODE_USE_BEDROCK
    | \b[a-z]+(?:[A-Z][a-z0-9]+)+\b         # autoApprove, mcpServers
    | \b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b     # web_fetch, approval_policy
    """
)
_BACKTICKED = re.compile(r"`([^`\n]{2,80})`")
# Every shape above holds one of these, and none spans whitespace: so only the whitespace-separated
# tokens holding one are searched, which gives the same spans in the same order about 5x sooner
# (building the catalog's identifier table was a fifth of the server's start-up).
_MAY_BE_SHAPED = re.compile(r"[/\-@#._]|[a-z][A-Z]")
# Tails that sentence punctuation or markdown leave on an identifier.
_TRIM = ".,;:!?)]}'\""
_NOT_IDENTIFIERS = frozenset({"e.g", "i.e", "etc", "vs", "n/a", "and/or"})
# A single run-together word of six letters or more: how people retype a tool or key name they saw
# ("webfetch hangs", "Webfetch", "pretooluse never fires").
_BARE_WORD = re.compile(r"[a-z][a-z0-9]{5,}")
_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def normalize(identifier: str) -> str:
    """Lower case, without the sentence punctuation around it (a leading dot stays: ``.claude``)."""
    return identifier.strip().rstrip(_TRIM).lstrip("'\"([{").lower()


def shaped_spans(text: str) -> list[str]:
    """The spans of ``text`` that ``_SHAPES`` finds, searched only in the tokens that may hold one."""
    return [
        m.group(0) for token in text.split() if _MAY_BE_SHAPED.search(token) for m in _SHAPES.finditer(token)
    ]


def identifiers_in(text: str) -> list[str]:
    """The identifier-shaped spans of ``text`` (backticked spans and their parts included), normalized."""
    found: list[str] = []
    for span in _BACKTICKED.findall(text):
        found.append(span)
        found.extend(m.group(0) for m in _SHAPES.finditer(span))
    found.extend(shaped_spans(_BACKTICKED.sub(" ", text)))
    out: list[str] = []
    for raw in found:
        key = normalize(raw)
        if 3 <= len(key) <= MAX_IDENTIFIER_CHARS and key not in out and key not in _NOT_IDENTIFIERS:
            out.append(key)
        if len(out) >= MAX_PER_TEXT:
            break
    return out


class IdentifierTable:
    """Identifier -> records that name it, with each record's share of it."""

    def __init__(self, per_record: Iterable[Iterable[str]]):
        owners: dict[str, set[int]] = {}
        for i, names in enumerate(per_record):
            for name in names:
                key = normalize(name)
                if 3 <= len(key) <= MAX_IDENTIFIER_CHARS:
                    owners.setdefault(key, set()).add(i)
        self.size = 1 + max((i for rows in owners.values() for i in rows), default=-1)
        self.owners = {key: tuple(sorted(rows)) for key, rows in owners.items()}
        self.bare = frozenset(key for key in self.owners if _BARE_WORD.fullmatch(key))

    def __len__(self) -> int:
        return len(self.owners)

    def hits(self, text: str, known_words: Set[str] = frozenset()) -> list[tuple[str, tuple[int, ...]]]:
        """(identifier, records naming it) for each known identifier in ``text``.

        Besides identifier-shaped spans, a plain word counts when the records name it as a
        run-together identifier (``WebFetch``, ``autoApprove``, ``ultrathink``) and it is not a
        word of ``known_words`` (the encoder's whole-word vocabulary): "WebFetch" and "webfetch"
        are that tool, while "memory" or "default", also keys somewhere, are just words.
        """
        keys = [key for key in identifiers_in(text) if key in self.owners]
        if self.bare:
            for word in _WORDS.findall(text[:MAX_TEXT_CHARS]):
                if len(keys) >= MAX_PER_TEXT:
                    break
                key = word.lower()
                if key in self.bare and key not in known_words and key not in keys:
                    keys.append(key)
        return [(key, self.owners[key]) for key in keys]

    def scores(self, text: str, n: int, known_words: Set[str] = frozenset()) -> np.ndarray:
        """Per record, the identifiers of ``text`` it names, each split among the records that share it.

        Capped at 1 so that pasting many identifiers of one record does not outweigh the rest of the
        evidence.
        """
        out = np.zeros(n, dtype=np.float32)
        for _, rows in self.hits(text, known_words):
            for i in rows:
                if i < n:
                    out[i] += 1.0 / len(rows)
        return np.minimum(out, 1.0)
