"""The labelled query sets keep their roles: nothing held out or kept for selection is ever fitted on.

``queries/manifest.json`` says who wrote each set and what it is for. The
figures in the README are only honest if the fitting step reads the training
and calibration sets alone, and the evaluation reports every labelled set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_scripts import querysets
from build_scripts.measure import evaluate
from build_scripts.prepare import fit_confidence
from engine.catalog.lookup import strip_agents

ROLES = {"own", "training", "calibration", "selection", "held-out"}
KEPT_OUT = {"selection", "held-out"}


def test_the_manifest_lists_every_file_under_queries_with_its_true_size():
    listed = {s.path for s in querysets.manifest()}
    on_disk = {p for p in querysets.QUERIES.rglob("*.json") if p.name != "manifest.json"}
    peer_extra = {querysets.QUERIES / "peer-mcpproxy" / "corpus_v1.tools.json"}  # the peer's tool catalog
    assert on_disk - peer_extra == listed
    for s in querysets.by_role(*ROLES):
        assert s.size == len(querysets.queries(s.name)), s.name
        assert len(s.writer) > 40 and s.written and s.usedFor, s.name


def test_every_labelled_file_agrees_with_the_manifest_on_its_role():
    for s in querysets.by_role(*ROLES):
        assert json.loads(s.path.read_text(encoding="utf-8"))["role"] == s.role, s.name


def test_the_head_learns_only_from_training_sets():
    assert {querysets.get(n).role for n in fit_confidence.TRAINING_SETS} == {"training", "own"}


def test_the_confidence_model_is_fitted_only_on_calibration_sets():
    assert {querysets.get(n).role for n in fit_confidence.CALIBRATION_SETS} == {"calibration"}


def test_a_fitting_step_cannot_read_a_held_out_or_selection_set():
    kept_out = querysets.by_role(*KEPT_OUT)
    assert kept_out, "expected held-out and selection sets in the manifest"
    for s in kept_out:
        with pytest.raises(PermissionError):
            fit_confidence.load_queries(s.name)


def test_the_fitting_script_never_names_a_held_out_or_selection_set():
    source = Path(fit_confidence.__file__).read_text(encoding="utf-8")
    assert [s.name for s in querysets.by_role(*KEPT_OUT) if f'"{s.name}"' in source] == []


def test_a_file_that_contradicts_the_manifest_is_refused(tmp_path, monkeypatch):
    entry = querysets.by_role("held-out")[0]
    doc = json.loads(entry.path.read_text(encoding="utf-8"))
    doc["role"] = "training"
    (tmp_path / "held-out").mkdir()
    (tmp_path / entry.file).write_text(json.dumps(doc))
    monkeypatch.setattr(querysets, "QUERIES", tmp_path)
    querysets.read.cache_clear()
    try:
        with pytest.raises(ValueError, match="the manifest says 'held-out'"):
            querysets.read(entry.name)
    finally:
        querysets.read.cache_clear()


def test_evaluation_reports_every_labelled_set_and_knows_which_ones_train_the_head():
    assert set(evaluate.SETS) == {s.name for s in querysets.by_role(*ROLES)}
    assert set(evaluate.TRAINING) == {s.name for s in querysets.by_role("training", "own")}


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
