"""Lexical scoring: how much of a query's meaningful wording a record's text covers.

Used to fuse with cosine similarity, and alone when the encoder is
unavailable. Scores are idf-weighted coverage in 0..1 so they read the same
for any catalog.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from functools import lru_cache

from ..common.text import edit_distance

# A word longer than this is not a typo of anything: nobody misspells a 30-letter
# token, and the deletion variants of long words grow as len**2, so bounding it
# keeps one query (or one record) at microseconds and kilobytes.
MAX_CORRECTABLE = 24
# A real word one letter away from a catalog word is far likelier than a typo when words are short
# ("jest" is not "test", "saml" is not "same"), and two edits turn real words into catalog words
# ("offline" -> "online", "rewrote" -> "remote"). So only longer words are corrected, by one edit,
# or two from nine letters on; and the first letter, which people rarely get wrong, must agree.
MIN_CORRECTABLE = 5
TWO_EDITS_FROM = 9
MAX_VARIANTS = 5000  # deletion variants generated for one word, at most
CACHE_SIZE = 2048  # remembered corrections (an LRU, so unique junk words cannot grow it)

_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "ed", "es", "s")


@lru_cache(maxsize=CACHE_SIZE * 4)
def stem(token: str) -> str:
    """Crude suffix stripping so 'completions' meets 'completion' and 'tests' meets 'test'.

    Cached: building the index stems 20,000 words, most of them repeats.
    """
    for suffix in _SUFFIXES:
        if len(token) > len(suffix) + 3 and token.endswith(suffix):
            return token[: -len(suffix)]
    return token


def _deletions(word: str, depth: int) -> set[str]:
    """``word`` and every string made by deleting up to ``depth`` of its letters (bounded)."""
    variants = {word}
    frontier = {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        variants |= frontier
        if len(variants) > MAX_VARIANTS:
            break
    return variants


class LexicalIndex:
    """idf-weighted term coverage of each record's combined text."""

    def __init__(self, documents: list[list[str]], surface: dict[str, str] | None = None) -> None:
        self.docs = [set(doc) for doc in documents]
        self.postings: dict[str, list[int]] = {}  # term -> the documents that hold it
        for i, doc in enumerate(self.docs):
            for term in doc:
                self.postings.setdefault(term, []).append(i)
        self.surface = surface or {}  # stem -> a real word with that stem, for re-embedding
        counts = Counter(term for doc in self.docs for term in doc)
        self.df = counts
        n = len(self.docs)
        self.idf = {term: math.log(1 + n / df) for term, df in counts.items()}
        self.unknown_idf = math.log(1 + n)
        self.vocabulary = set(counts)
        self._deletes: dict[str, set[str]] | None = None  # built on the first correction
        self._corrections: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()
        self.longest = max((len(t) for t in self.vocabulary), default=0)

    def correct(self, term: str) -> str | None:
        """The catalog term one typo (two for long words) away from ``term``, or None if none or unclear.

        Ties are broken by equal length (a swap or a replaced letter is likelier
        than a dropped one), then by how common the term is in the catalog.
        """
        if term in self.vocabulary or len(term) < MIN_CORRECTABLE or any(ch.isdigit() for ch in term):
            return None  # short words and numbers ("2025", "v18") are not typos of catalog words
        if len(term) > min(MAX_CORRECTABLE, self.longest + 2):
            return None  # longer than any catalog word plus two edits: nothing to correct to
        with self._lock:
            if term in self._corrections:
                self._corrections.move_to_end(term)
                return self._corrections[term]
        guess = self._nearest(term)
        with self._lock:
            self._corrections[term] = guess
            if len(self._corrections) > CACHE_SIZE:
                self._corrections.popitem(last=False)
        return guess

    def _nearest(self, term: str) -> str | None:
        limit = 1 if len(term) < TWO_EDITS_FROM else 2
        found: list[tuple[int, int, int, str]] = []
        for known in self._candidates(term, limit):
            if known[0] != term[0]:
                continue
            distance = edit_distance(term, known, limit)
            if distance <= limit:
                found.append((distance, len(known) != len(term), -self.df[known], known))
        if not found:
            return None
        found.sort()
        if len(found) > 1 and found[0][:3] == found[1][:3]:
            return None
        return found[0][3]

    def _candidates(self, term: str, limit: int) -> set[str]:
        """Vocabulary terms sharing a deletion variant with ``term`` (the SymSpell trick).

        Two words within ``limit`` edits always share a string reachable by at
        most ``limit`` deletions from each, so only those need an exact check.
        """
        deletes = self._deletes
        if deletes is None:
            with self._lock:
                if self._deletes is None:
                    # Fill a local table and publish it whole: another thread must
                    # never see it half built (it would cache wrong corrections).
                    table: dict[str, set[str]] = {}
                    for known in self.vocabulary:
                        # A word is corrected only from MIN_CORRECTABLE letters, by one edit
                        # below TWO_EDITS_FROM: shorter catalog words are out of reach, and
                        # only those within two letters of TWO_EDITS_FROM need two deletions.
                        if not MIN_CORRECTABLE - 1 <= len(known) <= MAX_CORRECTABLE:
                            continue
                        for variant in _deletions(known, 1 if len(known) < TWO_EDITS_FROM - 2 else 2):
                            table.setdefault(variant, set()).add(known)
                    self._deletes = table
                deletes = self._deletes
        found: set[str] = set()
        for variant in _deletions(term, limit):
            found |= deletes.get(variant, set())
        return found

    def scores(self, terms: list[str]) -> list[float]:
        """Coverage of ``terms`` by each document, 0..1."""
        if not terms:
            return [0.0] * len(self.docs)
        # Sorted, not in set order: a set of strings iterates in an order that changes with each
        # process's hash seed, and summing the same weights in another order changes the last bits,
        # so a refit on unchanged data wrote a different confidence model.
        weights = {t: self.idf.get(t, self.unknown_idf) for t in sorted(set(terms))}
        total = sum(weights.values())
        # Through the postings: a query touches only the documents that hold its terms. Each sum adds
        # the same weights in the same order as a scan of every document would.
        covered = [0.0] * len(self.docs)
        for term, weight in weights.items():
            for i in self.postings.get(term, ()):
                covered[i] += weight
        return [c / total for c in covered]
