"""The reliability audit's keep-alive slow-client probe (D1), against a checkout's HTTP server.

    python build_scripts/measure/probe_slow_clients.py                      # this checkout
    python build_scripts/measure/probe_slow_clients.py --checkout /tmp/old  # another one

Starts the server with the token set and at most 1,024 open files, then opens
``--connections`` connections that each send one complete request (half of
them without the token, so they get a 401), read the answer, and trickle the
next request head one byte at a time. Every two seconds a separate client
sends one normal request. Prints how many trickling connections the server
still held at the end, how many probes were answered, and how many lines and
tracebacks it wrote to stderr. Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FD_LIMIT = 1024
TRICKLE = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Padding: slow\r\n" * 400


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def attacker(port: int, number: int, stop: float, held: list[int]) -> None:
    get = f"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    no_token = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        "Content-Length: 2\r\n\r\n{}"
    )
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((no_token if number % 2 else get).encode())
        await writer.drain()
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        for byte in TRICKLE:
            if time.monotonic() > stop:
                held.append(number)
                writer.close()
                return
            writer.write(bytes([byte]))
            await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1), 1.0) == b"":
                    return  # closed by the server
            except TimeoutError:
                pass
    except (OSError, asyncio.IncompleteReadError, TimeoutError):
        return


async def probe(port: int, stop: float, answered: list[bool]) -> None:
    request = f"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 3)
            writer.write(request.encode())
            await writer.drain()
            await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
            writer.close()
            answered.append(True)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            answered.append(False)
        await asyncio.sleep(2)


async def attack(port: int, connections: int, seconds: float) -> tuple[list[int], list[bool]]:
    stop = time.monotonic() + seconds
    held: list[int] = []
    answered: list[bool] = []
    await asyncio.gather(
        *(attacker(port, n, stop, held) for n in range(connections)), probe(port, stop, answered)
    )
    return held, answered


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout whose server to probe")
    parser.add_argument("--connections", type=int, default=1050)
    parser.add_argument("--seconds", type=float, default=40)
    args = parser.parse_args(argv)
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < args.connections + 100:
        parser.error(
            f"this process may open too few files for {args.connections} connections; raise ulimit -n"
        )

    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(args.checkout),
        "AGENT_CAPABILITIES_NO_LOG": "1",
        "AGENT_CAPABILITIES_TOKEN": "probe-token-of-at-least-16-chars",
    }
    with tempfile.TemporaryFile("w+") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", str(port)],
            cwd=args.checkout,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT)),
        )
        try:
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            held, answered = asyncio.run(attack(port, args.connections, args.seconds))
        finally:
            server.terminate()
            server.wait(timeout=30)
        stderr.seek(0)
        text = stderr.read()
    print(
        f"{args.checkout}: {args.connections} trickling connections for {args.seconds:.0f} s "
        f"(server limited to {FD_LIMIT} open files): {len(held)} still held at the end; "
        f"probes answered {sum(answered)} of {len(answered)}; "
        f"stderr {text.count(chr(10))} lines, {text.count('Traceback')} tracebacks"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
