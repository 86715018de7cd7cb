"""Fit the domain probe and the confidence model; write ``vectors/confidence-model.json``.

    python build_scripts/fit_confidence.py

Data, all written blind to the catalog (see each file's "about"):
- ``tests/fixtures/domain_probe_train.json``: in-domain questions about coding-agent
  features against out-of-domain text (word traps, general programming, trivia),
  plus the positives of ``train_queries.json``. Trains the domain probe.
- ``tests/fixtures/calibration_queries.json`` and ``calibration2_queries.json``
  (two blind writers): fit the mapping from ranking features to P(right). The
  held-out sets are never read here.

Needs only the runtime dependencies (the shipped ONNX encoder). Rerunning on
unchanged data writes the same file.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.capabilities import JUDGE_FILE, VECTOR_FILE, capability_records, names_only_agents, strip_agents  # noqa: E402
from engine.catalog import get_catalog  # noqa: E402
from engine.encoder import Encoder  # noqa: E402
from engine.index import Index, ranking_features  # noqa: E402
from engine.judge import FEATURES, Judge, fit_logistic, sigmoid  # noqa: E402
from engine.paths import vectors_dir  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
PROBE_L2 = (0.1, 0.3, 1.0, 3.0, 10.0)
CALIBRATION_SETS = ("calibration_queries.json", "calibration2_queries.json")
CALIBRATION_L2 = (0.3, 1.0, 3.0, 10.0, 30.0)  # chosen by 5-fold log loss on the calibration set


def probe_data() -> tuple[list[str], np.ndarray]:
    """In-domain: the blind questions, the catalog's own summaries and examples, our own eval positives.

    Out-of-domain: the blind traps and off-topic text, plus the null queries of our own and the
    training sets. The calibration and held-out sets never feed the probe.
    """
    doc = json.loads((FIXTURES / "domain_probe_train.json").read_text())
    own = json.loads((FIXTURES / "eval_queries.json").read_text())["queries"]
    canon = json.loads((ROOT / "engine" / "data" / "capabilities.json").read_text())["capabilities"]
    catalog_text = [c["summary"] for c in canon] + [e for c in canon for e in c.get("examples", [])]
    train = json.loads((FIXTURES / "train_queries.json").read_text())["queries"]
    inside = doc["inDomain"] + catalog_text + [q["query"] for q in own if q["expected"]]
    # The should-match-nothing queries of our own and the training set are out-of-domain examples too.
    outside = doc["outOfDomain"] + [q["query"] for q in own + train if q["expected"] is None]
    texts = inside + outside
    return texts, np.array([1.0] * len(inside) + [0.0] * len(outside))


def fit_probe(vectors: np.ndarray, labels: np.ndarray, grid=PROBE_L2) -> tuple[np.ndarray, float, float]:
    """Pick the L2 strength by 5-fold log loss, then fit on everything."""
    folds = np.arange(len(labels)) % 5
    best = None
    for l2 in grid:
        loss = 0.0
        for fold in range(5):
            train, test = folds != fold, folds == fold
            w, b = fit_logistic(vectors[train], labels[train], l2=l2)
            p = np.clip(sigmoid(vectors[test] @ w + b), 1e-6, 1 - 1e-6)
            loss -= float(np.sum(labels[test] * np.log(p) + (1 - labels[test]) * np.log(1 - p)))
        if best is None or loss < best[0]:
            best = (loss / len(labels), l2)
    w, b = fit_logistic(vectors, labels, l2=best[1])
    return w, b, best[1]


def features_and_labels(
    index: Index, queries: list[dict], *, segments: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the winner's features and whether the winner is the right answer (1) or not (0)."""
    sem = index._semantic()  # noqa: SLF001 - the fit needs the raw ranking, not a Match
    rows, labels = [], []
    for q in queries:
        if names_only_agents(q["query"]):
            continue
        ranking = index.ranking(strip_agents(q["query"]), sem, segments=segments)
        top = int(ranking["order"][0])
        rows.append(ranking_features(ranking, top))
        labels.append(float(index.records[top].name == q["expected"]))
    return np.array(rows), np.array(labels)


MIN_ABSTENTION = 0.92  # share of should-match-nothing queries that must get no match (issue 9 asks >= 0.90)


def pick_answer_threshold(p: np.ndarray, right: np.ndarray, answerable: np.ndarray) -> float:
    """The lowest P(right) threshold that still abstains on ``MIN_ABSTENTION`` of the off-topic queries.

    Lower thresholds answer more of the answerable queries; the floor on
    abstention keeps "nothing matches" honest. Ties in the grid go to the
    threshold with the fewest mistakes.
    """
    best = None
    for threshold in np.arange(0.20, 0.61, 0.05):
        answered = p >= threshold
        abstention = float((~answered[~answerable]).mean()) if (~answerable).any() else 1.0
        mistakes = int((answered & ~right).sum() + (~answered & answerable & right).sum())
        key = (abstention < MIN_ABSTENTION, mistakes if abstention >= MIN_ABSTENTION else -abstention)
        if best is None or key < best[0]:
            best = (key, round(float(threshold), 2))
    return best[1]


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(
        sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum() for b in set(edges))
        / len(p)
    )


def main() -> int:
    encoder = Encoder()
    catalog = get_catalog()
    texts, labels = probe_data()
    vectors = encoder.encode(texts).astype(np.float64)
    probe, probe_bias, l2 = fit_probe(vectors, labels)
    accuracy = float(((sigmoid(vectors @ probe + probe_bias) >= 0.5) == labels).mean())
    print(f"domain probe: {len(texts)} texts, L2 {l2}, training accuracy {accuracy:.3f}", file=sys.stderr)

    neutral = Judge(
        probe, probe_bias, np.zeros(len(FEATURES)), 0.0, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), 0.95
    )
    index = Index.from_records(
        capability_records(catalog),
        vectors=vectors_dir() / VECTOR_FILE,
        encoder=encoder,
        out_of_scope=catalog.out_of_scope,
        judge=neutral,
    )
    # Two blind writers, so the fit does not learn one writer's style.
    calibration = [
        q for name in CALIBRATION_SETS for q in json.loads((FIXTURES / name).read_text())["queries"]
    ]
    judge = neutral
    for segments in (False, True):  # second pass: features as chosen among sentences by the first fit
        index.judge = judge
        x, y = features_and_labels(index, calibration, segments=segments)
        mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
        weights, bias, l2 = fit_probe((x - mean) / scale, y, grid=CALIBRATION_L2)
        judge = replace(neutral, weights=weights, bias=bias, mean=mean, scale=scale)

    # Alias hits: the share that is right on the blind calibration and training sets.
    index.judge = judge
    train = json.loads((FIXTURES / "train_queries.json").read_text())["queries"]
    hits = [(q, index.match(strip_agents(q["query"]))) for q in calibration + train]
    alias = [m.name == q["expected"] for q, m in hits if m.method == "alias"]
    alias_confidence = round((sum(alias) + 1) / (len(alias) + 2), 3)
    judge = replace(judge, alias_confidence=alias_confidence)
    index.judge = judge
    # Where to answer: the abstention floor over the calibration and training sets together (both blind,
    # neither held out), so one small set's noise does not pick the threshold.
    tuning = calibration + train
    tx, ty = features_and_labels(index, tuning, segments=True)
    answerable = np.array([q["expected"] is not None for q in tuning if not names_only_agents(q["query"])])
    answer_at = pick_answer_threshold(judge.confidence(tx), ty.astype(bool), answerable)
    judge = replace(judge, answer_at=answer_at)
    n_calibration = sum(not names_only_agents(q["query"]) for q in calibration)
    p, y = judge.confidence(tx[:n_calibration]), ty[:n_calibration]
    print(f"confidence model L2 {l2}; answer when P(right) >= {answer_at}", file=sys.stderr)
    print(
        f"calibration set: {len(y)} queries, in-sample ECE {expected_calibration_error(p, y):.3f}; "
        f"alias hits right {sum(alias)}/{len(alias)} -> {alias_confidence}",
        file=sys.stderr,
    )
    out = vectors_dir() / JUDGE_FILE
    out.write_text(json.dumps(judge.to_dict(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
