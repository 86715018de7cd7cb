import json
from urllib.parse import urlparse

import jsonschema
import pytest

import engine
import engine.catalog.answers
from engine.catalog.model import DATA_DIR, load_catalog
from engine.errors import CatalogError, UnknownAgentError, UnknownCategoryError

CATALOG = engine.get_catalog()
AGENTS = sorted(json.loads((DATA_DIR / "catalog.json").read_text())["agents"])
CANONICAL = json.loads((DATA_DIR / "capabilities.json").read_text())["capabilities"]


def all_records():
    for agent in CATALOG.agents.values():
        for name, record in agent.records.items():
            yield agent.id, name, record


def test_every_agent_in_the_manifest_is_loaded():
    assert sorted(CATALOG.agents) == AGENTS and AGENTS


def test_a_fifth_agent_needs_only_data(five_agent_data):
    catalog = load_catalog(five_agent_data)
    assert "example-agent" in catalog.agent_ids
    assert catalog.resolve_agent("Example Agent") == "example-agent"


def test_canonical_capability_names_are_unique():
    assert CANONICAL
    assert len({c["name"] for c in CANONICAL}) == len(CANONICAL)


@pytest.mark.parametrize("agent_id", AGENTS)
def test_every_agent_has_one_record_per_canonical_capability_with_boolean_available(agent_id):
    raw = json.loads((DATA_DIR / "agents" / f"{agent_id}.json").read_text())
    names = [r["name"] for r in raw["capabilities"]]
    assert sorted(names) == sorted(c["name"] for c in CANONICAL)
    assert all(isinstance(r["available"], bool) for r in raw["capabilities"])


@pytest.mark.parametrize("agent_id", AGENTS)
def test_agent_files_validate_against_the_schema_with_the_reference_validator(agent_id):
    schema = json.loads((DATA_DIR / "schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    raw = json.loads((DATA_DIR / "agents" / f"{agent_id}.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(raw)


def test_available_records_are_complete():
    for agent_id, name, record in all_records():
        if not record["available"]:
            continue
        where = f"{agent_id}/{name}"
        assert record["description"].strip(), where
        assert record["tier"] in {"free", "pro", "business", "enterprise"}, where
        assert record["maturityLevel"] in {"experimental", "beta", "stable", "deprecated"}, where
        notes = record["implementationNotes"]
        assert notes["setup"].strip(), where
        assert notes["startUrl"].startswith("https://"), where
        assert record["sources"], where


def test_unavailable_records_say_so_and_carry_no_tier():
    unavailable = [(a, n, r) for a, n, r in all_records() if not r["available"]]
    assert unavailable, "the catalog should record capabilities an agent lacks"
    for agent_id, name, record in unavailable:
        assert record["tier"] is None and record["maturityLevel"] is None, f"{agent_id}/{name}"
        assert record["description"].strip(), f"{agent_id}/{name}"


def test_every_url_is_https_with_a_host():
    for agent_id, name, record in all_records():
        urls = [s["url"] for s in record["sources"]]
        if record.get("implementationNotes", {}).get("startUrl"):
            urls.append(record["implementationNotes"]["startUrl"])
        for url in urls:
            parsed = urlparse(url)
            assert parsed.scheme == "https" and parsed.netloc, f"{agent_id}/{name}: {url}"


def test_sources_have_dates_and_status():
    for agent_id, name, record in all_records():
        for source in record["sources"]:
            assert len(source["verifiedDate"]) == 10, f"{agent_id}/{name}"
            assert source["status"] in {"active", "deprecated", "modified", "unknown"}


def test_alias_table_averages_at_least_three_aliases_per_capability_and_covers_user_words():
    aliases = CATALOG.aliases
    assert len(aliases) >= 3 * len(CATALOG.capabilities)
    for word, name in {
        "autocomplete": "Code Completion",
        "intellisense": "Code Completion",
        "plugins": "Extension System",
        "subagent": "Sub-agents",
        "rules file": "Custom Instructions",
        "mcp": "MCP Support",
    }.items():
        assert aliases[word] == name


def test_every_capability_keeps_its_canonical_category():
    categories = {c["name"]: c["category"] for c in CANONICAL}
    for agent_id, name, record in all_records():
        assert record["category"] == categories[name], f"{agent_id}/{name}"


def test_a_broken_record_fails_loading_with_file_record_and_field(data_copy):
    path = data_copy / "agents" / "gemini-cli.json"
    raw = json.loads(path.read_text())
    index = next(i for i, r in enumerate(raw["capabilities"]) if r["name"] == "MCP Support")
    raw["capabilities"][index]["tier"] = "gold"
    path.write_text(json.dumps(raw))
    with pytest.raises(CatalogError) as err:
        load_catalog(data_copy)
    message = str(err.value)
    assert "gemini-cli.json" in message and "MCP Support" in message and "tier" in message
    assert "'gold'" in message


def test_a_missing_capability_record_fails_loading_and_names_it(data_copy):
    path = data_copy / "agents" / "claude-code.json"
    raw = json.loads(path.read_text())
    raw["capabilities"] = [r for r in raw["capabilities"] if r["name"] != "Vision"]
    path.write_text(json.dumps(raw))
    with pytest.raises(CatalogError, match="Vision"):
        load_catalog(data_copy)


def test_an_available_record_without_setup_fails_loading(data_copy):
    path = data_copy / "agents" / "copilot-cli.json"
    raw = json.loads(path.read_text())
    record = next(r for r in raw["capabilities"] if r["available"])
    del record["implementationNotes"]["setup"]
    path.write_text(json.dumps(raw))
    with pytest.raises(CatalogError, match=r"implementationNotes\.setup"):
        load_catalog(data_copy)


def test_invalid_json_fails_loading_with_the_file_name(data_copy):
    (data_copy / "agents" / "vscode-copilot.json").write_text("{not json")
    with pytest.raises(CatalogError, match="vscode-copilot.json"):
        load_catalog(data_copy)


def test_a_truncated_uncovered_file_fails_loading_like_the_other_files(data_copy):
    # Read only when someone names an uncovered agent, it used to fail then, long after a clean start.
    path = data_copy / "uncovered.json"
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(CatalogError, match="uncovered.json"):
        load_catalog(data_copy)


@pytest.mark.parametrize(
    ("text", "agent_id"),
    [
        ("Claude", "claude-code"),
        ("claude code", "claude-code"),
        ("Claude-Code", "claude-code"),
        ("GitHub Copilot CLI", "copilot-cli"),
        ("copilot cli", "copilot-cli"),
        ("copilot in vscode", "vscode-copilot"),
        ("copilot in VS Code", "vscode-copilot"),
        ("gemini", "gemini-cli"),
        ("Gemini CLI", "gemini-cli"),
    ],
)
def test_resolve_agent_accepts_names_and_aliases(text, agent_id):
    assert engine.resolve_agent(text) == agent_id


@pytest.mark.parametrize("text", ["", "   ", "frobnicator", "windsurf", 42, None])
def test_resolve_agent_returns_none_for_unknown_or_invalid(text):
    assert engine.resolve_agent(text) is None


def test_unknown_agent_error_lists_valid_ids_and_the_closest():
    with pytest.raises(UnknownAgentError) as err:
        CATALOG.agent("gemni-cli")
    assert err.value.closest == "gemini-cli"
    for agent_id in AGENTS:
        assert agent_id in str(err.value)


def test_unknown_category_error_lists_valid_categories_and_the_closest():
    with pytest.raises(UnknownCategoryError) as err:
        CATALOG.category("securty")
    assert err.value.closest == "security"
    assert "customization" in str(err.value)


def test_records_are_returned_as_copies():
    record = CATALOG.agents["claude-code"].record("MCP Support")
    record["available"] = "tampered"
    assert CATALOG.agents["claude-code"].record("MCP Support")["available"] is True


def test_names_with_symbols_do_not_collide_with_plain_names():
    assert engine.resolve_agent("github copilot") is None  # ambiguous, below
    assert engine.resolve_agent("@github/copilot") == "copilot-cli"


@pytest.mark.parametrize("name", ["GitHub Copilot", "github copilot", "copilot", "Copilot", "github-copilot"])
def test_github_copilot_is_ambiguous_and_the_error_names_both_agents(name):
    """Both the CLI and the VS Code agent are "GitHub Copilot": answering for one would be a guess."""
    assert engine.resolve_agent(name) is None
    with pytest.raises(UnknownAgentError) as err:
        CATALOG.agent(name)
    assert err.value.ambiguous == ["copilot-cli", "vscode-copilot"]
    assert f"Agent '{name}' could mean copilot-cli or vscode-copilot" in str(err.value)


@pytest.mark.parametrize(
    ("name", "agent_id"),
    [
        ("vscode", "vscode-copilot"),
        ("VS Code", "vscode-copilot"),
        ("copilot in vs code", "vscode-copilot"),
        ("vs code copilot", "vscode-copilot"),
        ("copilot cli", "copilot-cli"),
        ("GitHub Copilot CLI", "copilot-cli"),
    ],
)
def test_the_editor_or_the_cli_in_the_name_picks_the_copilot(name, agent_id):
    assert engine.resolve_agent(name) == agent_id
    assert CATALOG.agent(name).id == agent_id


def test_an_editor_named_in_a_capability_question_is_not_stripped_as_an_agent():
    """'vs code' resolves to vscode-copilot, but in a question it is the editor (IDE Integration)."""
    from engine.catalog.lookup import host_names, strip_agents

    assert host_names(CATALOG) == {"vscode"}  # read from "GitHub Copilot (VS Code)"
    assert strip_agents("does Gemini CLI work inside VS Code?") == "does work inside VS Code?"
    assert engine.match("vscode extension").name == "IDE Integration"


def test_a_name_shared_by_two_agents_is_ambiguous_and_the_error_names_both():
    assert engine.resolve_agent("copilot") is None
    with pytest.raises(UnknownAgentError) as err:
        CATALOG.agent("copilot")
    assert err.value.ambiguous == ["copilot-cli", "vscode-copilot"]
    assert "copilot-cli or vscode-copilot" in str(err.value)


def test_an_empty_agent_error_asks_for_an_agent_not_a_capability():
    with pytest.raises(engine.InvalidQueryError) as err:
        engine.catalog.answers.lookup("  ", "mcp")
    assert "agent" in str(err.value) and "capability name" not in str(err.value)
