"""Start-up of the stdio MCP server against the SDK's floor: spawn -> initialize -> first tools/call answered.

    python build_scripts/measure/bench_server.py [--runs 7]

Speaks raw JSON-RPC over the child's pipes (no client library in the timing). Our first call uses a
capability phrased in words, so the timing includes loading the catalog, the ONNX encoder and the vectors
(the worst case).
The floors are ``floor_server.py``: a one-tool server on the same ``mcp`` SDK, spawned by the same
interpreter, and the same server whose tool first embeds its text with the shipped encoder (``--encode``,
the least any semantic server pays). Runs alternate between the three so all see the same load. It
prints the medians, the ratios (the figures to publish: issue 28's target is <= 1.3x the SDK floor) and
the load average before and after, since absolute times on a shared 2-core machine say more about the
neighbours than about the code.
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
FLOOR = Path(__file__).resolve().parent / "floor_server.py"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
OURS_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "lookup_capability",
        "arguments": {"agent": "Claude Code", "capability": "undo what the agent just changed"},
    },
}
FLOOR_CALL = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "echo", "arguments": {"text": "undo what the agent just changed"}},
}


def one_run(command: list[str], call: dict, check) -> tuple[float, float]:
    """Seconds to the initialize answer and to the first tools/call answer."""
    env = {**os.environ, "AGENT_CAPABILITIES_NO_LOG": "1"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        handshake = time.perf_counter() - started
        proc.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(call) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        first_call = time.perf_counter() - started
        check(answer["result"]["content"][0]["text"])
        return handshake, first_call
    finally:
        proc.kill()
        proc.wait()


def _ours_answered(text: str) -> None:
    assert json.loads(text)["capability"]["name"] == "Checkpoints", text


def _floor_answered(text: str) -> None:
    assert text == FLOOR_CALL["params"]["arguments"]["text"], text


def main(argv: list[str] | None = None) -> int:
    """Alternate the two servers, then print medians, the ratio and the load."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each server (default 7)")
    parser.add_argument("--json", type=Path, help="also write the figures here (for figures.py)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    ours, floor, encoder_floor = [], [], []
    servers = (
        (floor, [sys.executable, str(FLOOR)], FLOOR_CALL, _floor_answered),
        (encoder_floor, [sys.executable, str(FLOOR), "--encode"], FLOOR_CALL, _floor_answered),
        (ours, [sys.executable, "-m", "server"], OURS_CALL, _ours_answered),
    )
    for _, command, call, check in servers:  # warm the file cache for all three
        one_run(command, call, check)
    for _ in range(args.runs):
        for runs, command, call, check in servers:
            runs.append(one_run(command, call, check))
    load_after = os.getloadavg()[0]

    def median(runs, i):
        return statistics.median(r[i] for r in runs)

    out = sys.stdout.write
    out(
        f"stdio start-up, median of {args.runs} alternating runs; "
        f"1-min load {load_before:.1f} -> {load_after:.1f}\n"
    )
    out(f"{'':34}{'ours':>8}{'SDK floor':>11}{'ratio':>8}{'+encoder':>10}{'ratio':>8}\n")
    for label, i in (("spawn -> initialize answered", 0), ("spawn -> first tools/call answered", 1)):
        o, f, e = median(ours, i), median(floor, i), median(encoder_floor, i)
        out(f"{label:34}{o:7.3f}s{f:10.3f}s{o / f:7.2f}x{e:9.3f}s{o / e:7.2f}x\n")
    if args.json:
        doc = {
            "runs": args.runs,
            "load": (load_before, load_after),
            "initialize": {"ours": median(ours, 0), "floor": median(floor, 0)},
            "firstCall": {
                "ours": median(ours, 1),
                "floor": median(floor, 1),
                "encoderFloor": median(encoder_floor, 1),
            },
        }
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
