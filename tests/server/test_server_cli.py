"""``agent-capabilities-mcp`` options: transport names hosts use, help that documents the environment."""

from __future__ import annotations

import pytest

from server import parse_arguments


@pytest.mark.parametrize("name", ["http", "streamable-http"])
def test_http_is_accepted_as_the_name_hosts_give_streamable_http(name):
    assert parse_arguments(["--transport", name]).transport == "streamable-http"


def test_stdio_stays_the_default():
    assert parse_arguments([]).transport == "stdio"


def test_help_names_every_environment_variable_the_server_reads(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_arguments(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for name in (
        "AGENT_CAPABILITIES_TOKEN",
        "AGENT_CAPABILITIES_HTTP_TIMEOUT",
        "AGENT_CAPABILITIES_DB",
        "AGENT_CAPABILITIES_NO_LOG",
    ):
        assert name in text
    assert "--transport" in text and "http is the same" in text


@pytest.mark.parametrize(("given", "meant"), [("--tranport", "--transport"), ("--portt", "--port")])
def test_a_mistyped_option_gets_a_did_you_mean(capsys, given, meant):
    with pytest.raises(SystemExit) as exit_info:
        parse_arguments([given, "8000"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("agent-capabilities-mcp: error: ")
    assert f"Did you mean '{meant}'?" in err and len(err.strip().splitlines()) == 1


def test_agent_capabilities_mcp_starts_the_server_with_the_remaining_arguments(monkeypatch):
    import server
    from server import console

    started = []
    monkeypatch.setattr(server, "main", lambda argv: started.append(argv) or 0)
    assert console.main(["mcp", "--transport", "http", "--port", "8123"]) == 0
    assert started == [["--transport", "http", "--port", "8123"]]


def test_every_other_command_goes_to_the_command_line(monkeypatch):
    import engine.cli
    from server import console

    seen = []
    monkeypatch.setattr(engine.cli, "main", lambda argv: seen.append(argv) or 0)
    assert console.main(["lookup", "claude", "mcp"]) == 0
    assert seen == [["lookup", "claude", "mcp"]]


@pytest.mark.parametrize(
    ("token", "why"),
    [("", "blank"), ("   ", "blank"), ("x", "1 characters long"), ("a" * 15, "15 characters long")],
)
def test_a_blank_or_short_token_stops_the_http_server_at_start_with_one_line(token, why, monkeypatch, capsys):
    import server

    served = []
    monkeypatch.setattr(server, "_serve_http", lambda *args: served.append(args) or 0)
    monkeypatch.setenv("AGENT_CAPABILITIES_TOKEN", token)
    assert server.main(["--transport", "http", "--no-log"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "refusing to start" in err and why in err
    assert served == []


def test_a_token_of_16_characters_is_accepted(monkeypatch, capsys):
    import server

    served = []
    monkeypatch.setattr(server, "_serve_http", lambda *args: served.append(args) or 0)
    monkeypatch.setenv("AGENT_CAPABILITIES_TOKEN", "a" * 16)
    assert server.main(["--transport", "http", "--no-log"]) == 0
    assert len(served) == 1 and capsys.readouterr().err == ""
