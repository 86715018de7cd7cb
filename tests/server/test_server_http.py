"""``python -m server --transport streamable-http``: tool calls, Origin checks, optional bearer token."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "a-test-token-of-32-characters-xx"
STARTUP_TIMEOUT = 15
CALL_TIMEOUT = 60
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-06-18",
}
LOOKUP_MCP = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "lookup_capability", "arguments": {"agent": "claude", "capability": "mcp"}},
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(proc: subprocess.Popen, port: int, timeout: float = STARTUP_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with code {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"server did not listen on port {port} within {timeout} s")


def server_port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def start_server(
    token: str | None = None, *args: str, log: Path | None = None, fd_limit: int | None = None
) -> Iterator[str]:
    """Run the HTTP server in a subprocess (with at most ``fd_limit`` open files); yield its /mcp URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_HTTP_TIMEOUT": "1"}
    env.pop("AGENT_CAPABILITIES_TOKEN", None)
    if token is not None:
        env["AGENT_CAPABILITIES_TOKEN"] = token
    command = [sys.executable, "-m", "server", "--transport", "streamable-http"]
    stderr = log.open("w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit)))
        if fd_limit
        else None,
    )
    try:
        wait_for_port(proc, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        if log:
            stderr.close()


def post(url: str, body: dict, **headers: str) -> httpx2.Response:
    return httpx2.post(url, json=body, headers={**MCP_HEADERS, **headers}, timeout=CALL_TIMEOUT)


def rpc_result(response: httpx2.Response) -> dict:
    """The JSON-RPC message in a 200 response, whether sent as JSON or as one SSE event."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers["content-type"].startswith("application/json"):
        message = response.json()
    else:
        lines = response.text.splitlines()
        data = [line.removeprefix("data:").strip() for line in lines if line.startswith("data:")]
        messages = [json.loads(d) for d in data if d]
        assert len(messages) == 1, response.text
        message = messages[0]
    assert message["jsonrpc"] == "2.0"
    return message["result"]


def lookup_over_client(url: str) -> dict:
    """Call lookup_capability(claude, mcp) through the SDK client; return the parsed answer."""

    async def run() -> dict:
        with anyio.fail_after(CALL_TIMEOUT):
            async with Client(url) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "lookup_capability" in names
                result = await client.call_tool("lookup_capability", {"agent": "claude", "capability": "mcp"})
                assert result.is_error is False, result.content
                return json.loads(result.content[0].text)

    return anyio.run(run)


def assert_mcp_support_answer(data: dict) -> None:
    assert data["agent"] == "claude-code"
    assert data["capability"]["name"] == "MCP Support"
    assert data["capability"]["available"] is True
    assert data["match"]["method"] == "alias"


# --- open server ---------------------------------------------------------------------------


def test_sdk_client_calls_a_tool_over_streamable_http(open_server):
    assert_mcp_support_answer(lookup_over_client(open_server))


def test_raw_post_without_origin_is_served(open_server):
    result = rpc_result(post(open_server, LOOKUP_MCP))
    assert result["isError"] is False
    assert_mcp_support_answer(json.loads(result["content"][0]["text"]))


def test_request_from_a_foreign_origin_is_refused(open_server):
    response = post(open_server, LOOKUP_MCP, Origin="http://evil.example")
    assert response.status_code == 403
    assert "Origin" in response.text
    assert "MCP Support" not in response.text


def test_request_from_the_servers_own_origin_is_served(open_server):
    origin = open_server.removesuffix("/mcp")
    result = rpc_result(post(open_server, LOOKUP_MCP, Origin=origin))
    assert result["isError"] is False


# --- token-protected server ----------------------------------------------------------------


def test_request_without_token_is_unauthorized(token_server):
    response = post(token_server, LOOKUP_MCP)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token"') and "AGENT_CAPABILITIES_TOKEN" in challenge
    body = response.json()
    assert body["error"] == "invalid_token"
    assert "Authorization: Bearer" in body["error_description"]
    assert "MCP Support" not in response.text


def test_request_with_wrong_token_is_unauthorized(token_server):
    response = post(token_server, LOOKUP_MCP, Authorization="Bearer not-the-secret")
    assert response.status_code == 401
    assert "MCP Support" not in response.text


def test_raw_post_with_the_token_is_served(token_server):
    result = rpc_result(post(token_server, LOOKUP_MCP, Authorization=f"Bearer {TOKEN}"))
    assert result["isError"] is False
    assert_mcp_support_answer(json.loads(result["content"][0]["text"]))


def test_sdk_client_with_the_token_calls_a_tool(token_server):
    async def run() -> dict:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT) as http:
            with anyio.fail_after(CALL_TIMEOUT):
                async with Client(streamable_http_client(token_server, http_client=http)) as client:
                    arguments = {"agent": "claude", "capability": "mcp"}
                    result = await client.call_tool("lookup_capability", arguments)
                    assert result.is_error is False, result.content
                    return json.loads(result.content[0].text)

    assert_mcp_support_answer(anyio.run(run))


def test_bearer_scheme_is_case_insensitive(token_server):
    result = rpc_result(post(token_server, LOOKUP_MCP, Authorization=f"bearer {TOKEN}"))
    assert result["isError"] is False


def test_oauth_discovery_paths_answer_404_telling_to_send_the_bearer_header(token_server):
    base = token_server.removesuffix("/mcp")
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "/register",
    ):
        response = httpx2.get(base + path, timeout=CALL_TIMEOUT)
        assert response.status_code == 404, path
        assert "Authorization: Bearer <token>" in response.json()["error_description"]


def test_duplicate_authorization_headers_are_rejected(token_server):
    headers = [
        *MCP_HEADERS.items(),
        ("Authorization", f"Bearer {TOKEN}"),
        ("Authorization", "Bearer other"),
    ]
    response = httpx2.post(token_server, json=LOOKUP_MCP, headers=headers, timeout=CALL_TIMEOUT)
    assert response.status_code == 400
    assert "authorization" in response.text


def test_duplicate_origin_headers_are_rejected(open_server):
    origin = open_server.removesuffix("/mcp")
    headers = [*MCP_HEADERS.items(), ("Origin", origin), ("Origin", "http://evil.example")]
    response = httpx2.post(open_server, json=LOOKUP_MCP, headers=headers, timeout=CALL_TIMEOUT)
    assert response.status_code == 400


def test_unknown_host_gets_421_naming_the_flag(open_server):
    response = post(open_server, LOOKUP_MCP, Host="Example.COM")
    assert response.status_code == 421
    assert "--allow-host example.com" in response.text


@pytest.fixture(scope="module")
def allow_host_server() -> Iterator[str]:
    yield from start_server(None, "--allow-host", "MyBox.local")


@pytest.mark.parametrize("port", [None, 80, "own"])
def test_allowed_host_is_accepted_on_the_servers_port_or_a_default_one(allow_host_server, port):
    port = server_port(allow_host_server) if port == "own" else port
    host = "MYBOX.local" + (f":{port}" if port else "")
    result = rpc_result(post(allow_host_server, LOOKUP_MCP, Host=host))
    assert result["isError"] is False


def test_a_host_naming_another_port_is_refused_naming_the_flag(open_server):
    response = post(open_server, LOOKUP_MCP, Host="localhost:9")
    assert response.status_code == 421
    assert "--allow-host localhost:9 " in response.text


@pytest.mark.parametrize("origin", ["http://mybox.local", "https://MyBox.local:443"])
def test_allowed_host_is_accepted_as_origin(allow_host_server, origin):
    result = rpc_result(post(allow_host_server, LOOKUP_MCP, Host="mybox.local", Origin=origin))
    assert result["isError"] is False


def test_foreign_origin_refusal_names_the_flag(allow_host_server):
    response = post(allow_host_server, LOOKUP_MCP, Origin="http://evil.example")
    assert response.status_code == 403
    assert "--allow-host evil.example" in response.text


def test_a_trickled_body_is_cut_off(open_server):
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n{"
        )
        sock.sendall(head.encode())
        started = time.monotonic()
        reply = sock.recv(4096)
    assert b" 408 " in reply.split(b"\r\n", 1)[0]
    assert time.monotonic() - started < 5


def test_a_connection_that_never_sends_a_request_is_closed(open_server):
    port = server_port(open_server)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.monotonic()
        assert sock.recv(4096) == b""  # closed by the server, not by our 10 s timeout
    assert time.monotonic() - started < 5


def test_the_startup_line_says_where_it_serves_and_comes_only_once_the_server_answers():
    """Scripts wait for 'serving' and connect at once: that first request must be answered."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()  # blocks until the server says something
        assert line.startswith(f"serving http://127.0.0.1:{port}/mcp"), line
        socket.create_connection(("127.0.0.1", port), timeout=10).close()  # not refused
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert rpc_result(post(f"http://127.0.0.1:{port}/mcp", ping)) == {}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def serve_on_port(port: str) -> subprocess.CompletedProcess:
    """Start the HTTP server on ``port`` and wait for it to exit (these tests expect it to refuse)."""
    return subprocess.run(
        [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", port],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_invalid_port_is_one_line_and_nonzero_exit():
    proc = serve_on_port("99999")
    assert proc.returncode != 0
    assert "99999" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_port_in_use_is_one_clear_line(open_server):
    port = str(server_port(open_server))
    proc = serve_on_port(port)
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()  # nothing says "serving" first, no uvicorn ERROR line
    assert f"cannot serve on 127.0.0.1:{port}" in line and "already in use" in line and "--port" in line


def test_sigterm_stops_the_http_server_and_leaves_its_rows_in_the_database_file(tmp_path):
    db = tmp_path / "gaps.db"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": str(db)}
    command = [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", str(port)]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(proc, port)
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "request_capability", "arguments": {"capability": "teleport the user"}},
        }
        result = rpc_result(post(f"http://127.0.0.1:{port}/mcp", request))
        assert json.loads(result["content"][0]["text"])["recorded"] is True
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert "Traceback" not in proc.stderr.read().decode()
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(db.read_bytes())  # the main file alone, without -wal
    with sqlite3.connect(copy) as conn:
        assert [r[0] for r in conn.execute("SELECT capability FROM requests")] == ["teleport the user"]


def test_ctrl_c_with_a_request_still_open_exits_cleanly(tmp_path):
    port = free_port()
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "server", "--transport", "streamable-http", "--port", str(port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            wait_for_port(proc, port)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 400\r\n\r\n{{"
                sock.sendall(head.encode())
                time.sleep(0.5)
                proc.send_signal(signal.SIGINT)
                assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    text = log.read_text()
    assert "Traceback" not in text and "terminate called" not in text and "ERROR" not in text, text


def post_text(url: str, text: str) -> httpx2.Response:
    return httpx2.post(url, content=text.encode(), headers=MCP_HEADERS, timeout=CALL_TIMEOUT)


def test_a_batch_gets_a_json_rpc_error_saying_batches_are_not_supported(open_server):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    response = post_text(open_server, json.dumps(batch))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600 and "batches are not supported" in error["message"]
    assert "validation error" not in response.text.lower()  # no pydantic text


def test_an_id_that_is_an_object_gets_a_json_rpc_error_not_an_empty_202(open_server):
    response = post_text(open_server, json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600 and error["message"].endswith(
        "id must be a string or an integer, got an object"
    )


@pytest.mark.parametrize("depth", [1000, 20_000])  # the larger body is checked off the event loop
def test_a_body_nested_past_the_parser_is_refused_with_its_id(open_server, depth):
    deep = '{"a":' * depth + "1" + "}" * depth
    response = post_text(open_server, '{"jsonrpc": "2.0", "method": "ping", "params": ' + deep + ', "id": 4}')
    assert response.status_code == 400 and response.json()["id"] == 4


def test_a_byte_order_mark_or_a_lone_surrogate_escape_is_served(open_server):
    ping = rpc_result(
        post_text(open_server, "\ufeff" + json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
    )
    assert ping == {}
    cut = {
        **LOOKUP_MCP,
        "params": {**LOOKUP_MCP["params"], "arguments": {"agent": "claude", "capability": "mcp \ud800"}},
    }
    result = rpc_result(post_text(open_server, json.dumps(cut)))
    assert "\ufffd" in json.loads(result["content"][0]["text"])["match"]["query"]
