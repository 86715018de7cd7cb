"""The stdio transport: the SDK's, plus answers to lines it would drop and a clean end of input.

The SDK's stdio reader drops a line that is not a valid JSON-RPC message
with no reply, so the client waits forever. Here each line goes through
``server.messages.triage`` first: a bad one gets a JSON-RPC error on stdout
(with the request's id whenever it can be read) and one warning on stderr.
When stdin closes, requests already read are answered before the server
exits (``server < requests.jsonl`` works). SIGINT and SIGTERM end the server
at once, through a callback the caller gives.

stdout stays protocol-only: while serving, fd 1 points at stderr, and the
protocol is written to a private duplicate of the original stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from io import TextIOWrapper

import anyio
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

from .messages import triage

log = logging.getLogger("server")

DRAIN_TIMEOUT = 30.0  # seconds to finish in-flight requests after stdin closes


class _Wire:
    """The protocol's stdout: a lock around writes, and the ids still waiting for an answer."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.lock = anyio.Lock()
        self.pending: set = set()
        self.idle = anyio.Event()
        self.idle.set()

    def expect(self, request_id) -> None:
        self.pending.add(request_id)
        self.idle = anyio.Event() if self.idle.is_set() else self.idle

    async def write(self, text: str) -> None:
        async with self.lock:
            await self.stream.write(text)
        try:
            answered = json.loads(text).get("id")
        except (ValueError, AttributeError):
            return
        self.pending.discard(answered)
        if not self.pending:
            self.idle.set()

    async def flush(self) -> None:
        async with self.lock:
            await self.stream.flush()


class _Lines:
    """Async iterator over stdin lines that answers bad ones and drains at end of input."""

    def __init__(self, source, wire: _Wire) -> None:
        self.source = source
        self.wire = wire

    def __aiter__(self):
        return self._lines()

    async def _lines(self):
        async for line in self.source:
            passed, reply, request_id = triage(line)
            if reply is not None:
                log.warning(
                    "stdio: answered an invalid message with an error: %s",
                    json.loads(reply)["error"]["message"],
                )
                await self.wire.write(reply + "\n")
                await self.wire.flush()
            if passed is not None:
                if request_id is not None:
                    self.wire.expect(request_id)
                yield passed
        with anyio.move_on_after(DRAIN_TIMEOUT) as scope:
            await self.wire.idle.wait()
        if scope.cancelled_caught:
            log.warning(
                "stdin closed; %d request(s) still unanswered after %.0f s",
                len(self.wire.pending),
                DRAIN_TIMEOUT,
            )


def _on_signals(callback: Callable[[int], None]) -> None:
    """Run ``callback(signum)`` on SIGINT or SIGTERM, from the event loop.

    Without this, the first Ctrl-C (or a host's SIGINT) only cancels the main
    task, and the cancellation then waits for the worker thread blocked in
    stdin's ``readline`` until another line arrives. The callback runs as an
    event-loop callback, never in the middle of other code, so it may take the
    gap log's lock.
    """
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # Windows, not main thread
            loop.add_signal_handler(signum, callback, signum)


async def serve_stdio(server: MCPServer, on_signal: Callable[[int], None] | None = None) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes.

    ``on_signal`` is called on SIGINT or SIGTERM; it is expected to end the process.
    """
    if on_signal is not None:
        _on_signals(on_signal)
    wire_fd = os.dup(1)
    os.dup2(2, 1)  # stray prints from libraries land on stderr, never on the protocol stream
    stdout = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_fd, "wb", closefd=True), encoding="utf-8"))
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    wire = _Wire(stdout)
    lowlevel = server._lowlevel_server  # noqa: SLF001 - MCPServer.run_stdio_async does the same
    options = lowlevel.create_initialization_options()
    async with stdio_server(stdin=_Lines(stdin, wire), stdout=wire) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)
