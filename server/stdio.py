"""The stdio transport: the SDK's, plus answers to lines it would drop and a clean end of input.

The SDK's stdio reader drops a line that is not a valid JSON-RPC message
(malformed JSON, a batch, params given as a list, absurd nesting) with no
reply, so the client waits forever. Here each line is checked first: a bad
one gets a JSON-RPC error (-32700 parse error, -32600 invalid request) on
stdout and one warning on stderr. When stdin closes, requests already read
are answered before the server exits (``server < requests.jsonl`` works).

stdout stays protocol-only: while serving, fd 1 points at stderr, and the
protocol is written to a private duplicate of the original stdout.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from io import TextIOWrapper

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

log = logging.getLogger("server")

DRAIN_TIMEOUT = 30.0  # seconds to finish in-flight requests after stdin closes
MAX_LINE = 1 << 20  # a longer line is refused without parsing


def _error(code: int, message: str, request_id=None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def triage(line: str) -> tuple[str | None, str | None, object]:
    """(line to pass on, error reply to send, request id) for one input line."""
    if not line.strip():
        return None, None, None
    if len(line) > MAX_LINE:
        return None, _error(-32600, f"Invalid Request: message over {MAX_LINE} bytes"), None
    try:
        doc = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return None, _error(-32700, f"Parse error: {str(exc)[:120]}"), None
    if isinstance(doc, list):
        return (
            None,
            _error(-32600, "Invalid Request: batches are not supported; send one message per line"),
            None,
        )
    request_id = doc.get("id") if isinstance(doc, dict) else None
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        request_id = None
    try:
        types.jsonrpc_message_adapter.validate_python(doc, by_name=False)
    except Exception as exc:  # noqa: BLE001 - any validation failure is an invalid request
        first = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        hint = (
            " (params must be an object)"
            if isinstance(doc, dict) and isinstance(doc.get("params"), list)
            else ""
        )
        return None, _error(-32600, f"Invalid Request{hint}: {first}", request_id), request_id
    return line, None, request_id if isinstance(doc, dict) and "method" in doc else None


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


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin closes."""
    wire_fd = os.dup(1)
    os.dup2(2, 1)  # stray prints from libraries land on stderr, never on the protocol stream
    stdout = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_fd, "wb", closefd=True), encoding="utf-8"))
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    wire = _Wire(stdout)
    lowlevel = server._lowlevel_server  # noqa: SLF001 - MCPServer.run_stdio_async does the same
    options = lowlevel.create_initialization_options()
    async with stdio_server(stdin=_Lines(stdin, wire), stdout=wire) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)
