"""A learned head: which record a query embedding belongs to, learned from labelled questions.

Cosine similarity to a record's texts only knows the catalog's own wording.
People ask in other words ("let it keep going without asking me" is Autopilot
Mode), and neighbours such as Sub-agents and Agent Teams share most of their
vocabulary. A softmax classifier over the query embedding, trained on the
catalog's texts and on blind-written questions, learns which directions of
the embedding separate neighbours. Its log-probability is added to the fused
score at a small weight, so it reorders close calls but cannot invent a match:
the confidence model (``engine.matching.judge``) still decides whether to answer.

It also has a background class, "none of these", learned from off-topic text,
word traps and questions about things the catalog does not hold. Mass that
goes to the background lowers every record's log-probability, so a query
such as "voice chat discord bot" is not pushed towards Voice Input.

The head is fitted for one catalog (``ids``); an index over other records
ignores it. ``build_scripts/build/fit_confidence.py`` fits it, before the confidence
model, on data that the confidence model and the held-out sets never see.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass

import numpy as np

from .store import encode_vector


def log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def fit_softmax(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    *,
    l2: float = 1e-3,
    sample_weight: np.ndarray | None = None,
    iterations: int = 1500,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by accelerated gradient descent; returns (weights, bias).

    Minimises the weighted mean cross-entropy plus ``l2 / 2 * |W|^2``. Plain
    numpy, full batch and a fixed number of steps, so a rerun on the same data
    gives the same model. The step is 1 / L for the loss's Lipschitz bound.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    w_sample = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w_sample = w_sample / w_sample.sum()
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), y] = 1.0
    design = np.hstack([x, np.ones((n, 1))])
    # Softmax cross-entropy has Hessian <= 0.5 * X^T diag(w) X (per class block).
    lipschitz = 0.5 * float(np.linalg.eigvalsh((design * w_sample[:, None]).T @ design)[-1]) + l2
    step = 1.0 / lipschitz
    penalty = np.full((d + 1, 1), l2)
    penalty[-1] = 0.0  # never shrink the bias
    theta = np.zeros((d + 1, n_classes))
    previous = theta.copy()
    for t in range(1, iterations + 1):
        look = theta + (t - 2) / (t + 1) * (theta - previous) if t > 1 else theta
        p = np.exp(log_softmax(design @ look))
        gradient = design.T @ ((p - onehot) * w_sample[:, None]) + penalty * look
        previous, theta = theta, look - step * gradient
    return theta[:-1].T.copy(), theta[-1].copy()


@dataclass(frozen=True)
class Head:
    """Softmax weights over record ids, and how much its log-probability counts in the fused score."""

    ids: tuple[str, ...]
    weights: np.ndarray  # (records + 1, 384): one row per id, then the background class
    bias: np.ndarray  # (records + 1,)
    weight: float  # fused score += weight * log P(record | query)

    def log_probs(self, vector: np.ndarray, *, background: bool = False) -> np.ndarray:
        """Log P(record | query) for one query vector, in ``ids`` order; the background last if asked."""
        out = log_softmax(self.weights @ vector + self.bias)
        return out if background else out[: len(self.ids)]

    def to_dict(self) -> dict:
        return {
            "ids": list(self.ids),
            "weight": self.weight,
            "dtype": "float32-le-base64",
            "weights": [encode_vector(row) for row in self.weights],
            "bias": encode_vector(self.bias),
        }


# A fit weights the head's log-probability at most 1.0 (``fit_confidence.HEAD_WEIGHTS``) and its
# softmax weights stay near 10 (the shipped head's largest is 10.7): past these a file is corrupt.
MAX_HEAD_WEIGHT = 10.0
MAX_HEAD_VALUE = 1000.0


def head_from_dict(doc: dict, dimension: int = 384) -> Head:
    """Build a ``Head`` from its JSON form; ``ValueError`` saying what is wrong and what is valid."""
    if not isinstance(doc, dict):
        raise ValueError(
            f"head must be a JSON object with ids, weight, weights and bias, got {type(doc).__name__}"
        )
    ids = doc.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise ValueError("head ids must be a non-empty list of strings")
    if len(set(ids)) != len(ids):
        raise ValueError("head ids must be unique")
    rows = doc["weights"]
    if not isinstance(rows, list) or not all(isinstance(r, str) for r in [*rows, doc["bias"]]):
        raise ValueError("head weights and bias must be base64 float32 strings")
    try:
        decoded = [np.frombuffer(base64.b64decode(r, validate=True), dtype="<f4") for r in rows]
        bias = np.frombuffer(base64.b64decode(doc["bias"], validate=True), dtype="<f4").astype(np.float64)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"head weights are not base64 float32 ({exc})") from None
    if len({len(r) for r in decoded}) > 1 or not decoded:
        raise ValueError("head weight rows differ in length")
    weights = np.vstack(decoded).astype(np.float64)
    weight = doc["weight"]
    expected = len(ids) + 1
    if weights.shape != (expected, dimension) or bias.shape != (expected,):
        raise ValueError(
            f"head weights must be {expected} x {dimension} (one row per id, then the background) "
            "with one bias per row"
        )
    if (
        not isinstance(weight, (int, float))
        or isinstance(weight, bool)
        or not math.isfinite(weight)
        or not 0 <= weight <= MAX_HEAD_WEIGHT
    ):
        raise ValueError(
            f"head weight must be a finite number >= 0 and <= {MAX_HEAD_WEIGHT:g}, got {weight!r}"
        )
    if not (np.isfinite(weights).all() and np.isfinite(bias).all()):
        raise ValueError("head has non-finite values")
    if max(np.abs(weights).max(), np.abs(bias).max()) > MAX_HEAD_VALUE:
        raise ValueError(f"head weights and bias must stay within ±{MAX_HEAD_VALUE:g}; a fitted head does")
    return Head(tuple(ids), weights, bias, float(weight))
