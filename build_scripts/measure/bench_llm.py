"""LLM back ends for ``benchmark.py``: OpenAI-compatible chat, Anthropic Messages, and replay.

Every adapter turns the MCP tool definitions into its API's tool format and
hands back the model's tool calls parsed defensively: a call with no name, a
non-object or unparseable argument string becomes a ``ToolCall`` with
``problem`` set, so the harness scores it wrong instead of crashing.
The SDKs are imported inside the adapters; they live in the ``bench`` extra.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

EXTRA_HINT = "pip install 'agent-capabilities[bench]' (or: pip install {package})"
MAX_OUTPUT_TOKENS = 1024


class AdapterError(Exception):
    """A back end that cannot start: missing SDK, missing key, unreadable recording."""


@dataclass
class ToolCall:
    """One tool call as the model sent it, with its arguments parsed (or the reason they could not be)."""

    id: str
    name: str | None
    raw: object  # the arguments exactly as the API returned them: a JSON string, an object, or None
    arguments: dict | None = None
    problem: str | None = None  # set when the call cannot be executed
    kind: str | None = None  # "malformed" or "badJson" when problem is set

    def to_dict(self) -> dict:
        """The recorded form, enough for ``parse_call`` to rebuild this call on replay."""
        return {"id": self.id, "name": self.name, "arguments": self.raw}


@dataclass
class Reply:
    """One model turn: its tool calls, its text, and the token usage the API reported."""

    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""
    usage: dict | None = None  # {"input": n, "output": n}


def parse_call(call_id: str, name: object, raw: object) -> ToolCall:
    """Parse one tool call; never raises."""
    call = ToolCall(id=call_id, name=name if isinstance(name, str) and name else None, raw=raw)
    if call.name is None:
        call.problem, call.kind = "malformed tool call: no tool name", "malformed"
        return call
    if raw is None or raw == "":
        call.arguments = {}
    elif isinstance(raw, dict):
        call.arguments = raw
    elif isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            call.problem, call.kind = f"arguments are not valid JSON ({exc.msg} at {exc.pos})", "badJson"
            return call
        if isinstance(value, dict):
            call.arguments = value
        else:
            call.problem, call.kind = (
                f"arguments must be a JSON object, got {type(value).__name__}",
                "badJson",
            )
    else:
        call.problem, call.kind = f"arguments must be a JSON object, got {type(raw).__name__}", "malformed"
    return call


def _import(package: str):
    try:
        return __import__(package)
    except ImportError as exc:
        raise AdapterError(
            f"--llm {package} needs the '{package}' package: {EXTRA_HINT.format(package=package)}"
        ) from exc


def _dicts(value: object) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


class OpenAIChat:
    """Any OpenAI-compatible chat-completions endpoint with tool calling (hosted, vLLM, llama.cpp, Ollama)."""

    llm = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        temperature: float | None = None,
        timeout: float = 120,
    ) -> None:
        openai = _import("openai")
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            if base_url is None:
                raise AdapterError("--llm openai needs OPENAI_API_KEY (or --base-url for a local server).")
            key = "unused"  # local servers ignore the key, but the SDK insists on one
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.client = openai.AsyncOpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=2)
        self.tools: list[dict] = []

    def use_tools(self, tools: list[dict]) -> None:
        """Offer these MCP tool definitions (name, description, inputSchema) as chat-completions functions."""
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t["inputSchema"],
                },
            }
            for t in tools
        ]

    def start(self, prompt_id: str, system: str, user: str) -> _OpenAIConversation:
        """A new conversation for one prompt."""
        return _OpenAIConversation(self, system, user)


class _OpenAIConversation:
    def __init__(self, adapter: OpenAIChat, system: str, user: str) -> None:
        self.adapter = adapter
        self.messages: list[dict] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self.turn = 0

    async def ask(self) -> Reply:
        extra = {} if self.adapter.temperature is None else {"temperature": self.adapter.temperature}
        response = await self.adapter.client.chat.completions.with_raw_response.create(
            model=self.adapter.model, messages=self.messages, tools=self.adapter.tools, **extra
        )
        # Parse the JSON ourselves: the SDK's models assume well-formed calls; broken ones must be scored.
        data = json.loads(response.text)
        choices = _dicts(data.get("choices"))
        message = choices[0].get("message") if choices else None
        message = message if isinstance(message, dict) else {}
        self.turn += 1
        calls, echoed = [], []
        raw_calls = message.get("tool_calls") if isinstance(message.get("tool_calls"), list) else []
        for index, raw in enumerate(raw_calls):
            raw = raw if isinstance(raw, dict) else {}  # a non-object entry still counts, as a malformed call
            function = raw.get("function") if isinstance(raw.get("function"), dict) else {}
            call_id = raw.get("id") if isinstance(raw.get("id"), str) else f"call_{self.turn}_{index}"
            call = parse_call(call_id, function.get("name"), function.get("arguments"))
            calls.append(call)
            arguments = function.get("arguments")
            echoed.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": call.name or "",
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        text = message.get("content") if isinstance(message.get("content"), str) else ""
        assistant: dict = {"role": "assistant", "content": text or None}
        if echoed:
            assistant["tool_calls"] = echoed
        self.messages.append(assistant)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        if usage:
            usage = {"input": usage.get("prompt_tokens") or 0, "output": usage.get("completion_tokens") or 0}
        return Reply(calls, text, usage)

    def add_results(self, reply: Reply, results: list[tuple[str, bool]]) -> None:
        for call, (text, _is_error) in zip(reply.calls, results, strict=True):
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


class AnthropicMessages:
    """Anthropic's Messages API with tools."""

    llm = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        temperature: float | None = None,
        timeout: float = 120,
    ) -> None:
        anthropic = _import("anthropic")
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AdapterError("--llm anthropic needs ANTHROPIC_API_KEY.")
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self.client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=2)
        self.tools: list[dict] = []

    def use_tools(self, tools: list[dict]) -> None:
        """Offer these MCP tool definitions as Messages API tools."""
        self.tools = [
            {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]}
            for t in tools
        ]

    def start(self, prompt_id: str, system: str, user: str) -> _AnthropicConversation:
        """A new conversation for one prompt."""
        return _AnthropicConversation(self, system, user)


class _AnthropicConversation:
    def __init__(self, adapter: AnthropicMessages, system: str, user: str) -> None:
        self.adapter = adapter
        self.system = system
        self.messages: list[dict] = [{"role": "user", "content": user}]
        self.turn = 0

    async def ask(self) -> Reply:
        extra = {} if self.adapter.temperature is None else {"temperature": self.adapter.temperature}
        response = await self.adapter.client.messages.create(
            model=self.adapter.model,
            max_tokens=MAX_OUTPUT_TOKENS,
            system=self.system,
            messages=self.messages,
            tools=self.adapter.tools,
            **extra,
        )
        data = response.model_dump(mode="json")
        self.turn += 1
        calls, texts, echoed = [], [], []
        for index, block in enumerate(_dicts(data.get("content"))):
            if block.get("type") == "text":
                texts.append(block.get("text") or "")
                echoed.append({"type": "text", "text": block.get("text") or ""})
            elif block.get("type") == "tool_use":
                call_id = (
                    block.get("id") if isinstance(block.get("id"), str) else f"toolu_{self.turn}_{index}"
                )
                call = parse_call(call_id, block.get("name"), block.get("input"))
                calls.append(call)
                echoed.append(
                    {
                        "type": "tool_use",
                        "id": call_id,
                        "name": call.name or "",
                        "input": call.arguments or {},
                    }
                )
        if echoed:
            self.messages.append({"role": "assistant", "content": echoed})
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        if usage:
            cached = (usage.get("cache_read_input_tokens") or 0) + (
                usage.get("cache_creation_input_tokens") or 0
            )
            usage = {
                "input": (usage.get("input_tokens") or 0) + cached,
                "output": usage.get("output_tokens") or 0,
            }
        return Reply(calls, "\n".join(texts), usage)

    def add_results(self, reply: Reply, results: list[tuple[str, bool]]) -> None:
        blocks = [
            {"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": is_error}
            for call, (text, is_error) in zip(reply.calls, results, strict=True)
        ]
        self.messages.append({"role": "user", "content": blocks})


class Replay:
    """Replays the model turns recorded in a report written with ``--out``, to re-score without an LLM."""

    llm = "replay"

    def __init__(self, path: Path | str) -> None:
        try:
            report = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise AdapterError(f"--llm replay: cannot read {path} as a report ({exc}).") from exc
        if report.get("llm") == "none":
            raise AdapterError(
                f"--llm replay: {path} is an offline (--llm none) report; it has no model turns."
            )
        if not isinstance(report.get("perPrompt"), list):
            raise AdapterError(
                f"--llm replay: {path} has no perPrompt list; pass a report written with --out."
            )
        self.model = report.get("model", "unknown")
        self.base_url = report.get("baseUrl")
        self.source = str(path)
        self.turns = {row["id"]: row.get("turns", []) for row in report["perPrompt"] if "id" in row}

    def use_tools(self, tools: list[dict]) -> None:
        """Nothing to offer: the recorded calls are replayed as they were."""

    def start(self, prompt_id: str, system: str, user: str) -> _ReplayConversation:
        """The recorded turns of one prompt."""
        if prompt_id not in self.turns:
            return _ReplayConversation(None, prompt_id)
        return _ReplayConversation(list(self.turns[prompt_id]), prompt_id)


class _ReplayConversation:
    def __init__(self, turns: list[dict] | None, prompt_id: str) -> None:
        self.turns = turns
        self.prompt_id = prompt_id

    async def ask(self) -> Reply:
        if self.turns is None:
            raise AdapterError(f"prompt '{self.prompt_id}' is not in the recording")
        if not self.turns:
            return Reply()
        turn = self.turns.pop(0)
        if turn.get("error"):
            raise AdapterError(turn["error"])
        calls = [
            parse_call(c.get("id", ""), c.get("name"), c.get("arguments")) for c in turn.get("calls", [])
        ]
        return Reply(calls, turn.get("text", ""), turn.get("usage"))

    def add_results(self, reply: Reply, results: list[tuple[str, bool]]) -> None:
        pass
