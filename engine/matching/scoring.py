"""Scoring one query against embedded records: which texts are embedded per record, and how they fuse.

``record_entries`` decides what is embedded for a record (its name, the
description, its first sentence, aliases and extra texts); ``Embedded`` holds
those vectors and turns one query vector into one score per record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .store import Entry

KINDS = ("name", "description", "first", "alias", "text")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


@dataclass(frozen=True)
class Record:
    """Anything that can be matched: an id, a display name, a description, aliases."""

    id: str
    name: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()  # more descriptions in other words; matched like aliases
    keywords: tuple[str, ...] = ()  # words that count for lexical matching only
    identifiers: tuple[str, ...] = ()  # commands, flags, keys, file names that name this record when pasted
    # (scope, text): words that point at this record only when that scope (an agent) is asked about
    scoped: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Tuning:
    """Scoring constants; defaults measured with ``build_scripts/measure/evaluate.py``."""

    lexical_weight: float = 0.15  # fused = semantic score + weight * lexical coverage
    name_weight: float = 0.5  # weight of the bare name in the description blend
    alias_scale: float = 0.9  # aliases and texts are short: discount their cosine a little
    second_weight: float = 0.3  # share of the runner-up channel in the fused score
    threshold: float = 0.40  # without a confidence model: fused score below this -> abstain
    off_topic_margin: float = 0.0  # out-of-scope cosine >= top score + this -> abstain
    lexical_threshold: float = 0.6  # lexical-only score needed to answer
    ambiguity_margin: float = 0.02  # runner-up this close to the winner -> ambiguous
    head_ambiguity_ratio: float = 0.5  # with a learned head: runner-up at least this likely -> ambiguous
    spread: float = 0.06  # without a confidence model: logistic width turning a score into a confidence
    alias_confidence: float = 0.95  # without a confidence model: an alias hit's confidence (capped below)
    # Uncalibrated confidences (no confidence model, its head left out, or the lexical fallback) never
    # exceed this: a logistic of a score is no probability, so it must not read as near-certain.
    # On the catalog's calibration sets such answers were right 80% (semantic, no model) and 90%
    # (lexical fallback) of the time.
    uncalibrated_cap: float = 0.85
    segment_words: int = 16  # a query this long is also scored sentence by sentence
    segment_margin: float = 0.2  # a sentence replaces the whole text when trusted this much more
    identifier_weight: float = 0.15  # fused += weight * share of the query's identifiers this record names
    correct_typos: bool = True  # a word the encoder and catalog do not know is read as a catalog word's typo
    # fused += weight * the share of the query's words that point at this record among the asked scope's
    # (agent's) own words (engine.matching.scoped); chosen on real calibration and selection text
    scoped_weight: float = 0.4


def humanize(name: str) -> str:
    """'read_text_file' -> 'read text file': embed names the way people say them."""
    return " ".join(name.replace("_", " ").replace("-", " ").split())


def first_sentence(text: str) -> str:
    """The opening sentence of a description: usually the part that says what the record does."""
    match = _SENTENCE_END.search(text)
    return text[: match.start() + 1].strip() if match else text.strip()


def record_entries(record: Record) -> list[Entry]:
    """The texts embedded for one record, without repeats.

    "name", "description" (name: full description), "first" (name: first
    sentence, when the description has more than one) and one "alias" each.
    """
    name = humanize(record.name)
    texts = [("name", name)]
    if record.description:
        texts.append(("description", f"{name}: {record.description}"))
        first = first_sentence(record.description)
        if first != record.description.strip():
            texts.append(("first", f"{name}: {first}"))
    texts.extend(("alias", alias) for alias in record.aliases)
    texts.extend(("text", text) for text in record.texts)
    seen: set[str] = set()
    entries = []
    for kind, text in texts:
        key = text.casefold()
        if key not in seen:
            seen.add(key)
            entries.append(Entry(record.id, kind, text))
    return entries


@dataclass
class Embedded:
    """Embedded entries: the matrix, and per row its record's position and its kind."""

    matrix: np.ndarray
    owners: np.ndarray
    kinds: np.ndarray
    wordpieces: set[str] = field(default_factory=set)
    # kind -> (rows sorted by owner, start of each owner's run, those owners)
    segments: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind in KINDS:
            rows = np.flatnonzero(self.kinds == kind)
            rows = rows[np.argsort(self.owners[rows], kind="stable")]
            owners = self.owners[rows]
            starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if len(rows) else rows
            self.segments[kind] = (rows, starts, owners[starts] if len(rows) else owners)
        self._negative_rows = np.flatnonzero(self.kinds == "negative")

    def off_topic(self, query_vector: np.ndarray) -> float:
        """Best cosine with the index's out-of-scope topics (-1 when it has none)."""
        if not len(self._negative_rows):
            return -1.0
        return float((self.matrix[self._negative_rows] @ query_vector).max())

    def record_scores(self, query_vector: np.ndarray, n_records: int, tune: Tuning) -> np.ndarray:
        """Per record, fuse three channels: the description blend, the best alias, the best text.

        The blend averages cosine with "name: description", with "name: first
        sentence" and, at ``tune.name_weight``, with the bare name, so neither a
        long description nor a terse name decides alone. Aliases and extra texts
        are alternative wordings: the best one of each counts. The fused score
        is the best channel plus ``tune.second_weight`` of the runner-up
        (normalised), so agreement between channels breaks ties. A record
        without aliases or texts falls back to its blend for those channels,
        which keeps scores comparable across catalogs.
        """
        sims = self.matrix @ query_vector
        per_kind = {}
        for kind, (rows, starts, owners) in self.segments.items():
            best = np.full(n_records, np.nan, dtype=np.float32)
            if len(rows):
                best[owners] = np.maximum.reduceat(sims[rows], starts)
            per_kind[kind] = best
        name = per_kind["name"]
        desc = np.where(np.isnan(per_kind["description"]), name, per_kind["description"])
        first = np.where(np.isnan(per_kind["first"]), desc, per_kind["first"])
        blend = (desc + first + tune.name_weight * name) / (2 + tune.name_weight)
        alias = np.where(np.isnan(per_kind["alias"]), blend, tune.alias_scale * per_kind["alias"])
        text = np.where(np.isnan(per_kind["text"]), blend, tune.alias_scale * per_kind["text"])
        channels = np.sort(np.stack([blend, alias, text]), axis=0)
        return (channels[-1] + tune.second_weight * channels[-2]) / (1 + tune.second_weight)
