"""Paths and hosts stay on the server: a client is told why, and stderr says where.

The audit found the gap log's path (with the user name), the database host and
the encoder's directory in answers every token holder of a team server reads.
"""

from __future__ import annotations

import json
import logging
import sqlite3

import pytest
from mcp import Client

from engine.gaps.log import GapLog
from server.server import build_server

pytestmark = pytest.mark.anyio


async def request(gap_log: GapLog) -> dict:
    async with Client(build_server(gap_log)) as client:
        result = await client.call_tool("request_capability", {"capability": "voice input"})
    return json.loads(result.content[0].text)


async def report(gap_log: GapLog) -> str:
    async with Client(build_server(gap_log)) as client:
        return (await client.read_resource("gaps://report")).contents[0].text


async def test_a_locked_gap_log_is_named_in_the_log_not_in_the_answer(tmp_path, caplog):
    db = tmp_path / "gaps.sqlite3"
    GapLog(db, enabled=True).record_request("the file exists")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.WARNING, logger="engine"):
            answer = await request(GapLog(db, enabled=True, busy_timeout=0.05))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert answer["recorded"] is False and "locked" in answer["acknowledgement"]
    assert str(tmp_path) not in json.dumps(answer)
    assert str(db) in caplog.text  # the operator still learns which file


async def test_an_unwritable_gap_log_is_named_in_the_log_not_in_the_answer(tmp_path, caplog):
    db = tmp_path / "gaps.sqlite3"
    db.mkdir()  # a directory where the file should be
    with caplog.at_level(logging.WARNING, logger="engine"):
        answer = await request(GapLog(db, enabled=True))
    assert answer["recorded"] is False and "cannot be written" in answer["acknowledgement"]
    assert str(tmp_path) not in json.dumps(answer)
    assert str(db) in caplog.text


async def test_the_gap_report_resource_names_the_kind_of_database_not_its_path(tmp_path):
    db = tmp_path / "gaps.sqlite3"
    GapLog(db, enabled=True).record_request("voice input")
    text = await report(GapLog(db, enabled=True))
    assert json.loads(text)["database"] == "sqlite" and json.loads(text)["totals"]["requests"] == 1
    assert str(tmp_path) not in text


async def test_an_unreadable_gap_report_is_an_error_without_the_path(tmp_path, caplog):
    db = tmp_path / "gaps.sqlite3"
    db.write_bytes(b"not a database" * 100)
    with caplog.at_level(logging.WARNING, logger="server"):
        text = await report(GapLog(db, enabled=True))
    assert "cannot be read" in json.loads(text)["error"] and str(tmp_path) not in text
    assert str(db) in caplog.text
