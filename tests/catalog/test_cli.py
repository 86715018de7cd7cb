import io
import json
import os
import subprocess
import sys

import pytest

import engine
from engine.cli import main
from tests.conftest import ROOT


def test_match_prints_the_capability_and_how_it_was_found(capsys):
    assert main(["match", "autocomplete"]) == 0
    expected = engine.match("autocomplete")
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"{expected.name}  ({expected.method}, confidence {expected.confidence:.2f})"


def test_unquoted_queries_work_and_k_sets_the_lines_shown(capsys):
    assert main(["match", "-k", "4", "let", "it", "think", "longer", "before", "answering"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(engine.match("let it think longer before answering").name)
    assert len(lines) == 4


def test_lookup_is_a_short_answer_for_a_person(capsys):
    assert main(["lookup", "claude", "mcp"]) == 0
    out = capsys.readouterr().out
    record = engine.get_catalog().agents["claude-code"].records["MCP Support"]
    assert out.startswith("Claude Code: MCP Support — available")
    assert record["implementationNotes"]["startUrl"] in out
    assert len(out.splitlines()) < 10


def test_an_unavailable_record_names_the_agents_that_have_it(capsys):
    catalog = engine.get_catalog()
    name, agent_id = next(
        (c.name, a.id)
        for c in catalog.capabilities
        for a in catalog.agents.values()
        if not a.records[c.name]["available"]
    )
    assert main(["lookup", agent_id, name]) == 0
    out = capsys.readouterr().out
    assert "not available" in out
    have = [a.id for a in catalog.agents.values() if a.records[name]["available"]]
    if have:
        assert f"Available in: {', '.join(have)}" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["compare", "voice", "input"], "Voice Input:"),
        (["list", "--category", "security"], "Sandboxing"),
        (["sources", "--agent", "gemini", "checkpoints"], "https://"),
    ],
)
def test_every_answer_is_available_on_the_command_line(capsys, argv, needle):
    assert main(argv) == 0
    assert needle in capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    json.loads(capsys.readouterr().out)


def test_the_cli_no_match_note_names_the_cli_command(capsys):
    assert main(["lookup", "claude", "order", "a", "pizza"]) == 0
    out = capsys.readouterr().out
    assert "agent-capabilities list --agent claude-code" in out and "list_capabilities" not in out


def test_a_mistyped_command_gets_a_did_you_mean(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["matc", "x"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Did you mean 'match'?" in err and len(err.strip().splitlines()) == 1


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    from engine.cli import package_version

    assert capsys.readouterr().out.strip() == f"agent-capabilities {package_version()}"


def test_gaps_report_reads_the_local_log(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CAPABILITIES_DB", str(tmp_path / "g.db"))
    from engine import gaps
    from engine.gaps.log import GapLog

    gaps.request_capability(GapLog(), "export the chat transcript as a PDF", "claude")
    assert main(["gaps", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["requests"] == 1
    assert report["gaps"][0]["representative"].startswith("export the chat")


def test_match_json_prints_the_full_result(capsys):
    assert main(["match", "does gemini cli support mcp?", "--json", "-k", "5"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "MCP Support"
    assert len(data["candidates"]) == 5


def test_match_says_when_nothing_fits(capsys):
    assert main(["match", "order a pizza"]) == 0
    assert capsys.readouterr().out.startswith("no match (nearest: ")


def test_a_bare_agent_name_is_not_a_capability(capsys):
    assert main(["match", "copilot"]) == 0
    assert capsys.readouterr().out.startswith("no match")


def test_bad_query_is_one_line_on_stderr_and_exit_code_2(capsys):
    assert main(["match", "   "]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("agent-capabilities: error: query is empty")


def test_unknown_agent_in_lookup_lists_the_valid_ids(capsys):
    assert main(["lookup", "frobnicator", "mcp"]) == 2
    err = capsys.readouterr().err
    assert "claude-code" in err and "vscode-copilot" in err


def test_lookup_json_prints_the_record(capsys):
    assert main(["lookup", "Claude Code", "hooks", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agent"] == "claude-code"
    assert data["capability"]["name"] == "Lifecycle Hooks"


def test_export_is_the_whole_catalog(capsys):
    assert main(["export"]) == 0
    data = json.loads(capsys.readouterr().out)
    catalog = engine.get_catalog()
    assert [a["id"] for a in data["agents"]] == catalog.agent_ids
    for agent in data["agents"]:
        assert {"id", "displayName", "vendor", "docsSnapshot", "capabilities"} <= set(agent)
        assert len(agent["capabilities"]) == len(catalog.capabilities)


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
    assert "name a command: match, lookup" in proc.stderr


class ClosedPipe(io.TextIOBase):
    """stdout whose reader has gone away, as after `| head`: writing or flushing raises EPIPE."""

    def __init__(self, fails_on: str) -> None:
        self.fails_on = fails_on

    def write(self, text: str) -> int:
        if self.fails_on == "write":
            raise BrokenPipeError(32, "Broken pipe")
        return len(text)

    def flush(self) -> None:
        if self.fails_on == "flush":
            raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize(
    ("argv", "fails_on"),
    [(["export"], "write"), (["list", "claude"], "write"), (["--help"], "flush")],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(capsys, monkeypatch, argv, fails_on):
    monkeypatch.setattr(sys, "stdout", ClosedPipe(fails_on))
    assert main(argv) == 0
    assert capsys.readouterr().err == ""


def ascii_stdout() -> io.TextIOWrapper:
    """stdout as under LC_ALL=C or PYTHONIOENCODING=ascii: any other character raises."""
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii")


@pytest.mark.parametrize(
    "argv", [["lookup", "claude", "é mcp"], ["gaps"], ["lookup", "claude", "é mcp", "--json"], ["export"]]
)
def test_an_ascii_stdout_gets_the_answer_not_a_traceback(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.setenv("AGENT_CAPABILITIES_DB", str(tmp_path / "g.db"))
    from engine import gaps
    from engine.gaps.log import GapLog

    gaps.request_capability(GapLog(), "résumé export as PDF", "claude")
    out = ascii_stdout()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(argv) == 0
    out.flush()
    text = out.buffer.getvalue().decode("ascii")
    assert text.strip()
    if "--json" in argv or argv == ["export"]:
        json.loads(text)  # escaped, so the same JSON a UTF-8 terminal gets
    if argv == ["gaps"]:
        assert "r?sum? export" in text


def usage_failure(capsys, argv: list[str]) -> str:
    """stderr of a command that must fail with exit code 2 and a single line."""
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    "argv",
    [
        ["lookup", "claud", "mcp"],  # engine error
        ["lookup", "claude"],  # argparse: missing argument
        ["gaps", "--top", "0"],  # argparse: bad value
        ["lokup", "claude", "mcp"],  # unknown command
        ["list"],  # the command line's own check
    ],
)
def test_every_error_starts_with_the_same_prefix(capsys, argv):
    assert usage_failure(capsys, argv).startswith("agent-capabilities: error: ")


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["--versoin"], "Did you mean '--version'?"),
        (["lookup", "claude", "mcp", "--jsn"], "Did you mean '--json'?"),
        (["--jsn", "lookup", "claude", "mcp"], "Did you mean '--json'?"),
        (["compare", "voice", "--agnet", "gemini"], "Did you mean '--agent'?"),
        (["lokup", "claude", "mcp"], "Did you mean 'lookup'?"),
    ],
)
def test_a_mistyped_option_or_command_gets_a_did_you_mean(capsys, argv, suggestion):
    assert suggestion in usage_failure(capsys, argv)


@pytest.mark.parametrize(
    ("argv", "leaked"),
    [
        (["list"], "list_capabilities"),
        (["sources"], "get_sources"),
        (["gaps", "--since", "-5"], "since_days"),
        (["gaps", "--top", "0"], "top must"),
    ],
)
def test_errors_name_the_command_line_words_not_internal_parameters(capsys, argv, leaked):
    err = usage_failure(capsys, argv)
    assert leaked not in err
    assert f"agent-capabilities {argv[0]} --help" in err


def test_gaps_errors_name_the_flag_that_was_wrong(capsys):
    assert "--since" in usage_failure(capsys, ["gaps", "--since", "-5"])
    assert "--top" in usage_failure(capsys, ["gaps", "--top", "0"])


def test_list_takes_the_agent_as_a_positional_word_and_keeps_the_flag(capsys):
    assert main(["list", "claude"]) == 0
    positional = capsys.readouterr().out
    assert main(["list", "--agent", "claude"]) == 0
    assert capsys.readouterr().out == positional
    assert main(["list", "Claude", "Code", "--category", "security", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["agent"] == "claude-code" and answer["category"] == "security"


def test_list_of_a_category_word_lists_that_category(capsys):
    assert main(["list", "security", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["category"] == "security"


def test_list_with_the_agent_given_twice_says_to_give_it_once(capsys):
    assert "give the agent once" in usage_failure(capsys, ["list", "claude", "--agent", "gemini"])


def test_sources_takes_a_leading_agent_like_lookup(capsys):
    assert main(["sources", "claude", "hooks", "--json"]) == 0
    positional = json.loads(capsys.readouterr().out)
    assert main(["sources", "--agent", "claude", "hooks", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == positional
    assert positional["agent"] == "claude-code"
    assert positional["capability"] == engine.match("hooks").name


def test_sources_reads_the_longest_agent_name_and_refuses_an_ambiguous_one(capsys):
    assert main(["sources", "copilot", "cli", "hooks", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agent"] == "copilot-cli"
    err = usage_failure(capsys, ["sources", "copilot", "hooks"])
    assert "copilot-cli" in err and "vscode-copilot" in err


def test_sources_without_an_agent_word_covers_every_agent(capsys):
    assert main(["sources", "checkpoints", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert set(answer["sources"]) == set(engine.get_catalog().agent_ids)


def help_text(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    "command", ["match", "lookup", "compare", "list", "sources", "migrate", "gaps", "export"]
)
def test_every_subcommand_help_has_a_description_and_an_example(capsys, command):
    text = help_text(capsys, [command])
    description = text.split("\n\n")[1]
    assert not description.startswith(("positional arguments", "options")), text
    assert f"agent-capabilities {command} " in text.split("example")[1]


@pytest.mark.parametrize(("command", "values"), [("lookup", "agent_ids"), ("list", "categories")])
def test_help_lists_the_valid_values_from_the_catalog(capsys, command, values):
    text = " ".join(help_text(capsys, [command]).split())
    assert all(value in text for value in getattr(engine.get_catalog(), values))


def test_help_names_the_environment_variables(capsys):
    text = help_text(capsys, [])
    for name in ("AGENT_CAPABILITIES_DB", "AGENT_CAPABILITIES_VECTORS", "AGENT_CAPABILITIES_CACHE"):
        assert name in text
    assert "AGENT_CAPABILITIES_DB" in help_text(capsys, ["gaps"])


def test_no_match_says_so_once_and_then_names_the_nearest(capsys):
    assert main(["lookup", "claude", "order", "a", "pizza"]) == 0
    out = capsys.readouterr().out
    assert out.count("order a pizza") == 1 and out.lower().count("matches") == 1
    assert out.splitlines()[-1].startswith("Nearest: ")


def test_a_runner_up_near_zero_prints_as_under_one_hundredth_never_as_zero():
    from engine.cli import format_match
    from engine.matching.results import Candidate, Match

    candidates = [Candidate("a", "Extended Thinking", 0.996), Candidate("b", "Plan Mode", 0.004)]
    result = Match("think longer", "Extended Thinking", "a", 0.996, "semantic", candidates)
    lines = format_match(result, k=3)
    assert lines[1] == "  2. Plan Mode (<0.01)" and "0.00" not in "".join(lines)
    nothing = Match("pizza", None, None, 0.0, "none", candidates[1:])
    assert format_match(nothing, k=3) == ["no match (nearest: Plan Mode (<0.01))"]


def test_a_not_covered_agent_is_explained_in_short_lines(capsys):
    assert main(["lookup", "windsurf", "mcp"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("agent-capabilities: error: Windsurf") and "not covered" in lines[0]
    assert len(lines) > 3 and all(len(line) <= 100 for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])  # one error, not several
    assert any("Devin Desktop" in line for line in lines) and any("https://" in line for line in lines)
