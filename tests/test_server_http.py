"""``python -m server --transport streamable-http``: tool calls, Origin checks, optional bearer token."""

from __future__ import annotations

import json
import os
import socket
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

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "secret"
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


def start_server(token: str | None = None) -> Iterator[str]:
    """Run the HTTP server in a subprocess; yield its /mcp URL; always stop it."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("AGENT_CAPABILITIES_TOKEN", None)
    if token is not None:
        env["AGENT_CAPABILITIES_TOKEN"] = token
    command = [sys.executable, "-m", "server", "--transport", "streamable-http"]
    proc = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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


@pytest.fixture(scope="module")
def open_server() -> Iterator[str]:
    yield from start_server()


@pytest.fixture(scope="module")
def token_server() -> Iterator[str]:
    yield from start_server(token=TOKEN)


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
    assert response.headers["www-authenticate"] == "Bearer"
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
