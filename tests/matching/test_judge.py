"""The confidence model file is checked for values no fit gives; a foreign head is never dropped silently."""

from __future__ import annotations

import dataclasses
import json
import logging

import numpy as np
import pytest

from build_scripts.prepare import fit_confidence
from engine import Index
from engine.catalog.lookup import JUDGE_FILE
from engine.common.paths import vectors_dir
from engine.matching.head import MAX_HEAD_WEIGHT
from engine.matching.judge import FEATURES, judge_from_dict, load_judge
from tests.matching.test_head import head_for
from tests.matching.test_pipeline import RECORDS, neutral_judge


def shipped_doc() -> dict:
    return json.loads((vectors_dir() / JUDGE_FILE).read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"weights": [1e308] * len(FEATURES)}, r"weights holds 1e\+308; a fitted model stays within ±100"),
        ({"weights": [-1e308] * len(FEATURES)}, r"weights holds -1e\+308"),
        ({"bias": 1e6}, r"bias is 1000000.0; it must be between -100 and 100"),
        ({"probe": [5000.0] * 384}, r"probe holds 5000"),
        ({"answerAt": -1}, r"answerAt is -1; it must be strictly between 0 and 1"),
        ({"answerAt": 1.5}, r"answerAt is 1.5"),
        ({"aliasConfidence": 7.5}, r"aliasConfidence is 7.5; it must be between 0 and 1"),
        ({"aliasConfidence": True}, r"aliasConfidence must be a finite number, got True"),
        ({"scale": [0.0] * len(FEATURES)}, r"scale values must be at least"),
        ({"mean": [1.0] * 5}, rf"mean must hold {len(FEATURES)} numbers, not 5"),
        ({"weights": ["1"] * len(FEATURES)}, rf"weights must be a list of {len(FEATURES)} numbers"),
        ({"head": None}, r"head must be a JSON object"),
        ({"head": {"weight": 1e9}}, r"head weight must be a finite number >= 0 and <= 10, got 1000000000.0"),
    ],
)
def test_absurd_model_values_are_refused_with_the_field_and_the_valid_range(change, message):
    doc = shipped_doc()
    for key, value in change.items():
        doc[key] = {**doc[key], **value} if key == "head" and isinstance(value, dict) else value
    with pytest.raises(ValueError, match=message):
        judge_from_dict(doc)


def test_an_absurd_model_file_falls_back_with_one_warning_naming_the_field(tmp_path, caplog):
    doc = shipped_doc()
    doc["aliasConfidence"] = 7.5
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc))
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert load_judge(path) is None
    assert len(caplog.records) == 1
    assert "aliasConfidence is 7.5" in caplog.text and "calibrated: false" in caplog.text


def test_the_limits_admit_every_value_the_fit_can_choose():
    judge_from_dict(shipped_doc())
    assert max(fit_confidence.HEAD_WEIGHTS) <= MAX_HEAD_WEIGHT


def test_a_head_fitted_for_entirely_other_records_warns_and_marks_confidences_uncalibrated(
    fake_encoder, caplog
):
    """The old check warned only when more than half of the head's ids were among the records."""
    query = "store some text in a file"
    vector = fake_encoder.encode([query])[0]
    foreign = head_for(["x", "y", "z", "w"], "x", vector)
    index = Index.from_records(
        RECORDS, encoder=fake_encoder, judge=dataclasses.replace(neutral_judge(0.01), head=foreign)
    )
    with caplog.at_level(logging.WARNING, logger="engine"):
        first, second = index.match(query), index.match(query)
    warnings = [r.getMessage() for r in caplog.records if "fitted for other records" in r.getMessage()]
    assert len(warnings) == 1 and "0 of its 4 ids" in warnings[0]
    assert first == second
    assert first.calibrated is False and "head" in first.degraded
    assert all(c.confidence <= index.tuning.uncalibrated_cap for c in first.candidates)


def test_a_judge_without_a_head_and_a_matching_head_stay_calibrated(fake_encoder):
    query = "store some text in a file"
    vector = fake_encoder.encode([query])[0]
    own = head_for(["read", "write", "mail"], "write", vector)
    for judge in (neutral_judge(0.01), dataclasses.replace(neutral_judge(0.01), head=own)):
        result = Index.from_records(RECORDS, encoder=fake_encoder, judge=judge).match(query)
        assert result.calibrated is True and result.degraded is None


def test_a_judge_that_differs_only_in_the_last_bits_of_its_floats_writes_the_same_file():
    rng = np.random.default_rng(3)
    base = dataclasses.replace(
        neutral_judge(0.5),
        probe_bias=-4.755909790008883,
        weights=rng.normal(size=len(FEATURES)),
        bias=2.7569789399716145,
        mean=rng.normal(size=len(FEATURES)),
        scale=rng.uniform(0.2, 5.0, size=len(FEATURES)),
    )
    # What another BLAS kernel or thread count does to a refit: each float a few units in its last place off.
    noisy = dataclasses.replace(
        base,
        probe_bias=base.probe_bias + 4e-15,
        weights=base.weights * (1 + 4e-15),
        bias=np.nextafter(base.bias, 10.0),
        mean=base.mean - 2e-16,
        scale=np.nextafter(base.scale, 0.0),
    )
    assert json.dumps(base.to_dict()) == json.dumps(noisy.to_dict())
    back = judge_from_dict(base.to_dict())
    assert np.allclose(back.weights, base.weights, rtol=1e-9) and back.bias == round(base.bias, 9)
