"""The drift report finds what changed between two real commits of a docs repository, and nothing else."""

from __future__ import annotations

import json

from build_scripts.prepare import drift
from build_scripts.prepare.provenance import git_blob_sha
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "drift"


def run() -> dict[str, drift.Drift]:
    agent = json.loads((FIXTURE / "gemini-cli.json").read_text())
    found = drift.drift_repo(
        agent,
        drift.Snapshot(folder=FIXTURE / "new"),
        drift.Snapshot(folder=FIXTURE / "old"),
        "google-gemini/gemini-cli",
    )
    return {d.capability: d for d in found}


def test_the_fixture_files_are_the_blobs_the_records_were_verified_at():
    agent = json.loads((FIXTURE / "gemini-cli.json").read_text())
    for record in agent["capabilities"]:
        rev = record["sources"][0]["revision"]
        assert git_blob_sha((FIXTURE / "old" / rev["path"]).read_bytes()) == rev["blob"], rev["path"]


def test_an_unchanged_page_is_not_reported():
    assert "Checkpoints" not in run()


def test_a_rewritten_section_is_reported_with_its_changed_lines_and_the_lost_anchor():
    plan = run()["Plan Mode"]
    assert plan.state == "changed"
    assert "anchor #enabling-plan-mode is gone" in plan.note
    assert any(line.startswith("- ## Enabling Plan Mode") for line in plan.lines)
    assert len(plan.lines) <= drift.MAX_LINES


def test_a_page_now_served_by_another_file_is_moved_and_a_deleted_one_is_gone():
    found = run()
    assert (found["Model Providers"].state, found["Model Providers"].now) == (
        "moved",
        "docs/get-started/authentication.mdx",
    )
    assert found["Headless Mode"].state == "gone"


def test_the_report_names_each_record_to_re_verify_once():
    text = drift.render(list(run().values()))
    assert text.startswith("3 record(s) to re-verify")
    assert "gemini-cli / Plan Mode" in text and "gemini-cli / Checkpoints" not in text


def test_a_source_read_on_another_branch_is_not_reported_as_drift(tmp_path):
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True
        ).stdout

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "page.md").write_text("# Page\n\nmain text\n")
    git("add", ".")
    git("commit", "-qm", "main")
    git("checkout", "-qb", "legacy")
    (tmp_path / "page.md").write_text("# Page\n\nlegacy text\n")
    git("commit", "-qam", "legacy")
    legacy = git("rev-parse", "HEAD").strip()
    blob = git("rev-parse", "HEAD:page.md").strip()
    git("checkout", "-q", "main")
    source = {
        "url": "https://example.com/page",
        "revision": {"repo": "o/r", "commit": legacy, "path": "page.md", "blob": blob},
    }
    agent = {"id": "x", "capabilities": [{"name": "A", "sources": [source]}]}
    assert drift.drift_repo(agent, drift.Snapshot(git_dir=tmp_path / ".git", rev="main"), None, "o/r") == []

    # Named on purpose, the legacy line is followed: a later change on it is reported.
    source["revision"]["branch"] = "legacy"
    assert drift.drift_repo(agent, drift.Snapshot(git_dir=tmp_path / ".git", rev="main"), None, "o/r") == []
    git("checkout", "-q", "legacy")
    (tmp_path / "page.md").write_text("# Page\n\nlegacy text, revised\n")
    git("commit", "-qam", "legacy fix")
    git("checkout", "-q", "main")
    found = drift.drift_repo(agent, drift.Snapshot(git_dir=tmp_path / ".git", rev="main"), None, "o/r")
    assert [(d.state, d.lines) for d in found] == [("changed", ["- legacy text", "+ legacy text, revised"])]
