"""Match free text against any list of records: exact -> alias -> semantic -> lexical -> none.

``Index.from_records`` takes records ``{"id", "name", "description", "aliases"?}``
(capabilities, MCP tools, anything). Semantic matching embeds each record's
name, "name: description" and aliases with MiniLM, takes the best cosine per
record and adds a little lexical coverage; thresholds calibrated on the
labelled set in ``tests/fixtures/eval_queries.json`` decide when to abstain.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .encoder import Encoder, EncoderUnavailableError
from .errors import InvalidQueryError
from .lexical import LexicalIndex, stem
from .results import Candidate, Match
from .store import Entry, VectorStore, load_store
from .text import clean_text, content_tokens, light, squash, tokens, validate_query

log = logging.getLogger("engine")

_KINDS = ("name", "description", "first", "alias", "text")
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


@dataclass(frozen=True)
class Tuning:
    """Scoring constants; defaults measured with ``build_scripts/evaluate.py``."""

    lexical_weight: float = 0.15  # fused = semantic score + weight * lexical coverage
    name_weight: float = 0.5  # weight of the bare name in the description blend
    alias_scale: float = 0.9  # aliases and texts are short: discount their cosine a little
    second_weight: float = 0.3  # share of the runner-up channel in the fused score
    threshold: float = 0.40  # fused score below this -> abstain
    off_topic_margin: float = 0.0  # out-of-scope cosine >= top score + this -> abstain
    lexical_threshold: float = 0.6  # lexical-only score needed to answer
    ambiguity_margin: float = 0.02  # runner-up this close to the winner -> ambiguous
    spread: float = 0.06  # logistic width turning a score into a confidence
    alias_confidence: float = 0.95


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


def _text_field(raw: dict, key: str, position: int) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidQueryError(f"record {position}: '{key}' must be a string, got {type(value).__name__}")
    return clean_text(value)


def _string_list(raw: dict, key: str, position: int) -> tuple[str, ...]:
    value = raw.get(key)
    if value is None:
        return ()
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise InvalidQueryError(
            f"record {position} ('{raw['id']}'): {key} must be a list of strings, got {type(value).__name__}"
        )
    items = list(value)
    if not all(isinstance(item, str) for item in items):
        raise InvalidQueryError(f"record {position} ('{raw['id']}'): {key} must be a list of strings")
    return tuple(clean_text(item) for item in items)


def coerce_records(records: Iterable[dict | Record]) -> list[Record]:
    """Validate raw records and turn them into ``Record``s, with errors naming the record."""
    if isinstance(records, (str, bytes, dict)) or not isinstance(records, Iterable):
        raise InvalidQueryError(
            f"records must be a list of dicts like {{'id': ..., 'name': ...}}, got {type(records).__name__}"
        )
    out: list[Record] = []
    seen: set[str] = set()
    for position, raw in enumerate(records):
        if isinstance(raw, Record):
            rec = raw
        else:
            if not isinstance(raw, dict):
                raise InvalidQueryError(f"record {position} must be a dict with 'id' and 'name'")
            missing = [key for key in ("id", "name") if not isinstance(raw.get(key), str) or not raw.get(key)]
            if missing:
                raise InvalidQueryError(
                    f"record {position} needs non-empty string field(s) {', '.join(missing)}; "
                    "records look like {'id': ..., 'name': ..., 'description': ..., 'aliases': [...]}"
                )
            rec = Record(
                clean_text(raw["id"]),
                clean_text(raw["name"]),
                _text_field(raw, "description", position),
                _string_list(raw, "aliases", position),
            )
        if rec.id in seen:
            raise InvalidQueryError(f"record id '{rec.id}' appears twice; ids must be unique")
        seen.add(rec.id)
        out.append(rec)
    if not out:
        raise InvalidQueryError("an index needs at least one record")
    return out


@dataclass
class _Semantic:
    """Embedded entries: the matrix, and per row its record's position and its kind."""

    matrix: np.ndarray
    owners: np.ndarray
    kinds: np.ndarray
    wordpieces: set[str] = field(default_factory=set)
    # kind -> (rows sorted by owner, start of each owner's run, those owners)
    segments: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kind in _KINDS:
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


class Index:
    """A matchable set of records. Build with ``Index.from_records``."""

    def __init__(
        self,
        records: list[Record],
        *,
        store: VectorStore | None = None,
        encoder: Encoder | None = None,
        semantic: bool = True,
        tuning: Tuning | None = None,
        store_problem: str | None = None,
        out_of_scope: Sequence[str] = (),
    ) -> None:
        self.records = records
        self.tuning = tuning or Tuning()
        self.encoder = encoder
        self._semantic_wanted = semantic
        self._store = store
        self._store_problem = store_problem
        self._semantic_state: _Semantic | None = None
        self._semantic_failed = False
        self._lock = threading.Lock()
        self.entries = [entry for rec in records for entry in record_entries(rec)]
        self.entries += [Entry("", "negative", text) for text in dict.fromkeys(out_of_scope)]
        self._position = {rec.id: i for i, rec in enumerate(records)}

        # Two keys per name: one that keeps symbols ('--debug' is not 'debug'),
        # then one without any separators ('sub agents' is 'Sub-agents').
        self._exact: dict[str, int] = {}
        self._alias: dict[str, int] = {}
        for keyer in (light, squash):
            for i, rec in enumerate(records):
                for key in (keyer(rec.name), keyer(rec.id)):
                    if key:
                        self._exact.setdefault(key, i)
        for keyer in (light, squash):
            for i, rec in enumerate(records):
                for alias in rec.aliases:
                    key = keyer(alias)
                    if key and key not in self._exact:
                        self._alias.setdefault(key, i)
        documents, surface = [], {}
        for r in records:
            words = content_tokens(" ".join([humanize(r.name), r.description, *r.aliases, *r.keywords]))
            for word in words:
                surface.setdefault(stem(word), word)
            documents.append([stem(word) for word in words])
        self.lexical = LexicalIndex(documents, surface)

    @classmethod
    def from_records(
        cls,
        records: Iterable[dict | Record],
        *,
        vectors: VectorStore | Path | str | None = None,
        encoder: Encoder | None = None,
        semantic: bool = True,
        tuning: Tuning | None = None,
        out_of_scope: Sequence[str] = (),
    ) -> Index:
        """Index any records; embeds them with the runtime encoder unless ``vectors`` has them.

        ``vectors`` is a ``VectorStore`` or the path of one written by
        ``build_scripts/build_vectors.py``. A missing, unreadable or stale store
        is not an error: what it lacks is embedded on first use, with one warning.
        ``out_of_scope`` lists topics the records do not cover ("pricing and
        plans"); a query closer to one of them than to any record gets no match.
        """
        problem = None
        store = None
        if vectors is not None and not isinstance(vectors, (str, Path, VectorStore)):
            raise InvalidQueryError(
                "vectors must be a VectorStore or the path of a vector store file, "
                f"got {type(vectors).__name__}"
            )
        if isinstance(out_of_scope, (str, bytes)) or not isinstance(out_of_scope, Iterable):
            raise InvalidQueryError("out_of_scope must be a list of topic strings")
        out_of_scope = [clean_text(t) for t in out_of_scope if isinstance(t, str)]
        if isinstance(vectors, (str, Path)):
            try:
                store = load_store(Path(vectors))
            except FileNotFoundError:
                problem = f"vector store {vectors} not found"
            except ValueError as exc:
                problem = str(exc)
        else:
            store = vectors
        return cls(
            coerce_records(records),
            store=store,
            encoder=encoder,
            semantic=semantic,
            tuning=tuning,
            store_problem=problem,
            out_of_scope=out_of_scope,
        )

    # -- semantic state -------------------------------------------------

    def _semantic(self) -> _Semantic | None:
        """Embedded entries, built on first use; None when semantic matching is off."""
        if self._semantic_state is not None or self._semantic_failed or not self._semantic_wanted:
            return self._semantic_state
        with self._lock:
            if self._semantic_state is not None or self._semantic_failed:
                return self._semantic_state
            try:
                self._semantic_state = self._build_semantic()
            except EncoderUnavailableError as exc:
                self._semantic_failed = True
                log.warning("semantic matching is off (%s); using alias and lexical matching", exc)
        return self._semantic_state

    def _build_semantic(self) -> _Semantic:
        encoder = self.encoder or default_encoder()
        encoder.load()
        # Compare what was embedded with what is needed, not the file's own hash claim.
        if self._store is not None and self._store.entries == self.entries and self._store_agrees(encoder):
            matrix = self._store.matrix
        else:
            known = self._store.lookup() if self._store is not None else {}
            rows: list[np.ndarray | None] = [known.get(entry) for entry in self.entries]
            todo = [i for i, row in enumerate(rows) if row is None]
            if todo:
                if self._store is not None:
                    log.warning(
                        "vector store is stale (%d of %d texts changed); embedding them with the ONNX encoder",  # noqa: E501
                        len(todo),
                        len(rows),
                    )
                elif self._store_problem:
                    log.warning(
                        "%s; embedding %d texts with the ONNX encoder", self._store_problem, len(todo)
                    )
                fresh = encoder.encode([self.entries[i].text for i in todo])
                for i, vector in zip(todo, fresh, strict=True):
                    rows[i] = vector
            matrix = np.vstack(rows).astype(np.float32)
        owners = np.array([self._position.get(e.id, -1) for e in self.entries])
        kinds = np.array([e.kind for e in self.entries])
        return _Semantic(matrix=matrix, owners=owners, kinds=kinds, wordpieces=encoder.vocabulary())

    def _store_agrees(self, encoder: Encoder, samples: int = 3) -> bool:
        """Re-embed a few stored texts: a store of random or foreign vectors is not used.

        Costs a few milliseconds once; a wrong store would otherwise give
        confident wrong answers for the life of the process.
        """
        store = self._store
        rows = sorted({0, len(store.entries) // 2, len(store.entries) - 1})[:samples]
        fresh = encoder.encode([store.entries[i].text for i in rows])
        agreement = float(np.min(np.sum(fresh * store.matrix[rows], axis=1)))
        if agreement < 0.95:
            log.warning(
                "vector store does not match the encoder (cosine %.2f on a spot check); re-embedding the "
                "catalog. Rebuild it with: python build_scripts/build_vectors.py",
                agreement,
            )
            self._store = None
            return False
        return True

    def warm(self) -> bool:
        """Load the encoder and vectors now; True when semantic matching is available."""
        return self._semantic() is not None

    # -- matching --------------------------------------------------------

    def match(self, query: str, *, k: int = 10) -> Match:
        """Resolve ``query`` to a record, or say honestly that none fits."""
        text = validate_query(query)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidQueryError(f"k must be a positive integer, got {k!r}")
        for key in (light(text), squash(text)):
            if key in self._exact:
                rec = self.records[self._exact[key]]
                return Match(text, rec.name, rec.id, 1.0, "exact", [Candidate(rec.id, rec.name, 1.0)])
        for key in (light(text), squash(text)):
            if key in self._alias:
                rec = self.records[self._alias[key]]
                conf = self.tuning.alias_confidence
                return Match(text, rec.name, rec.id, conf, "alias", [Candidate(rec.id, rec.name, conf)])
        return self._rank(text, k)

    def _query_terms(self, text: str, wordpieces: set[str]) -> tuple[str, list[str]]:
        """Typo-corrected query text (for embedding) and its stemmed terms (for coverage)."""
        words = tokens(text)
        fixed: dict[str, str] = {}
        for word in set(content_tokens(text)):
            if word in wordpieces or stem(word) in self.lexical.vocabulary:
                continue
            guess = self.lexical.correct(stem(word))
            if guess:
                fixed[word] = self.lexical.surface.get(guess, guess)
        if fixed:
            text = " ".join(fixed.get(word, word) for word in words)
        terms = [stem(w) for w in content_tokens(text)]
        return text, terms

    def _rank(self, text: str, k: int, query_vector: np.ndarray | None = None) -> Match:
        """Semantic (or lexical-only) ranking; ``query_vector`` overrides the encoder (parity tests)."""
        tune = self.tuning
        sem = self._semantic()
        corrected, terms = self._query_terms(text, sem.wordpieces if sem else set())
        coverage = np.array(self.lexical.scores(terms), dtype=np.float32)
        if sem is not None:
            if query_vector is None:
                query_vector = (self.encoder or default_encoder()).encode([corrected])[0]
            best = sem.record_scores(query_vector, len(self.records), tune)
            scores = best + tune.lexical_weight * coverage
            threshold, method = tune.threshold, "semantic"
            off_topic = sem.off_topic(query_vector)
        else:
            scores, threshold, method = coverage, tune.lexical_threshold, "lexical"
            off_topic = -1.0
        scores = np.nan_to_num(scores, nan=-1.0, posinf=-1.0, neginf=-1.0)
        order = np.argsort(-scores, kind="stable")[:k]
        candidates = [
            Candidate(
                self.records[i].id,
                self.records[i].name,
                self._confidence(scores[i], threshold),
                round(float(scores[i]), 4),
            )
            for i in order
        ]
        top = float(scores[order[0]])
        if sem is not None and off_topic >= float(best[order[0]]) + tune.off_topic_margin:
            # Closer to a topic the catalog says it does not cover than to any record.
            return Match(text, None, None, min(candidates[0].confidence, 0.49), "none", candidates, False)
        ambiguous = len(order) > 1 and float(scores[order[1]]) >= top - tune.ambiguity_margin
        if top < threshold and sem is not None and float(coverage.max()) >= tune.lexical_threshold:
            # The embedding is unsure but the wording clearly names a record.
            i = int(np.argmax(coverage))
            conf = self._confidence(coverage[i], tune.lexical_threshold)
            rec = self.records[i]
            winner = Candidate(rec.id, rec.name, conf, round(float(coverage[i]), 4))
            others = [c for c in candidates if c.id != rec.id][: k - 1]
            return Match(text, rec.name, rec.id, conf, "lexical", [winner, *others], False)
        if top < threshold:
            return Match(text, None, None, candidates[0].confidence, "none", candidates, ambiguous)
        best_rec = self.records[order[0]]
        return Match(
            text, best_rec.name, best_rec.id, candidates[0].confidence, method, candidates, ambiguous
        )

    def _confidence(self, score: float, threshold: float) -> float:
        """Logistic map of a score: 0.5 at the abstain threshold, near 1 well above it."""
        if not math.isfinite(float(score)):
            return 0.0
        value = 1.0 / (1.0 + math.exp(-(float(score) - threshold) / self.tuning.spread))
        return round(value, 3)


_ENCODER: Encoder | None = None
_ENCODER_LOCK = threading.Lock()


def default_encoder() -> Encoder:
    """The process-wide encoder over the packaged ONNX files (loaded lazily)."""
    global _ENCODER
    with _ENCODER_LOCK:
        if _ENCODER is None:
            _ENCODER = Encoder()
        return _ENCODER
