"""Degraded modes say that their confidences are not probabilities, and cap them.

``matchConfidence`` is P(answer is right) only with a fitted confidence model
and the encoder. Without either, the number is a logistic of a score: it
must not read as near-certain (the lexical fallback answered "chekpoints"
with Context Compaction at 0.999), and the result says ``calibrated: false``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

import engine
from engine import EncoderUnavailableError, Index
from engine.catalog.answers import match_info
from engine.catalog.lookup import JUDGE_FILE, capability_records
from engine.common.paths import vectors_dir
from engine.matching.judge import load_judge
from tests.conftest import ROOT
from tests.matching.test_pipeline import RECORDS, neutral_judge


class MissingEncoder:
    """The runtime encoder when a file is missing: ``load`` fails, as ``Encoder.load`` does."""

    def load(self) -> None:
        raise EncoderUnavailableError(
            "encoder file missing: /srv/vectors/encoder/tokenizer.json",
            reason="encoder file missing: tokenizer.json",
        )


@pytest.fixture(scope="module")
def catalog_without_encoder() -> Index:
    catalog = engine.get_catalog()
    return Index.from_records(
        capability_records(catalog),
        encoder=MissingEncoder(),
        out_of_scope=catalog.out_of_scope,
        judge=load_judge(vectors_dir() / JUDGE_FILE),
    )


def test_the_lexical_fallback_is_capped_and_says_it_is_not_a_probability(catalog_without_encoder, caplog):
    with caplog.at_level(logging.WARNING, logger="engine"):
        result = catalog_without_encoder.match("chekpoints")
    assert result.method == "lexical"
    assert result.confidence <= catalog_without_encoder.tuning.uncalibrated_cap < 0.999
    assert result.calibrated is False
    assert "semantic matching is off (encoder file missing: tokenizer.json)" in result.degraded
    assert "/srv" not in result.degraded  # the path is logged, never sent with an answer
    assert "not probabilities" in result.degraded


def test_the_lexical_fallback_prefers_the_record_named_for_the_word(catalog_without_encoder):
    # "chekpoints" -> "checkpoint" covers Checkpoints and Context Compaction (which mentions
    # checkpoints) equally; the tie went to whichever came first in the catalog.
    assert catalog_without_encoder.match("chekpoints").name == "Checkpoints"


def test_alias_and_exact_hits_stay_calibrated_without_the_encoder(catalog_without_encoder):
    exact = catalog_without_encoder.match("Checkpoints")
    alias = catalog_without_encoder.match("autocomplete")
    assert (exact.method, exact.confidence, exact.calibrated) == ("exact", 1.0, True)
    assert alias.method == "alias" and alias.calibrated is True and alias.degraded is None


def test_without_a_confidence_model_every_confidence_is_capped_and_marked(fake_encoder):
    index = Index.from_records(
        [{**RECORDS[0], "aliases": ["cat a file"]}, *RECORDS[1:]], encoder=fake_encoder
    )
    cap = index.tuning.uncalibrated_cap
    for query in ("read the contents of a file from disk", "cat a file", "quantum gravity"):
        result = index.match(query)
        assert result.calibrated is False and result.degraded.startswith("no confidence model"), query
        assert all(c.confidence <= cap for c in result.candidates) and result.confidence <= cap, query
    assert index.match("read_file").calibrated is True  # an exact name is certain in any mode


def test_with_a_confidence_model_results_are_calibrated(fake_encoder):
    result = Index.from_records(RECORDS, encoder=fake_encoder, judge=neutral_judge(0.5)).match(
        "send an email"
    )
    assert result.calibrated is True and result.degraded is None
    assert "degraded" not in result.to_dict() and result.to_dict()["calibrated"] is True


def test_the_answers_match_info_carries_the_flag_only_when_degraded(catalog_without_encoder):
    degraded = match_info(catalog_without_encoder.match("chekpoints"))
    assert degraded["calibrated"] is False and "semantic matching is off" in degraded["degraded"]
    normal = match_info(catalog_without_encoder.match("Checkpoints"))
    assert "calibrated" not in normal and "degraded" not in normal


def test_a_missing_tokenizer_gives_capped_uncalibrated_answers_end_to_end(vectors_copy):
    """The audit's reproduction: AGENT_CAPABILITIES_VECTORS without encoder/tokenizer.json."""
    (vectors_copy / "encoder" / "tokenizer.json").unlink()
    probe = (
        "import json, engine; m = engine.match('chekpoints'); "
        "a = engine.answers.lookup('claude', 'chekpoints'); print(json.dumps([m.to_dict(), a['match']]))"
    )
    env = {**os.environ, "AGENT_CAPABILITIES_VECTORS": str(vectors_copy), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    result, info = json.loads(proc.stdout)
    assert (result["method"], result["name"], result["calibrated"]) == ("lexical", "Checkpoints", False)
    assert result["confidence"] <= 0.85
    assert info["calibrated"] is False and info["matchConfidence"] <= 0.85
    assert proc.stderr.count("semantic matching is off") == 1
    # The note names the file, not where the server keeps it (the warning on stderr does that).
    assert "tokenizer.json" in result["degraded"] and str(vectors_copy) not in result["degraded"]
    assert str(vectors_copy) in proc.stderr
