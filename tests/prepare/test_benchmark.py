"""build_scripts/measure/benchmark.py end to end: a stub chat-completions server on loopback, the real server.

The stub speaks the OpenAI chat-completions wire format and returns scripted
tool calls, so each test exercises HTTP, the SDK, tool-call parsing, execution
over stdio and scoring. No network beyond 127.0.0.1 and no keys.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from mcp import Client

from build_scripts.measure import benchmark
from server.server import build_server

ROOT = Path(__file__).resolve().parents[2]
SUITE = json.loads((ROOT / "queries" / "benchmark" / "prompts.json").read_text())["prompts"]
BY_INPUT = {p["input"]: p for p in SUITE}
MCP_CALL = {"agent": "claude-code", "capability": "MCP Support"}


def tool_call(name, arguments, call_id="call_1") -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


class StubLLM:
    """A chat-completions endpoint whose replies come from ``script(request_body) -> message or int``."""

    def __init__(self, script) -> None:
        self.script = script
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append(body)
                reply = stub.script(body)
                if isinstance(reply, int):  # an HTTP error status
                    payload, status = (
                        {"error": {"message": "scripted failure", "type": "invalid_request"}},
                        reply,
                    )
                elif self.path.endswith("/messages"):  # Anthropic: the script returns content blocks
                    status = 200
                    payload = {
                        "id": f"msg_{len(stub.requests)}",
                        "type": "message",
                        "role": "assistant",
                        "model": body["model"],
                        "content": reply,
                        "stop_reason": "tool_use"
                        if any(b["type"] == "tool_use" for b in reply)
                        else "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 50, "output_tokens": 5},
                    }
                else:
                    status = 200
                    payload = {
                        "id": f"chatcmpl-{len(stub.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                    }
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> StubLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answered(body: dict) -> bool:
    """True once the conversation holds a tool result: the stub then ends with text."""
    return body["messages"][-1]["role"] == "tool"


def user_prompt(body: dict) -> dict:
    return BY_INPUT[next(m["content"] for m in body["messages"] if m["role"] == "user")]


def always_lookup(body: dict) -> dict:
    if answered(body):
        return {"role": "assistant", "content": "Done."}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call("lookup_capability", MCP_CALL)]}


def oracle(body: dict) -> dict:
    """Calls exactly what the suite expects (every flow step of a scenario, in one turn)."""
    prompt = user_prompt(body)
    if answered(body) or prompt["expectedTool"] is None:
        return {"role": "assistant", "content": "Answered without tools."}
    steps = (
        prompt["scenario"]["flow"]
        if prompt.get("scenario")
        else [{"tool": prompt["expectedTool"], "args": prompt["expectedArgs"]}]
    )
    calls = [tool_call(s["tool"], s["args"], f"call_{i}") for i, s in enumerate(steps)]
    return {"role": "assistant", "content": None, "tool_calls": calls}


BROKEN = [
    ("badJson", tool_call("lookup_capability", '{"agent": "claude-code", "capability": ')),
    ("unknownTool", tool_call("fly_to_the_moon", {"agent": "claude-code"})),
    ("malformed", {"id": "call_1", "type": "function", "function": {"arguments": "{}"}}),
    ("badJson", tool_call("compare_capability", "[1, 2, 3]")),
    ("malformed", "not a tool call"),
    ("malformed", {"id": "call_1", "type": "function"}),
]


def broken_script():
    kinds = itertools.cycle(BROKEN)

    def script(body: dict):
        if answered(body):
            return {"role": "assistant", "content": "I could not call the tool."}
        _kind, call = next(kinds)
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    return script


def run(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    assert benchmark.main([*args, "--out", str(out)]) == 0
    return json.loads(out.read_text())


def served_tools() -> list[dict]:
    async def listing():
        async with Client(build_server()) as client:
            return benchmark.tool_definitions((await client.list_tools()).tools)

    return anyio.run(listing)


def test_always_lookup_scores_exactly_the_share_of_lookup_prompts(tmp_path):
    with StubLLM(always_lookup) as stub:
        report = run(tmp_path, "lookup", "--llm", "openai", "--base-url", stub.url, "--model", "stub")

    lookups = sum(p["expectedTool"] == "lookup_capability" for p in SUITE)
    assert report["prompts"] == len(SUITE)
    assert report["invocationAccuracy"] == lookups / len(SUITE)
    assert report["model"] == "stub" and report["llm"] == "openai"

    # The model was given exactly the server's tools/list definitions.
    sent = [
        (t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
        for t in stub.requests[0]["tools"]
    ]
    assert sent == [(t["name"], t["description"], t["inputSchema"]) for t in served_tools()]

    # Only prompts that really ask for Claude Code + MCP get their arguments right.
    def wants_mcp(p):
        steps = (
            p["scenario"]["flow"]
            if p.get("scenario")
            else [{"tool": p["expectedTool"], "args": p["expectedArgs"]}]
        )
        required = [s for s in steps if not s.get("optional")]
        return all(s["tool"] == "lookup_capability" and s["args"] == MCP_CALL for s in required)

    right = {r["id"] for r in report["perPrompt"] if r["argumentsCorrect"]}
    assert right == {p["id"] for p in SUITE if p["expectedTool"] and wants_mcp(p)}
    assert report["retryRate"] == 0
    assert report["counts"]["callProblems"] == {
        "malformed": 0,
        "badJson": 0,
        "unknownTool": 0,
        "toolError": 0,
    }
    assert report["apiUsage"] == {"input": 100 * len(stub.requests), "output": 10 * len(stub.requests)}
    assert 0 < report["tokenEfficiency"] < 0.5


def test_broken_tool_calls_are_scored_wrong_and_counted(tmp_path):
    only = ",".join(p["id"] for p in SUITE[: len(BROKEN) * 2])
    with StubLLM(broken_script()) as stub:
        report = run(
            tmp_path, "broken", "--llm", "openai", "--base-url", stub.url, "--model", "broken", "--only", only
        )

    assert report["prompts"] == len(BROKEN) * 2
    assert report["invocationAccuracy"] == 0
    assert report["argumentAccuracy"] == 0
    expected = {"malformed": 0, "badJson": 0, "unknownTool": 0, "toolError": 0}
    for kind, _call in BROKEN * 2:
        expected[kind] += 1
    assert report["counts"]["callProblems"] == expected
    assert report["counts"]["llmErrors"] == 0
    # The error each call got was fed back to the model as a tool message.
    fed_back = [m["content"] for body in stub.requests for m in body["messages"] if m["role"] == "tool"]
    assert len(fed_back) == len(BROKEN) * 2 and all(text.startswith("Error:") for text in fed_back)


def test_api_errors_are_recorded_not_fatal(tmp_path):
    failing = {"lookup-rewind-cc", "none-haiku"}

    def script(body):
        return 400 if user_prompt(body)["id"] in failing else oracle(body)

    with StubLLM(script) as stub:
        report = run(
            tmp_path,
            "errors",
            "--llm",
            "openai",
            "--base-url",
            stub.url,
            "--model",
            "m",
            "--only",
            "lookup-mcp-claude,lookup-rewind-cc,none-haiku,none-thanks",
        )

    rows = {r["id"]: r for r in report["perPrompt"]}
    assert report["counts"]["llmErrors"] == 2
    assert all(rows[i]["error"] and not rows[i]["invocationCorrect"] for i in failing)
    assert rows["lookup-mcp-claude"]["invocationCorrect"] and rows["none-thanks"]["invocationCorrect"]


def test_anthropic_messages_path(tmp_path, monkeypatch):
    def script(body):
        last = body["messages"][-1]["content"]
        prompt = BY_INPUT[body["messages"][0]["content"]]
        if isinstance(last, list) and last[0]["type"] == "tool_result" or prompt["expectedTool"] is None:
            return [{"type": "text", "text": "Done."}]
        return [
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": prompt["expectedTool"],
                "input": prompt["expectedArgs"],
            }
        ]

    monkeypatch.setenv("ANTHROPIC_API_KEY", "not-a-real-key")
    with StubLLM(script) as stub:
        report = run(
            tmp_path,
            "anthropic",
            "--llm",
            "anthropic",
            "--base-url",
            stub.url.removesuffix("/v1"),
            "--model",
            "claude-stub",
            "--only",
            "lookup-mcp-claude,compare-debugging-all,none-thanks",
        )

    assert stub.requests[0]["tools"][0].keys() == {"name", "description", "input_schema"}
    assert stub.requests[1]["messages"][-1]["content"][0]["type"] == "tool_result"
    assert (report["invocationAccuracy"], report["argumentAccuracy"], report["retryRate"]) == (1, 1, 0)
    assert report["apiUsage"] == {"input": 50 * len(stub.requests), "output": 5 * len(stub.requests)}


def test_missing_sdk_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    assert benchmark.main(["--llm", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 2
    assert "agent-capabilities[bench]" in capsys.readouterr().err


def test_offline_says_invocation_was_not_measured(tmp_path, capsys):
    report = run(
        tmp_path, "offline", "--llm", "none", "--only", "lookup-mcp-claude,compare-*,none-*,scenario-*"
    )
    out = capsys.readouterr().out

    assert "NOT measured" in out and "Invocation accuracy | not measured" in out
    assert report["invocationAccuracy"] is None and report["retryRate"] is None
    assert report["llm"] == "none" and "invocationAccuracy" in report["notMeasured"]
    assert 0 < report["tokenEfficiency"] < 0.5
    scenarios = {s["id"]: s for s in report["scenarios"]}
    assert len(scenarios) == 5 and all(s["inRange"] for s in scenarios.values())
    assert scenarios["scenario-parity"]["calls"] == 4


def test_replay_rescores_a_recorded_run_identically(tmp_path):
    ids = [p["id"] for p in SUITE[::3]] + ["scenario-parity", "scenario-debug-workflow"]
    broken = broken_script()

    def mixed(body):  # lookups miss first and retry, listings break, the rest is right
        prompt = user_prompt(body)
        if prompt["id"].startswith("list-"):
            return broken(body)
        turns = sum(m["role"] == "assistant" for m in body["messages"])
        if prompt["id"].startswith("lookup-") and turns < 2:
            if turns == 0:
                pizza = {"agent": prompt["expectedArgs"]["agent"], "capability": "order a pizza"}
                return {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [tool_call("lookup_capability", pizza)],
                }
            return oracle({**body, "messages": body["messages"][:2]})
        return oracle(body)

    with StubLLM(mixed) as stub:
        args = ["--llm", "openai", "--base-url", stub.url, "--model", "mixed", "--only", ",".join(ids)]
        first = run(tmp_path, "first", *args)
    replayed = run(tmp_path, "replayed", "--llm", "replay", str(tmp_path / "first.json"))

    assert first["retryRate"] > 0 and sum(first["counts"]["callProblems"].values()) > 0
    for key in (
        "prompts",
        "invocationAccuracy",
        "argumentAccuracy",
        "tokenEfficiency",
        "retryRate",
        "counts",
        "tokens",
        "apiUsage",
        "scenarios",
        "model",
    ):
        assert replayed[key] == first[key], key
    scored = (
        "id",
        "toolsCalled",
        "invocationCorrect",
        "argumentsCorrect",
        "argumentProblems",
        "retried",
        "tokens",
    )
    assert [{k: r.get(k) for k in scored} for r in replayed["perPrompt"]] == [
        {k: r.get(k) for k in scored} for r in first["perPrompt"]
    ]
    assert replayed["llm"] == "replay"


def test_oracle_arguments_agree_with_offline_resolution(tmp_path):
    with StubLLM(oracle) as stub:
        online = run(tmp_path, "oracle", "--llm", "openai", "--base-url", stub.url, "--model", "oracle")
    offline = run(tmp_path, "offline", "--llm", "none")

    scored = {r["id"]: r["argumentsCorrect"] for r in offline["perPrompt"]}
    assert {r["id"]: r["argumentsCorrect"] for r in online["perPrompt"]} == scored
    missing = sum(p["expectedTool"] not in online["toolsOffered"] for p in SUITE if p["expectedTool"])
    assert online["invocationAccuracy"] == (len(SUITE) - missing) / len(SUITE)
    assert online["retryRate"] == 0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--llm", "replay"], "one report file"),
        (["--llm", "openai"], "--model"),
        (["--llm", "gpt"], "expected openai"),
    ],
)
def test_bad_command_lines_say_what_to_do(argv, message, capsys):
    with pytest.raises(SystemExit):
        benchmark.main(argv)
    assert message in capsys.readouterr().err


def test_compare_makes_one_table(tmp_path, capsys):
    a = {
        "model": "a",
        "llm": "openai",
        "prompts": 3,
        "invocationAccuracy": 0.95,
        "argumentAccuracy": 0.8,
        "tokenEfficiency": 0.1,
        "retryRate": 0.0,
    }
    b = {**a, "model": "b", "llm": "anthropic", "invocationAccuracy": 0.5}
    paths = []
    for r in (a, b):
        paths.append(tmp_path / f"{r['model']}.json")
        paths[-1].write_text(json.dumps(r))
    assert benchmark.main(["--compare", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert "| a | openai | 3 | 95.0% ✓ | 80.0% | 10.0% ✓ | 0.0% ✓ |" in out
    assert "| b | anthropic | 3 | 50.0% |" in out
