"""Load and soak over streamable HTTP on loopback: N concurrent clients for a bounded time.

    python build_scripts/measure/bench_load.py --clients 8 --seconds 30
    python build_scripts/measure/bench_load.py --clients 16 --seconds 120    # soak
    python build_scripts/measure/bench_load.py --clients 1 32 --seconds 15 --rounds 2   # scaling, one run

Starts the server as a subprocess on 127.0.0.1 (recording off, so the gap log
does not grow), then each client sends JSON-RPC ``tools/call`` POSTs back to
back: a rotating mix of lookups by name, worded lookups, comparisons, lists,
no-match queries and bad arguments. Prints throughput, latency percentiles,
errors (HTTP failures or JSON-RPC errors; tool errors for bad arguments are
expected answers, counted apart) and the server's RSS at start, middle and end.
With several client counts, the same server runs each in turn (``--rounds``
times, alternating, so drifting load on a shared machine hits each alike) and
the last lines give each count's throughput and p99 as ratios to the first
count's throughput and p50.
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


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    cpu = cpu_seconds(pid), time.process_time()
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    tasks = [asyncio.create_task(client(url, deadline, i, stats)) for i in range(clients)]
    await asyncio.sleep(seconds / 2)
    stats["rss"].append(rss_mb(pid))
    await asyncio.gather(*tasks)
    stats["elapsed"] = time.perf_counter() - started
    stats["serverCpu"] = cpu_seconds(pid) - cpu[0]
    stats["clientCpu"] = time.process_time() - cpu[1]
    stats["rss"].append(rss_mb(pid))
    return stats


def summary(stats: list[dict]) -> dict:
    """One client count's phases together: calls, seconds, latencies in ms, errors."""
    lat = sorted(x * 1000 for phase in stats for x in phase["latency"])
    elapsed = sum(phase["elapsed"] for phase in stats)
    return {
        "rps": len(lat) / elapsed,
        "calls": len(lat),
        "elapsed": elapsed,
        "p50": statistics.median(lat),
        "p95": percentile(lat, 95),
        "p99": percentile(lat, 99),
        "max": lat[-1],
        "errors": [e for phase in stats for e in phase["errors"]],
        "toolErrors": sum(phase["toolErrors"] for phase in stats),
        "serverCpu": sum(phase["serverCpu"] for phase in stats) / len(lat) * 1000,
        "clientCpu": sum(phase["clientCpu"] for phase in stats) / len(lat) * 1000,
    }


def starvation(s: dict, clients: int) -> float:
    """p99 over the mean latency that ``clients`` back-to-back clients must see at this throughput.

    By Little's law, N clients that always have one call open wait N / throughput seconds per call
    on average, however fast the server is; a p99 far above that means some calls wait while
    others go by (issue 28's target: at most 2.5 at 32 clients).
    """
    fair_ms = clients / s["rps"] * 1000
    return s["p99"] / fair_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[8], help="one or more client counts")
    parser.add_argument("--seconds", type=float, default=30.0, help="per client count and round")
    parser.add_argument("--rounds", type=int, default=1, help="times to run every client count, alternating")
    args = parser.parse_args(argv)
    if (
        not all(1 <= c <= 64 for c in args.clients)
        or not 1 <= args.seconds <= 900
        or not 1 <= args.rounds <= 10
    ):
        parser.error("use 1-64 clients, 1-900 seconds and 1-10 rounds")

    load_at_start = os.getloadavg()[0]
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
    phases: dict[int, list[dict]] = {c: [] for c in args.clients}
    rss = []
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
        for _ in range(args.rounds):
            for clients in args.clients:
                stats = asyncio.run(run(url, clients, args.seconds, server.pid))
                rss.extend(stats["rss"])
                phases[clients].append(stats)
    finally:
        server.terminate()
        server.wait(timeout=15)

    out = sys.stdout.write
    out(f"load average at the start: {load_at_start:.1f}\n")
    errors = False
    for clients, stats in phases.items():
        s = summary(stats)
        errors = errors or bool(s["errors"])
        out(f"clients {clients}, {s['elapsed']:.1f} s, {s['calls']} calls answered ({s['rps']:.0f} req/s)\n")
        out(f"latency ms: p50 {s['p50']:.1f}, p95 {s['p95']:.1f}, p99 {s['p99']:.1f}, max {s['max']:.1f}\n")
        out(f"starvation: p99 {starvation(s, clients):.2f}x clients / throughput (target <= 2.5)\n")
        out(f"CPU ms per call: server {s['serverCpu']:.1f}, these clients {s['clientCpu']:.1f}\n")
        out(
            f"errors: {len(s['errors'])} {sorted(set(s['errors']))}; "
            f"tool errors for bad arguments (expected): {s['toolErrors']}\n"
        )
    out(f"server RSS MB: start {rss[0]:.0f}, middle {rss[len(rss) // 2]:.0f}, end {rss[-1]:.0f}\n")
    if len(args.clients) > 1:
        first = summary(phases[args.clients[0]])
        for clients in args.clients[1:]:
            s = summary(phases[clients])
            out(
                f"{clients} clients: throughput {s['rps'] / first['rps']:.2f}x that of {args.clients[0]}; "
                f"p99 {s['p99'] / first['p50']:.1f}x the {args.clients[0]}-client p50\n"
            )
    out(f"load average at the end: {os.getloadavg()[0]:.1f}\n")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
