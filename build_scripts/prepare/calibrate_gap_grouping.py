"""Measure the cosine threshold that groups phrasings of one need in the gap report.

    python build_scripts/prepare/calibrate_gap_grouping.py          # sweep, pick, check on the holdout
    python build_scripts/prepare/calibrate_gap_grouping.py --json   # the same figures as JSON

Labelled set: queries/gap-grouping/phrasings.json. The 'tune' pool is every
phrasing of the tune needs plus each hard-negative phrasing as a need of its
own (look-alikes that must stay apart); the 'holdout' pool is the held-out
needs alone. For each threshold the phrasings are clustered exactly as the
report does (``engine.gaps.report.group_phrasings``) and scored on pairs: a
pair is right when it is grouped together if and only if it shares a need.
The threshold with the best F1 on 'tune' is the one to put in
``engine.gaps.report.GROUP_THRESHOLD``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.gaps.report import GROUP_THRESHOLD, group_phrasings  # noqa: E402
from engine.matching.index import default_encoder  # noqa: E402

LABELLED = ROOT / "queries" / "gap-grouping" / "phrasings.json"
SWEEP = [round(t, 3) for t in np.arange(0.20, 0.601, 0.025)]


def pools(doc: dict) -> dict[str, list[tuple[str, str]]]:
    """(phrasing, need) pairs for the 'tune' and 'holdout' pools."""
    tune = [(p, g["need"]) for g in doc["tune"] for p in g["phrasings"]]
    seen = {p for p, _ in tune}
    for pair in doc["hardNegatives"]:
        for phrasing in pair:
            if phrasing not in seen:
                tune.append((phrasing, f"alone: {phrasing}"))
                seen.add(phrasing)
    holdout = [(p, g["need"]) for g in doc["holdout"] for p in g["phrasings"]]
    return {"tune": tune, "holdout": holdout}


def pair_scores(groups: list[list[int]], needs: list[str]) -> dict:
    """Pair precision, recall and F1 of a clustering against the labelled needs."""
    label = {i: n for n, group in enumerate(groups) for i in group}
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(needs)), 2):
        same, together = needs[i] == needs[j], label[i] == label[j]
        tp += same and together
        fp += together and not same
        fn += same and not together
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 3), "recall": round(recall, 3), "f1": round(f1, 3)}


class _Memo:
    """The default encoder, remembering vectors: the sweep embeds the same texts many times."""

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def encode(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            self.vectors.update(zip(todo, default_encoder().encode(todo), strict=True))
        return np.vstack([self.vectors[t] for t in texts])


_MEMO = _Memo()


def evaluate(pool: list[tuple[str, str]], threshold: float) -> dict:
    """Cluster one pool at ``threshold`` and score it."""
    texts, needs = zip(*pool, strict=True)
    return pair_scores(group_phrasings(list(texts), threshold=threshold, encoder=_MEMO), list(needs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    doc = json.loads(LABELLED.read_text(encoding="utf-8"))
    data = pools(doc)
    sweep = [{"threshold": t, "tune": evaluate(data["tune"], t)} for t in SWEEP]
    best = max(sweep, key=lambda row: (row["tune"]["f1"], -row["threshold"]))
    result = {
        "tunePhrasings": len(data["tune"]),
        "holdoutPhrasings": len(data["holdout"]),
        "sweep": sweep,
        "best": {**best, "holdout": evaluate(data["holdout"], best["threshold"])},
        "shipped": {
            "threshold": GROUP_THRESHOLD,
            "tune": evaluate(data["tune"], GROUP_THRESHOLD),
            "holdout": evaluate(data["holdout"], GROUP_THRESHOLD),
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"pools: tune {result['tunePhrasings']} phrasings, holdout {result['holdoutPhrasings']}")
    print("threshold  precision  recall    F1   (tune)")
    for row in sweep:
        s = row["tune"]
        mark = "  <- best" if row is best else ""
        print(f"{row['threshold']:9.3f}  {s['precision']:9.3f}  {s['recall']:6.3f}  {s['f1']:5.3f}{mark}")
    for name in ("best", "shipped"):
        r = result[name]
        print(
            f"{name}: threshold {r['threshold']}: tune F1 {r['tune']['f1']} "
            f"(P {r['tune']['precision']}, R {r['tune']['recall']}); holdout F1 {r['holdout']['f1']} "
            f"(P {r['holdout']['precision']}, R {r['holdout']['recall']})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
