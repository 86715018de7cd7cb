"""Retrieval quality: our labelled set and the mcpproxy peer benchmark, per matcher variant.

    python build_scripts/evaluate.py                       # shipped encoder
    python build_scripts/evaluate.py --encoder fp32=/tmp/enc-fp32 --encoder int8=/tmp/enc-int8

Variants: "v1" (exact/alias/lexical only) and one "v2" per encoder directory
(default: the shipped one in vectors/encoder). Prints a table; ``--json`` writes
the figures. Needs only the runtime dependencies.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.capabilities import VECTOR_FILE, capability_records, strip_agents  # noqa: E402
from engine.catalog import get_catalog  # noqa: E402
from engine.encoder import Encoder  # noqa: E402
from engine.index import Index  # noqa: E402
from engine.paths import vectors_dir  # noqa: E402

EVAL_SET = ROOT / "tests" / "fixtures" / "eval_queries.json"
HOLDOUT_SET = ROOT / "tests" / "fixtures" / "holdout_queries.json"
TRAIN_SET = ROOT / "tests" / "fixtures" / "train_queries.json"
PEER_DIR = ROOT.parent / "shared" / "peer-benchmarks" / "mcpproxy-retrieval"


def own_metrics(index: Index, queries: list[dict]) -> dict:
    """top-1/top-3/MRR over answerable queries; abstention precision/recall over all."""
    top1 = top3 = rr = 0.0
    answerable = [q for q in queries if q["expected"] is not None]
    abstained_right = abstained = should_abstain = 0
    misses = []
    for q in queries:
        result = index.match(strip_agents(q["query"]), k=10)
        names = [c.name for c in result.candidates]
        if result.name is None:
            abstained += 1
        if q["expected"] is None:
            should_abstain += 1
            if result.name is None:
                abstained_right += 1
            else:
                misses.append((q["query"], None, result.name, result.method))
            continue
        hit = result.name == q["expected"]
        top1 += hit
        top3 += q["expected"] in names[:3]
        if q["expected"] in names:
            rr += 1 / (names.index(q["expected"]) + 1)
        if not hit:
            misses.append((q["query"], q["expected"], result.name, result.method))
    n = len(answerable)
    return {
        "queries": len(queries),
        "top1": top1 / n,
        "top3": top3 / n,
        "mrr": rr / n,
        "abstain_precision": abstained_right / abstained if abstained else 1.0,
        "abstain_recall": abstained_right / should_abstain if should_abstain else 1.0,
        "misses": misses,
    }


def sweep_thresholds(index: Index, queries: list[dict]) -> list[tuple[float, float, float, float]]:
    """top-1 and abstention precision/recall for a range of abstain thresholds (calibration aid)."""
    from dataclasses import replace

    rows = []
    loose = replace(index.tuning, threshold=-1.0, lexical_threshold=2.0)
    saved, index.tuning = index.tuning, loose
    try:
        results = [(q["expected"], index.match(strip_agents(q["query"]), k=3)) for q in queries]
    finally:
        index.tuning = saved
    for step in range(30, 56, 2):
        threshold = step / 100
        answered = []
        for expected, result in results:
            certain = result.method in {"exact", "alias"}
            said = (
                result.name
                if (result.name and (certain or result.candidates[0].score >= threshold))
                else None
            )
            answered.append((expected, said))
        good = [e for e, _ in answered if e]
        top1 = sum(1 for e, a in answered if e and a == e) / len(good)
        abstained = [(e, a) for e, a in answered if a is None]
        nulls = sum(1 for e, _ in answered if e is None)
        precision = sum(1 for e, _ in abstained if e is None) / max(1, len(abstained))
        recall = sum(1 for e, _ in abstained if e is None) / max(1, nulls)
        rows.append((threshold, top1, precision, recall))
    return rows


def peer_records() -> tuple[list[dict], list[dict]]:
    """The peer corpus as engine records, and its labelled queries."""
    tools = json.loads((PEER_DIR / "corpus_v1.tools.json").read_text())["tools"]
    golden = json.loads((PEER_DIR / "retrieval_golden_v1.json").read_text())["queries"]
    records = [{"id": t["tool_id"], "name": t["tool"], "description": t["description"]} for t in tools]
    return records, golden


def peer_metrics(index: Index, golden: list[dict]) -> dict:
    """Score the peer queries.

    R@k: the primary (relevance 2) tool is within the top k. MRR: by the first
    relevant tool. nDCG@10 with graded relevance. fracR@k: mcpproxy's own
    recall (share of all labelled tools in the top k), to compare with its
    published baseline.
    """
    ks = (1, 3, 5, 10)
    hit = dict.fromkeys(ks, 0.0)
    frac = dict.fromkeys(ks, 0.0)
    rr = ndcg = 0.0
    for q in golden:
        ranked = [c.id for c in index.match(q["query"], k=10).candidates]
        rel = {label["tool_id"]: label["relevance"] for label in q["labels"] if label["relevance"] > 0}
        primary = {t for t, r in rel.items() if r == 2}
        for k in ks:
            hit[k] += bool(primary & set(ranked[:k]))
            frac[k] += len(set(rel) & set(ranked[:k])) / len(rel)
        first = next((i for i, t in enumerate(ranked) if t in rel), None)
        rr += 0 if first is None else 1 / (first + 1)
        dcg = sum((2 ** rel.get(t, 0) - 1) / math.log2(i + 2) for i, t in enumerate(ranked[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(ideal))
        ndcg += dcg / idcg
    n = len(golden)
    return {
        "queries": n,
        **{f"R@{k}": hit[k] / n for k in ks},
        "MRR": rr / n,
        "nDCG@10": ndcg / n,
        **{f"fracR@{k}": frac[k] / n for k in ks},
    }


def main(argv: list[str] | None = None) -> int:
    """Run every variant on both sets and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--misses", action="store_true", help="list the queries each variant gets wrong")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--calibrate", action="store_true", help="sweep the abstain threshold on the own + training sets"
    )
    args = parser.parse_args(argv)

    shipped = Encoder()
    shipped.load()
    encoders = [(f"v2 {shipped.variant} (shipped)", shipped)]
    for spec in args.encoder:
        name, _, directory = spec.partition("=")
        encoders.append((f"v2 {name}", Encoder(directory)))

    queries = json.loads(EVAL_SET.read_text())["queries"]
    holdout = json.loads(HOLDOUT_SET.read_text())["queries"]
    train = json.loads(TRAIN_SET.read_text())["queries"]
    catalog = get_catalog()
    records = capability_records(catalog)
    store = vectors_dir() / VECTOR_FILE
    peer, golden = peer_records()
    out: dict = {"own": {}, "train": {}, "holdout": {}, "peer": {}}

    variants = [("v1 alias+lexical", None)] + encoders
    for label, encoder in variants:
        semantic = encoder is not None
        own_index = Index.from_records(
            records, vectors=store, encoder=encoder, semantic=semantic, out_of_scope=catalog.out_of_scope
        )
        peer_index = Index.from_records(peer, encoder=encoder, semantic=semantic)
        started = time.perf_counter()
        out["own"][label] = own_metrics(own_index, queries)
        out["train"][label] = own_metrics(own_index, train)
        out["holdout"][label] = own_metrics(own_index, holdout)
        out["peer"][label] = peer_metrics(peer_index, golden)
        out["own"][label]["seconds"] = round(time.perf_counter() - started, 2)

    sets = [
        ("own", queries, "Own eval set (thresholds calibrated on it)"),
        ("train", train, "Training set (written blind, then used to add phrasings and anchors)"),
        ("holdout", holdout, "Holdout set (written blind to the catalog, never used for tuning)"),
    ]
    for key, items, title in sets:
        n_null = sum(q["expected"] is None for q in items)
        sys.stdout.write(f"\n{title}: {len(items)} queries ({n_null} that should match nothing)\n")
        sys.stdout.write(f"{'variant':28} {'top1':>6} {'top3':>6} {'MRR':>6} {'abstP':>6} {'abstR':>6}\n")
        for label, m in out[key].items():
            sys.stdout.write(
                f"{label:28} {m['top1']:6.3f} {m['top3']:6.3f} {m['mrr']:6.3f} "
                f"{m['abstain_precision']:6.3f} {m['abstain_recall']:6.3f}\n"
            )
    sys.stdout.write(f"\nPeer benchmark (mcpproxy, {len(golden)} queries over {len(peer)} tools)\n")
    sys.stdout.write(
        f"{'variant':28} {'R@1':>6} {'R@3':>6} {'R@5':>6} {'MRR':>6} {'nDCG10':>6} "
        f"{'fracR@1':>7} {'fracR@5':>7}\n"
    )
    sys.stdout.write(
        f"{'mcpproxy BM25 (published)':28} {'':>6} {'':>6} {'':>6} {0.568:6.3f} {0.609:6.3f} "
        f"{0.418:7.3f} {0.681:7.3f}\n"
    )
    for label, m in out["peer"].items():
        sys.stdout.write(
            f"{label:28} {m['R@1']:6.3f} {m['R@3']:6.3f} {m['R@5']:6.3f} {m['MRR']:6.3f} "
            f"{m['nDCG@10']:6.3f} {m['fracR@1']:7.3f} {m['fracR@5']:7.3f}\n"
        )
    if args.calibrate:
        tuning_sets = queries + train
        index = Index.from_records(records, vectors=store, encoder=shipped, out_of_scope=catalog.out_of_scope)
        sys.stdout.write(f"\nThreshold sweep on own + training sets ({len(tuning_sets)} queries)\n")
        sys.stdout.write(f"{'threshold':>9} {'top1':>6} {'abstP':>6} {'abstR':>6}\n")
        for threshold, top1, precision, recall in sweep_thresholds(index, tuning_sets):
            sys.stdout.write(f"{threshold:9.2f} {top1:6.3f} {precision:6.3f} {recall:6.3f}\n")
    if args.misses:
        for label, m in out["own"].items():
            sys.stdout.write(f"\nmisses, {label}:\n")
            for query, expected, got, method in m["misses"]:
                sys.stdout.write(f"  {query!r}: expected {expected}, got {got} ({method})\n")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
