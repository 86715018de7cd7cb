"""Capability requests over the real stdio server: the tool, its states, dedup, silent misses, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters

import engine
from engine.cli import main as cli_main
from tests.conftest import ROOT
from tests.server.test_server_stdio import INIT, TIMEOUT, LineReader


def server_params(db) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": str(db)}
    return StdioServerParameters(command=sys.executable, args=["-m", "server"], cwd=str(ROOT), env=env)


def pick_states() -> dict[str, dict]:
    """Arguments that must land in each state, read from the catalog rather than pinned."""
    catalog = engine.get_catalog()
    for cap in catalog.capabilities:
        have = [a for a in catalog.agent_ids if catalog.agents[a].records[cap.name]["available"]]
        lack = [a for a in catalog.agent_ids if a not in have]
        if have and lack:
            return {
                "available": {"capability": cap.name, "agent": have[0]},
                "unavailable": {"capability": cap.name, "agent": lack[0]},
                "uncataloged": {
                    "capability": "sign in with my company's SAML single sign-on",
                    "agent": have[0],
                },
            }
    raise AssertionError("the catalog has no capability that some agents lack")


def test_request_tool_states_dedup_and_silent_misses_over_stdio(tmp_path, capsys, monkeypatch):
    db = tmp_path / "gaps.db"
    states = pick_states()

    async def session() -> dict:
        out = {}
        with anyio.fail_after(TIMEOUT):
            async with Client(server_params(db)) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                out["annotations"] = tools["request_capability"].annotations
                for state, arguments in states.items():
                    result = await client.call_tool("request_capability", arguments)
                    assert result.is_error is False, result.content
                    out[state] = json.loads(result.content[0].text)
                again = await client.call_tool("request_capability", states["uncataloged"])
                out["again"] = json.loads(again.content[0].text)
                miss = await client.call_tool(
                    "lookup_capability", {"agent": "claude", "capability": "order a pizza"}
                )
                out["miss"] = json.loads(miss.content[0].text)
        return out

    out = anyio.run(session)
    annotations = out["annotations"]
    assert annotations.read_only_hint is False
    assert annotations.destructive_hint is False
    assert annotations.idempotent_hint is True

    assert out["available"]["state"] == "available" and out["available"]["next_action"] == "use"
    unavailable = out["unavailable"]
    assert unavailable["state"] == "unavailable" and unavailable["next_action"] == "use_alternative"
    assert states["available"]["agent"] in unavailable["availableIn"]
    assert out["uncataloged"]["state"] == "uncataloged" and out["uncataloged"]["next_action"] == "recorded"
    assert out["uncataloged"]["nearest"]
    assert out["again"]["timesAsked"] == 2  # counted, not duplicated

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT count(*) FROM requests").fetchone()[0]
    assert rows == 3

    monkeypatch.setenv("AGENT_CAPABILITIES_DB", str(db))
    assert cli_main(["gaps", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["totals"]["misses"] == 1
    phrasings = [g["representative"] for g in report["gaps"]] + [
        e for g in report["gaps"] for e in g["examples"]
    ]
    assert "order a pizza" in phrasings


def test_no_log_flag_writes_nothing(tmp_path):
    db = tmp_path / "gaps.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": str(db)}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "request_capability", "arguments": {"capability": "SAML single sign-on"}},
    }
    proc = subprocess.run(
        [sys.executable, "-m", "server", "--no-log"],
        input="\n".join(
            json.dumps(m) for m in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call)
        )
        + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=TIMEOUT,
    )
    answer = json.loads([line for line in proc.stdout.splitlines() if '"id":2' in line][0])
    assert json.loads(answer["result"]["content"][0]["text"])["recorded"] is False
    assert not db.exists()


def rows_in_a_copy_of_the_main_file(db, tmp_path) -> list[str]:
    """The requests a backup of the database file alone would hold (no -wal, no -shm beside it)."""
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(db.read_bytes())
    with sqlite3.connect(copy) as conn:
        return [row[0] for row in conn.execute("SELECT capability FROM requests")]


def stdio_server(db, *, stderr) -> subprocess.Popen:
    """``python -m server`` over stdio in a subprocess, logging to the gap log at ``db``."""
    return subprocess.Popen(
        [sys.executable, "-m", "server"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": str(db)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
    )


@pytest.mark.parametrize("ending", ["stdin closes", "SIGINT", "SIGTERM"])
def test_the_stdio_server_ends_at_once_and_leaves_its_rows_in_the_database_file(tmp_path, ending):
    """One Ctrl-C (or a host's SIGINT or SIGTERM) ends the server, and no row is left only in the WAL."""
    db = tmp_path / "gaps.db"
    proc = stdio_server(db, stderr=subprocess.PIPE)
    reader = LineReader(proc.stdout)
    try:
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "request_capability", "arguments": {"capability": "teleport the user"}},
        }
        for message in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call):
            proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(reader.wait_for_id(2)["result"]["content"][0]["text"])
        assert answer["recorded"] is True
        if ending == "stdin closes":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, ending))  # stdin stays open, as a host's pipe does
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert "Traceback" not in proc.stderr.read().decode()
    assert rows_in_a_copy_of_the_main_file(db, tmp_path) == ["teleport the user"]


def test_sigkill_while_requests_are_in_flight_loses_no_acknowledged_request(tmp_path):
    """Three cycles: start the server, fire requests, kill -9 after 1, 3 and 6 acknowledgements; all on disk.

    Each cycle starts a real server process (most of the test's time), so the cycles cover a kill
    at the first answer, mid-stream and late; ``tests/gaps/test_gaps.py`` repeats the property many
    times on the gap log alone.
    """
    db = tmp_path / "gaps.db"
    acknowledged: set[str] = set()
    for cycle, wanted in enumerate((1, 3, 6)):
        proc = stdio_server(db, stderr=subprocess.DEVNULL)
        reader = LineReader(proc.stdout)
        try:
            proc.stdin.write((json.dumps(INIT) + "\n").encode())
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            needs = {}
            for i in range(8):
                need = f"cycle {cycle} need {i} for a zorblax integration"
                needs[100 + i] = need
                call = {
                    "jsonrpc": "2.0",
                    "id": 100 + i,
                    "method": "tools/call",
                    "params": {"name": "request_capability", "arguments": {"capability": need}},
                }
                proc.stdin.write((json.dumps(call) + "\n").encode())
            proc.stdin.flush()
            deadline = time.monotonic() + TIMEOUT
            got = 0
            while got < wanted:
                line = reader.next_line(deadline)
                assert line is not None
                message = json.loads(line)
                if message.get("id") in needs:
                    answer = json.loads(message["result"]["content"][0]["text"])
                    if answer.get("recorded"):
                        acknowledged.add(needs[message["id"]])
                    got += 1
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {row[0] for row in conn.execute("SELECT capability FROM requests")}
    assert len(acknowledged) >= 10
    assert acknowledged <= stored
