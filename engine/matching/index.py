"""Match free text against any list of records: exact -> alias -> semantic -> lexical -> none.

``Index.from_records`` takes records ``{"id", "name", "description", "aliases"?}``
(capabilities, MCP tools, anything). Semantic matching embeds each record's
texts with MiniLM (see ``scoring``), fuses them into one score per record and
adds a little lexical coverage. With a fitted confidence model (``judge``) the
confidence is the probability that the answer is right and the index answers
only when that is at least even; without one, a score threshold decides.
Confidences that are not such a probability (no model, a model whose learned
head does not fit the records, no encoder) are capped at
``Tuning.uncalibrated_cap`` and the ``Match`` says ``calibrated=False`` and why.
In every mode the candidates' confidences add up to at most 1.
Long questions are also scored sentence by sentence, so the story around a
need does not decide the answer.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from ..common.text import clean_text, content_tokens, light, query_segments, squash, tokens, validate_query
from ..errors import InvalidQueryError
from .encoder import Encoder, EncoderUnavailableError
from .identifiers import IdentifierTable
from .inference import run_inference
from .judge import Judge, logit
from .lexical import LexicalIndex, stem
from .records import coerce_records
from .results import Candidate, Match
from .scoped import ScopedVocabulary
from .scoring import Embedded, Record, Tuning, humanize, record_entries
from .store import Entry, VectorStore, load_store

log = logging.getLogger("engine")

RETRY_FIRST_DELAY = 1.0  # seconds before semantic matching is tried again after a transient failure
RETRY_MAX_DELAY = 60.0


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
        judge: Judge | None = None,
    ) -> None:
        self.records = records
        self.judge = judge
        self.tuning = tuning or Tuning()
        self.encoder = encoder
        self._semantic_wanted = semantic
        self._store = store
        self._store_problem = store_problem
        self._semantic_state: Embedded | None = None
        self._semantic_failed = False
        self._semantic_problem: str | None = None  # why semantic matching is off, for the degraded note
        self._retry_at: float | None = None  # monotonic time of the next try after a transient failure
        self._retry_delay = RETRY_FIRST_DELAY
        self._failed_tries = 0
        self._lock = threading.Lock()
        self.entries = [entry for rec in records for entry in record_entries(rec)]
        self.entries += [Entry("", "negative", text) for text in dict.fromkeys(out_of_scope)]
        self._position = {rec.id: i for i, rec in enumerate(records)}
        self._head_for: object = None  # the judge whose head ``_head_rows`` was worked out for
        self._head_rows: np.ndarray | None = None

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
        self.identifiers = IdentifierTable(rec.identifiers for rec in records)
        self.scoped = ScopedVocabulary([rec.scoped for rec in records])
        # Breaks ties in the lexical fallback: "chekpoints" covers Checkpoints and a record that
        # mentions checkpoints equally, and the one named for it is the likelier answer.
        self.name_lexical = LexicalIndex(
            [[stem(w) for w in content_tokens(humanize(r.name))] for r in records]
        )

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
        judge: Judge | None = None,
    ) -> Index:
        """Index any records; embeds them with the runtime encoder unless ``vectors`` has them.

        ``records`` are dicts or ``Record``s, both checked the same way: a
        non-empty string id and name (each unique), optional string
        description, lists of strings for aliases. A bad one raises
        ``InvalidQueryError`` naming the record and the field.

        ``vectors`` is a ``VectorStore`` or the path of one written by
        ``build_scripts/prepare/build_vectors.py``. A missing, unreadable or stale store
        is not an error: what it lacks is embedded on first use, with one warning.
        ``out_of_scope`` lists topics the records do not cover ("pricing and
        plans"); a query closer to one of them than to any record gets no match.
        ``judge`` is a fitted confidence model (``engine.matching.judge``); without one a
        score threshold decides, and confidences are a logistic of the score, capped at
        ``Tuning.uncalibrated_cap`` and marked ``calibrated=False`` on each ``Match``.
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
            judge=judge,
        )

    # -- semantic state -------------------------------------------------

    def _semantic(self) -> Embedded | None:
        """Embedded entries, built on first use; None when semantic matching is off (or waits for a retry).

        A transient failure (out of file descriptors or memory, say while a
        flood of connections holds them) is tried again after 1, 2, 4 ... s,
        at most a minute apart: the shortage passes, and the process should not
        match lexically for the rest of its life. Broken files are final.
        """
        if self._semantic_state is not None or self._semantic_failed or not self._semantic_wanted:
            return self._semantic_state
        if self.retry_in():
            return None
        with self._lock:
            if self._semantic_state is not None or self._semantic_failed or self.retry_in():
                return self._semantic_state
            try:
                self._semantic_state = self._build_semantic()
            except EncoderUnavailableError as exc:
                self._semantic_problem = exc.reason  # the full message, with paths, goes to the log only
                if exc.transient:
                    self._retry_later(exc)
                else:
                    self._semantic_failed = True
                    log.warning("semantic matching is off (%s); using alias and lexical matching", exc)
                return None
            if self._failed_tries:
                log.warning("semantic matching is on again (after %d failed tries)", self._failed_tries)
            self._retry_at, self._semantic_problem, self._failed_tries = None, None, 0
        return self._semantic_state

    def _retry_later(self, exc: EncoderUnavailableError) -> None:
        delay = self._retry_delay
        self._retry_at = time.monotonic() + delay
        self._retry_delay = min(delay * 2, RETRY_MAX_DELAY)
        self._failed_tries += 1
        # One warning per shortage (and one when it ends), however many tries it takes.
        level = logging.WARNING if self._failed_tries == 1 else logging.DEBUG
        log.log(
            level,
            "semantic matching is paused (%s); using alias and lexical matching, trying again in %g s",
            exc,
            delay,
        )

    def retry_in(self) -> float | None:
        """Seconds to the next try after a transient failure (0: due now); None when no try is waiting."""
        if self._retry_at is None:
            return None
        return max(0.0, self._retry_at - time.monotonic())

    def _build_semantic(self) -> Embedded:
        encoder = self.encoder or default_encoder()
        encoder.load()
        # A store of random or foreign vectors is dropped before any of its rows is used, whether
        # it covers every text or only some (a stale store reuses the rows it still has).
        if self._store is not None:
            self._drop_store_unless_it_agrees(encoder)
        # Compare what was embedded with what is needed, not the file's own hash claim.
        if self._store is not None and self._store.entries == self.entries:
            matrix = self._store.matrix
        else:
            known = self._store.lookup() if self._store is not None else {}
            rows: list[np.ndarray | None] = [known.get(entry) for entry in self.entries]
            todo = [i for i, row in enumerate(rows) if row is None]
            if todo:
                if self._store is not None:
                    log.warning(
                        "vector store is stale (%d of %d texts changed); embedding them with the ONNX "
                        "encoder. "
                        "Rebuild it with: python build_scripts/prepare/build_vectors.py",
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
        return Embedded(matrix=matrix, owners=owners, kinds=kinds, wordpieces=set(encoder.vocabulary()))

    def _drop_store_unless_it_agrees(self, encoder: Encoder, samples: int = 3) -> None:
        """Re-embed a few stored texts: a store of random or foreign vectors is dropped, not used.

        Costs a few milliseconds once; a wrong store would otherwise give
        confident wrong answers for the life of the process. The shortest texts are checked: any
        row of a wrong store disagrees, and short ones encode fastest (this runs on the way to the
        server's first answer).
        """
        store = self._store
        by_length = sorted(range(len(store.entries)), key=lambda i: (len(store.entries[i].text), i))
        rows = sorted(by_length[:samples])
        fresh = encoder.encode([store.entries[i].text for i in rows])
        agreement = float(np.min(np.sum(fresh * store.matrix[rows], axis=1)))
        if agreement < 0.95:
            log.warning(
                "vector store does not match the encoder (cosine %.2f on a spot check); re-embedding the "
                "catalog. Rebuild it with: python build_scripts/prepare/build_vectors.py",
                agreement,
            )
            self._store = None

    def warm(self) -> bool:
        """Load the encoder and vectors now; True when semantic matching is available."""
        return self._semantic() is not None

    # -- matching --------------------------------------------------------

    def match(self, query: str, *, k: int = 10, agent: str | None = None) -> Match:
        """Resolve ``query`` to a record, or say honestly that none fits.

        ``agent`` names the scope asked about (an agent id): the records' words for
        that scope (``Record.scoped``) then count in the semantic ranking. A scope no
        record names adds nothing; exact and alias hits do not depend on it.
        """
        text = validate_query(query)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidQueryError(f"k must be a positive integer, got {k!r}")
        if agent is not None and not isinstance(agent, str):
            raise InvalidQueryError(f"agent must be a string (a scope such as an agent id), got {agent!r}")
        for key in (light(text), squash(text)):
            if key in self._exact:
                rec = self.records[self._exact[key]]
                return Match(text, rec.name, rec.id, 1.0, "exact", [Candidate(rec.id, rec.name, 1.0)])
        for key in (light(text), squash(text)):
            if key in self._alias:
                rec = self.records[self._alias[key]]
                if self.judge is not None:
                    conf = round(self.judge.alias_confidence, 3)
                    return Match(text, rec.name, rec.id, conf, "alias", [Candidate(rec.id, rec.name, conf)])
                conf = round(min(self.tuning.alias_confidence, self.tuning.uncalibrated_cap), 3)
                return Match(
                    text,
                    rec.name,
                    rec.id,
                    conf,
                    "alias",
                    [Candidate(rec.id, rec.name, conf)],
                    **self._uncalibrated(),
                )
        if not any(ch.isalnum() for ch in text):
            # Emoji, punctuation or invisible characters only: there is nothing to match.
            return Match(text, None, None, 0.0, "none", [], False)
        sem = self._semantic()
        if sem is None:
            return self._rank_lexical(text, k)
        return self._rank(text, k, sem, agent)

    def _head(self) -> tuple[object, np.ndarray] | None:
        """The judge's learned head and, per record, its row in the head; None when it does not apply.

        A head is fitted for one catalog. Over other records (or a catalog
        changed since the fit) it is left out, with one warning, rather than
        scoring records by another catalog's rows. The judge was fitted with the
        head's lead as a feature, so without it the confidences are not
        calibrated (see ``_uncalibrated``).
        """
        judge = self.judge
        head = judge.head if judge is not None else None
        if head is None:
            return None
        if self._head_for is not judge:
            rows = {rid: i for i, rid in enumerate(head.ids)}
            if set(rows) == set(self._position):
                self._head_rows = np.array([rows[rec.id] for rec in self.records])
            else:
                self._head_rows = None
                shared = len(set(rows) & set(self._position))
                log.warning(
                    "the confidence model's head was fitted for other records (%d of its %d ids are among "
                    "these %d records); matching without it, and confidences are not calibrated. "
                    "Refit it with: python build_scripts/prepare/fit_confidence.py",
                    shared,
                    len(rows),
                    len(self.records),
                )
            self._head_for = judge
        return (head, self._head_rows) if self._head_rows is not None else None

    def _query_terms(self, text: str, wordpieces: set[str]) -> tuple[str, list[str]]:
        """Typo-corrected query text (for embedding) and its stemmed terms (for coverage)."""
        words = tokens(text)
        fixed: dict[str, str] = {}
        for word in set(content_tokens(text)) if self.tuning.correct_typos else ():
            if word in wordpieces or stem(word) in self.lexical.vocabulary:
                continue
            guess = self.lexical.correct(stem(word))
            if guess:
                fixed[word] = self.lexical.surface.get(guess, guess)
        if fixed:
            text = " ".join(fixed.get(word, word) for word in words)
        terms = [stem(w) for w in content_tokens(text)]
        return text, terms

    def ranking(self, text: str, sem: Embedded, *, segments: bool = True, agent: str | None = None) -> dict:
        """Scores of every record for the best-fitting part of ``text``, and the judge's features.

        The whole text is scored, and so is each sentence of a long question;
        the part whose winner the judge trusts most (or, without a judge, the
        part with the highest score) decides. Runs in one turn of the inference
        queue, with the encode it needs, so concurrent queries queue instead of
        fighting over the cores.
        """
        return run_inference(self._ranking, text, sem, segments, agent)

    def _ranking(self, text: str, sem: Embedded, segments: bool, agent: str | None = None) -> dict:
        tune = self.tuning
        parts = query_segments(text, tune.segment_words) if segments else [text]
        prepared = [self._query_terms(part, sem.wordpieces) for part in parts]
        vectors = (self.encoder or default_encoder()).encode([corrected for corrected, _ in prepared])
        learned = self._head()
        best: dict | None = None
        for part, vector, (_, terms) in zip(parts, vectors, prepared, strict=True):
            coverage = np.array(self.lexical.scores(terms), dtype=np.float32)
            semantic = np.nan_to_num(sem.record_scores(vector, len(self.records), tune), nan=-1.0)
            named = self.identifiers.scores(part, len(self.records), sem.wordpieces)
            # The user's own words, before the typo step: an agent's product word ("Quasar") is no
            # catalog word, and the step would "correct" it into one.
            scoped = self.scoped.scores(agent, content_tokens(part), len(self.records))
            fused = (
                semantic
                + tune.lexical_weight * coverage
                + tune.identifier_weight * named
                + tune.scoped_weight * scoped
            )
            head_log_probs = None
            if learned is not None:
                head, rows = learned
                all_log_probs = head.log_probs(vector, background=True)
                head_log_probs = np.append(all_log_probs[rows], all_log_probs[-1])
                fused = fused + head.weight * head_log_probs[:-1]
            fused = np.nan_to_num(fused, nan=-1.0, posinf=-1.0, neginf=-1.0)
            order = np.argsort(-fused, kind="stable")
            off_topic = sem.off_topic(vector)
            domain = float(self.judge.in_domain(vector)) if self.judge else 1.0
            current = {
                "fused": fused,
                "semantic": semantic,
                "coverage": coverage,
                "named": named,
                "scoped": scoped,
                "order": order,
                "offTopic": off_topic,
                "domain": domain,
                "head": head_log_probs,  # per record, then "none of these"; None without a head
            }
            current["trust"] = (
                float(self._judged(current, [int(order[0])])[0]) if self.judge else float(fused[order[0]])
            )
            # The whole text stands unless one sentence is clearly more capability-like.
            if best is None or current["trust"] > best["trust"] + tune.segment_margin:
                best = current
        return best

    def _judged(self, ranking: dict, rows: list[int]) -> np.ndarray:
        """The judge's P(right) for each record in ``rows`` as the answer of this ranking."""
        if not rows:  # k=1 leaves no runner-ups to judge; an empty batch has no feature columns
            return np.empty(0)
        return self.judge.confidence(np.array([ranking_features(ranking, i) for i in rows]))

    def _rank(self, text: str, k: int, sem: Embedded, agent: str | None = None) -> Match:
        """Semantic ranking of ``text``: a record, or no match with the nearest candidates."""
        tune = self.tuning
        ranking = self.ranking(text, sem, agent=agent)
        fused, order = ranking["fused"], ranking["order"]
        shown = [int(i) for i in order[:k]]
        top = float(fused[order[0]])
        # Close calls are judged over all records, so they do not depend on k.
        ambiguous = len(order) > 1 and float(fused[order[1]]) >= top - tune.ambiguity_margin
        head = ranking.get("head")
        if head is not None and len(order) > 1:
            # With a learned head, a close call is a second reading the head finds nearly as likely.
            second = np.exp(head[int(order[1])]) >= tune.head_ambiguity_ratio * np.exp(head[int(order[0])])
            ambiguous = ambiguous or bool(second)
        if self.judge is not None:
            # ranking() already judged the winner; with a head, the runner-ups share what it leaves.
            others = [] if head is not None else self._judged(ranking, shown[1:])
            confidences = coherent(np.r_[ranking["trust"], others], head, shown)
            answered = confidences[0] >= self.judge.answer_at
            degraded = self._uncalibrated() if self.judge.head is not None and head is None else {}
            if degraded:
                confidences = coherent(np.minimum(confidences, tune.uncalibrated_cap), None, shown)
            candidates = self._candidates(shown, confidences, fused)
            if not answered:
                # Nothing answered, so no close call to flag: "none of these" won.
                return Match(
                    text, None, None, candidates[0].confidence, "none", candidates, False, **degraded
                )
            rec = self.records[shown[0]]
            return Match(
                text,
                rec.name,
                rec.id,
                candidates[0].confidence,
                "semantic",
                candidates,
                ambiguous,
                **degraded,
            )

        degraded = self._uncalibrated()
        candidates = self._uncalibrated_candidates(shown, [fused[i] for i in shown], tune.threshold, fused)
        if ranking["offTopic"] >= float(ranking["semantic"][order[0]]) + tune.off_topic_margin:
            # Closer to a topic the catalog says it does not cover than to any record.
            conf = min(candidates[0].confidence, 0.49)
            return Match(text, None, None, conf, "none", candidates, False, **degraded)
        coverage = ranking["coverage"]
        if top < tune.threshold and float(coverage.max()) >= tune.lexical_threshold:
            # The embedding is unsure but the wording clearly names a record.
            i = int(np.argmax(coverage))
            rows = [i, *[j for j in shown if j != i][: k - 1]]
            confidences = np.r_[
                self._confidence(coverage[i], tune.lexical_threshold),
                [self._confidence(fused[j], tune.threshold) for j in rows[1:]],
            ]
            scores = np.array(fused, dtype=np.float64)
            scores[i] = coverage[i]
            confidences = coherent(np.minimum(confidences, tune.uncalibrated_cap), None, rows)
            candidates = self._candidates(rows, confidences, scores)
            winner = candidates[0]
            return Match(
                text, winner.name, winner.id, winner.confidence, "lexical", candidates, False, **degraded
            )
        if top < tune.threshold:
            return Match(
                text, None, None, candidates[0].confidence, "none", candidates, ambiguous, **degraded
            )
        rec = self.records[shown[0]]
        return Match(
            text, rec.name, rec.id, candidates[0].confidence, "semantic", candidates, ambiguous, **degraded
        )

    def _rank_lexical(self, text: str, k: int) -> Match:
        """Without the encoder: idf-weighted wording coverage decides."""
        tune = self.tuning
        _, terms = self._query_terms(text, set())
        coverage = np.array(self.lexical.scores(terms), dtype=np.float32)
        by_name = np.array(self.name_lexical.scores(terms), dtype=np.float32)
        order = [int(i) for i in np.lexsort((-by_name, -coverage))]
        shown = order[:k]
        candidates = self._uncalibrated_candidates(
            shown, [coverage[i] for i in shown], tune.lexical_threshold, coverage
        )
        top = float(coverage[order[0]])
        ambiguous = len(order) > 1 and float(coverage[order[1]]) >= top - tune.ambiguity_margin
        degraded = self._uncalibrated(lexical=True)
        if top < tune.lexical_threshold:
            return Match(
                text, None, None, candidates[0].confidence, "none", candidates, ambiguous, **degraded
            )
        rec = self.records[order[0]]
        return Match(
            text, rec.name, rec.id, candidates[0].confidence, "lexical", candidates, ambiguous, **degraded
        )

    def _uncalibrated(self, *, lexical: bool = False) -> dict:
        """``Match`` fields for confidences that are not P(right): why, in one sentence.

        The first reason that applies: no encoder (``lexical``: the lexical
        fallback decided), no confidence model, or a model whose learned head
        was fitted for other records (the model was fitted with the head's lead
        as a feature).
        """
        cap = f"capped at {self.tuning.uncalibrated_cap:g}"
        if lexical:
            why = self._semantic_problem or "semantic=False"
            note = (
                f"semantic matching is off ({why}): confidences are lexical scores {cap}, not probabilities"
            )
        elif self.judge is None:
            note = f"no confidence model: confidences are scores {cap}, not probabilities"
        else:
            note = (
                "the confidence model's head was fitted for other records and is left out: "
                f"confidences are {cap} and are not calibrated probabilities"
            )
        return {"calibrated": False, "degraded": note}

    def _uncalibrated_candidates(
        self, rows: list[int], values: list[float], threshold: float, scores: np.ndarray
    ) -> list[Candidate]:
        """Candidates whose confidence is a logistic of a score: capped, and sharing at most 1 in all."""
        raw = np.array([self._confidence(v, threshold) for v in values], dtype=np.float64)
        return self._candidates(
            rows, coherent(np.minimum(raw, self.tuning.uncalibrated_cap), None, rows), scores
        )

    def _candidates(self, rows: list[int], confidences: np.ndarray, scores: np.ndarray) -> list[Candidate]:
        """Candidates for ``rows`` with confidences rounded to 3 places without their total passing 1."""
        return [
            Candidate(self.records[i].id, self.records[i].name, conf, round(float(scores[i]), 4))
            for i, conf in zip(rows, rounded_shares(confidences), strict=True)
        ]

    def _confidence(self, score: float, threshold: float) -> float:
        """Logistic map of a score: 0.5 at the abstain threshold, near 1 well above it."""
        if not math.isfinite(float(score)):
            return 0.0
        value = 1.0 / (1.0 + math.exp(-(float(score) - threshold) / self.tuning.spread))
        return round(value, 3)


def coherent(judged: np.ndarray, head: np.ndarray | None, shown: list[int]) -> np.ndarray:
    """Candidate confidences that read as probabilities of one right answer among them.

    The winner keeps the judge's P(right), ``judged[0]``. Only one record can be
    the right answer, so the others share what is left, ``1 - P(winner)``: by the
    learned head's odds when there is one (its "none of these" takes its part
    too; ``judged`` then needs only the winner), otherwise by the judge's own
    values for ``shown[1:]``, capped so that the total stays at most 1. A
    lower-ranked record is never reported as likelier than one above it.
    """
    conf = np.array(judged, dtype=np.float64)
    left = 1.0 - conf[0]
    if head is not None:
        odds = np.exp(head)
        rest = max(1.0 - float(odds[shown[0]]), 1e-12)
        conf = np.r_[conf[0], left * odds[shown[1:]] / rest]
    else:
        for j in range(1, len(conf)):
            conf[j] = min(conf[j], max(left, 0.0))
            left -= conf[j]
    return np.minimum.accumulate(np.clip(conf, 0.0, 1.0))


def rounded_shares(confidences: Sequence[float]) -> list[float]:
    """Confidences rounded to 3 places: the first to nearest, the rest down, so the total stays at most 1.

    Rounding each to nearest could lift a list that sums to exactly 1 (as
    ``coherent`` makes them) to 1.001 or more. Non-finite values count as 0.
    """
    out: list[float] = []
    left = 1000  # in thousandths, so the arithmetic is exact
    for j, value in enumerate(confidences):
        value = float(value)
        if not math.isfinite(value):
            milli = 0
        elif j == 0:
            milli = round(value * 1000)
        else:
            milli = math.floor(value * 1000 + 1e-6)  # the epsilon keeps 0.15 from flooring to 0.149
        milli = max(0, min(milli, left))
        left -= milli
        out.append(milli / 1000)
    return out


def ranking_features(ranking: dict, i: int) -> list[float]:
    """The judge's features (``judge.FEATURES``) for record ``i`` as the answer of a ranking."""
    fused, order = ranking["fused"], ranking["order"]
    top = float(fused[order[0]])
    second = float(fused[order[1]]) if len(order) > 1 else -1.0
    rival = second if i == int(order[0]) else top
    head = ranking.get("head")
    head_lead = 0.0 if head is None else float(head[i] - np.delete(head, i).max())
    return [
        float(fused[i]),
        float(fused[i]) - rival,
        logit(ranking["domain"]),
        ranking["offTopic"] - float(ranking["semantic"][i]),
        head_lead,
        float(ranking["named"][i]),
        float(ranking["scoped"][i]),
    ]


_ENCODER: Encoder | None = None
_ENCODER_LOCK = threading.Lock()


def default_encoder() -> Encoder:
    """The process-wide encoder over the packaged ONNX files (loaded lazily)."""
    global _ENCODER
    with _ENCODER_LOCK:
        if _ENCODER is None:
            _ENCODER = Encoder()
        return _ENCODER
