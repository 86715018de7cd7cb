"""Fit the learned head, the domain probe and the confidence model; write ``vectors/confidence-model.json``.

    python build_scripts/prepare/fit_confidence.py

Data (see each file's "about"):
- the training sets (``TRAINING_SETS``: fourteen blind writers and our own set):
  their questions train the learned head (``engine.matching.head``) together with the
  catalog's own texts. The head's strength and regularisation are chosen by
  leave-one-writer-out top-1, so they are picked for writers the head has not seen;
- the probe sets (``queries/probe/``): in-domain
  questions about coding-agent features against out-of-domain text (word traps, general
  programming, trivia), plus the training sets' queries. Train the domain probe; the
  out-of-domain texts also train the head's "none of these" class;
- the calibration sets (``queries/calibration/``, ``CALIBRATION_SETS``,
  seven more blind writers): fit the mapping from ranking features to P(right)
  with the head in place, and set where to answer. Neither the head nor the
  probe sees them. The held-out sets are never read here.

Needs only the runtime dependencies (the shipped ONNX encoder). It says on stderr what it is
doing about every 10 seconds, and takes a few minutes on 2 cores: each distinct text is
embedded once per run, and each leave-one-writer-out fold fits its regularisation path from
the strongest ``HEAD_L2`` down, each fit starting from the one before. Rerunning on unchanged
data writes the same file: nothing is random, nothing is summed in set order, BLAS runs one
thread with one kernel family whatever the environment says, and the confidence model's
floats are rounded well above the last-bit noise left (``Judge.to_dict``).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

if __name__ == "__main__":
    # One BLAS thread and one kernel family, set before numpy loads OpenBLAS. Another thread count
    # or kernel rounds the head's fit differently, its L-BFGS search then stops elsewhere inside
    # its tolerance, and the file differs (head weights by ~1e-4). One thread is also the faster
    # choice on a busy machine: two halved the CPU time and the wall time under load.
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if platform.machine().lower() in {"x86_64", "amd64"}:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts import querysets  # noqa: E402
from build_scripts.prepare.encoding_cache import EncodingCache  # noqa: E402
from build_scripts.prepare.progress import Progress  # noqa: E402
from engine.catalog.lookup import JUDGE_FILE, VECTOR_FILE, capability_records, names_only_agents, strip_agents  # noqa: E402
from engine.catalog.model import get_catalog  # noqa: E402
from engine.common.paths import vectors_dir  # noqa: E402
from engine.gaps.requests import MIN_CONFIDENCE  # noqa: E402
from engine.matching.encoder import Encoder  # noqa: E402
from engine.matching.head import Head, fit_softmax, log_softmax  # noqa: E402
from engine.matching.index import Index, ranking_features  # noqa: E402
from engine.matching.judge import FEATURES, MIN_SCALE, Judge, fit_logistic, judge_from_dict, sigmoid  # noqa: E402

PROBE_L2 = (0.1, 0.3, 1.0, 3.0, 10.0)
CALIBRATION_SETS = tuple(s.name for s in querysets.by_role("calibration"))
CALIBRATION_L2 = (0.3, 1.0, 3.0, 10.0, 30.0)  # chosen by 5-fold log loss on the calibration set
# One set per writer; "own" is our own set, written with the catalog at hand.
TRAINING_SETS = tuple(s.name for s in querysets.by_role("own", "training"))
HEAD_L2 = (1e-4, 3e-5, 1e-5)  # fitted strongest first: each fit of a fold starts from the one before
HEAD_WEIGHTS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
QUERY_WEIGHT = 3.0  # a written question counts this many catalog texts in the head's fit
FIT_THREADS = min(2, os.cpu_count() or 1)  # leave-one-writer-out folds fitted at once


def load_queries(name: str) -> list[dict]:
    return querysets.read_for_fit(name)["queries"]


def blind_out_of_domain() -> list[str]:
    """Blind out-of-domain text for the probe and the head's "none of these" class.

    General programming, trivia, and word traps that use capability words in
    other senses ("schedule a meeting in Outlook").
    """
    return (
        querysets.read_for_fit("in-and-out-of-domain")["outOfDomain"]
        + querysets.read_for_fit("word-traps")["outOfDomain"]
    )


def probe_data() -> tuple[list[str], np.ndarray]:
    """In-domain: the blind questions, the catalog's own summaries and examples, our own eval positives.

    Out-of-domain: the blind traps and off-topic text, plus the null queries of our own and the
    training sets. The calibration and held-out sets never feed the probe.
    """
    doc = querysets.read_for_fit("in-and-out-of-domain")
    canon = json.loads((ROOT / "engine" / "data" / "capabilities.json").read_text())["capabilities"]
    catalog_text = [c["summary"] for c in canon] + [e for c in canon for e in c.get("examples", [])]
    own = load_queries("own")
    training = [q for name in TRAINING_SETS for q in load_queries(name)]
    # Real issue titles and sentences read like bug reports ("[BUG] ... hangs", "... not honored"), a
    # register the written sets lack; those that name a capability are in domain too.
    real_answerable = [
        q["query"]
        for name in TRAINING_SETS
        if querysets.get(name).origin == "real"
        for q in load_queries(name)
        if q["expected"]
    ]
    inside = doc["inDomain"] + catalog_text + [q["query"] for q in own if q["expected"]] + real_answerable
    # The should-match-nothing queries of the training sets are out-of-domain examples too.
    outside = blind_out_of_domain() + [q["query"] for q in training if q["expected"] is None]
    # Matching sees a query with its agent names taken out (``strip_agents``), so the probe must
    # too: most in-domain texts name an agent and few out-of-domain ones do, and a probe fitted on
    # the raw text leans on that name, which is never there when it runs.
    texts = [strip_agents(t) for t in inside + outside]
    return texts, np.array([1.0] * len(inside) + [0.0] * len(outside))


def fit_probe(
    vectors: np.ndarray,
    labels: np.ndarray,
    grid=PROBE_L2,
    progress: Progress | None = None,
    sample_weight: np.ndarray | None = None,
) -> tuple[np.ndarray, float, float]:
    """Pick the L2 strength by 5-fold (weighted) log loss, then fit on everything."""
    weight = np.ones(len(labels)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if len(grid) == 1:  # nothing to choose
        w, b = fit_logistic(vectors, labels, l2=grid[0], sample_weight=weight)
        return w, b, grid[0]
    folds = np.arange(len(labels)) % 5
    best = None
    for n, l2 in enumerate(grid):
        loss = 0.0
        for fold in range(5):
            if progress is not None:
                progress.step("5-fold log loss: fits done", 5 * n + fold, 5 * len(grid))
            train, test = folds != fold, folds == fold
            w, b = fit_logistic(vectors[train], labels[train], l2=l2, sample_weight=weight[train])
            p = np.clip(sigmoid(vectors[test] @ w + b), 1e-6, 1 - 1e-6)
            loss -= float(
                np.sum(weight[test] * (labels[test] * np.log(p) + (1 - labels[test]) * np.log(1 - p)))
            )
        loss /= float(weight.sum())  # mean log loss: compared with the best mean so far, not with a sum
        if best is None or loss < best[0]:
            best = (loss, l2)
    w, b = fit_logistic(vectors, labels, l2=best[1], sample_weight=weight)
    return w, b, best[1]


@dataclass(frozen=True)
class FitData:
    """What the fit learns from (see the module docstring for which file feeds which part)."""

    training: dict[str, list[dict]]  # per training writer, its labelled questions
    outside: list[str]  # blind out-of-domain text: the head's "none of these" class
    probe_texts: list[str]
    probe_labels: np.ndarray
    calibration: list[dict]


def load_fit_data() -> FitData:
    texts, labels = probe_data()
    return FitData(
        training={name: load_queries(name) for name in TRAINING_SETS},
        outside=blind_out_of_domain(),
        probe_texts=texts,
        probe_labels=labels,
        # Seven blind writers, so the fit does not learn one writer's style.
        calibration=[
            {**q, "origin": querysets.get(name).origin}
            for name in CALIBRATION_SETS
            for q in load_queries(name)
        ],
    )


def fit_head(
    index: Index,
    encoder,
    training: dict[str, list[dict]],
    outside: list[str],
    progress: Progress,
) -> tuple[Head, dict]:
    """Fit the learned head on the catalog's texts and the training writers' questions.

    The background class learns from the training writers' should-match-nothing
    queries and the probe's out-of-domain texts (``outside``).

    Strength (``HEAD_WEIGHTS``) and regularisation (``HEAD_L2``) are chosen by
    leave-one-writer-out top-1: fit on the catalog and all writers but one,
    rank that writer's questions, average over writers. Each fold fits the
    ``HEAD_L2`` values strongest first, each fit starting from the one before:
    the same minimum, reached in far fewer steps, and nothing of the left-out
    writer leaks in through the starting point.
    """
    sem = index._semantic()  # noqa: SLF001 - the fit needs the embedded catalog texts
    position = {rec.name: i for i, rec in enumerate(index.records)}
    rows = np.flatnonzero(sem.owners >= 0)
    catalog_x, catalog_y = sem.matrix[rows].astype(np.float64), sem.owners[rows]
    background = len(index.records)
    outside = [strip_agents(t) for t in outside]
    catalog_x = np.vstack([catalog_x, encoder.encode(outside).astype(np.float64)])
    catalog_y = np.r_[catalog_y, np.full(len(outside), background)]
    writers = []  # per writer: (vectors of answerable queries, their fused scores, labels, null vectors)
    for n, queries in enumerate(training.values(), start=1):
        queries = [q for q in queries if not names_only_agents(q["query"])]
        answerable = [q for q in queries if q["expected"] is not None]
        texts = [strip_agents(q["query"]) for q in answerable]
        agents = [querysets.item_agent(q) for q in answerable]
        writers.append(
            (
                encoder.encode(texts).astype(np.float64),
                np.array(
                    [
                        index.ranking(text, sem, segments=False, agent=agent)["fused"]
                        for text, agent in zip(texts, agents, strict=True)
                    ]
                ),
                np.array([position[q["expected"]] for q in answerable]),
                encoder.encode([strip_agents(q["query"]) for q in queries if q["expected"] is None]),
            )
        )
        progress.step("head: embedding and ranking the training writers' questions", n, len(training))

    def fit_path(parts, path):
        """Fit at each L2 of ``path`` in turn, each fit starting from the one before; yields (l2, w, b)."""
        x = np.vstack([catalog_x, *(p[0] for p in parts), *(p[3] for p in parts)])
        y = np.concatenate(
            [catalog_y, *(p[2] for p in parts), *(np.full(len(p[3]), background) for p in parts)]
        )
        weight = np.r_[np.ones(len(catalog_y)), np.full(len(y) - len(catalog_y), QUERY_WEIGHT)]
        start = None
        for l2 in path:
            start = fit_softmax(x, y, background + 1, l2=l2, sample_weight=weight, start=start)
            yield l2, *start

    path = sorted(HEAD_L2, reverse=True)

    def fold(held: int) -> tuple[dict, float]:
        """Top-1 on writer ``held`` of heads fitted without it, per (L2, strength); and the seconds taken."""
        began = time.monotonic()
        x, fused, labels, _ = writers[held]
        out = {}
        for l2, w, b in fit_path([p for i, p in enumerate(writers) if i != held], path):
            log_probs = log_softmax(x @ w.T + b)[:, :background]
            for strength in HEAD_WEIGHTS:
                ranked = np.argmax(fused + strength * log_probs, axis=1)
                out[(l2, strength)] = float((ranked == labels).mean())
        return out, time.monotonic() - began

    # The folds are independent, and each runs single-threaded BLAS, so FIT_THREADS of them run at once
    # (numpy releases the GIL in its matrix products) and each gives the same numbers as alone.
    # Results are taken in fold order, so the file does not depend on which finished first.
    scores = {}
    with ThreadPoolExecutor(max_workers=FIT_THREADS) as pool:
        results = pool.map(fold, range(len(training)))
        for held, (name, (out, seconds)) in enumerate(zip(training, results, strict=True)):
            for key, top1 in out.items():
                scores.setdefault(key, []).append(top1)
            progress.say(
                f"head: leave-one-writer-out fold {held + 1}/{len(training)} ({name} left out) "
                f"fitted at L2 {', '.join(map(str, path))} in {seconds:.0f} s"
            )
    baseline = [float((np.argmax(fused, axis=1) == labels).mean()) for _, fused, labels, _ in writers]
    # Best mean top-1; ties go to stronger regularisation and a lighter weight.
    (l2, strength), folds = max(
        scores.items(), key=lambda kv: (round(float(np.mean(kv[1])), 4), kv[0][0], -kv[0][1])
    )
    *_, (_, w, b) = fit_path(writers, [v for v in path if v >= l2])
    head = Head(tuple(rec.id for rec in index.records), w, b, strength)
    report = {"l2": l2, "weight": strength, "top1": folds, "baseline": baseline}
    return head, report


def features_and_labels(
    index: Index,
    queries: list[dict],
    *,
    segments: bool,
    progress: Progress | None = None,
    stage: str = "",
    agents: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the winner's features and whether the winner is the right answer (1) or not (0).

    Every top candidate counts, answered or not: the confidence must be honest below the
    answer threshold too, where replies still lead with it. With ``agents`` each query is
    ranked for the agent it is about (``querysets.item_agent``), as ``lookup`` ranks it.
    """
    sem = index._semantic()  # noqa: SLF001 - the fit needs the raw ranking, not a Match
    rows, labels = [], []
    for n, q in enumerate(queries, start=1):
        if progress is not None:
            progress.step(stage, n, len(queries))
        if names_only_agents(q["query"]):
            continue
        agent = querysets.item_agent(q) if agents else None
        ranking = index.ranking(strip_agents(q["query"]), sem, segments=segments, agent=agent)
        top = int(ranking["order"][0])
        rows.append(ranking_features(ranking, top))
        labels.append(float(index.records[top].name == q["expected"]))
    return np.array(rows), np.array(labels)


def origin_weights(queries: list[dict]) -> np.ndarray:
    """Per query kept by ``features_and_labels``: real users' text and written text weigh the same in all.

    Real issue titles read unlike written questions, and the confidence fitted mostly on
    the larger written pool was under-confident on them. The weights average 1, so the L2
    grid means what it did unweighted.
    """
    real = np.array([q.get("origin") == "real" for q in queries if not names_only_agents(q["query"])])
    if real.all() or not real.any():
        return np.ones(len(real))
    weight = np.where(real, 0.5 / real.mean(), 0.5 / (1 - real.mean()))
    return weight / weight.mean()


MIN_ABSTENTION = 0.92  # share of should-match-nothing queries that must get no match (issue 9 asks >= 0.90)


def pick_answer_threshold(p: np.ndarray, answerable: np.ndarray) -> float:
    """Where to answer: at P(right) of one half, raised only as far as off-topic queries need.

    Below ``MIN_CONFIDENCE`` (0.5) an answer is more likely wrong than right,
    so it is never given; ``engine.gaps.requests`` counts such a result as a miss too,
    and the two must agree. Above it, the threshold rises in steps of 0.05 only
    until the should-match-nothing queries are abstained on at ``MIN_ABSTENTION``.
    Counting mistakes per threshold instead would chase noise: a few dozen
    calibration answers between 0.3 and 0.7 moved that choice from 0.3 to 0.7.
    """
    grid = [round(float(t), 2) for t in np.arange(MIN_CONFIDENCE, 0.91, 0.05)]
    nulls = ~answerable
    for threshold in grid:
        if not nulls.any() or float((p[nulls] < threshold).mean()) >= MIN_ABSTENTION:
            return threshold
    return grid[-1]


def expected_calibration_error(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    edges = np.minimum((p * bins).astype(int), bins - 1)
    return float(
        sum(abs(p[edges == b].mean() - y[edges == b].mean()) * (edges == b).sum() for b in sorted(set(edges)))
        / len(p)
    )


def shipped(judge: Judge) -> Judge:
    """The judge exactly as its file holds it (float32 head, rounded probe and weights).

    Each later step of the fit, and the figures it prints, then use the model
    that matching will load, and last-bit noise in one step cannot reach the next.
    """
    return judge_from_dict(json.loads(json.dumps(judge.to_dict())))


def fit_calibration(
    index: Index,
    neutral: Judge,
    calibration: list[dict],
    progress: Progress,
    *,
    drop: tuple[str, ...] = (),
    agents: bool = True,
) -> tuple[Judge, float]:
    """Fit the map from ranking features to P(right) on the calibration questions; (judge, its L2).

    Two passes: the second ranks with the first fit's judge, so that features are those of the
    sentence the judge picks (``Index.ranking``). Features in ``drop`` are left out (weight 0),
    which is how ``build_scripts/measure/ablate.py`` measures what each one earns.
    """
    judge = neutral
    columns = [FEATURES.index(name) for name in drop]
    for segments in (False, True):  # second pass: features as chosen among sentences by the first fit
        index.judge = judge
        stage = f"confidence model, pass {2 if segments else 1} of 2: ranking the calibration questions"
        progress.say(f"{stage} ({len(calibration)})")
        x, y = features_and_labels(
            index, calibration, segments=segments, progress=progress, stage=stage, agents=agents
        )
        x[:, columns] = 0.0
        # A feature that never varies on the calibration set (no query there pastes an identifier, say)
        # gets the smallest scale the model file allows: its weight then fits to 0, not to noise.
        mean, scale = x.mean(axis=0), np.maximum(x.std(axis=0) + 1e-9, MIN_SCALE)
        weights, bias, l2 = fit_probe(
            (x - mean) / scale, y, grid=CALIBRATION_L2, sample_weight=origin_weights(calibration)
        )
        weights[columns] = 0.0
        judge = shipped(replace(neutral, weights=weights, bias=bias, mean=mean, scale=scale))
    return judge, l2


def with_answer_threshold(
    index: Index, judge: Judge, calibration: list[dict], progress: Progress, *, agents: bool = True
) -> tuple[Judge, np.ndarray, np.ndarray]:
    """The judge with its answer threshold set on the calibration questions; and their P(right), labels."""
    index.judge = judge
    stage = "answer threshold: ranking the calibration questions"
    progress.say(f"{stage} ({len(calibration)})")
    tx, ty = features_and_labels(
        index, calibration, segments=True, progress=progress, stage=stage, agents=agents
    )
    answerable = np.array(
        [q["expected"] is not None for q in calibration if not names_only_agents(q["query"])]
    )
    judge = shipped(replace(judge, answer_at=pick_answer_threshold(judge.confidence(tx), answerable)))
    index.judge = judge
    return judge, judge.confidence(tx), ty


def fit_model(
    make_index: Callable[..., Index], encoder, data: FitData, progress: Progress
) -> tuple[Judge, dict]:
    """Fit the head, the domain probe and the confidence model; returns the judge and what was chosen.

    ``make_index(judge, semantic=True)`` builds the index to fit against, with that judge or none
    (``semantic=False``: without the encoder).
    """
    plain = make_index(None)
    progress.say(f"head: embedding and ranking {len(data.training)} training writers' questions")
    head, report = fit_head(plain, encoder, data.training, data.outside, progress)
    progress.say(
        f"head: L2 {report['l2']}, weight {report['weight']}; leave-one-writer-out top-1 "
        + ", ".join(
            f"{name} {before:.3f} -> {after:.3f}"
            for name, before, after in zip(data.training, report["baseline"], report["top1"], strict=True)
        )
    )
    progress.say(f"domain probe: embedding {len(data.probe_texts)} texts")
    vectors = encoder.encode(data.probe_texts).astype(np.float64)
    labels = data.probe_labels
    progress.say("domain probe: choosing L2 by 5-fold log loss")
    probe, probe_bias, l2 = fit_probe(vectors, labels, grid=PROBE_L2, progress=progress)
    accuracy = float(((sigmoid(vectors @ probe + probe_bias) >= 0.5) == labels).mean())
    progress.say(f"domain probe: {len(labels)} texts, L2 {l2}, training accuracy {accuracy:.3f}")
    report["probeL2"] = l2

    neutral = shipped(
        Judge(
            probe,
            probe_bias,
            np.zeros(len(FEATURES)),
            0.0,
            np.zeros(len(FEATURES)),
            np.ones(len(FEATURES)),
            0.95,
            head=head,
        )
    )
    index = make_index(neutral)
    calibration = data.calibration
    judge, l2 = fit_calibration(index, neutral, calibration, progress)
    report["calibrationL2"] = l2

    # Alias hits: the share that is right on the blind calibration and training sets. A query's alias
    # is looked up before anything is embedded, so an index without the encoder finds the same hits
    # without ranking every other query.
    training = [q for queries in data.training.values() for q in queries]
    asked = calibration + training
    progress.say(f"alias hits: looking up {len(asked)} calibration and training questions")
    lookup = make_index(judge, semantic=False)
    hits = []
    for n, q in enumerate(asked, start=1):
        progress.step("alias hits: looking up", n, len(asked))
        hits.append((q, lookup.match(strip_agents(q["query"]))))
    alias = [m.name == q["expected"] for q, m in hits if m.method == "alias"]
    alias_confidence = round((sum(alias) + 1) / (len(alias) + 2), 3)
    judge = replace(judge, alias_confidence=alias_confidence)
    index.judge = judge
    # Where to answer: the abstention floor over the calibration writers. The training sets would
    # flatter it: the head learned their questions and the probe their off-topic ones.
    judge, p, y = with_answer_threshold(index, judge, calibration, progress)
    answer_at = judge.answer_at
    progress.say(f"confidence model L2 {l2}; answer when P(right) >= {answer_at}")
    progress.say(
        f"calibration set: {len(y)} queries, in-sample ECE {expected_calibration_error(p, y):.3f}; "
        f"alias hits right {sum(alias)}/{len(alias)} -> {alias_confidence}"
    )
    return judge, report


def main() -> int:
    progress = Progress()
    progress.say("loading the catalog, the encoder and the labelled sets")
    encoder = EncodingCache(Encoder(), progress)
    catalog = get_catalog()

    def make_index(judge: Judge | None, semantic: bool = True) -> Index:
        return Index.from_records(
            capability_records(catalog),
            vectors=vectors_dir() / VECTOR_FILE,
            encoder=encoder,
            semantic=semantic,
            out_of_scope=catalog.out_of_scope,
            judge=judge,
        )

    judge, _ = fit_model(make_index, encoder, load_fit_data(), progress)
    out = vectors_dir() / JUDGE_FILE
    out.write_text(json.dumps(judge.to_dict(), indent=1) + "\n", encoding="utf-8")
    progress.say(f"wrote {out} ({len(encoder.vectors)} distinct texts embedded)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
