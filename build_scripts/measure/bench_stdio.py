"""Pipelined lookups over stdio against the same lookups sent one at a time, on one server process.

    python build_scripts/measure/bench_stdio.py --lookups 50 --rounds 3

Starts ``python -m server`` (stdio, recording off), initializes it, warms the
encoder, then alternates two ways of sending the same worded lookups (each a
semantic match): one at a time (send, wait for the answer, send the next) and
pipelined (all written at once, then every answer read). Prints the time per
lookup of each and their ratio; the rounds alternate so that drifting load on
a shared machine hits both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = [f"holdout-{n:02d}.json" for n in range(2, 8)]


def questions(count: int) -> list[str]:
    """Worded capability questions from the held-out sets (short enough for one sentence each)."""
    out: list[str] = []
    for name in SETS:
        doc = json.loads((ROOT / "queries" / "held-out" / name).read_text(encoding="utf-8"))
        out += [q["query"] for q in doc["queries"] if q.get("kind") == "question"]
    return list(dict.fromkeys(out))[:count]


class Server:
    """The stdio server as a subprocess, spoken to one JSON-RPC line at a time."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_NO_LOG": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0
        self.send(
            [
                self.request(
                    "initialize",
                    {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "bench_stdio", "version": "0"},
                    },
                )
            ]
        )
        self.receive(1)
        self.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def lookup(self, question: str) -> dict:
        arguments = {"agent": "claude-code", "capability": question}
        return self.request("tools/call", {"name": "lookup_capability", "arguments": arguments})

    def send(self, messages: list[dict]) -> None:
        self.proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        self.proc.stdin.flush()

    def receive(self, count: int) -> list[dict]:
        replies = []
        while len(replies) < count:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the server closed stdout; run it by hand to see why")
            message = json.loads(line)
            if "id" in message:
                if "error" in message:
                    raise SystemExit(f"the server answered an error: {message['error']}")
                replies.append(message)
        return replies

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def one_at_a_time(server: Server, items: list[str]) -> float:
    started = time.perf_counter()
    for question in items:
        server.send([server.lookup(question)])
        server.receive(1)
    return time.perf_counter() - started


def pipelined(server: Server, items: list[str]) -> float:
    started = time.perf_counter()
    server.send([server.lookup(question) for question in items])
    server.receive(len(items))
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lookups", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not (1 <= args.lookups <= 500 and 1 <= args.rounds <= 20):
        parser.error("use 1-500 lookups and 1-20 rounds")
    items = questions(args.lookups)
    server = Server()
    times: dict[str, list[float]] = {"one at a time": [], "pipelined": []}
    try:
        one_at_a_time(server, items[:3])  # warm: the encoder loads on the first worded lookup
        for round_no in range(args.rounds):
            ways = [("one at a time", one_at_a_time), ("pipelined", pipelined)]
            for label, way in ways if round_no % 2 == 0 else ways[::-1]:
                times[label].append(way(server, items))
    finally:
        server.close()

    out = sys.stdout.write
    per = {label: sum(values) / (len(values) * len(items)) * 1e3 for label, values in times.items()}
    load = os.getloadavg()[0]
    out(f"{len(items)} worded lookups x {args.rounds} rounds, alternating; load average {load:.1f}\n")
    for label, values in times.items():
        rounds = ", ".join(f"{v / len(items) * 1e3:.1f}" for v in values)
        out(f"{label:14} {per[label]:7.1f} ms per lookup (rounds: {rounds})\n")
    out(f"pipelined: {per['pipelined'] / per['one at a time']:.2f}x the time per lookup of one at a time\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
