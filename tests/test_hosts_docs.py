"""Every host command line in the docs is a form that was run against that host, or is marked as not run.

docs/hosts.md ("Checked against the hosts") records each form with the host versions it was run
with and whether it worked. These tests hold the README and docs/*.md to that table, with no host
installed and no network: a line that is not in the table, or that the table says fails, is a line
nobody has seen work. The forms Gemini CLI writes to settings.json, and its trust variable, are
recorded here as Gemini CLI 0.61.0 wrote and read them on 2026-11-28.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HOSTS_MD = ROOT / "docs" / "hosts.md"
HOST_COMMANDS = {
    "claude": "mcp",
    "gemini": "mcp",
    "copilot": "mcp",
    "codex": "mcp",
    "opencode": "mcp",
    "code": "--add-mcp",
}
RUN_HERE = {"claude", "gemini"}  # the hosts the table must show as run, not only read about
# What `gemini mcp add` wrote for a stdio and a streamable-HTTP server (Gemini CLI 0.61.0, 2026-11-28).
GEMINI_WRITES = [{"command", "args", "env"}, {"url", "type", "headers"}]


def form(line: str) -> str | None:
    """The host command in a shell line, with its URL, token and command path replaced by names; else None."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    start = 0
    while start < len(words) and re.fullmatch(r"[A-Z_]+=\S*", words[start]):
        start += 1
    if len(words) < start + 2 or HOST_COMMANDS.get(words[start]) != words[start + 1]:
        return None
    out = []
    for word in words:
        if re.fullmatch(r"https?://\S+", word):
            word = "URL"
        elif word.startswith("Authorization: Bearer "):
            word = "Authorization: Bearer TOKEN"
        elif word.endswith("/agent-capabilities-mcp"):
            word = "agent-capabilities-mcp"
        out.append(word)
    return shlex.join(out)


def command_lines(text: str) -> list[str]:
    """Lines of shell code blocks (continuations joined) and inline code outside tables."""
    lines = []
    for language, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
        if language in ("bash", "sh", ""):
            lines += body.replace("\\\n", " ").splitlines()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)
    prose = "\n".join(line for line in prose.splitlines() if not line.lstrip().startswith("|"))
    return lines + re.findall(r"`([^`\n]+)`", prose)


def checked_forms() -> dict[str, tuple[str, str]]:
    """The table in docs/hosts.md: form -> (checked with, result)."""
    section = (
        HOSTS_MD.read_text(encoding="utf-8").split("## Checked against the hosts", 1)[1].split("\n## ", 1)[0]
    )
    rows = re.findall(r"^\| `(.+?)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    return {form(line) or line: (checked, result) for line, checked, result in rows}


def without_the_check(text: str) -> str:
    """A doc without the 'Checked against the hosts' section, which describes the check, not a setup step."""
    return re.sub(r"^## Checked against the hosts\n.*?(?=^## )", "", text, flags=re.DOTALL | re.MULTILINE)


def documented_forms() -> list[tuple[str, str]]:
    return [
        (path.name, f)
        for path in DOCS
        for line in command_lines(without_the_check(path.read_text(encoding="utf-8")))
        if (f := form(line)) is not None
    ]


def test_the_docs_show_host_commands_at_all():
    hosts = {shlex.split(f)[0] for _, f in documented_forms()}
    assert RUN_HERE <= hosts


@pytest.mark.parametrize(("doc", "command"), documented_forms())
def test_every_host_command_line_in_the_docs_was_checked(doc, command):
    table = checked_forms()
    assert command in table, f"{doc}: `{command}` is not in docs/hosts.md's 'Checked against the hosts' table"
    checked, result = table[command]
    assert not result.startswith("fails"), f"{doc}: `{command}` fails: {result}"
    host = next(w for w in shlex.split(command) if w in HOST_COMMANDS)
    if host in RUN_HERE:
        assert result.startswith("works") and re.search(r"\d+\.\d+\.\d+", checked), (doc, command, checked)
    else:
        assert result.startswith(("works", "not run")), (doc, command, result)


def test_the_table_rows_say_works_fails_or_not_run_and_name_the_host_version():
    for command, (checked, result) in checked_forms().items():
        assert result.startswith(("works", "fails", "not run")), command
        assert checked == "not run" or re.search(r"\d+\.\d+\.\d+", checked), command


def test_headless_gemini_is_told_the_trust_variable_gemini_reads():
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        if path != HOSTS_MD:  # the table names the variable that does not work, as failing
            assert set(re.findall(r"\bGEMINI_[A-Z_]*TRUST[A-Z_]*\b", text)) <= {
                "GEMINI_CLI_TRUST_WORKSPACE"
            }, path
        for paragraph in re.split(r"\n\s*\n", text):
            if "--skip-trust" in paragraph and not paragraph.lstrip().startswith("|"):
                assert "disabled" in paragraph, f"{path.name}: --skip-trust leaves MCP servers disabled"
    prose = "\n".join(
        line for line in HOSTS_MD.read_text(encoding="utf-8").splitlines() if not line.startswith("|")
    )
    assert "GEMINI_TRUST_WORKSPACE" not in prose


def test_hosts_md_shows_what_gemini_mcp_add_writes():
    gemini = HOSTS_MD.read_text(encoding="utf-8").split("## Gemini CLI", 1)[1].split("\n## ", 1)[0]
    written = gemini.split("What these write", 1)[1]
    block = re.search(r"```json\n(.*?)```", written, re.DOTALL).group(1)
    entries = json.loads(block)["mcpServers"].values()
    assert [set(entry) for entry in entries] == GEMINI_WRITES
    assert [e.get("type") for e in entries] == [None, "http"]


def test_the_readme_registers_the_command_by_its_path_because_the_quickstart_leaves_path_alone():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/pip install ." in readme and "activate &&" not in readme  # the quickstart, as it is
    register = readme.split("Register it with your agent", 1)[1].split("\n## ", 1)[0]
    commands = [w for line in command_lines(register) if form(line) for w in shlex.split(line, comments=True)]
    commands += re.findall(r'"command": "([^"]+)"', register)
    named = [c for c in commands if c.endswith("agent-capabilities-mcp")]
    assert len(named) >= 3 and all("/" in c for c in named), named


def test_hosts_md_gives_the_installed_command_first_and_says_what_uvx_costs_at_each_start():
    start = HOSTS_MD.read_text(encoding="utf-8").split("## Before you start", 1)[1].split("\n## ", 1)[0]
    assert start.index("agent-capabilities-mcp") < start.index("uvx")
    [uvx] = [p for p in re.split(r"\n\s*\n", start) if p.startswith("**uvx.**")]
    assert re.search(r"adds [\d–-]+ s to every start", uvx) and "installed" in uvx
