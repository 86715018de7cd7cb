"""Confidence that means what it says, and a domain check, fitted offline on blind labelled data.

``matchConfidence`` is the probability that the answer is right. A logistic
model maps a few features of a ranking (the winner's fused score, its lead
over the runner-up, how much the query is about coding-agent features at all,
how close it sits to an out-of-scope topic, how far the learned head
(``engine.matching.head``) prefers it over any other record or "none of these",
what share of the product identifiers the query pastes (commands, keys, flags;
``engine.matching.identifiers``) the winner's records name, and how much of the
query the asked agent's own words for the winner cover (``engine.matching.scoped``))
to that probability. The winner's lexical coverage was a feature too, until
``build_scripts/measure/ablate.py`` showed it earned nothing once the rest was fitted
(it still counts in the fused score). The domain term is itself a linear probe
on the query embedding, trained on in-domain questions against diverse
out-of-domain text, including everyday uses of words such as "hooks" or
"resume". ``build_scripts/prepare/fit_confidence.py`` fits both on data that was never
used to tune the scores, and writes ``vectors/confidence-model.json``.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .head import Head, head_from_dict

log = logging.getLogger("engine")

FEATURES = ("score", "lead", "domainLogit", "offTopicGap", "headLead", "named", "scoped")


def logit(p: float, eps: float = 1e-4) -> float:
    """log(p / (1 - p)), clipped so a probe that is certain stays a finite feature."""
    p = min(max(float(p), eps), 1 - eps)
    return math.log(p / (1 - p))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    *,
    l2: float = 1.0,
    iterations: int = 50,
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by Newton's method (IRLS); returns (weights, bias).

    Small, exact and deterministic: the feature counts here are 8 and 384. ``sample_weight``
    lets one kind of text (real users' words) count as much as a larger written pool.
    """
    n, d = x.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    design = np.hstack([x, np.ones((n, 1))])
    theta = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0  # never shrink the bias
    for _ in range(iterations):
        p = sigmoid(design @ theta)
        gradient = design.T @ (w * (p - y)) + penalty * theta
        hessian = (design * (w * p * (1 - p))[:, None]).T @ design + np.diag(penalty) + 1e-9 * np.eye(d + 1)
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def _rounded(value: float) -> float:
    """``value`` to 10 significant digits and 12 decimals: coarser than BLAS noise, finer than matters."""
    return round(float(f"{float(value):.10g}"), 12)


@dataclass(frozen=True)
class Judge:
    """The fitted domain probe and confidence model."""

    probe: np.ndarray  # (384,) weights of the domain probe
    probe_bias: float
    weights: np.ndarray  # one per FEATURES entry, applied to standardised features
    bias: float
    mean: np.ndarray
    scale: np.ndarray
    alias_confidence: float  # measured share of alias hits that are right
    answer_at: float = 0.5  # answer when the winner is at least this likely to be right
    head: Head | None = None  # learned record classifier whose output the confidences were fitted with

    def in_domain(self, vectors: np.ndarray) -> np.ndarray:
        """Probability that each query vector asks about coding-agent features."""
        return sigmoid(vectors @ self.probe + self.probe_bias)

    def confidence(self, features: np.ndarray) -> np.ndarray:
        """P(right) for rows of features in ``FEATURES`` order."""
        z = (np.asarray(features, dtype=np.float64) - self.mean) / self.scale
        return sigmoid(z @ self.weights + self.bias)

    def to_dict(self) -> dict:
        """The file form; floats are rounded so that a refit under another BLAS writes the same text.

        Another BLAS kernel or thread count sums in another order, which changes a float64
        in its last digits (up to 6e-14 in the model's numbers): far below anything the
        model can tell apart, but a diff in the committed file.
        """
        return {
            "features": list(FEATURES),
            "probe": [round(float(v), 7) for v in self.probe],
            "probeBias": _rounded(self.probe_bias),
            "weights": [_rounded(v) for v in self.weights],
            "bias": _rounded(self.bias),
            "mean": [_rounded(v) for v in self.mean],
            "scale": [_rounded(v) for v in self.scale],
            "aliasConfidence": self.alias_confidence,
            "answerAt": self.answer_at,
            **({"head": self.head.to_dict()} if self.head is not None else {}),
        }


# The largest magnitude a fit can plausibly give each part, with a wide margin over the shipped
# model's (confidence weights 4.2, bias 2.8, means 2.8, scales 0.2-5.0, probe 12.4, probe bias 4.8):
# beyond these a file is corrupt or hand-edited, and its confidences would sit at exactly 0 or 1.
LIMITS = {
    "weights": 100.0,
    "bias": 100.0,
    "mean": 1000.0,
    "scale": 1000.0,
    "probe": 1000.0,
    "probeBias": 100.0,
}
MIN_SCALE = 1e-6  # features are divided by their scale


def _array(doc: dict, key: str, size: int) -> np.ndarray:
    value = doc.get(key)
    if not isinstance(value, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    ):
        raise ValueError(f"{key} must be a list of {size} numbers")
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (size,):
        raise ValueError(f"{key} must hold {size} numbers, not {len(value)}")
    if not np.isfinite(array).all():
        raise ValueError(f"{key} holds a non-finite value (NaN or infinity)")
    if np.abs(array).max() > LIMITS[key]:
        raise ValueError(
            f"{key} holds {array[np.abs(array).argmax()]:g}; a fitted model stays within ±{LIMITS[key]:g}"
        )
    return array


def _number(
    doc: dict, key: str, low: float, high: float, *, default: float | None = None, open_ends: bool = False
) -> float:
    value = doc.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{key} must be a finite number, got {value!r}")
    inside = low < value < high if open_ends else low <= value <= high
    if not inside:
        bounds = f"strictly between {low:g} and {high:g}" if open_ends else f"between {low:g} and {high:g}"
        raise ValueError(f"{key} is {value!r}; it must be {bounds}")
    return float(value)


def judge_from_dict(doc: dict, dimension: int = 384) -> Judge:
    """Build a ``Judge`` from its JSON form; ``ValueError`` saying which field is wrong and what is valid.

    Checks shapes, that every value is finite, and that it lies where a fit can
    put it: probabilities (``aliasConfidence``, ``answerAt``) inside 0..1,
    scales positive, weights within ``LIMITS``. A file that passes parsing but
    not these would give confidences of exactly 0 or 1, or above 1.
    """
    if not isinstance(doc, dict):
        raise ValueError(f"the file must hold a JSON object, got {type(doc).__name__}")
    if doc.get("features") != list(FEATURES):
        raise ValueError(f"features must be {list(FEATURES)}")
    probe = _array(doc, "probe", dimension)
    weights, mean, scale = (_array(doc, key, len(FEATURES)) for key in ("weights", "mean", "scale"))
    if (scale < MIN_SCALE).any():
        raise ValueError(f"scale values must be at least {MIN_SCALE:g} (features are divided by them)")
    return Judge(
        probe=probe,
        probe_bias=_number(doc, "probeBias", -LIMITS["probeBias"], LIMITS["probeBias"]),
        weights=weights,
        bias=_number(doc, "bias", -LIMITS["bias"], LIMITS["bias"]),
        mean=mean,
        scale=scale,
        alias_confidence=_number(doc, "aliasConfidence", 0.0, 1.0),
        answer_at=_number(doc, "answerAt", 0.0, 1.0, default=0.5, open_ends=True),
        head=head_from_dict(doc["head"], dimension) if "head" in doc else None,
    )


def load_judge(path: Path) -> Judge | None:
    """The confidence model at ``path``, or None (with one warning) when it is missing or broken.

    Without it the index runs in its documented degraded mode: a score
    threshold decides, and each ``Match`` says ``calibrated=False`` with its
    confidences capped (``Tuning.uncalibrated_cap``).
    """
    try:
        return judge_from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        log.warning(
            "confidence model %s not found; confidences fall back to the score threshold and are marked "
            "calibrated: false",
            path,
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        log.warning(
            "confidence model %s is unusable (%s); confidences fall back to the score threshold and are "
            "marked calibrated: false. Refit it with: python build_scripts/prepare/fit_confidence.py",
            path,
            exc,
        )
    return None
