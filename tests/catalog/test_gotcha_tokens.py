"""Each gotcha's key token (a flag, path, settings key or command) must be in a source its record cites."""

from __future__ import annotations

import subprocess
import sys

from engine.catalog import checks
from tests.conftest import ROOT

PAGE = """# Sessions

Run `gemini --resume` to continue. Settings:

```json
{ "general": { "sessionRetention": { "maxAge": "30d" } } }
```
"""


def agent(*gotchas: str, sources: int = 1) -> dict:
    record = {
        "name": "Session Resume",
        "implementationNotes": {"gotchas": list(gotchas)},
        "sources": [
            {"url": f"https://example.com/{i}", "revision": {"sha256": str(i)}} for i in range(sources)
        ],
    }
    return {"id": "x", "capabilities": [record]}


def test_a_gotcha_whose_token_is_in_a_cited_page_passes_and_one_whose_token_is_not_fails():
    found, unchecked = checks.gotcha_tokens(
        agent("`--resume` needs a session id", "`/reportbug` files an issue"), lambda s: PAGE
    )
    assert unchecked == []
    assert len(found) == 1 and "`/reportbug`" in found[0] and "x Session Resume" in found[0]


def test_a_settings_key_shown_as_nested_json_counts_as_named():
    found, _ = checks.gotcha_tokens(agent("Change general.sessionRetention to keep chats"), lambda s: PAGE)
    assert found == []


def test_a_gotcha_is_unchecked_not_passed_when_a_source_has_no_local_text():
    texts = iter([PAGE, None])
    found, unchecked = checks.gotcha_tokens(
        agent("`/reportbug` files an issue", sources=2), lambda s: next(texts)
    )
    assert found == [] and len(unchecked) == 1 and "1 of 2 sources not available" in unchecked[0]


def test_a_gotcha_naming_no_identifier_is_not_checked_and_a_lone_backticked_character_is_no_token():
    found, unchecked = checks.gotcha_tokens(
        agent(
            "Sessions are kept for a month", "An `@` mention or a shell command such as `cat` still reads it"
        ),
        lambda s: "Run cat on the file.",
    )
    assert (found, unchecked) == ([], [])


def run_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "build_scripts/prepare/check_catalog.py", "--today", "2026-11-28", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_snapshots_the_report_says_the_token_and_branch_checks_were_not_run():
    out = run_check().stdout
    assert "gotcha tokens and branches: not run" in out
    assert "## gotchas whose key token" not in out


def test_with_an_empty_snapshots_folder_every_gotcha_with_a_token_is_unchecked_not_passed(tmp_path):
    out = run_check("--snapshots", str(tmp_path)).stdout
    assert "## gotchas whose key token is in no cited source: 0" in out
    unchecked = next(line for line in out.splitlines() if line.startswith("gotcha tokens:"))
    assert int(unchecked.split()[2]) > 0, unchecked


def test_a_snapshots_folder_that_does_not_exist_is_a_one_line_error(tmp_path):
    done = run_check("--snapshots", str(tmp_path / "absent"))
    assert done.returncode == 2 and "no folder" in done.stderr and "Traceback" not in done.stderr
