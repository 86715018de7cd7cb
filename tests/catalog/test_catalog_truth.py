"""Catalog truth as tested properties: URLs are real pages at the recorded snapshot, facts are consistent.

The page lists in ``engine/data/docs/<agent>.json`` are built from the official
docs repositories by ``build_scripts/prepare/build_docs_index.py``; a moved page, a
tracking string or a beta label on a generally available product fails here.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from engine.catalog import checks

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "engine" / "data"
AGENT_IDS = engine.get_catalog().agent_ids


def agent_doc(agent_id: str) -> dict:
    return json.loads((DATA / "agents" / f"{agent_id}.json").read_text())


@pytest.fixture(scope="module")
def indexes() -> dict:
    return checks.load_docs_indexes(DATA)


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_every_agent_has_a_page_index_with_its_snapshot(agent_id, indexes):
    index = indexes[agent_id]
    assert index["pages"] and all(p.startswith(index["site"]) for p in index["pages"])
    assert agent_doc(agent_id)["docsSnapshot"] == index["snapshot"]


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_every_official_url_is_a_page_of_the_docs_site(agent_id, indexes):
    assert checks.url_problems(agent_doc(agent_id), indexes) == []


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_docs_url_and_start_urls_are_on_the_agents_own_docs_site(agent_id, indexes):
    doc = agent_doc(agent_id)
    site = checks.normalize_url(indexes[agent_id]["site"])
    assert checks.normalize_url(doc["docsUrl"]).startswith(site)
    official = [checks.normalize_url(i["site"]) for i in indexes.values()]
    for rec in doc["capabilities"]:
        start = rec.get("implementationNotes", {}).get("startUrl")
        if start:
            # A start page is documentation, never a blog or a mirror (GitHub repos are allowed for actions).
            assert any(checks.normalize_url(start).startswith(o) for o in official) or start.startswith(
                "https://github.com/"
            ), (rec["name"], start)


def test_a_moved_page_fails_the_url_check(indexes):
    doc = agent_doc(AGENT_IDS[0])
    site = indexes[AGENT_IDS[0]]["site"].rstrip("/")
    doc["capabilities"][0]["implementationNotes"]["startUrl"] = f"{site}/this-page-moved-away"
    problems = checks.url_problems(doc, indexes)
    assert len(problems) == 1 and "this-page-moved-away" in problems[0]


@pytest.mark.parametrize(
    ("url", "bad"),
    [
        ("https://code.claude.com/docs/en/sandboxing?m=1", ["m"]),
        ("https://code.claude.com/docs/en/costs?ref=vanja.io", ["ref"]),
        ("https://geminicli.com/docs?utm_source=x&utm_medium=y", ["utm_source", "utm_medium"]),
        ("https://geminicli.com/docs/cli/sandbox#macos", []),
    ],
)
def test_tracking_query_strings_are_detected(url, bad):
    assert checks.tracking_params(url) == bad


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_no_prerelease_maturity_on_a_ga_product_without_a_docs_note(agent_id):
    assert checks.maturity_problems(agent_doc(agent_id)) == []


def test_the_maturity_check_flags_an_unexplained_beta():
    doc = {
        "id": "x",
        "statusFacts": [
            {"date": "2026-02-25", "kind": "general-availability", "fact": "GA", "url": "https://e.x"}
        ],
        "capabilities": [{"name": "A", "available": True, "maturityLevel": "beta"}],
    }
    assert len(checks.maturity_problems(doc)) == 1
    doc["capabilities"][0]["maturityNote"] = "Marked preview on its docs page"
    assert checks.maturity_problems(doc) == []


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_sources_are_fresh_and_present(agent_id):
    doc = agent_doc(agent_id)
    snapshot = dt.date.fromisoformat(doc["docsSnapshot"]["date"])
    newest = max(dt.date.fromisoformat(s["verifiedDate"]) for r in doc["capabilities"] for s in r["sources"])
    # Freshness is judged against the day the catalog was last verified, so the test does not rot by itself.
    assert checks.stale_sources(doc, newest) == []
    assert checks.source_problems(doc) == []
    assert newest >= snapshot


def test_the_catalog_covers_the_new_capability_families():
    names = {c.name for c in engine.get_catalog().capabilities}
    assert len(names) >= 52
    for family in (
        "Agent Memory",
        "Custom Agents",
        "Scheduled Tasks",
        "Parallel Sessions",
        "Remote Control",
        "Browser Automation",
        "Voice Input",
        "UI Customization",
        "Output Styles",
    ):
        assert family in names


def test_check_catalog_script_reports_nothing_on_the_shipped_data():
    doc = agent_doc(AGENT_IDS[0])
    newest = max(s["verifiedDate"] for r in doc["capabilities"] for s in r["sources"])
    proc = subprocess.run(
        [sys.executable, "build_scripts/prepare/check_catalog.py", "--today", newest],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout
    assert "0 problem(s)" in proc.stdout


def test_no_alias_sends_an_agents_own_term_for_a_feature_elsewhere():
    aliases = json.loads((DATA / "aliases.json").read_text())["aliases"]
    assert checks.alias_conflicts(aliases, [agent_doc(a) for a in AGENT_IDS]) == []


def test_the_alias_check_flags_a_term_the_catalog_gives_another_capability():
    agent = {
        "id": "gemini-cli",
        "capabilities": [{"name": "Autopilot Mode", "available": True, "terminology": "YOLO mode"}],
    }
    problems = checks.alias_conflicts({"yolo mode": "Tool Permissions"}, [agent])
    assert len(problems) == 1 and "Autopilot Mode" in problems[0]
    assert checks.alias_conflicts({"yolo mode": "Autopilot Mode"}, [agent]) == []


@pytest.mark.parametrize("agent_id", AGENT_IDS)
def test_every_source_records_the_revision_that_was_read(agent_id):
    from build_scripts.prepare import provenance

    assert provenance.without_revision(DATA / "agents" / f"{agent_id}.json") == []


def test_every_lifecycle_fact_of_an_uncovered_agent_records_its_revision():
    from build_scripts.prepare import provenance

    assert provenance.without_revision(DATA / "uncovered.json") == []


def test_a_source_without_a_revision_is_reported(tmp_path):
    from build_scripts.prepare import provenance

    doc = agent_doc(AGENT_IDS[0])
    doc["capabilities"][0]["sources"][0].pop("revision")
    doc["statusFacts"] = [{"date": "2026-01-01", "kind": "plan", "fact": "x", "url": "https://example.com/a"}]
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(doc))
    missing = provenance.without_revision(path)
    assert len(missing) == 2 and "statusFacts" in missing[1]


def test_every_agent_says_what_kind_of_evidence_it_rests_on():
    kinds = {agent_doc(a).get("evidenceKind") for a in AGENT_IDS}
    assert kinds <= {"docs-repository", "docs-mirror", "vendor-site"} and None not in kinds
