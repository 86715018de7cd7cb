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
ignores it. ``build_scripts/prepare/fit_confidence.py`` fits it, before the confidence
model, on data that the confidence model and the held-out sets never see.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
from dataclasses import dataclass

import numpy as np

from .store import encode_vector

log = logging.getLogger("engine")


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
    start: tuple[np.ndarray, np.ndarray] | None = None,
    tolerance: float = 1e-6,
    max_iterations: int = 1000,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by L-BFGS; returns (weights, bias).

    Minimises the weighted mean cross-entropy plus ``l2 / 2 * |W|^2`` until no
    gradient entry exceeds ``tolerance``. ``start`` is a (weights, bias) to
    begin from, such as the fit at a stronger ``l2`` on the same rows: the
    minimum does not depend on where the search starts, only its cost does.
    Plain numpy and no randomness, so a rerun on the same data gives the same
    model. On the build's data L-BFGS gets in about 150 gradients closer to
    the minimum than 1,500 accelerated gradient steps at the step 1 / L did
    (those stopped 0.3% to 1.6% away from it), and the build fits 48 heads.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    n, d = x.shape
    w_sample = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    w_sample = w_sample / w_sample.sum()
    design = np.hstack([x, np.ones((n, 1))])
    rows = np.arange(n)
    penalty = np.full((d + 1, 1), l2)
    penalty[-1] = 0.0  # never shrink the bias

    def loss_and_gradient(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = design @ theta
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        total = p.sum(axis=1)
        loss = float(w_sample @ (np.log(total) - z[rows, y])) + 0.5 * float((penalty * theta * theta).sum())
        p *= (w_sample / total)[:, None]
        p[rows, y] -= w_sample
        return loss, design.T @ p + penalty * theta

    if start is None:
        theta = np.zeros((d + 1, n_classes))
    else:
        theta = np.vstack([np.asarray(start[0], dtype=np.float64).T, np.asarray(start[1], dtype=np.float64)])
    loss, gradient = loss_and_gradient(theta)
    steps: list[np.ndarray] = []  # the last few parameter changes and gradient changes
    changes: list[np.ndarray] = []
    for _ in range(max_iterations):
        if np.abs(gradient).max() <= tolerance:
            break
        direction = _lbfgs_direction(gradient, steps, changes)
        slope = float((gradient * direction).sum())
        if slope >= 0:  # not downhill: forget the curvature pairs and follow the gradient
            steps.clear()
            changes.clear()
            direction = -gradient / np.abs(gradient).max()
            slope = float((gradient * direction).sum())
        size = 1.0
        while True:  # backtrack until the loss falls enough (Armijo)
            trial = theta + size * direction
            trial_loss, trial_gradient = loss_and_gradient(trial)
            if trial_loss <= loss + 1e-4 * size * slope or size < 1e-10:
                break
            size /= 2
        step, change = trial - theta, trial_gradient - gradient
        if float((step * change).sum()) > 1e-12:
            steps.append(step)
            changes.append(change)
            if len(steps) > 10:
                steps.pop(0)
                changes.pop(0)
        theta, loss, gradient = trial, trial_loss, trial_gradient
    else:
        log.warning(
            "fit_softmax stopped after %d iterations with a gradient of %.1e (tolerance %.1e)",
            max_iterations,
            float(np.abs(gradient).max()),
            tolerance,
        )
    return theta[:-1].T.copy(), theta[-1].copy()


def _lbfgs_direction(gradient: np.ndarray, steps: list[np.ndarray], changes: list[np.ndarray]) -> np.ndarray:
    """The L-BFGS two-loop recursion: minus the inverse Hessian estimate times the gradient."""
    q = gradient.copy()
    alphas = []
    for s, c in zip(reversed(steps), reversed(changes), strict=True):
        alpha = float((s * q).sum()) / float((c * s).sum())
        alphas.append(alpha)
        q -= alpha * c
    if steps:
        q *= float((steps[-1] * changes[-1]).sum()) / float((changes[-1] * changes[-1]).sum())
    else:
        q /= max(float(np.abs(gradient).max()), 1e-12)  # first step: move no parameter by more than 1
    for s, c, alpha in zip(steps, changes, reversed(alphas), strict=True):
        beta = float((c * q).sum()) / float((c * s).sum())
        q += (alpha - beta) * s
    return -q


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
