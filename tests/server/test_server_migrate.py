"""migrate_between_agents over the in-memory MCP client: the library's answer, within its token budget.

The budget is counted the way ``build_scripts/measure/bench_tokens.py`` counts it, on the pairs that
script reports, so the figure it prints and this test cannot disagree.
"""

from __future__ import annotations

import json

import pytest
from mcp import Client

import engine
from build_scripts.measure import bench_tokens
from engine.catalog.uncovered import load_uncovered

pytestmark = pytest.mark.anyio

TOOL = "migrate_between_agents"
BUDGET = 2000  # tokens (cl100k) for a whole pair, as issue 30 asks
BENCH_PAIRS = [args for name, args in bench_tokens.CALLS if name == TOOL]


async def tool_error(client: Client, **arguments) -> str:
    result = await client.call_tool(TOOL, arguments)
    assert result.is_error is True, result.content
    return result.content[0].text


def test_bench_tokens_reports_the_two_pairs_the_issue_names():
    pairs = {(a["from_agent"], a["to_agent"]) for a in BENCH_PAIRS}
    assert {("claude-code", "codex"), ("cursor", "cline")} <= pairs


@pytest.mark.parametrize("arguments", BENCH_PAIRS)
async def test_a_whole_pair_fits_the_token_budget(client, arguments):
    result = await client.call_tool(TOOL, arguments)
    assert result.is_error is not True, result.content
    tokens = bench_tokens.count(result.content[0].text)
    assert tokens <= BUDGET, f"{arguments}: {tokens} tokens"


@pytest.mark.parametrize("arguments", BENCH_PAIRS)
async def test_the_tool_answers_what_the_library_answers(client, arguments):
    result = await client.call_tool(TOOL, arguments)
    expected = engine.answers.migrate(arguments["from_agent"], arguments["to_agent"])
    assert result.structured_content == expected
    assert json.loads(result.content[0].text) == expected


async def test_one_category_narrows_the_answer(client):
    category = engine.get_catalog().categories[0]
    result = await client.call_tool(TOOL, {"from_agent": "cursor", "to_agent": "cline", "category": category})
    assert result.is_error is not True, result.content
    assert result.structured_content == engine.answers.migrate("cursor", "cline", category)
    assert set(result.structured_content["capabilities"]) <= {category}


async def test_an_unknown_agent_is_a_tool_error_listing_the_agents(client):
    text = await tool_error(client, from_agent="claude", to_agent="no such agent")
    assert "to_agent: Unknown agent 'no such agent'" in text
    assert all(agent_id in text for agent_id in engine.get_catalog().agent_ids)


async def test_the_same_agent_twice_is_a_tool_error(client):
    text = await tool_error(client, from_agent="cursor", to_agent="Cursor")
    assert "both 'cursor'" in text


async def test_a_bad_category_is_a_tool_error_listing_the_categories(client):
    text = await tool_error(client, from_agent="cursor", to_agent="cline", category="teleportation")
    assert all(category in text for category in engine.get_catalog().categories)


async def test_a_missing_or_misspelled_argument_is_named(client):
    assert "needs the argument 'to_agent'" in await tool_error(client, from_agent="cursor")
    text = await tool_error(client, from_agent="cursor", to_agnet="cline")
    assert "Did you mean 'to_agent'?" in text


async def test_an_uncovered_old_agent_is_an_answer_not_an_error(client):
    uncovered = next(iter(load_uncovered().values()))
    new = engine.get_catalog().agent_ids[-1]
    result = await client.call_tool(TOOL, {"from_agent": uncovered.display_name, "to_agent": new})
    assert result.is_error is not True, result.content
    assert result.structured_content["from"] == uncovered.to_dict()
