"""The labelled query sets keep their roles: nothing held out or kept for selection is ever fitted on.

Each ``tests/fixtures/*_queries.json`` says who wrote it and what it is for
("role"). The figures in the README are only honest if the fitting step reads
the training and calibration sets alone, and the evaluation reports every set.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from build_scripts import evaluate, fit_confidence
from engine.catalog.lookup import strip_agents

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROLES = {"own", "training", "calibration", "selection", "held-out"}


@cache
def query_sets() -> dict[str, dict]:
    paths = sorted(FIXTURES.glob("*_queries.json"))
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in paths}


def role_of(name: str) -> str:
    return query_sets()[name]["role"]


def test_every_query_set_says_who_wrote_it_and_what_it_is_for():
    for name, doc in query_sets().items():
        assert doc.get("role") in ROLES, name
        assert len(doc.get("about", "")) > 40, name


def test_the_head_learns_only_from_training_sets():
    assert {role_of(name) for name in fit_confidence.TRAINING_SETS} <= {"training", "own"}


def test_the_confidence_model_is_fitted_only_on_calibration_sets():
    assert {role_of(name) for name in fit_confidence.CALIBRATION_SETS} == {"calibration"}


def test_the_fitting_script_never_names_a_held_out_or_selection_set():
    source = Path(fit_confidence.__file__).read_text(encoding="utf-8")
    kept_out = [n for n, doc in query_sets().items() if doc["role"] in {"held-out", "selection"}]
    assert kept_out, "expected held-out and selection sets among the fixtures"
    assert [n for n in kept_out if n in source] == []


def test_evaluation_reports_every_set_and_knows_which_ones_train_the_head():
    assert set(evaluate.SETS.values()) == set(query_sets())
    trains = {key for key, name in evaluate.SETS.items() if role_of(name) in {"training", "own"}}
    assert set(evaluate.TRAINING) == trains


def test_the_domain_probe_learns_from_text_as_matching_sees_it():
    # Matching strips agent names before it embeds a query; a probe fitted on unstripped text
    # learned "names an agent" as a sign of being in domain, a sign it never sees at run time.
    texts, labels = fit_confidence.probe_data()
    assert len(texts) == len(labels) > 1000
    assert [t for t in texts if strip_agents(t) != t] == []


def test_evaluation_marks_exactly_the_targets_a_set_misses():
    figures = {
        "top1": 0.93,  # on the bound: met
        "top3": 0.99,
        "long": 0.857,
        "abstain": 0.95,
        "falseAbst": 0.04,
        "ece": 0.04,  # on the bound: met
        "wrongAt95": 2,
    }
    assert evaluate.missed_targets(figures) == ["long", "falseAbst", "wrongAt95"]
    assert evaluate.missed_targets({**figures, "long": float("nan"), "falseAbst": 0.0, "wrongAt95": 1}) == []
