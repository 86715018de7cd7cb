"""Matching that knows the agent: its words come from its file, the asked agent is passed, compare is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.catalog import answers, lookup
from engine.catalog.model import get_catalog, load_catalog
from engine.cli import format_lookup, format_match
from engine.matching.index import Index
from engine.matching.results import Candidate, Match
from engine.matching.scoring import Tuning


def test_a_new_agent_files_own_words_work_with_no_code_change(five_agent_data: Path, fake_encoder):
    path = five_agent_data / "agents" / "example-agent.json"
    doc = json.loads(path.read_text())
    record = next(r for r in doc["capabilities"] if r["name"] == "Checkpoints" and r["available"])
    # A gotcha's words are the agent's alone: unlike its terminology, they are no alias of the capability.
    record["implementationNotes"]["gotchas"].append("The Quasar Vortex panel lists them")
    path.write_text(json.dumps(doc))
    catalog = load_catalog(five_agent_data)
    # The fake encoder's hashed words collide with catalog words by chance, at cosines near 0.4: the
    # signal is weighed fully, so that only the agent's words, not the collisions, can decide.
    index = Index.from_records(
        lookup.capability_records(catalog), encoder=fake_encoder, tuning=Tuning(scoped_weight=1.0)
    )
    query = "quasar vortex broken"
    assert index.match(query, agent="example-agent").candidates[0].name == "Checkpoints"
    assert index.match(query).candidates[0].name != "Checkpoints"
    assert index.match(query, agent="gemini-cli").candidates[0].name != "Checkpoints"


class Spy:
    """Stands in for the capability index: records the agent each match was asked for."""

    def __init__(self) -> None:
        self.agents: list[str | None] = []

    def match(self, text, *, k, agent=None):
        self.agents.append(agent)
        return Match(text, None, None, 0.0, "none", [])


@pytest.fixture
def spy(monkeypatch) -> Spy:
    index = Spy()
    monkeypatch.setattr(lookup, "capability_index", lambda: index)
    return index


def test_an_agent_named_in_the_query_is_used(spy):
    lookup.match("does Cline keep a focus chain?")
    lookup.match("focus chain", agent="claude code")
    lookup.match("cursor or cline: which has a focus chain?")  # two agents: neither alone
    assert spy.agents == ["cline", "claude-code", None]


def test_lookup_sources_and_requests_pass_their_agent(spy, tmp_path):
    answers.lookup("cline", "focus chain")
    answers.get_sources("gemini", "checkpoints")
    from engine.gaps.requests import classify

    classify("focus chain", "cursor")
    assert spy.agents == ["cline", "gemini-cli", "cursor"]


def test_compare_matches_for_no_single_agent_even_when_the_text_names_one(spy):
    answers.compare("cline focus chain")
    answers.compare("focus chain", ["cline"])
    assert spy.agents == [None, None]


def unsure(confidence: float) -> Match:
    top = Candidate("checkpoints", "Checkpoints", confidence)
    return Match("undo what it did", None, None, confidence, "none", [top, Candidate("x", "Sub-agents", 0.1)])


def test_below_the_threshold_lookup_leads_with_the_likeliest_capability(monkeypatch):
    monkeypatch.setattr(answers, "match", lambda *a, **kw: unsure(0.42))
    answer = answers.lookup("cline", "undo what it did")
    assert list(answer)[:2] == ["agent", "likely"]
    assert answer["capability"] is None and answer["match"]["resolvedTo"] is None
    assert answer["likely"]["name"] == "Checkpoints" and answer["likely"]["matchConfidence"] == 0.42
    assert "sources" in answer["likely"] and "42%" in answer["note"]
    assert format_lookup(answer)[0].startswith("Cline (likely, confidence 0.42")
    assert format_match(unsure(0.42), 3)[0].startswith("likely Checkpoints  (confidence 0.42")


def test_what_matches_nothing_still_gets_no_match(monkeypatch):
    monkeypatch.setattr(answers, "match", lambda *a, **kw: unsure(0.05))
    answer = answers.lookup("cline", "undo what it did")
    assert (
        "likely" not in answer and answer["capability"] is None and "No catalog capability" in answer["note"]
    )
    assert format_match(unsure(0.05), 3)[0].startswith("no match")


def test_a_likely_capability_the_agent_lacks_says_which_agents_have_it(monkeypatch):
    catalog = get_catalog()
    agent, name = next(
        (a.id, cap) for a in catalog.agents.values() for cap, rec in a.records.items() if not rec["available"]
    )
    top = Candidate("x", name, 0.3)
    monkeypatch.setattr(answers, "match", lambda *a, **kw: Match("q", None, None, 0.3, "none", [top]))
    answer = answers.lookup(agent, "q")
    assert answer["likely"]["name"] == name and answer["likely"]["available"] is False
    have = [a.id for a in catalog.agents.values() if a.records[name]["available"]]
    assert answer["likely"]["availableIn"] == have
