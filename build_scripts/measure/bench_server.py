"""Start-up of the stdio MCP server: spawn -> initialize -> first tools/call answered.

    python build_scripts/measure/bench_server.py

Speaks raw JSON-RPC over the child's pipes (no client library in the timing).
The first call uses a capability phrased in words, so the timing includes
loading the ONNX encoder and the vectors (the worst case). Median of 5 runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNS = 5

MESSAGES = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "lookup_capability",
            "arguments": {"agent": "Claude Code", "capability": "undo what the agent just changed"},
        },
    },
]


def one_run() -> tuple[float, float]:
    """Seconds to the initialize answer and to the first tools/call answer."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        proc.stdin.write(json.dumps(MESSAGES[0]) + "\n")
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        handshake = time.perf_counter() - started
        for message in MESSAGES[1:]:
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        first_call = time.perf_counter() - started
        text = answer["result"]["content"][0]["text"]
        assert json.loads(text)["capability"]["name"] == "Checkpoints", text
        return handshake, first_call
    finally:
        proc.kill()
        proc.wait()


def main() -> int:
    """Run and print medians."""
    runs = [one_run() for _ in range(RUNS)]
    handshake = statistics.median(r[0] for r in runs)
    first = statistics.median(r[1] for r in runs)
    sys.stdout.write(f"stdio server, median of {RUNS} runs\n")
    sys.stdout.write(f"spawn -> initialize answered:        {handshake:.3f}s\n")
    sys.stdout.write(f"spawn -> first tools/call answered:  {first:.3f}s (semantic match, encoder loaded)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
