"""An answer is never more likely wrong than right, and the matcher and the gap log agree on that line."""

from __future__ import annotations

import numpy as np

from build_scripts.prepare import fit_confidence
from engine.catalog.lookup import JUDGE_FILE
from engine.common.paths import vectors_dir
from engine.gaps.requests import MIN_CONFIDENCE
from engine.matching.judge import load_judge


def test_the_threshold_pick_never_answers_below_even_odds():
    # Off-topic queries all score low, so any threshold abstains on them; answerable ones the winner gets
    # right at P = 0.35 would be answered by a lower threshold, but a calibrated 0.35 is wrong two times
    # in three.
    p = np.array([0.35] * 20 + [0.95] * 40 + [0.1] * 40)
    answerable = np.array([True] * 60 + [False] * 40)
    assert fit_confidence.pick_answer_threshold(p, answerable) == MIN_CONFIDENCE


def test_the_threshold_pick_rises_to_keep_abstaining_on_off_topic_queries():
    # A fifth of the off-topic queries score 0.62: answering at 0.5 would abstain on only 80% of them.
    p = np.array([0.95] * 50 + [0.62] * 10 + [0.1] * 40)
    answerable = np.array([True] * 50 + [False] * 50)
    assert fit_confidence.pick_answer_threshold(p, answerable) == 0.65


def test_the_shipped_model_answers_only_what_the_gap_log_would_not_call_a_miss():
    judge = load_judge(vectors_dir() / JUDGE_FILE)
    assert judge is not None and judge.answer_at >= MIN_CONFIDENCE


def test_the_shipped_head_weight_was_chosen_inside_its_grid():
    # A weight at the top of HEAD_WEIGHTS means the search wanted more than it was offered: the
    # refit that landed on 0.5, the old top, picked 0.7 once the grid reached 1.0.
    judge = load_judge(vectors_dir() / JUDGE_FILE)
    assert judge is not None and judge.head is not None
    assert judge.head.weight in fit_confidence.HEAD_WEIGHTS
    assert judge.head.weight < max(fit_confidence.HEAD_WEIGHTS)
