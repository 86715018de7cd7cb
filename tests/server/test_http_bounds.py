"""HTTP bounds at the socket level: every request head has a deadline, and running out of files is one line.

The servers here run with ``AGENT_CAPABILITIES_HTTP_TIMEOUT=1`` (set by ``start_server``), so a
connection that is still open several seconds after its deadline is being held by a slow client.
"""

from __future__ import annotations

import asyncio
import json
import re
import select
import socket
import time
from pathlib import Path

import httpx2
from uvicorn.protocols.http.flow_control import FlowControl

import server.http
from server.http import MAX_PIPELINED, BoundedH11Protocol
from tests.server.test_server_http import LOOKUP_MCP, MCP_HEADERS, server_port, start_server

HELD = 6.0  # seconds of trickling after which the connection counts as held (the deadline is 1 s)
WORDED_LOOKUP = {
    **LOOKUP_MCP,
    "params": {
        "name": "lookup_capability",
        "arguments": {"agent": "claude", "capability": "undo what the agent just changed"},
    },
}
NEXT_HEAD = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" * 4


def read_response(sock: socket.socket) -> bytes:
    """The status line and headers of one whole response (its Content-Length body read and dropped)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a whole response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    while length and len(body) < int(length[1]):
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside a response body"
        body += chunk
    return head


def trickle_until_closed(sock: socket.socket, text: bytes) -> float | None:
    """Send ``text`` a byte every 0.1 s; seconds until the server closed the connection, or None."""
    started = time.monotonic()
    for byte in text:
        elapsed = time.monotonic() - started
        if elapsed > HELD:
            return None
        try:
            sock.sendall(bytes([byte]))
            if select.select([sock], [], [], 0.1)[0] and sock.recv(4096) == b"":
                return elapsed
        except OSError:  # reset by the server
            return elapsed
    raise AssertionError("ran out of bytes to trickle before the deadline could be judged")


def request(port: int, *lines: str, body: bytes = b"") -> bytes:
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(f"{line}\r\n" for line in lines)
    return head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_a_keep_alive_connection_that_trickles_its_next_request_is_closed(open_server):
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        )
        assert b" 404 " in read_response(sock).split(b"\r\n", 1)[0]
        closed_after = trickle_until_closed(sock, NEXT_HEAD)
    assert closed_after is not None, f"still open after {HELD} s of a trickled second request"


def test_after_a_401_a_trickled_request_is_closed(token_server):
    port = server_port(token_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request(port, "Content-Type: application/json", body=b"{}"))
        assert b" 401 " in read_response(sock).split(b"\r\n", 1)[0]
        closed_after = trickle_until_closed(sock, NEXT_HEAD)
    assert closed_after is not None, f"still open after {HELD} s of a trickled request after a 401"


def test_after_a_401_the_trickled_rest_of_its_body_is_cut_off(token_server):
    port = server_port(token_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = request(port, "Content-Type: application/json").replace(
            b"Content-Length: 0", b"Content-Length: 400"
        )
        sock.sendall(head + b"{")  # answered 401 at once; the body then trickles in
        assert b" 401 " in read_response(sock).split(b"\r\n", 1)[0]
        closed_after = trickle_until_closed(sock, b" " * 399)
    assert closed_after is not None, f"still open after {HELD} s of a body trickled after its 401"


def test_after_the_body_deadline_a_client_still_trickling_is_closed(open_server):
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = request(port, "Content-Type: application/json", "Accept: application/json, text/event-stream")
        sock.sendall(head.replace(b"Content-Length: 0", b"Content-Length: 400") + b"{")
        assert b" 408 " in read_response(sock).split(b"\r\n", 1)[0]
        closed_after = trickle_until_closed(sock, b" " * 399)
    assert closed_after is not None, f"still open after {HELD} s of a body trickled after its 408"


def test_running_out_of_file_descriptors_is_one_line_and_the_server_recovers(tmp_path: Path):
    log = tmp_path / "stderr.txt"
    for url in start_server(None, log=log, fd_limit=64):
        warm = httpx2.post(url, json=WORDED_LOOKUP, headers=MCP_HEADERS, timeout=60)
        assert warm.status_code == 200  # the encoder is loaded: its files are opened before the shortage
        port = server_port(url)
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(120)]
        time.sleep(2.5)  # asyncio retries a failed accept after 1 s: at least two rounds of failures
        for sock in held:
            sock.close()
        answer = httpx2.post(url, json=LOOKUP_MCP, headers=MCP_HEADERS, timeout=60)
        assert answer.status_code == 200
    text = log.read_text()
    assert "Traceback" not in text, text[:2000]
    assert text.count("out of file descriptors") == 1, text[:2000]
    assert text.count("Too many open files") == 1, text[:2000]


def ping_request(port: int, request_id: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def test_a_client_that_pipelines_without_waiting_is_cut_off_after_a_bounded_number_of_answers(open_server):
    # The audit's slow reader: requests pipelined back to back, answers never awaited.
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"".join(ping_request(port, i) for i in range(200)))
        received, started = b"", time.monotonic()
        while time.monotonic() - started < HELD:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            received += chunk
    answered = received.count(b"HTTP/1.1 200 ")
    assert answered == MAX_PIPELINED + 1, answered  # the first, then MAX_PIPELINED sent without waiting


def test_a_client_that_waits_for_each_answer_keeps_its_connection(open_server):
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for i in range(MAX_PIPELINED * 2):
            sock.sendall(ping_request(port, i))
            assert read_response(sock).startswith(b"HTTP/1.1 200 ")


class StalledTransport:
    """A connection whose client takes nothing: writes stay paused until the server gives up."""

    def __init__(self) -> None:
        self.aborted = False

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True


async def stalled_protocol() -> BoundedH11Protocol:
    protocol = BoundedH11Protocol.__new__(BoundedH11Protocol)  # only the write bound is exercised
    protocol.loop = asyncio.get_running_loop()
    protocol.transport = StalledTransport()
    protocol.flow = FlowControl(protocol.transport)
    protocol._write_timer = None
    return protocol


def test_an_answer_the_client_never_takes_ends_the_connection_after_the_write_timeout(monkeypatch):
    monkeypatch.setattr(server.http, "WRITE_TIMEOUT", 0.05)

    async def run() -> tuple[bool, bool]:
        stalled, reading = await stalled_protocol(), await stalled_protocol()
        stalled.pause_writing()
        reading.pause_writing()
        reading.resume_writing()  # this client took the answer in time
        await asyncio.sleep(0.3)
        return stalled.transport.aborted, reading.transport.aborted

    assert asyncio.run(run()) == (True, False)
