"""``engine.catalog.answers`` called directly: the data shaping behind the MCP tools, no protocol between."""

from __future__ import annotations

import json

import pytest

import engine
from engine import InvalidQueryError, UnknownAgentError, answers

CATALOG = engine.get_catalog()


def mixed_capability() -> tuple[str, list[str], list[str]]:
    for cap in CATALOG.capabilities:
        have = [a for a in CATALOG.agent_ids if CATALOG.agents[a].records[cap.name]["available"]]
        lack = [a for a in CATALOG.agent_ids if a not in have]
        if have and lack:
            return cap.name, have, lack
    pytest.fail("no capability that only some agents have")


def test_lookup_carries_freshness_and_the_agents_status_facts():
    agent = next(a for a in CATALOG.agents.values() if a.status_facts)
    answer = answers.lookup(agent.id, CATALOG.capabilities[0].name)
    record = agent.records[CATALOG.capabilities[0].name]
    assert answer["freshness"]["docsSnapshot"] == agent.docs_snapshot["date"]
    assert answer["freshness"]["checked"] == max(s["verifiedDate"] for s in record["sources"])
    assert answer["agentStatus"] == agent.status_lines()


def test_an_unavailable_record_names_the_agents_that_have_it():
    name, have, lack = mixed_capability()
    answer = answers.lookup(lack[0], name)
    assert answer["capability"]["available"] is False
    assert answer["capability"]["availableIn"] == have


def test_compare_rows_say_when_each_was_checked_and_who_has_it():
    name, have, _ = mixed_capability()
    answer = answers.compare(name)
    assert answer["availableIn"] == have
    assert all(row["checked"] for row in answer["comparison"])


def test_compare_with_an_empty_agent_list_is_an_error():
    with pytest.raises(InvalidQueryError, match="omit it"):
        answers.compare("mcp", [])


def test_list_gives_each_agents_snapshot_date():
    answer = answers.list_capabilities(category=CATALOG.categories[0])
    assert answer["docsSnapshot"] == {a: CATALOG.agents[a].docs_snapshot["date"] for a in CATALOG.agent_ids}


@pytest.mark.parametrize(
    ("surface", "needle"), [("mcp", "call list_capabilities"), ("cli", "agent-capabilities list")]
)
def test_the_no_match_note_names_the_command_for_the_surface(surface, needle):
    answer = answers.lookup("claude", "order a pizza", surface=surface)
    assert answer["capability"] is None and needle in answer["note"]


def test_unknown_agent_error_lists_the_ids():
    with pytest.raises(UnknownAgentError) as err:
        answers.lookup("frobnicator", "mcp")
    assert all(a in str(err.value) for a in CATALOG.agent_ids)


def test_answers_are_plain_json():
    for answer in (
        answers.lookup("gemini", "sandbox"),
        answers.compare("hooks"),
        answers.get_sources("claude"),
    ):
        assert json.loads(json.dumps(answer, allow_nan=False)) == answer


def test_freshness_names_the_docs_revision_and_evidence_and_warns_when_old():
    import datetime as dt

    agent = CATALOG.agents[CATALOG.agent_ids[0]]
    record = next(iter(agent.records.values()))
    snapshot = dt.date.fromisoformat(agent.docs_snapshot["date"])
    fresh = answers.freshness(agent, record, today=snapshot + dt.timedelta(days=answers.STALE_AFTER_DAYS))
    assert fresh["evidence"] == agent.evidence_kind and fresh["docsRevision"]
    assert "stale" not in fresh
    old = answers.freshness(agent, record, today=snapshot + dt.timedelta(days=answers.STALE_AFTER_DAYS + 1))
    assert old["stale"] is True and agent.docs_snapshot["date"] in old["note"] and "startUrl" in old["note"]


def test_answers_cite_sources_without_the_maintainers_revision_data():
    answer = answers.lookup(CATALOG.agent_ids[0], "hooks")
    assert answer["capability"]["sources"] and all(
        "revision" not in s for s in answer["capability"]["sources"]
    )


def test_a_disputed_record_says_so_in_lookup_and_compare():
    disputed = [
        (a, name)
        for a in CATALOG.agent_ids
        for name, rec in CATALOG.agents[a].records.items()
        if rec.get("disputes") and rec["available"]
    ]
    assert disputed, "the catalog records contradictions between official pages as disputes"
    agent_id, name = disputed[0]
    assert answers.lookup(agent_id, name)["capability"]["disputes"]
    row = next(r for r in answers.compare(name, [agent_id])["comparison"])
    assert row["disputed"]


def test_an_agent_the_catalog_does_not_cover_gets_what_happened_to_it():
    from engine.catalog.uncovered import AgentNotCoveredError

    with pytest.raises(AgentNotCoveredError) as err:
        answers.lookup("Roo Code", "mcp")
    text = str(err.value)
    assert "not covered" in text and "discontinued" in text and "https://" in text
    assert all(a in text for a in CATALOG.agent_ids)
