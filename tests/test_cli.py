import json
import os
import subprocess
import sys

import pytest

from engine.cli import main

from .conftest import ROOT


def test_match_prints_the_capability_and_how_it_was_found(capsys):
    assert main(["match", "autocomplete"]) == 0
    assert capsys.readouterr().out.strip() == "Code Completion  (alias, confidence 0.95)"


def test_match_json_prints_the_full_result(capsys):
    assert main(["match", "does gemini cli support mcp?", "--json", "-k", "5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "MCP Support"
    assert len(data["candidates"]) == 5


def test_match_says_when_nothing_fits(capsys):
    assert main(["match", "order a pizza"]) == 0
    assert capsys.readouterr().out.startswith("no match (nearest: ")


def test_bad_query_is_one_line_on_stderr_and_exit_code_2(capsys):
    assert main(["match", "   "]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: query is empty")


def test_unknown_agent_in_lookup_lists_the_valid_ids(capsys):
    assert main(["lookup", "cursor", "mcp"]) == 2
    err = capsys.readouterr().err
    assert "claude-code" in err and "vscode-copilot" in err


def test_lookup_prints_the_record(capsys):
    assert main(["lookup", "Claude Code", "hooks"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agent"] == "claude-code"
    assert data["capability"]["name"] == "Lifecycle Hooks"


def test_export_is_the_whole_catalog(capsys):
    assert main(["export"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["id"] for a in data["agents"]] == ["claude-code", "copilot-cli", "gemini-cli", "vscode-copilot"]
    for agent in data["agents"]:
        assert {"id", "displayName", "vendor", "capabilities"} <= set(agent)
        assert len(agent["capabilities"]) >= 43


@pytest.mark.parametrize("argv", [["-m", "engine", "match", "sandbox"], ["-m", "engine", "export"]])
def test_python_dash_m_engine_runs(argv):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_missing_command_shows_usage_and_fails():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "engine"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 2
    assert "usage" in proc.stderr
