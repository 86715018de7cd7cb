"""Tool titles and structured output: the catalog tools publish an outputSchema and answer with
structuredContent that equals their compact JSON text. Called through the SDK's in-memory Client,
which itself checks each structured answer against the tool's schema.
"""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

import engine
import engine.catalog.answers
from engine.catalog import answers
from engine.matching.results import Candidate, Match

pytestmark = pytest.mark.anyio

CATALOG_TOOLS = (
    "lookup_capability",
    "compare_capability",
    "list_capabilities",
    "get_sources",
    "migrate_between_agents",
)


@pytest.fixture
async def tools(client) -> dict:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_every_tool_has_a_title(tools):
    assert len(tools) == 6
    assert all(tool.title and tool.title != tool.name for tool in tools.values())


async def test_the_catalog_tools_publish_an_output_schema_and_request_capability_does_not(tools):
    for name in CATALOG_TOOLS:
        schema = tools[name].output_schema
        assert schema and schema["type"] == "object", name
        Draft202012Validator.check_schema(schema)
    assert tools["request_capability"].output_schema is None


ANSWER_KINDS = [
    ("lookup_capability", {"agent": "claude", "capability": "connect MCP servers"}),
    ("lookup_capability", {"agent": "claude-code", "capability": "autocomplete"}),  # not available
    ("lookup_capability", {"agent": "gemini", "capability": "order a pizza"}),  # no match
    ("compare_capability", {"capability": "voice input"}),
    ("compare_capability", {"capability": "autocomplete", "agents": ["gemini", "vscode-copilot"]}),
    ("compare_capability", {"capability": "order a pizza"}),
    ("list_capabilities", {"agent": "copilot-cli"}),
    ("list_capabilities", {"category": "security"}),
    ("list_capabilities", {"agent": "gemini", "category": "customization"}),
    ("get_sources", {"agent": "gemini-cli"}),
    ("get_sources", {"capability": "checkpoints"}),
    ("get_sources", {"agent": "claude", "capability": "hooks"}),
    ("get_sources", {"agent": "claude", "capability": "order a pizza"}),
    ("migrate_between_agents", {"from_agent": "claude", "to_agent": "codex"}),
    ("migrate_between_agents", {"from_agent": "cursor", "to_agent": "cline", "category": "customization"}),
    ("migrate_between_agents", {"from_agent": "roo code", "to_agent": "cline"}),  # not covered
]


@pytest.mark.parametrize(("tool", "arguments"), ANSWER_KINDS)
async def test_structured_content_is_the_text_answer_and_fits_the_schema(client, tools, tool, arguments):
    result = await client.call_tool(tool, arguments)
    assert result.is_error is not True, result.content
    [block] = result.content
    assert block.text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    Draft202012Validator(tools[tool].output_schema).validate(result.structured_content)


@pytest.fixture
def ambiguous_match(monkeypatch):
    def fake_match(query: str, *, k: int = 3, **_agent) -> Match:
        candidates = [
            Candidate("mcp-support", "MCP Support", 0.61),
            Candidate("hooks", "Lifecycle Hooks", 0.6),
        ]
        return Match(query, "MCP Support", "mcp-support", 0.61, "semantic", candidates, ambiguous=True)

    monkeypatch.setattr(engine.catalog.answers, "match", fake_match)


@pytest.mark.parametrize("tool", ["lookup_capability", "compare_capability"])
async def test_a_close_call_fits_the_schema_too(client, tools, ambiguous_match, tool):
    arguments = {"capability": "extend it"} | ({"agent": "claude"} if tool == "lookup_capability" else {})
    result = await client.call_tool(tool, arguments)
    assert result.structured_content["alternatives"][0]["name"] == "Lifecycle Hooks"
    Draft202012Validator(tools[tool].output_schema).validate(result.structured_content)


async def test_every_record_of_every_agent_fits_the_lookup_schema(tools):
    validator = Draft202012Validator(tools["lookup_capability"].output_schema)
    catalog = engine.get_catalog()
    for agent in catalog.agent_ids:
        for capability in catalog.capabilities:
            validator.validate(answers.lookup(agent, capability.name))


async def test_an_error_is_text_only(client):
    result = await client.call_tool("list_capabilities", {})
    assert result.is_error is True
    assert result.structured_content is None


async def test_an_unsure_lookup_leading_with_its_likeliest_record_fits_the_schema(client, tools, monkeypatch):
    def unsure(query: str, *, k: int = 3, **_agent) -> Match:
        candidates = [
            Candidate("checkpoints", "Checkpoints", 0.35),
            Candidate("hooks", "Lifecycle Hooks", 0.2),
        ]
        return Match(query, None, None, 0.35, "none", candidates)

    monkeypatch.setattr(engine.catalog.answers, "match", unsure)
    result = await client.call_tool("lookup_capability", {"agent": "claude", "capability": "undo that"})
    assert result.structured_content["likely"]["name"] == "Checkpoints"
    assert result.structured_content["capability"] is None
    Draft202012Validator(tools["lookup_capability"].output_schema).validate(result.structured_content)
