"""Real text: it weighs as much as written text in the fit, and evaluation counts every top candidate."""

from __future__ import annotations

import numpy as np
import pytest

from build_scripts.measure.evaluate import metrics
from build_scripts.prepare.fit_confidence import origin_weights
from engine.matching.results import Candidate, Match


def test_real_and_written_text_weigh_the_same_in_the_confidence_fit():
    queries = [{"query": f"written question {i}", "expected": None} for i in range(6)]
    queries += [{"query": f"real issue title {i}", "expected": None, "origin": "real"} for i in range(2)]
    weight = origin_weights(queries)
    real = np.array([q.get("origin") == "real" for q in queries])
    assert weight[real].sum() == pytest.approx(weight[~real].sum())
    assert weight.mean() == pytest.approx(1.0)


def unanswered(query: str, top: str, confidence: float) -> Match:
    return Match(query, None, None, confidence, "none", [Candidate(top.lower(), top, confidence)])


def test_the_all_candidates_ece_counts_top_candidates_that_were_not_given():
    # Four unanswered items whose top candidate, at 0.4, is right every time: no given answer to
    # judge, but a confidence four in ten that is right ten in ten.
    results = [
        ({"query": f"q{i}", "expected": "Checkpoints"}, unanswered(f"q{i}", "Checkpoints", 0.4))
        for i in range(4)
    ]
    m = metrics(results)
    assert np.isnan(m["ece"])
    assert m["eceAll"] == pytest.approx(0.6)
    assert m["reliabilityAll"] == [(0.4, 0.5, 4, pytest.approx(0.4), 1.0)]
