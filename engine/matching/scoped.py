"""Words that point at a record only when one scope is asked about: an agent's own product vocabulary.

"Composer", "Tab", "Focus Chain" or "YOLO mode" name a capability in one
agent's words and mean nothing (or something else) for another. A record
carries such words as ``Record.scoped``: (scope, text) pairs. Per scope, each
record's texts become one bag of stemmed words and word pairs. Asked with a
scope, each of the query's terms votes with its idf weight for the scope's
records whose bag holds it, split evenly among them: a word that one record of
the agent uses says much, and one that all of them use says little to each.
Without a scope, or with a scope no record names, the signal is absent.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..common.text import content_tokens
from .lexical import LexicalIndex, stem


def scoped_terms(words: Sequence[str]) -> list[str]:
    """Stemmed words and adjacent word pairs: "focus chain" is one term as well as two words."""
    stems = [stem(word) for word in words]
    return stems + [f"{a}_{b}" for a, b in zip(stems, stems[1:], strict=False)]


class ScopedVocabulary:
    """Per scope, how much of a query's words point at each record, shared among the records that use them."""

    def __init__(self, scoped: Sequence[Sequence[tuple[str, str]]]) -> None:
        """``scoped[i]`` holds record i's (scope, text) pairs.

        A scope's index is built the first time a query asks for that scope: building all of
        them took 0.2 s, the largest part of the server's way to its first answer, while a
        session usually asks about one or two agents.
        """
        self._n = len(scoped)
        self._texts: dict[str, list[tuple[int, str]]] = {}
        for i, pairs in enumerate(scoped):
            for scope, text in pairs:
                self._texts.setdefault(scope, []).append((i, text))
        self._indexes: dict[str, LexicalIndex] = {}
        self._lock = threading.Lock()

    @property
    def scopes(self) -> list[str]:
        return sorted(self._texts)

    def index(self, scope: str) -> LexicalIndex | None:
        """The scope's index of stemmed words and word pairs per record, built on first use."""
        if scope not in self._texts:
            return None
        with self._lock:
            built = self._indexes.get(scope)
            if built is None:
                docs: list[list[str]] = [[] for _ in range(self._n)]
                for i, text in self._texts[scope]:
                    docs[i].extend(scoped_terms(content_tokens(text)))
                built = self._indexes[scope] = LexicalIndex(docs)
        return built

    def scores(self, scope: str | None, words: Sequence[str], n_records: int) -> np.ndarray:
        """Per record, 0..1: the idf-weighted share of the query's terms that point at it under ``scope``.

        Each term's weight is split among the scope's records that use it, so a product word
        one record uses ("Focus Chain") counts fully for it and a word ten records use counts a
        tenth for each. Zeros without a scope, for a scope no record names, or without words.
        """
        index = self.index(scope) if scope is not None else None
        out = np.zeros(n_records, dtype=np.float64)
        if index is None or not words:
            return out.astype(np.float32)
        # Sorted, not in set order, so that the sum's last bits do not follow the hash seed.
        terms = sorted(set(scoped_terms(words)))
        total = 0.0
        for term in terms:
            weight = index.idf.get(term, index.unknown_idf)
            total += weight
            holders = index.postings.get(term, ())
            for i in holders:
                out[i] += weight / len(holders)
        return (out / total).astype(np.float32)
