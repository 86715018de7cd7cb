"""The learned head: fitting, its file form, and how it changes a ranking (fake encoder, no model)."""

from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest

from engine import Index
from engine.catalog.lookup import JUDGE_FILE
from engine.catalog.model import get_catalog
from engine.common.paths import vectors_dir
from engine.matching.head import Head, fit_softmax, head_from_dict, log_softmax
from engine.matching.judge import judge_from_dict, load_judge
from tests.matching.test_pipeline import RECORDS, neutral_judge


def test_fit_softmax_learns_separable_classes_and_is_repeatable():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 384))
    y = np.repeat(np.arange(3), 40)
    x = centres[y] + 0.3 * rng.normal(size=(120, 384))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w, b = fit_softmax(x, y, 3, l2=1e-3)
    assert ((x @ w.T + b).argmax(axis=1) == y).mean() == 1.0
    again = fit_softmax(x, y, 3, l2=1e-3)
    assert np.array_equal(w, again[0]) and np.array_equal(b, again[1])


def softmax_gradient(x, y, n_classes, l2, w, b, sample_weight):
    """The gradient of fit_softmax's objective (weighted mean cross-entropy + l2 / 2 |W|^2) at (w, b)."""
    p = np.exp(log_softmax(x @ w.T + b))
    p[np.arange(len(y)), y] -= 1.0
    p *= (sample_weight / sample_weight.sum())[:, None]
    return np.hstack([p.T @ x + l2 * w, p.sum(axis=0)[:, None]])


def test_fit_softmax_stops_at_the_minimum_and_reaches_it_from_a_stronger_l2_fit_too():
    # Overlapping classes, unequal weights and a weak L2: the regime of the build's leave-one-writer-out
    # grid, where each fit starts from the fit at the next stronger L2.
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(4, 384))
    y = np.repeat(np.arange(4), 60)
    x = centres[y] + 2.0 * rng.normal(size=(240, 384))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    weight = np.where(np.arange(240) % 3 == 0, 3.0, 1.0)
    cold = fit_softmax(x, y, 4, l2=1e-4, sample_weight=weight)
    stronger = fit_softmax(x, y, 4, l2=1e-3, sample_weight=weight)
    warm = fit_softmax(x, y, 4, l2=1e-4, sample_weight=weight, start=stronger)
    for w, b in (cold, warm):
        assert np.abs(softmax_gradient(x, y, 4, 1e-4, w, b, weight)).max() <= 1e-6
    assert np.allclose(cold[0], warm[0], atol=1e-3 * np.abs(cold[0]).max())


def head_for(ids: list[str], favourite: str, vector: np.ndarray, weight: float = 1.0) -> Head:
    """A head that puts nearly all probability on ``favourite`` for queries along ``vector``."""
    weights = np.zeros((len(ids) + 1, 384))
    weights[ids.index(favourite)] = 40.0 * vector
    return Head(tuple(ids), weights, np.zeros(len(ids) + 1), weight)


def test_a_head_reorders_a_close_call_but_the_same_index_without_it_does_not(fake_encoder):
    query = "store some text in a file"
    plain = Index.from_records(RECORDS, encoder=fake_encoder, judge=neutral_judge(0.01))
    before = plain.match(query, k=3)
    loser = before.candidates[1].id
    vector = fake_encoder.encode([query])[0]
    judge = dataclasses.replace(neutral_judge(0.01), head=head_for(["read", "write", "mail"], loser, vector))
    after = Index.from_records(RECORDS, encoder=fake_encoder, judge=judge).match(query, k=3)
    assert before.id != loser and after.id == loser


def test_a_head_fitted_for_other_records_is_left_out_with_one_warning(fake_encoder, caplog):
    query = "store some text in a file"
    vector = fake_encoder.encode([query])[0]
    base = neutral_judge(0.01)
    other = head_for(["read", "write", "something-else"], "read", vector)
    judge = dataclasses.replace(base, head=other)
    index = Index.from_records(RECORDS, encoder=fake_encoder, judge=judge)
    with caplog.at_level(logging.WARNING, logger="engine"):
        first, second = index.match(query), index.match(query)
    plain = Index.from_records(RECORDS, encoder=fake_encoder, judge=base).match(query)
    assert first.name == second.name == plain.name
    assert sum("fitted for other records" in r.getMessage() for r in caplog.records) == 1


def test_head_round_trips_through_its_file_form():
    rng = np.random.default_rng(1)
    head = Head(("a", "b"), rng.normal(size=(3, 384)), rng.normal(size=3), 0.1)
    back = head_from_dict(json.loads(json.dumps(head.to_dict())))
    assert back.ids == head.ids and back.weight == 0.1
    assert np.allclose(back.weights, head.weights, atol=1e-6) and np.allclose(back.bias, head.bias, atol=1e-6)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ids": []}, "non-empty"),
        ({"ids": ["a", "a"]}, "unique"),
        ({"weights": ["not base64!"]}, "base64"),
        ({"weight": -1}, ">= 0"),
        ({"weight": float("nan")}, "finite"),
        ({"ids": ["a", "b", "c"]}, "4 x 384"),
    ],
)
def test_a_broken_head_is_rejected_with_what_is_wrong(change, message):
    head = Head(("a", "b"), np.zeros((3, 384)), np.zeros(3), 0.1).to_dict()
    with pytest.raises(ValueError, match=message):
        head_from_dict({**head, **change})


def test_a_confidence_model_with_a_broken_head_falls_back_with_a_warning(tmp_path, caplog):
    doc = json.loads((vectors_dir() / JUDGE_FILE).read_text())
    doc["head"]["weights"] = doc["head"]["weights"][:-1]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert load_judge(path) is None
    assert "unusable" in caplog.text


def test_the_shipped_head_covers_exactly_the_catalogs_capabilities():
    """A capability added or renamed without refitting would otherwise be matched without the head."""
    judge = judge_from_dict(json.loads((vectors_dir() / JUDGE_FILE).read_text()))
    assert judge.head is not None
    assert sorted(judge.head.ids) == sorted(cap.id for cap in get_catalog().capabilities), (
        "refit with: python build_scripts/prepare/fit_confidence.py"
    )
