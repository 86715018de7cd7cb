"""The MCP tools, called through an in-memory ``Client(build_server())``.

Expected facts are read from the catalog itself (``engine.get_catalog()``), so
these tests check that the server reports the catalog faithfully rather than
pinning today's data.
"""

from __future__ import annotations

import json

import pytest
from mcp import Client

import engine
import engine.catalog.answers
from engine.common.text import MAX_QUERY_CHARS
from engine.matching.results import Candidate, Match
from server.server import build_server

pytestmark = pytest.mark.anyio

AGENT_IDS = engine.get_catalog().agent_ids
READ_ONLY_TOOLS = {
    "lookup_capability",
    "compare_capability",
    "list_capabilities",
    "get_sources",
    "migrate_between_agents",
}
TOOL_NAMES = READ_ONLY_TOOLS | {"request_capability"}
SOURCE_KEYS = {"url", "description", "verifiedDate", "status"}


@pytest.fixture
def catalog():
    return engine.get_catalog()


async def call(client: Client, tool: str, **arguments):
    """Call a tool; return the result and its single text block."""
    result = await client.call_tool(tool, arguments)
    assert len(result.content) == 1, result.content
    return result, result.content[0].text


async def answer(client: Client, tool: str, **arguments) -> dict:
    """A successful tool call's JSON answer."""
    result, text = await call(client, tool, **arguments)
    assert result.is_error is not True, text
    return json.loads(text)


async def tool_error(client: Client, tool: str, **arguments) -> str:
    """The text of a tool call that must fail as a tool error (isError), not a protocol error."""
    result, text = await call(client, tool, **arguments)
    assert result.is_error is True, text
    return text


def unavailable_record(catalog) -> tuple[str, str]:
    """Some (agent id, capability name) the catalog records as not available."""
    for agent_id, agent in catalog.agents.items():
        for name, record in agent.records.items():
            if not record["available"]:
                return agent_id, name
    pytest.fail("catalog has no unavailable record to test with")


def mixed_capability(catalog) -> str:
    """A capability some agents have and some lack."""
    for cap in catalog.capabilities:
        flags = {catalog.agents[a].records[cap.name]["available"] for a in catalog.agent_ids}
        if flags == {True, False}:
            return cap.name
    pytest.fail("catalog has no capability that only some agents have")


# --- tools/list ----------------------------------------------------------------------------


async def test_lists_exactly_the_six_tools(client):
    tools = (await client.list_tools()).tools
    assert sorted(t.name for t in tools) == sorted(TOOL_NAMES)


async def test_the_catalog_tools_are_read_only_and_every_tool_closed_world_and_idempotent(client):
    for tool in (await client.list_tools()).tools:
        ann = tool.annotations
        assert ann is not None, tool.name
        assert ann.read_only_hint is (tool.name in READ_ONLY_TOOLS), tool.name
        assert ann.destructive_hint is False, tool.name
        assert ann.open_world_hint is False, tool.name
        assert ann.idempotent_hint is True, tool.name


async def test_tool_descriptions_are_short(client):
    for tool in (await client.list_tools()).tools:
        assert tool.description, tool.name
        assert len(tool.description) < 300, (tool.name, len(tool.description))


async def test_agent_parameter_descriptions_list_all_agent_ids(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name, argument in (
        ("lookup_capability", "agent"),
        ("list_capabilities", "agent"),
        ("get_sources", "agent"),
        ("migrate_between_agents", "from_agent"),
    ):
        description = tools[name].input_schema["properties"][argument]["description"]
        for agent_id in AGENT_IDS:
            assert agent_id in description, (name, agent_id)
    agents_description = tools["compare_capability"].input_schema["properties"]["agents"]["description"]
    for agent_id in AGENT_IDS:
        assert agent_id in agents_description


async def test_tool_descriptions_follow_the_catalog_not_a_fixed_list(five_agent_data, monkeypatch):
    five = engine.catalog.model.load_catalog(five_agent_data)
    monkeypatch.setattr("server.server.get_catalog", lambda: five)
    async with Client(build_server()) as connected:
        tools = {t.name: t for t in (await connected.list_tools()).tools}
    description = tools["lookup_capability"].input_schema["properties"]["agent"]["description"]
    assert "example-agent" in description


# --- lookup_capability ---------------------------------------------------------------------


async def test_lookup_reports_the_catalog_record(client, catalog):
    record = catalog.agents["claude-code"].records["MCP Support"]
    data = await answer(client, "lookup_capability", agent="claude-code", capability="MCP Support")

    assert data["agent"] == "claude-code"
    cap = data["capability"]
    assert cap["name"] == "MCP Support"
    assert cap["available"] is True
    assert cap["available"] == record["available"]
    assert cap["tier"] == record["tier"]
    assert cap["maturityLevel"] == record["maturityLevel"]
    assert cap["description"] == record["description"]
    assert cap["implementationNotes"]["startUrl"] == record["implementationNotes"]["startUrl"]
    assert cap["implementationNotes"]["setup"] == record["implementationNotes"]["setup"]
    assert cap["sources"] == engine.catalog.answers.cited(record["sources"])
    assert data["match"] == {
        "query": "MCP Support",
        "resolvedTo": "MCP Support",
        "method": "exact",
        "matchConfidence": data["match"]["matchConfidence"],
    }
    assert "alternatives" not in data


async def test_lookup_resolves_agent_and_capability_aliases(client):
    data = await answer(client, "lookup_capability", agent="claude", capability="mcp")
    assert data["agent"] == "claude-code"
    assert data["capability"]["name"] == "MCP Support"
    assert data["match"]["method"] == "alias"
    assert data["match"]["resolvedTo"] == "MCP Support"
    assert data["match"]["query"] == "mcp"


@pytest.mark.parametrize(
    ("agent", "agent_id"),
    [("Claude Code", "claude-code"), ("vs code copilot", "vscode-copilot"), ("gemini", "gemini-cli")],
)
async def test_lookup_accepts_agent_names_and_aliases(client, agent, agent_id):
    data = await answer(client, "lookup_capability", agent=agent, capability="MCP Support")
    assert data["agent"] == agent_id


async def test_lookup_understands_a_paraphrase_semantically(client, catalog):
    data = await answer(
        client, "lookup_capability", agent="claude-code", capability="undo the edits the agent just made"
    )
    assert data["capability"]["name"] == "Checkpoints"
    assert data["match"]["method"] == "semantic"
    assert data["match"]["resolvedTo"] == "Checkpoints"
    assert 0 < data["match"]["matchConfidence"] <= 1
    record = catalog.agents["claude-code"].records["Checkpoints"]
    assert data["capability"]["available"] == record["available"]


async def test_lookup_of_an_unavailable_capability_says_so(client, catalog):
    agent_id, name = unavailable_record(catalog)
    record = catalog.agents[agent_id].records[name]
    data = await answer(client, "lookup_capability", agent=agent_id, capability=name)

    assert data["agent"] == agent_id
    assert data["capability"]["name"] == name
    assert data["capability"]["available"] is False
    if record.get("alternative"):
        assert data["capability"]["alternative"] == record["alternative"]


# --- ambiguity -----------------------------------------------------------------------------


@pytest.fixture
def ambiguous_match(monkeypatch):
    """Make every capability query resolve ambiguously between MCP Support and Lifecycle Hooks."""

    def fake_match(query: str, *, k: int = 3, **_agent) -> Match:
        candidates = [
            Candidate("mcp-support", "MCP Support", 0.61),
            Candidate("lifecycle-hooks", "Lifecycle Hooks", 0.60),
        ]
        return Match(query, "MCP Support", "mcp-support", 0.61, "semantic", candidates, ambiguous=True)

    monkeypatch.setattr(engine.catalog.answers, "match", fake_match)


async def test_ambiguous_lookup_lists_runner_up_with_confidence(client, ambiguous_match):
    data = await answer(client, "lookup_capability", agent="claude-code", capability="extend it")
    assert data["capability"]["name"] == "MCP Support"
    assert data["match"]["ambiguous"] is True
    assert [(a["name"], a["matchConfidence"]) for a in data["alternatives"]] == [("Lifecycle Hooks", 0.60)]


async def test_ambiguous_compare_lists_runner_up_with_confidence(client, ambiguous_match):
    data = await answer(client, "compare_capability", capability="extend it")
    assert data["capability"] == "MCP Support"
    assert data["match"]["ambiguous"] is True
    assert data["alternatives"] == [{"name": "Lifecycle Hooks", "matchConfidence": 0.60}]


# --- no match ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lookup_capability", {"agent": "claude-code", "capability": "order a pizza"}),
        ("compare_capability", {"capability": "order a pizza"}),
        ("get_sources", {"capability": "order a pizza"}),
    ],
)
async def test_no_match_is_a_truthful_answer_not_an_error(client, tool, arguments):
    result, text = await call(client, tool, **arguments)
    assert result.is_error is False
    data = json.loads(text)
    assert data["capability"] is None
    assert data["match"]["method"] == "none"
    assert data["match"]["resolvedTo"] is None
    assert data["nearest"], "nearest names should help the caller retry"
    for near in data["nearest"]:
        assert isinstance(near["name"], str) and near["name"]
        assert isinstance(near["matchConfidence"], float)
    assert isinstance(data["note"], str) and "order a pizza" in data["note"]


# --- compare_capability --------------------------------------------------------------------


async def test_compare_covers_all_agents_by_default(client, catalog):
    data = await answer(client, "compare_capability", capability="MCP Support")
    assert data["capability"] == "MCP Support"
    assert [row["agent"] for row in data["comparison"]] == catalog.agent_ids
    for row in data["comparison"]:
        record = catalog.agents[row["agent"]].records["MCP Support"]
        assert row["available"] == record["available"]
        if record["available"]:
            assert row["tier"] == record["tier"]
            assert row["maturityLevel"] == record["maturityLevel"]
            assert row["implementationNotes"]["startUrl"] == record["implementationNotes"]["startUrl"]


async def test_compare_shows_an_agent_without_the_capability_as_just_unavailable(client, catalog):
    name = mixed_capability(catalog)
    data = await answer(client, "compare_capability", capability=name)
    rows = {row["agent"]: row for row in data["comparison"]}
    assert set(rows) == set(catalog.agent_ids)
    for agent_id in catalog.agent_ids:
        if catalog.agents[agent_id].records[name]["available"]:
            assert rows[agent_id]["available"] is True
            assert "tier" in rows[agent_id]
        else:
            assert set(rows[agent_id]) == {"agent", "available", "checked"}
            assert rows[agent_id]["available"] is False


async def test_compare_filters_agents_given_by_alias(client):
    data = await answer(client, "compare_capability", capability="mcp", agents=["claude", "Gemini CLI"])
    assert [row["agent"] for row in data["comparison"]] == ["claude-code", "gemini-cli"]


async def test_compare_with_an_unknown_agent_is_an_error_listing_valid_ids(client):
    text = await tool_error(client, "compare_capability", capability="mcp", agents=["claude", "nobody"])
    assert "nobody" in text
    for agent_id in AGENT_IDS:
        assert agent_id in text


# --- list_capabilities ---------------------------------------------------------------------


async def test_list_by_agent_gives_every_capability_compactly(client, catalog):
    data = await answer(client, "list_capabilities", agent="claude")
    assert data["agent"] == "claude-code"
    items = data["capabilities"]
    assert len(items) == len(catalog.capabilities)
    assert [item["name"] for item in items] == [cap.name for cap in catalog.capabilities]
    for item in items:
        assert set(item) == {"name", "category", "tier", "available"}, item
        record = catalog.agents["claude-code"].records[item["name"]]
        assert item["available"] == record["available"]
        assert item["tier"] == record["tier"]
        assert item["category"] == record["category"]


async def test_list_by_category_covers_every_agent(client, catalog):
    names = [cap.name for cap in catalog.capabilities if cap.category == "security"]
    assert names, "catalog should have security capabilities"
    data = await answer(client, "list_capabilities", category="Security")

    assert data["category"] == "security"
    assert "agent" not in data
    items = data["capabilities"]
    assert len(items) == len(names) * len(catalog.agent_ids)
    assert {(i["agent"], i["name"]) for i in items} == {(a, n) for a in catalog.agent_ids for n in names}
    for item in items:
        assert set(item) == {"agent", "name", "tier", "available"}, item
        assert item["available"] == catalog.agents[item["agent"]].records[item["name"]]["available"]


async def test_list_by_agent_and_category(client, catalog):
    names = [cap.name for cap in catalog.capabilities if cap.category == "api-integration"]
    data = await answer(client, "list_capabilities", agent="gemini", category="api-integration")
    assert data["agent"] == "gemini-cli"
    assert data["category"] == "api-integration"
    assert [item["name"] for item in data["capabilities"]] == names
    for item in data["capabilities"]:
        assert set(item) == {"name", "tier", "available"}, item


async def test_list_without_agent_or_category_is_an_error_saying_what_is_needed(client):
    text = await tool_error(client, "list_capabilities")
    assert "agent or category" in text
    for agent_id in AGENT_IDS:
        assert agent_id in text


async def test_list_with_an_unknown_category_lists_valid_ones_and_the_closest(client, catalog):
    text = await tool_error(client, "list_capabilities", category="secrity")
    assert "secrity" in text
    for category in catalog.categories:
        assert category in text
    assert "Did you mean 'security'?" in text


# --- get_sources ---------------------------------------------------------------------------


def assert_is_source(source: dict) -> None:
    assert SOURCE_KEYS <= set(source), source
    assert source["url"].startswith("https://"), source["url"]
    assert source["description"]
    assert source["verifiedDate"]
    assert source["status"]


async def test_sources_for_agent_and_capability_match_the_record(client, catalog):
    record = catalog.agents["claude-code"].records["MCP Support"]
    data = await answer(client, "get_sources", agent="claude", capability="mcp")
    assert data["agent"] == "claude-code"
    assert data["capability"] == "MCP Support"
    assert data["sources"] == engine.catalog.answers.cited(record["sources"])
    assert data["sources"]
    for source in data["sources"]:
        assert set(source) == SOURCE_KEYS
        assert_is_source(source)


async def test_sources_for_an_agent_are_grouped_by_url(client, catalog):
    agent = catalog.agents["gemini-cli"]
    data = await answer(client, "get_sources", agent="gemini")
    assert data["agent"] == "gemini-cli"
    assert data["docsUrl"] == agent.docs_url

    urls = [s["url"] for s in data["sources"]]
    assert len(urls) == len(set(urls)), "each URL should appear once"
    cited = {s["url"] for record in agent.records.values() for s in record["sources"]}
    assert set(urls) == cited
    for source in data["sources"]:
        assert_is_source(source)
        cites = [n for n, r in agent.records.items() if any(s["url"] == source["url"] for s in r["sources"])]
        assert source["capabilities"] == cites


async def test_sources_for_a_capability_are_given_per_agent(client, catalog):
    data = await answer(client, "get_sources", capability="MCP Support")
    assert data["capability"] == "MCP Support"
    assert list(data["sources"]) == catalog.agent_ids
    for agent_id, sources in data["sources"].items():
        record = catalog.agents[agent_id].records["MCP Support"]
        assert sources == engine.catalog.answers.cited(record["sources"])
        for source in sources:
            assert_is_source(source)


async def test_sources_without_agent_or_capability_is_an_error(client):
    text = await tool_error(client, "get_sources")
    assert "agent or capability" in text


# --- input errors --------------------------------------------------------------------------


async def test_unknown_agent_is_an_error_listing_ids_and_suggesting_the_closest(client):
    text = await tool_error(client, "lookup_capability", agent="gemni", capability="mcp")
    assert "gemni" in text
    for agent_id in AGENT_IDS:
        assert agent_id in text
    assert "Did you mean 'gemini-cli'?" in text


@pytest.mark.parametrize("capability", ["", "   ", "\t\n"])
async def test_empty_or_blank_capability_is_an_error(client, capability):
    text = await tool_error(client, "lookup_capability", agent="claude-code", capability=capability)
    assert "capability is empty" in text


async def test_overlong_capability_is_an_error_mentioning_the_limit(client):
    text = await tool_error(client, "lookup_capability", agent="claude-code", capability="x" * 5000)
    assert "5000" in text
    assert "limit" in text
    assert str(MAX_QUERY_CHARS) in text


# --- response encoding ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lookup_capability", {"agent": "claude-code", "capability": "MCP Support"}),
        ("compare_capability", {"capability": "checkpoints"}),
        ("list_capabilities", {"agent": "copilot-cli"}),
        ("get_sources", {"agent": "vscode-copilot"}),
        ("lookup_capability", {"agent": "claude-code", "capability": "order a pizza"}),
    ],
)
async def test_responses_are_compact_json(client, tool, arguments):
    result, text = await call(client, tool, **arguments)
    assert result.is_error is False
    assert "\n" not in text
    parsed = json.loads(text)
    assert isinstance(parsed, dict)
    assert text == json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))


# --- argument errors a model can act on ------------------------------------------------------


async def test_an_unknown_argument_name_is_an_error_that_suggests_the_right_one(client):
    text = await tool_error(client, "lookup_capability", agnet="claude", capability="mcp")
    assert (
        "'agnet'" in text and "Did you mean 'agent'?" in text and "Valid arguments: agent, capability" in text
    )


async def test_a_missing_argument_names_it_and_says_what_to_pass(client):
    text = await tool_error(client, "lookup_capability", capability="mcp")
    assert "needs the argument 'agent'" in text and "claude-code" in text
    assert "pydantic" not in text


async def test_a_wrong_type_names_the_argument_and_the_expected_type(client):
    text = await tool_error(client, "compare_capability", capability=5)
    assert "'capability' must be string, got integer" in text and "pydantic" not in text
    text = await tool_error(client, "compare_capability", capability="mcp", agents=["claude", 7])
    assert "'agents[1]' must be string" in text


async def test_compare_with_an_empty_agent_list_is_an_error_that_says_to_omit_it(client, catalog):
    text = await tool_error(client, "compare_capability", capability="mcp", agents=[])
    assert "omit it" in text and all(a in text for a in catalog.agent_ids)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("lookup_capability", {"agent": "gemni", "capability": "mcp"}),  # the engine refuses it
        ("lookup_capability", {"agnet": "claude", "capability": "mcp"}),  # the argument check refuses it
        ("compare_capability", {"capability": 5}),
        ("lookup_capabilities", {"agent": "claude", "capability": "mcp"}),  # no such tool
    ],
)
async def test_every_tool_error_starts_with_the_same_prefix(client, tool, arguments):
    text = await tool_error(client, tool, **arguments)
    assert text.startswith(f"Error executing tool {tool}: ")
    assert text.count("Error executing tool") == 1


def test_the_warm_up_keeps_trying_while_a_transient_failure_lasts(monkeypatch):
    from server import server as server_module

    class Index:
        def __init__(self) -> None:
            self.tries = 0

        def warm(self) -> bool:
            self.tries += 1
            return self.tries == 3  # out of file descriptors twice, then loaded

        def retry_in(self) -> float | None:
            return 0.0

    index = Index()
    monkeypatch.setattr(server_module, "capability_index", lambda: index)
    server_module._warm_engine()
    assert index.tries == 3
