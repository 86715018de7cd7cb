"""Words that point at a record only when one scope is asked about: an agent's own product vocabulary.

"Composer", "Tab", "Focus Chain" or "YOLO mode" name a capability in one
agent's words and mean nothing (or something else) for another. A record
carries such words as ``Record.scoped``: (scope, text) pairs. Per scope, each
record's texts become one bag of stemmed words and word pairs, weighted by how
few of that scope's records use them, so a word that one record of the agent
uses says much and one that all of them use says nothing. Asked with a scope,
a query gets the idf-weighted share of its words each record's bag covers;
without one, or with a scope no record names, the signal is absent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..common.text import content_tokens
from .lexical import LexicalIndex, stem


def scoped_terms(words: Sequence[str]) -> list[str]:
    """Stemmed words and adjacent word pairs: "focus chain" is one term as well as two words."""
    stems = [stem(word) for word in words]
    return stems + [f"{a}_{b}" for a, b in zip(stems, stems[1:], strict=False)]


class ScopedVocabulary:
    """Per scope, idf-weighted coverage of a query's terms by each record's scoped texts."""

    def __init__(self, scoped: Sequence[Sequence[tuple[str, str]]]) -> None:
        """``scoped[i]`` holds record i's (scope, text) pairs."""
        n = len(scoped)
        per_scope: dict[str, list[list[str]]] = {}
        for i, pairs in enumerate(scoped):
            for scope, text in pairs:
                docs = per_scope.setdefault(scope, [[] for _ in range(n)])
                docs[i].extend(scoped_terms(content_tokens(text)))
        self.indexes = {scope: LexicalIndex(docs) for scope, docs in sorted(per_scope.items())}

    @property
    def scopes(self) -> list[str]:
        return list(self.indexes)

    def scores(self, scope: str | None, words: Sequence[str], n_records: int) -> np.ndarray:
        """Coverage 0..1 per record of the query ``words`` under ``scope``; zeros without one."""
        index = self.indexes.get(scope) if scope is not None else None
        if index is None or not words:
            return np.zeros(n_records, dtype=np.float32)
        return np.array(index.scores(scoped_terms(words)), dtype=np.float32)
