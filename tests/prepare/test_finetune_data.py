"""build_scripts/prepare/finetune_data.py: what the encoder fine-tune learns from, and how it is batched.

No torch here: the selection, pseudo-questions and batching are plain Python.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from build_scripts import querysets
from build_scripts.prepare import finetune_data as data
from engine.catalog.lookup import capability_records
from engine.catalog.model import get_catalog
from engine.matching.scoring import Record
from tests.conftest import ROOT

NOT_FOR_TRAINING = ("calibration", "selection", "held-out", "probe", "benchmark", "peer-benchmark")


def test_the_fine_tune_reads_every_training_and_own_set_and_nothing_else():
    chosen = {s.name for s in data.training_sets()}
    assert chosen == {s.name for s in querysets.by_role("training", "own")}
    assert {querysets.get(name).role for name in chosen} == {"training", "own"}


@pytest.mark.parametrize("role", ["calibration", "selection", "held-out"])
def test_reading_a_set_that_chooses_or_reports_for_training_is_refused(role):
    sets = querysets.by_role(role)
    assert sets, f"the manifest has no {role} set to check"
    for entry in sets:
        with pytest.raises(PermissionError, match=f"{entry.name} is a {role} set"):
            data.read_training_set(entry.name)


def test_question_pairs_of_a_held_out_set_are_refused():
    held_out = querysets.by_role("held-out")[0].name
    with pytest.raises(PermissionError):
        data.question_pairs([held_out], capability_records(get_catalog()))


def test_question_pairs_keep_every_answerable_question_with_its_capability_id():
    records = capability_records(get_catalog())
    name = querysets.by_role("training")[0].name
    rows = querysets.queries(name)
    pairs = data.question_pairs([name], records)
    answerable = [r for r in rows if r.get("expected") is not None]
    assert len(pairs) == len(answerable) < len(rows)
    by_id = {r.id: r.name for r in records}
    assert [by_id[p.capability] for p in pairs] == [r["expected"] for r in answerable]
    assert {p.source for p in pairs} == {name}


def test_the_committed_hard_negatives_were_mined_on_training_questions_only():
    mined = json.loads((ROOT / "build_scripts/prepare/finetune_hard_negatives.json").read_text())
    assert mined
    for name, negatives in mined.items():
        assert querysets.get(name).role in data.TRAIN_ROLES
        questions = {q["query"] for q in querysets.queries(name)}
        assert set(negatives) <= questions


def test_pseudo_questions_are_the_records_own_texts_paired_with_name_and_summary():
    record = Record(
        "hooks",
        "Lifecycle Hooks",
        "Run commands on agent events.",
        texts=("run a script after every edit", "Hooks run shell commands on events.", "  "),
        keywords=("settings.json hooks key", "run a script after every edit"),
    )
    pairs = data.pseudo_questions([record])
    assert [p.query for p in pairs] == [
        "run a script after every edit",
        "Hooks run shell commands on events.",
        "settings.json hooks key",
    ]
    assert {(p.capability, p.source, p.negative) for p in pairs} == {("hooks", "catalog", None)}
    assert data.positive_text(record) == "Lifecycle Hooks: Run commands on agent events."


def test_a_pseudo_question_equal_to_its_target_text_is_left_out():
    record = Record("a", "Alpha", "does a", texts=("alpha: does a", "other words"))
    assert [p.query for p in data.pseudo_questions([record])] == ["other words"]


def pairs_over(capabilities: int, count: int, seed: int = 0) -> list[data.Pair]:
    rng = random.Random(seed)
    return [data.Pair(f"q{i}", f"c{rng.randrange(capabilities)}", "s") for i in range(count)]


@pytest.mark.parametrize(("capabilities", "count", "size"), [(3, 40, 8), (10, 200, 8), (62, 500, 32)])
def test_no_batch_holds_one_capability_twice_and_no_pair_is_used_twice(capabilities, count, size):
    pairs = pairs_over(capabilities, count)
    batches = data.distinct_batches(pairs, size, random.Random(1))
    for batch in batches:
        caps = [p.capability for p in batch]
        assert len(set(caps)) == len(caps)
        assert 2 <= len(batch) <= size
    used = Counter(p.query for batch in batches for p in batch)
    assert max(used.values()) == 1


def test_batching_drops_only_pairs_left_alone_in_a_batch():
    # One capability only: every pair would be alone in its batch, so all are dropped.
    assert data.distinct_batches(pairs_over(1, 5), 4, random.Random(0)) == []
    # Many capabilities: nothing is lost.
    pairs = pairs_over(50, 100)
    batches = data.distinct_batches(pairs, 8, random.Random(0))
    assert sum(len(b) for b in batches) == len(pairs)


def test_batching_is_the_same_for_the_same_seed():
    pairs = pairs_over(20, 150)
    first = data.distinct_batches(pairs, 16, random.Random(13))
    assert first == data.distinct_batches(pairs, 16, random.Random(13))
    assert first != data.distinct_batches(pairs, 16, random.Random(14))


def test_a_hard_negative_that_is_a_positive_in_the_batch_is_not_a_second_column():
    text_of = {"a": "A text", "b": "B text", "c": "C text"}
    batch = [data.Pair("qa", "a", "s", negative="b"), data.Pair("qb", "b", "s", negative="c")]
    anchors, columns = data.batch_columns(batch, text_of)
    assert anchors == ["qa", "qb"]
    assert columns == ["A text", "B text", "C text"]  # b once, as qb's positive; c as an extra negative


def test_batch_columns_refuse_a_batch_with_a_repeated_capability():
    batch = [data.Pair("q1", "a", "s"), data.Pair("q2", "a", "s")]
    with pytest.raises(ValueError, match="one capability twice"):
        data.batch_columns(batch, {"a": "A"})


def test_a_hard_negative_naming_the_right_capability_is_an_error():
    pair = data.Pair("q", "a", "train-01")
    with pytest.raises(ValueError, match="its own capability"):
        data.with_negatives([pair], {"train-01": {"q": "a"}})
    assert data.with_negatives([pair], {"train-01": {"q": "b"}})[0].negative == "b"
    assert data.with_negatives([pair], {"other": {"q": "b"}})[0].negative is None
