"""The confidence model's file form: a refit that differs only in BLAS noise writes the same text."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from engine.matching.judge import judge_from_dict
from tests.matching.test_pipeline import neutral_judge


def test_a_judge_that_differs_only_in_the_last_bits_of_its_floats_writes_the_same_file():
    rng = np.random.default_rng(3)
    base = dataclasses.replace(
        neutral_judge(0.5),
        probe_bias=-4.755909790008883,
        weights=rng.normal(size=6),
        bias=2.7569789399716145,
        mean=rng.normal(size=6),
        scale=rng.uniform(0.2, 5.0, size=6),
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
