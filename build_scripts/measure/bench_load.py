"""Load and soak over streamable HTTP on loopback: N concurrent clients for a bounded time.

    python build_scripts/measure/bench_load.py --clients 8 --seconds 30
    python build_scripts/measure/bench_load.py --clients 16 --seconds 120    # soak

Starts the server as a subprocess on 127.0.0.1 (recording off, so the gap log
does not grow), then each client sends JSON-RPC ``tools/call`` POSTs back to
back: a rotating mix of lookups by name, worded lookups, comparisons, lists,
no-match queries and bad arguments. Prints throughput, latency percentiles,
errors (HTTP failures or JSON-RPC errors; tool errors for bad arguments are
expected answers, counted apart) and the server's RSS at start, middle and end.
Only loopback addresses are ever contacted, and every loop stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
CALLS = [
    ("lookup_capability", {"agent": "claude-code", "capability": "MCP Support"}),
    ("lookup_capability", {"agent": "gemini", "capability": "undo what the agent just changed"}),
    ("compare_capability", {"capability": "let it think longer before answering"}),
    ("list_capabilities", {"agent": "copilot-cli"}),
    ("get_sources", {"agent": "vscode-copilot", "capability": "agent mode"}),
    ("lookup_capability", {"agent": "claude", "capability": "order a pizza"}),
    ("lookup_capability", {"agnet": "claude", "capability": "mcp"}),  # a tool error, by design
    ("compare_capability", {"capability": "custm instrucions"}),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def parse(response: httpx2.Response) -> dict:
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1])


async def client(url: str, deadline: float, worker: int, stats: dict) -> None:
    calls = itertools.cycle(CALLS[worker % len(CALLS) :] + CALLS[: worker % len(CALLS)])
    async with httpx2.AsyncClient(timeout=30) as http:
        for n in itertools.count():
            if time.monotonic() >= deadline:
                return
            name, arguments = next(calls)
            body = {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
            started = time.perf_counter()
            try:
                response = await http.post(url, json=body, headers=HEADERS)
                message = parse(response) if response.status_code == 200 else None
            except (httpx2.HTTPError, ValueError) as exc:
                stats["errors"].append(type(exc).__name__)
                continue
            stats["latency"].append(time.perf_counter() - started)
            if message is None or "error" in message:
                stats["errors"].append(
                    f"HTTP {response.status_code}" if message is None else "json-rpc error"
                )
            elif message["result"].get("isError"):
                stats["toolErrors"] += 1


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def run(url: str, clients: int, seconds: float, pid: int) -> dict:
    stats: dict = {"latency": [], "errors": [], "toolErrors": 0, "rss": [rss_mb(pid)]}
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    tasks = [asyncio.create_task(client(url, deadline, i, stats)) for i in range(clients)]
    await asyncio.sleep(seconds / 2)
    stats["rss"].append(rss_mb(pid))
    await asyncio.gather(*tasks)
    stats["elapsed"] = time.perf_counter() - started
    stats["rss"].append(rss_mb(pid))
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 64 and 1 <= args.seconds <= 900):
        parser.error("use 1-64 clients and 1-900 seconds")

    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_NO_LOG": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        # Warm up (encoder load) before measuring.
        httpx2.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "tools/call",
                "params": {"name": CALLS[1][0], "arguments": CALLS[1][1]},
            },
            headers=HEADERS,
            timeout=60,
        )
        stats = asyncio.run(run(url, args.clients, args.seconds, server.pid))
    finally:
        server.terminate()
        server.wait(timeout=15)

    lat = [x * 1000 for x in stats["latency"]]
    print(
        f"clients {args.clients}, {stats['elapsed']:.1f} s, {len(lat)} calls answered "
        f"({len(lat) / stats['elapsed']:.0f} req/s)"
    )
    print(
        f"latency ms: p50 {statistics.median(lat):.1f}, p95 {percentile(lat, 95):.1f}, "
        f"p99 {percentile(lat, 99):.1f}, max {max(lat):.1f}"
    )
    print(
        f"errors: {len(stats['errors'])} {sorted(set(stats['errors']))}; "
        f"tool errors for bad arguments (expected): {stats['toolErrors']}"
    )
    print("server RSS MB: start {:.0f}, middle {:.0f}, end {:.0f}".format(*stats["rss"]))
    return 1 if stats["errors"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
