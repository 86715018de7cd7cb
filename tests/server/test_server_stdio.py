"""``python -m server`` over stdio: the SDK client end to end; stdout carries only JSON-RPC."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

import engine

ROOT = Path(__file__).resolve().parents[2]
TOOL_NAMES = {
    "lookup_capability",
    "compare_capability",
    "list_capabilities",
    "get_sources",
    "migrate_between_agents",
    "request_capability",
}
AGENT_IDS = engine.get_catalog().agent_ids
TIMEOUT = 60  # generous: the first semantic query may load (and refresh) the ONNX encoder


def server_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}


def test_sdk_stdio_client_lists_and_calls_every_tool():
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "server"], cwd=str(ROOT), env=server_env()
    )

    async def session() -> dict:
        results = {}
        with anyio.fail_after(TIMEOUT):
            async with Client(params) as client:
                results["tools"] = {t.name for t in (await client.list_tools()).tools}
                undo = "undo the edits the agent just made"
                calls = {
                    "lookup_capability": {"agent": "claude", "capability": undo},
                    "compare_capability": {"capability": "mcp"},
                    "list_capabilities": {"agent": "gemini-cli"},
                    "get_sources": {"agent": "claude-code", "capability": "MCP Support"},
                    "migrate_between_agents": {"from_agent": "claude", "to_agent": "codex"},
                }
                for name, arguments in calls.items():
                    result = await client.call_tool(name, arguments)
                    assert result.is_error is False, result.content
                    results[name] = json.loads(result.content[0].text)
        return results

    results = anyio.run(session)

    assert results["tools"] == TOOL_NAMES

    lookup = results["lookup_capability"]
    assert lookup["agent"] == "claude-code"
    assert lookup["capability"]["name"] == "Checkpoints"
    assert lookup["match"]["method"] == "semantic"

    compare = results["compare_capability"]
    assert compare["capability"] == "MCP Support"
    assert [row["agent"] for row in compare["comparison"]] == AGENT_IDS

    listing = results["list_capabilities"]
    assert listing["agent"] == "gemini-cli"
    assert len(listing["capabilities"]) == len(engine.get_catalog().capabilities)

    sources = results["get_sources"]
    assert sources["capability"] == "MCP Support"
    assert sources["sources"] and all(s["url"].startswith("https://") for s in sources["sources"])

    migration = results["migrate_between_agents"]
    assert (migration["from"], migration["to"]) == ("claude-code", "codex")
    assert migration == engine.answers.migrate("claude-code", "codex")


class LineReader:
    """Read a pipe's lines on a thread so the test can wait with a timeout."""

    def __init__(self, stream) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.seen: list[bytes] = []
        self.thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self.thread.start()

    def _pump(self, stream) -> None:
        for line in iter(stream.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def next_line(self, deadline: float) -> bytes | None:
        line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if line is not None:
            self.seen.append(line)
        return line

    def wait_for_id(self, request_id: int, timeout: float = TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            line = self.next_line(deadline)
            assert line is not None, f"server closed stdout before answering request {request_id}"
            message = json.loads(line)
            if message.get("id") == request_id:
                return message

    def drain(self, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while self.next_line(deadline) is not None:
            pass


def test_stdout_carries_nothing_but_json_rpc():
    proc = subprocess.Popen(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        env={**os.environ, **server_env()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # stderr may contain anything (logs, warnings)
    )
    reader = LineReader(proc.stdout)

    def send(message: dict) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    try:
        send(INIT)
        init = reader.wait_for_id(1)
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert init["result"]["serverInfo"]["name"] == "agent-capabilities"
        from server.server import package_version

        assert init["result"]["serverInfo"]["version"] == package_version() != ""
        assert "prompts" not in init["result"]["capabilities"]  # nothing advertised that is not served

        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "lookup_capability",
                    "arguments": {"agent": "claude", "capability": "undo the edits the agent just made"},
                },
            }
        )
        call = reader.wait_for_id(2)
        assert call["result"]["isError"] is False
        data = json.loads(call["result"]["content"][0]["text"])
        assert data["agent"] == "claude-code"
        assert data["capability"]["name"] == "Checkpoints"

        proc.stdin.close()  # end of input: the server should exit on its own
        assert proc.wait(timeout=15) == 0
        reader.drain()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)

    assert len(reader.seen) >= 2
    for line in reader.seen:
        message = json.loads(line)  # anything but JSON-RPC on stdout breaks the protocol
        assert message.get("jsonrpc") == "2.0", line


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def run_piped(lines: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """Feed whole input at once and close stdin, like ``agent-capabilities-mcp < requests.jsonl``."""
    return subprocess.run(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        env={**os.environ, **server_env(), **(env or {})},
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def call_line(request_id: int, tool: str, arguments) -> str:
    params = {"name": tool, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})


def test_piped_requests_are_all_answered_before_exit():
    lines = [json.dumps(INIT), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
    lines += [
        call_line(i, "lookup_capability", {"agent": "gemini", "capability": "sandbox"}) for i in range(2, 6)
    ]
    proc = run_piped(lines)
    assert proc.returncode == 0, proc.stderr
    answered = {json.loads(line)["id"] for line in proc.stdout.splitlines()}
    assert answered == {1, 2, 3, 4, 5}


def test_invalid_lines_get_json_rpc_errors_not_silence():
    lines = [
        json.dumps(INIT),
        "this is not json",
        json.dumps([{"jsonrpc": "2.0", "id": 8, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": ["lookup_capability"]}),
        "[" * 10000 + "]" * 10000,
        json.dumps({"jsonrpc": "2.0", "id": 10, "method": "ping"}),
    ]
    proc = run_piped(lines)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [r["error"] for r in replies if "error" in r]
    assert [e["code"] for e in errors] == [-32700, -32600, -32600, -32600]  # the last: nesting too deep
    assert "batch" in errors[1]["message"]
    assert "params must be an object" in errors[2]["message"]
    assert any(r.get("id") == 9 for r in replies if "error" in r)  # the id is echoed when known
    assert any(r.get("id") == 10 and "result" in r for r in replies)  # the stream goes on after errors
    assert proc.stderr.count("answered an invalid message") == 4


def start_on(data_dir: Path) -> subprocess.CompletedProcess:
    """Start the stdio server on a copy of the catalog data, with one request on stdin."""
    script = (
        "import sys, engine.catalog.model as c; c.DATA_DIR = c.Path(sys.argv[1]); "
        "import server; raise SystemExit(server.main([]))"
    )
    return subprocess.run(
        [sys.executable, "-c", script, str(data_dir)],
        cwd=ROOT,
        env={**os.environ, **server_env()},
        input=json.dumps(INIT) + "\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_broken_catalog_data_stops_the_server_with_one_line(data_copy, tmp_path):
    caps = json.loads((data_copy / "capabilities.json").read_text())
    del caps["capabilities"][0]["summary"]
    (data_copy / "capabilities.json").write_text(json.dumps(caps))
    proc = start_on(data_copy)
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "capabilities.json" in lines[0] and "summary" in lines[0] and "Agent Mode" in lines[0]


def test_a_truncated_uncovered_file_stops_the_server_with_one_line(data_copy):
    path = data_copy / "uncovered.json"
    path.write_bytes(path.read_bytes()[:100])
    proc = start_on(data_copy)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot start" in lines[0] and "uncovered.json" in lines[0]


def test_every_request_with_an_id_is_answered_even_with_lone_surrogates_or_deep_nesting():
    # Lines Python's json reads but the SDK's parser refuses: the SDK used to drop them silently.
    deep = "[" * 300 + "]" * 300
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        # JavaScript writes a string cut inside an emoji as a lone surrogate escape (json.dumps does too).
        call_line(2, "lookup_capability", {"agent": "claude", "capability": "mcp \ud800 support"}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "pi\udfffng"}),
        json.dumps({"jsonrpc": "2.0", "id": "cut \ud83d", "method": "ping"}),
        call_line(4, "lookup_capability", {"agent": "claude", "capability": json.loads(deep)}),
        '{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"x": ' + deep + "}}",
        json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}),
    ]
    proc = run_piped(lines)
    assert proc.returncode == 0, proc.stderr
    assert "still unanswered" not in proc.stderr
    replies = {json.dumps(r["id"]): r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(replies) == {"1", "2", "3", '"cut \\ud83d"', "4", "5", "6"}
    lookup = json.loads(replies["2"]["result"]["content"][0]["text"])  # served, the surrogate as U+FFFD
    assert lookup["capability"]["name"] == "MCP Support" and "\ufffd" in lookup["match"]["query"]
    assert replies["3"]["error"]["code"] == -32601  # an unknown method, answered as one
    assert replies['"cut \\ud83d"']["error"]["code"] == -32600  # the id echoed exactly as sent
    for nested in ("4", "5"):
        assert replies[nested]["error"]["code"] == -32600
        assert "nested deeper" in replies[nested]["error"]["message"]


def test_an_id_that_is_not_a_string_or_integer_gets_invalid_request():
    ids = [{"a": 1}, [1], True, 1.5, None]
    lines = [json.dumps(INIT)]
    lines += [json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"}) for i in ids]
    lines.append(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}))
    proc = run_piped(lines)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    errors = [r for r in replies if "error" in r]
    assert [e["id"] for e in errors] == [None] * len(ids)
    assert {e["error"]["code"] for e in errors} == {-32600}
    kinds = ["an object", "an array", "a boolean", "a number with a fraction", "null"]
    for error, kind in zip(errors, kinds, strict=True):
        assert error["error"]["message"].endswith(f"id must be a string or an integer, got {kind}")
    assert replies[-1] == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_a_line_too_long_too_deep_or_after_a_byte_order_mark_is_answered_with_its_id():
    # The audit's stdio fuzz: 467 requests with a readable id were answered with id null.
    huge = {"name": "lookup_capability", "arguments": {"agent": "claude", "capability": "x" * (1 << 20)}}
    deep = '{"a":' * 1000 + "1" + "}" * 1000
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": huge, "id": 11}),  # the id at the end
        '{"jsonrpc": "2.0", "id": 12, "method": "ping", "params": ' + deep + "}",
        '{"jsonrpc": "2.0", "method": "ping", "params": ' + deep + ', "id": "after"}',
        "\ufeff" + json.dumps({"jsonrpc": "2.0", "id": 14, "method": "ping"}),
    ]
    proc = run_piped(lines)
    assert proc.returncode == 0, proc.stderr
    replies = {json.dumps(r["id"]): r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(replies) == {"1", "11", "12", '"after"', "14"}
    assert replies["11"]["error"]["code"] == -32600 and "over" in replies["11"]["error"]["message"]
    for nested in ("12", '"after"'):
        assert replies[nested]["error"]["code"] == -32600
        assert "nested deeper" in replies[nested]["error"]["message"]
    assert replies["14"]["result"] == {}  # the byte order mark is dropped and the ping served
