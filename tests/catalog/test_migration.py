"""Answers for people moving between agents, checked row by row against the two agents' records.

Every expectation is read from the catalog (``engine.get_catalog()``) and ``uncovered.json``, so
these tests hold for whatever agents the data holds.
"""

from __future__ import annotations

import json

import pytest

import engine
from engine.catalog import migration
from engine.catalog.uncovered import AgentNotCoveredError, load_uncovered
from engine.cli import main
from engine.errors import InvalidQueryError, UnknownAgentError, UnknownCategoryError

PAIRS = [("claude-code", "codex"), ("cursor", "cline")]


@pytest.fixture(scope="module")
def catalog():
    return engine.get_catalog()


def rows_by_name(answer: dict) -> dict[str, tuple[str, dict]]:
    """Capability name -> (the category it is listed under, its row); fails on a repeated name."""
    out: dict[str, tuple[str, dict]] = {}
    for category, rows in answer["capabilities"].items():
        for row in rows:
            assert row["name"] not in out, f"{row['name']} listed twice"
            out[row["name"]] = (category, row)
    return out


def check_row(row: dict, record: dict, *, detail: bool) -> None:
    """A row says exactly what the new agent's record says: term and setup, or its alternative."""
    notes = record.get("implementationNotes", {})
    if record["available"]:
        expected = {"name": record["name"]}
        if record.get("terminology"):
            expected["term"] = record["terminology"]
        if detail:
            expected |= {"setup": notes["setup"], "startUrl": notes["startUrl"]}
    else:
        expected = {"name": record["name"], "available": False}
        if record.get("alternative"):
            expected["alternative"] = record["alternative"]
    assert row == expected


def expected_files(catalog, old: str, new: str, names: set[str]) -> dict[str, tuple[str, str]]:
    """Capability -> (old file, new file) wherever both records name one and the new agent has it."""
    out = {}
    for name in names:
        a, b = catalog.agents[old].records[name], catalog.agents[new].records[name]
        old_file = a.get("implementationNotes", {}).get("configFile")
        new_file = b.get("implementationNotes", {}).get("configFile")
        if old_file and new_file and b["available"]:
            out[name] = (old_file, new_file)
    return out


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_every_capability_the_old_agent_has_is_one_row_of_the_new_agents_record(catalog, old, new):
    answer = migration.migrate(old, new)
    rows = rows_by_name(answer)
    has = {n for n, r in catalog.agents[old].records.items() if r["available"]}
    assert set(rows) == has  # once each, and nothing the old agent lacks
    lacks = [n for n, r in catalog.agents[old].records.items() if not r["available"]]
    assert lacks, f"{old} lacks nothing, so this pair cannot show that its gaps are left out"
    for name, (category, row) in rows.items():
        record = catalog.agents[new].records[name]
        assert category == record["category"]
        check_row(row, record, detail=False)
    assert answer["docsSnapshot"] == {a: catalog.agents[a].docs_snapshot["date"] for a in (old, new)}


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_the_pair_shows_both_terms_and_alternatives(catalog, old, new):
    rows = [row for _, row in rows_by_name(migration.migrate(old, new)).values()]
    assert any("term" in row for row in rows)
    assert any(row.get("available") is False and row.get("alternative") for row in rows)


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_each_category_adds_setup_and_start_page_from_the_record(catalog, old, new):
    seen = set()
    for category in catalog.categories:
        answer = migration.migrate(old, new, category)
        assert answer["category"] == category
        assert set(answer["capabilities"]) <= {category}
        for name, (_, row) in rows_by_name(answer).items():
            check_row(row, catalog.agents[new].records[name], detail=True)
            seen.add(name)
    assert seen == {n for n, r in catalog.agents[old].records.items() if r["available"]}


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_config_files_pair_the_two_records_files(catalog, old, new):
    answer = migration.migrate(old, new)
    names = {n for n, r in catalog.agents[old].records.items() if r["available"]}
    expected = expected_files(catalog, old, new, names)
    assert expected, "the pair carries no file over"
    assert {r["capability"]: (r["from"], r["to"]) for r in answer["configFiles"]} == expected
    assert len(answer["configFiles"]) == len(expected)


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_with_a_category_each_config_file_is_cited_from_its_records_sources(catalog, old, new):
    cited = 0
    for category in catalog.categories:
        for row in migration.migrate(old, new, category)["configFiles"]:
            for agent, key in ((old, "fromSource"), (new, "toSource")):
                record = catalog.agents[agent].records[row["capability"]]
                assert row[key] in [s["url"] for s in record["sources"]], (agent, row)
                cited += 1
    assert cited


def test_a_file_is_cited_from_the_source_that_is_the_records_start_page():
    record = {
        "sources": [{"url": "https://example.test/a"}, {"url": "https://example.test/b#files"}],
        "implementationNotes": {"startUrl": "https://example.test/b#setup", "configFile": "x.json"},
    }
    assert migration.file_source(record) == "https://example.test/b#files"
    record["implementationNotes"]["startUrl"] = "https://example.test/elsewhere"
    assert migration.file_source(record) == "https://example.test/a"


def test_the_library_call_is_one_of_the_answers():
    assert engine.answers.migrate("claude", "codex") == migration.migrate("claude-code", "codex")


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["from_agent", "to_agent"])
def test_an_unknown_agent_names_the_argument_and_lists_the_agents(catalog, field):
    arguments = {"from_agent": "claude-code", "to_agent": "codex", field: "no such agent"}
    with pytest.raises(UnknownAgentError) as info:
        migration.migrate(**arguments)
    message = str(info.value)
    assert message.startswith(f"{field}: ")
    assert all(agent_id in message for agent_id in catalog.agent_ids)


def test_moving_to_the_same_agent_is_an_error_listing_the_others(catalog):
    with pytest.raises(InvalidQueryError) as info:
        migration.migrate("claude", "Claude Code")
    message = str(info.value)
    assert "both 'claude-code'" in message
    assert all(a in message for a in catalog.agent_ids if a != "claude-code")


def test_an_unknown_category_lists_the_categories(catalog):
    with pytest.raises(UnknownCategoryError) as info:
        migration.migrate("cursor", "cline", "teleportation")
    assert all(category in str(info.value) for category in catalog.categories)


@pytest.mark.parametrize("value", ["", "   ", 7])
def test_an_empty_or_non_text_agent_is_an_error_naming_the_argument(value):
    with pytest.raises(InvalidQueryError, match="^from_agent: "):
        migration.migrate(value, "codex")


# --- agents the catalog does not cover ----------------------------------------------------------


def uncovered_agents():
    return list({agent.id: agent for agent in load_uncovered().values()}.values())


def test_an_uncovered_old_agent_gets_what_happened_to_it_and_what_the_new_agent_offers(catalog):
    for uncovered in uncovered_agents():
        new = next(a for a in catalog.agent_ids if catalog.resolve_agent(uncovered.successor or "") != a)
        answer = migration.migrate(uncovered.display_name, new)
        assert answer["from"] == uncovered.to_dict()
        assert answer["from"]["covered"] is False
        assert f"{uncovered.display_name} is not covered" in answer["note"]
        offers = {n for n, r in catalog.agents[new].records.items() if r["available"]}
        rows = rows_by_name(answer)
        assert set(rows) == offers
        for name, (_, row) in rows.items():
            check_row(row, catalog.agents[new].records[name], detail=False)
        assert "configFiles" not in answer  # no record says which files the old agent used


def test_a_covered_successor_is_named_as_the_call_to_make(catalog):
    with_successor = [(u, catalog.resolve_agent(u.successor)) for u in uncovered_agents() if u.successor]
    with_successor = [(u, s) for u, s in with_successor if s is not None]
    assert with_successor, "uncovered.json names no successor the catalog covers"
    for uncovered, successor in with_successor:
        other = next(a for a in catalog.agent_ids if a != successor)
        note = migration.migrate(uncovered.id, other)["note"]
        assert f"from_agent '{successor}'" in note
        note = migration.migrate(uncovered.id, successor)["note"]
        assert f"records {successor} as its successor" in note
        assert f"from_agent '{successor}'" not in note


def test_an_uncovered_agent_with_a_category_gets_that_categorys_setup(catalog):
    uncovered, new, category = uncovered_agents()[0], catalog.agent_ids[0], catalog.categories[0]
    answer = migration.migrate(uncovered.id, new, category)
    assert answer["category"] == category
    rows = rows_by_name(answer)
    assert rows
    for name, (listed_under, row) in rows.items():
        assert listed_under == category
        check_row(row, catalog.agents[new].records[name], detail=True)


def test_an_uncovered_new_agent_is_an_error_saying_what_became_of_it(catalog):
    uncovered = uncovered_agents()[0]
    with pytest.raises(AgentNotCoveredError) as info:
        migration.migrate(catalog.agent_ids[0], uncovered.display_name)
    message = str(info.value)
    assert message.startswith("to_agent: ")
    assert uncovered.summary() in message
    assert all(agent_id in message for agent_id in catalog.agent_ids)


# --- command line ---------------------------------------------------------------------------------


def test_the_command_prints_a_line_per_capability_the_old_agent_has(catalog, capsys):
    assert main(["migrate", "Claude Code", "codex"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, record in catalog.agents["claude-code"].records.items():
        listed = [line for line in lines if line.startswith(f"  {name}")]
        if record["available"]:
            assert len(listed) >= 1, name
        new = catalog.agents["codex"].records[name]
        if record["available"] and not new["available"] and new.get("alternative"):
            assert f"  {name}: not in codex. Alternative: {new['alternative']}" in lines
    for row in migration.migrate("claude-code", "codex")["configFiles"]:
        assert f"  {row['capability']}: {row['from']} -> {row['to']}" in lines
    assert "--category CATEGORY" in lines[-1]


def test_the_command_with_a_category_shows_setup_and_json_is_the_library_answer(catalog, capsys):
    category = catalog.categories[0]
    assert main(["migrate", "cursor", "cline", "--category", category, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == migration.migrate(
        "cursor", "cline", category, surface="cli"
    )
    assert main(["migrate", "cursor", "cline", "--category", category]) == 0
    out = capsys.readouterr().out
    for _, row in rows_by_name(migration.migrate("cursor", "cline", category)).values():
        if "setup" in row:
            assert row["startUrl"] in out


def test_the_command_for_an_uncovered_agent_prints_its_facts(capsys):
    uncovered = next(u for u in uncovered_agents() if u.facts)
    new = engine.get_catalog().agent_ids[-1]
    assert main(["migrate", uncovered.display_name, new]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{uncovered.display_name} ({uncovered.status}) -> {new}")
    assert all(fact["url"] in out for fact in uncovered.facts)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["migrate", "cursor", "cursor"], "both 'cursor'"),
        (["migrate", "cursor", "cline", "--category", "teleportation"], "Valid categories:"),
        (["migrate", "nobody", "cline"], "from_agent: Unknown agent 'nobody'"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.splitlines()) == 1
