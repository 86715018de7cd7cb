"""The stdio transport: the SDK's, plus answers to lines it would drop and a clean end of input.

The SDK's stdio reader drops a line that is not a valid JSON-RPC message
(malformed JSON, a batch, params given as a list, an id that is not a string
or an integer, nesting deeper than its parser's limit) with no reply, so the
client waits forever. Here each line is checked first, with the SDK's own
parser: a bad one gets a JSON-RPC error (-32700 parse error, -32600 invalid
request, with the request's id when it has a usable one) on stdout and one
warning on stderr. Lone surrogate escapes, which JavaScript writes for a
string cut inside an emoji, become U+FFFD so the request is served. When
stdin closes, requests already read are answered before the server exits
(``server < requests.jsonl`` works). SIGINT and SIGTERM end the server at
once, through a callback the caller gives.

stdout stays protocol-only: while serving, fd 1 points at stderr, and the
protocol is written to a private duplicate of the original stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from io import TextIOWrapper

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server

log = logging.getLogger("server")

DRAIN_TIMEOUT = 30.0  # seconds to finish in-flight requests after stdin closes
MAX_LINE = 1 << 20  # a longer line is refused without parsing


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a UTF-16 surrogate written as a JSON escape
_SURROGATE = re.compile("[\ud800-\udfff]")


def _error(code: int, message: str, request_id=None) -> str:
    # ensure_ascii: an id is echoed exactly as sent, even one that holds a lone surrogate.
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


_JSON_KINDS = {dict: "an object", list: "an array", bool: "a boolean", float: "a number with a fraction"}
_JSON_KINDS[type(None)] = "null"


def _usable_id(value: object) -> bool:
    """MCP request ids are strings or integers (never null, and JSON true is not the integer 1)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _reason(exc: Exception) -> str:
    """The first problem pydantic found, as 'where: what' (its full text names internal types)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors(include_url=False)[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            message = first.get("msg", "")
            if "recursion limit" in message:
                return "JSON nested deeper than the parser's limit of about 200 levels"
            return f"{where}: {message}"[:160] if where else message[:160]
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]


def _without_lone_surrogates(line: str, doc: object) -> str:
    """``line`` with every lone surrogate escape turned into U+FFFD (pydantic's parser refuses them).

    ``json.loads`` has already paired valid surrogate escapes into one
    character, so any surrogate left in ``doc`` is a lone one.
    """
    if not _SURROGATE_ESCAPE.search(line):
        return line
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else line


def triage(line: str) -> tuple[str | None, str | None, object]:
    """(line to pass on, error reply to send, request id) for one input line.

    Every line that holds a request id either passes on (the SDK then answers
    it) or gets an error reply here: the SDK drops what it cannot parse.
    """
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
    if not isinstance(doc, dict):
        return None, _error(-32600, "Invalid Request: a message must be a JSON object"), None
    request_id = doc.get("id")
    if "method" in doc and "id" in doc and not _usable_id(request_id):
        kind = _JSON_KINDS.get(type(request_id), type(request_id).__name__)
        message = f"Invalid Request: id must be a string or an integer, got {kind}"
        return None, _error(-32600, message), None
    if isinstance(request_id, str) and _SURROGATE.search(request_id):
        message = "Invalid Request: id holds a lone UTF-16 surrogate; use a plain string or an integer"
        return None, _error(-32600, message, request_id), request_id
    try:
        passed = _without_lone_surrogates(line, doc)
        # The SDK's own parser: whatever it would refuse (and drop) is answered here instead.
        types.jsonrpc_message_adapter.validate_json(passed, by_name=False)
    except Exception as exc:  # noqa: BLE001 - any validation failure is an invalid request
        hint = " (params must be an object)" if isinstance(doc.get("params"), list) else ""
        return None, _error(-32600, f"Invalid Request{hint}: {_reason(exc)}", request_id), request_id
    return passed, None, request_id if "method" in doc else None


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
