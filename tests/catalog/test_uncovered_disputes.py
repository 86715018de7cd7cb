"""Official sources that disagree about an uncovered agent are recorded and shown, not settled silently."""

from __future__ import annotations

import json
import shutil

from build_scripts.prepare import provenance
from engine.catalog import schema
from engine.catalog.uncovered import load_uncovered
from tests.conftest import ROOT

DATA = ROOT / "engine" / "data"


def disputed() -> list:
    agents = {a.id: a for a in load_uncovered(DATA).values()}
    return [a for a in agents.values() if a.disputes]


def test_the_not_covered_answer_shows_each_dispute_with_every_source():
    found = disputed()
    assert found, "uncovered.json records the disputes between official sources (Roo Code's status)"
    for agent in found:
        text = agent.summary()
        for dispute in agent.disputes:
            assert f"Disputed ({dispute['field']}): {dispute['note']}" in text
            assert all(s["url"] in text for s in dispute["sources"])
        assert agent.to_dict()["disputes"] == [
            {"field": d["field"], "note": d["note"], "sources": [s["url"] for s in d["sources"]]}
            for d in agent.disputes
        ]


def test_a_dispute_needs_two_sources_and_a_known_field():
    doc = json.loads((DATA / "uncovered.json").read_text(encoding="utf-8"))
    agent = next(a for a in doc["agents"] if a.get("disputes"))
    agent["disputes"][0]["sources"] = agent["disputes"][0]["sources"][:1]
    agent["disputes"][0]["field"] = "mood"
    problems = " ".join(schema.validate(doc, DATA / "uncovered.schema.json"))
    assert "disputes" in problems and "mood" in problems


def test_a_dispute_source_without_a_revision_is_listed_by_provenance(tmp_path):
    path = tmp_path / "uncovered.json"
    shutil.copy(DATA / "uncovered.json", path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    agent = next(a for a in doc["agents"] if a.get("disputes"))
    del agent["disputes"][0]["sources"][0]["revision"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    missing = provenance.without_revision(path)
    assert missing == [f"{agent['id']} / disputes: {agent['disputes'][0]['sources'][0]['url']}"]


def test_roo_codes_status_dispute_cites_the_sunset_page_and_the_final_release():
    roo = next(a for a in disputed() if a.id == "roo-code")
    urls = {s["url"] for d in roo.disputes if d["field"] == "status" for s in d["sources"]}
    assert any(u.endswith("/docs/sunset.md") for u in urls)
    assert "https://github.com/RooCodeInc/Roo-Code" in urls
