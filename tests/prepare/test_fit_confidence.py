"""The confidence-model fit: the same data gives the same file, it says how far it got, it embeds once."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np

from build_scripts.prepare import fit_confidence
from build_scripts.prepare.encoding_cache import EncodingCache
from build_scripts.prepare.progress import Progress
from engine import Index
from tests.conftest import ROOT, FakeEncoder
from tests.matching.test_pipeline import RECORDS


def q(text: str, expected: str | None) -> dict:
    return {"query": text, "expected": expected}


# Three writers, each asking for each record in their own words, plus one question the catalog cannot answer.
WRITERS = {
    "one": [
        q("open a file and read what it holds", "read_file"),
        q("put some text into a file", "write_file"),
        q("mail a note to someone", "send_email"),
        q("bake a chocolate cake", None),
    ],
    "two": [
        q("show me the contents of the file on disk", "read_file"),
        q("save text to disk in a file", "write_file"),
        q("send a message by email", "send_email"),
        q("who won the football match", None),
    ],
    "three": [
        q("read the text stored in this file", "read_file"),
        q("write my notes to a file", "write_file"),
        q("email the recipient the report", "send_email"),
        q("weather forecast for tomorrow", None),
    ],
}
CALIBRATION = [
    q("load a file from disk and read it", "read_file"),
    q("write the report text to a file", "write_file"),
    q("send the recipient an email message", "send_email"),
    q("read my email", "send_email"),
    # Long questions whose coverage sums many term weights: the order of that sum shows in the last bits.
    q("send the disk file text contents to a recipient by email message", "send_email"),
    q("please read the file then write the text to another file on disk", "write_file"),
    q("read the contents of the text file on my disk and send them by email", "read_file"),
    q("plant tomatoes in spring", None),
    q("a good recipe for soup", None),
]


def small_fit() -> str:
    """The serialised judge of a fit on three records, three writers and a few calibration questions."""
    encoder = EncodingCache(FakeEncoder())
    data = fit_confidence.FitData(
        training=WRITERS,
        outside=["schedule a meeting", "the capital of france", "knit a scarf"],
        probe_texts=[
            "read a file",
            "send an email",
            "write to disk",
            "bake bread",
            "football scores",
            "tax forms",
        ],
        probe_labels=np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0]),
        calibration=CALIBRATION,
    )
    # One L2 per grid keeps this test fast; the grids' search is the same code at any length.
    fit_confidence.PROBE_L2 = fit_confidence.CALIBRATION_L2 = (1.0,)
    judge, _ = fit_confidence.fit_model(
        lambda judge, semantic=True: Index.from_records(
            RECORDS, encoder=encoder, judge=judge, semantic=semantic
        ),
        encoder,
        data,
        Progress(stream=io.StringIO()),
    )
    return json.dumps(judge.to_dict(), indent=1)


def test_a_small_fit_writes_the_same_file_under_another_blas_and_another_hash_seed():
    # A refit on unchanged data must not leave a diff. Another BLAS kernel or thread count sums in
    # another order (the committed model once differed from a refit in 16 numbers, by up to 6e-14),
    # and a set of strings iterates in an order that follows the process's hash seed.
    script = "from tests.prepare.test_fit_confidence import small_fit; print(small_fit())"
    settings = (
        {"PYTHONHASHSEED": "1", "OPENBLAS_NUM_THREADS": "1", "OPENBLAS_CORETYPE": "Haswell"},
        {"PYTHONHASHSEED": "2", "OPENBLAS_NUM_THREADS": "2"},
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            cwd=ROOT,
            env={**base, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for extra in settings
    ]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err.decode()[-2000:] for _, err in outputs]
    first, second = (out for out, _ in outputs)
    assert json.loads(first)["head"]["ids"] == ["read", "write", "mail"]
    assert first == second


def test_progress_prints_a_count_only_when_enough_time_has_passed_since_the_last_line():
    now = [0.0]
    out = io.StringIO()
    progress = Progress(every=10.0, stream=out, clock=lambda: now[0])
    progress.say("starting")
    now[0] = 4.0
    progress.step("ranking", 10, 100)  # 4 s after the last line: quiet
    now[0] = 12.0
    progress.step("ranking", 30, 100)
    now[0] = 15.0
    progress.step("ranking", 40, 100)  # 3 s after the last line: quiet
    assert out.getvalue().splitlines() == ["[    0 s] starting", "[   12 s] ranking: 30/100"]


class CountingEncoder(FakeEncoder):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):
        self.seen += texts
        return super().encode(texts)


def test_the_encoding_cache_embeds_each_distinct_text_once_and_returns_the_encoders_vectors():
    inner = CountingEncoder()
    cache = EncodingCache(inner)
    first = cache.encode(["a file", "an email", "a file"])
    second = cache.encode(["an email", "a disk"])
    assert inner.seen == ["a file", "an email", "a disk"]
    assert np.array_equal(first, FakeEncoder().encode(["a file", "an email", "a file"]))
    assert np.array_equal(second, FakeEncoder().encode(["an email", "a disk"]))
    assert cache.encode([]).shape == (0, 384)


def test_the_l2_search_picks_the_strength_with_the_lowest_held_out_loss_not_the_first():
    # Noisy labels a weak penalty overfits: the cross-validated choice must move off the grid's first value.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 40))
    y = (x[:, 0] + rng.normal(scale=2.0, size=200) > 0).astype(float)
    grid = (1e-6, 10.0)
    _, _, chosen = fit_confidence.fit_probe(x, y, grid=grid)
    losses = {}
    folds = np.arange(len(y)) % 5
    for l2 in grid:
        loss = 0.0
        for fold in range(5):
            w, b = fit_confidence.fit_logistic(x[folds != fold], y[folds != fold], l2=l2)
            p = np.clip(fit_confidence.sigmoid(x[folds == fold] @ w + b), 1e-6, 1 - 1e-6)
            t = y[folds == fold]
            loss -= float(np.sum(t * np.log(p) + (1 - t) * np.log(1 - p)))
        losses[l2] = loss
    assert losses[10.0] < losses[1e-6]  # the data really favours the stronger penalty
    assert chosen == 10.0
