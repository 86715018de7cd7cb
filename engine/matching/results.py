"""Result types returned by matching; plain dataclasses with ``to_dict`` for JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

METHODS = ("exact", "alias", "semantic", "lexical", "none")


@dataclass(frozen=True)
class Candidate:
    """One ranked record: its id, display name and a 0..1 confidence."""

    id: str
    name: str
    confidence: float
    score: float | None = None  # raw fused score (semantic/lexical paths), for calibration

    def to_dict(self) -> dict:
        """JSON-ready form."""
        return {"id": self.id, "name": self.name, "confidence": self.confidence}


@dataclass(frozen=True)
class Match:
    """What a query resolved to, how, and how sure the engine is.

    ``name`` is None when nothing in the index fits (``method == "none"``);
    ``candidates`` are still filled so a caller can show the nearest records.
    ``ambiguous`` is True when the runner-up scores close to the winner.

    ``calibrated`` says whether ``confidence`` (and each candidate's) is a
    fitted estimate of P(answer is right). It is False in the degraded modes:
    no confidence model, a confidence model whose learned head does not fit
    the records, or no encoder (lexical fallback). Those confidences are a
    logistic of a score, capped at ``Tuning.uncalibrated_cap``, and
    ``degraded`` says in one sentence why they are not probabilities.
    """

    query: str
    name: str | None
    id: str | None
    confidence: float
    method: str
    candidates: list[Candidate] = field(default_factory=list)
    ambiguous: bool = False
    calibrated: bool = True
    degraded: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready form; ``degraded`` only when the confidences are not calibrated."""
        out = {
            "query": self.query,
            "name": self.name,
            "id": self.id,
            "confidence": self.confidence,
            "method": self.method,
            "ambiguous": self.ambiguous,
            "calibrated": self.calibrated,
            "candidates": [c.to_dict() for c in self.candidates],
        }
        if self.degraded:
            out["degraded"] = self.degraded
        return out
