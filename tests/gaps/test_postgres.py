"""Team mode: the gap log in PostgreSQL behaves as the SQLite file does, and replicas count together.

Tests marked with the ``postgres`` fixture start a throwaway cluster once
(``tests/postgres.py``) and skip, saying why, where PostgreSQL is not installed.
"""

import logging
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.errors import GapLogError, RateLimitError
from engine.gaps.log import SCHEMA_VERSION, GapLog
from engine.gaps.postgres_store import hide_password
from engine.gaps.report import gap_report
from engine.gaps.storage import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]
NOW = 1_767_225_600.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float) -> None:
        self.now += hours * 3600


class Backend:
    """One database of either kind: where it is, and its rows read straight from it."""

    def __init__(self, kind: str, location: str, postgres=None) -> None:
        self.kind = kind
        self.location = location
        self.postgres = postgres

    def log(self, **options) -> GapLog:
        options.setdefault("enabled", True)
        options.setdefault("rate_limit", None)
        return GapLog(self.location, **options)

    def sql(self, query: str) -> list[tuple]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.location) as conn:
                return conn.execute(query).fetchall()
        return self.postgres.execute(query, self.location.rsplit("/", 1)[1])

    def rows(self, table: str = "requests", columns: str = "capability, agent, count") -> list[tuple]:
        return self.sql(f"SELECT {columns} FROM {table} ORDER BY id")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", str(tmp_path / "gaps.sqlite3"))
    postgres = request.getfixturevalue("postgres")
    return Backend("postgres", postgres.new_database(), postgres)


# -- the same behaviour on both databases ---------------------------------------------------


def test_a_repeat_within_24_hours_counts_and_a_later_one_or_another_agent_is_a_new_row(backend):
    clock = Clock()
    log = backend.log(clock=clock)
    assert log.record_request("Export chat to Markdown", agent="claude-code").count == 1
    clock.advance(23)
    assert log.record_request("  export CHAT to markdown! ", agent="claude-code").count == 2
    log.record_request("export chat to markdown")
    clock.advance(2)
    assert log.record_request("export chat to markdown", agent="claude-code").count == 1
    assert backend.rows() == [
        ("Export chat to Markdown", "claude-code", 2),
        ("export chat to markdown", None, 1),
        ("export chat to markdown", "claude-code", 1),
    ]
    assert [r[0] for r in backend.rows(columns="last_seen - first_seen")] == [23 * 3600, 0, 0]
    log.close()


def test_misses_count_per_tool_and_agent(backend):
    log = backend.log(clock=Clock())
    for _ in range(3):
        log.record_miss("jupyter notebooks", tool="lookup_capability", agent="claude-code")
    log.record_miss("jupyter notebooks", tool="compare_capability")
    assert backend.rows("misses", "tool, agent, count") == [
        ("lookup_capability", "claude-code", 3),
        ("compare_capability", None, 1),
    ]
    log.close()


def test_the_row_cap_drops_the_oldest_rows(backend):
    log = backend.log(clock=Clock(), max_rows=5)
    for i in range(8):
        log.record_request(f"need number {i}")
    assert [r[0] for r in backend.rows()] == [f"need number {i}" for i in range(3, 8)]
    log.close()


def test_the_rate_limit_is_a_clear_error(backend):
    log = backend.log(clock=Clock(), rate_limit=2, rate_window=60)
    log.record_request("need one")
    log.record_request("need two")
    with pytest.raises(RateLimitError, match="at most 2 per 60 seconds"):
        log.record_request("need three")
    assert len(backend.rows()) == 2
    log.close()


def test_text_is_cleaned_the_same_way_before_storing(backend):
    log = backend.log(clock=Clock())
    log.record_request("voice\x00 in\u200bput \udfff now", context="line one\x00\nline\u202e two")
    assert backend.rows(columns="capability, context") == [("voice input \ufffd now", "line one\nline two")]
    log.close()


def test_the_schema_is_at_the_current_version(backend):
    log = backend.log(clock=Clock())
    log.record_request("voice input")
    if backend.kind == "sqlite":
        assert backend.sql("PRAGMA user_version") == [(SCHEMA_VERSION,)]
    else:
        assert backend.sql("SELECT version FROM gap_log_schema") == [(SCHEMA_VERSION,)]
    log.close()


def test_a_newer_schema_turns_recording_off_with_one_warning(backend, caplog):
    backend.log(clock=Clock()).record_request("voice input")
    if backend.kind == "sqlite":
        backend.sql(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    else:
        backend.sql(f"UPDATE gap_log_schema SET version = {SCHEMA_VERSION + 1}")
    log = backend.log(clock=Clock())
    with caplog.at_level(logging.WARNING, logger="engine"):
        first = log.record_request("voice output")
        second = log.record_miss("jupyter", tool="lookup_capability")
    assert (first.recorded, second.recorded, log.enabled) == (False, False, False)
    assert "cannot be written" in first.reason and log.location not in first.reason
    assert [r.getMessage() for r in caplog.records if "schema version" in r.getMessage()] != []
    assert len([r for r in caplog.records if r.name == "engine"]) == 1
    with pytest.raises(GapLogError, match="schema version"):
        gap_report(log)


def test_the_report_counts_and_filters_alike(backend):
    clock = Clock()
    log = backend.log(clock=clock)
    log.record_request("jupyter notebooks", agent="claude-code")
    log.record_request("jupyter notebooks", agent="claude-code")
    log.record_miss("native windows support", tool="lookup_capability")
    clock.advance(24 * 10)
    log.record_request("voice input", agent="gemini-cli")
    everything = gap_report(log)
    assert everything["totals"] == {"requests": 3, "misses": 1, "gaps": 3}
    assert everything["gaps"][0]["representative"] == "jupyter notebooks"
    assert everything["gaps"][0]["requests"] == 2
    assert everything["database"] == log.location
    recent = gap_report(log, since_days=3)
    assert [g["representative"] for g in recent["gaps"]] == ["voice input"]
    claude = gap_report(log, agent="Claude Code")
    assert [g["representative"] for g in claude["gaps"]] == ["jupyter notebooks"]
    log.close()


def test_a_report_on_an_empty_database_creates_nothing(backend):
    report = gap_report(backend.log(enabled=False))
    assert report["totals"] == {"requests": 0, "misses": 0, "gaps": 0}
    if backend.kind == "sqlite":
        assert not Path(backend.location).exists()
    else:
        tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        assert backend.sql(tables) == [(0,)]


def test_the_postgresql_tables_have_the_sqlite_columns(postgres, tmp_path):
    sqlite_log = GapLog(tmp_path / "gaps.sqlite3", enabled=True)
    sqlite_log.record_request("voice input")
    sqlite_log.close()
    url = postgres.new_database()
    GapLog(url, enabled=True).record_request("voice input")
    with sqlite3.connect(tmp_path / "gaps.sqlite3") as conn:
        for table in ("requests", "misses"):
            sqlite_columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            pg_columns = postgres.execute(
                "SELECT column_name FROM information_schema.columns "
                f"WHERE table_name = '{table}' ORDER BY ordinal_position",
                url.rsplit("/", 1)[1],
            )
            assert [r[0] for r in pg_columns] == sqlite_columns
    assert all(m.sqlite and m.postgres for m in MIGRATIONS)


# -- PostgreSQL only: replicas, outages, the driver ------------------------------------------


def test_two_replicas_counting_the_same_need_at_once_add_up(postgres):
    url = postgres.new_database()
    GapLog(url, enabled=True).record_request("warm up the schema")
    replicas = [GapLog(url, enabled=True, rate_limit=None) for _ in range(2)]
    counts: list[int] = []
    start = threading.Barrier(2)

    def ask(log: GapLog) -> None:
        start.wait()
        for _ in range(40):
            status = log.record_request("export chat to markdown", agent="claude-code")
            assert status.recorded, status.reason
            counts.append(status.count)

    threads = [threading.Thread(target=ask, args=(log,)) for log in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    rows = postgres.execute(
        "SELECT count FROM requests WHERE norm = 'export chat to markdown'", url.rsplit("/", 1)[1]
    )
    assert rows == [(80,)]
    assert sorted(counts) == list(range(1, 81))  # every acknowledgement saw its own count


def test_replicas_starting_on_an_empty_database_migrate_it_once(postgres):
    url = postgres.new_database()
    replicas = [GapLog(url, enabled=True) for _ in range(4)]
    start = threading.Barrier(len(replicas))
    statuses = []

    def first_write(log: GapLog, i: int) -> None:
        start.wait()
        statuses.append(log.record_request(f"need {i}"))

    threads = [threading.Thread(target=first_write, args=(log, i)) for i, log in enumerate(replicas)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [s.recorded for s in statuses] == [True] * 4, [s.reason for s in statuses]
    name = url.rsplit("/", 1)[1]
    assert postgres.execute("SELECT version FROM gap_log_schema", name) == [(SCHEMA_VERSION,)]
    assert postgres.execute("SELECT count(*) FROM requests", name) == [(4,)]


def test_an_unreachable_database_pauses_recording_and_it_resumes_once_it_answers(postgres, caplog):
    url = postgres.url("created_later")  # a database that does not exist yet: the server refuses
    log = GapLog(url, enabled=True, rate_limit=None)
    with caplog.at_level(logging.WARNING, logger="engine"):
        first = log.record_request("voice input")
        second = log.record_request("voice output")
    assert (first.recorded, second.recorded, log.enabled) == (False, False, True)
    assert "cannot be reached" in first.reason and "resumes" in first.reason
    assert len([r for r in caplog.records if r.name == "engine"]) == 1  # one warning, not one per write
    postgres.execute("CREATE DATABASE created_later")
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert log.record_request("voice input").recorded
    assert "resumed" in caplog.records[-1].getMessage()


def test_a_dropped_connection_is_replaced_without_losing_the_write(postgres):
    url = postgres.new_database()
    log = GapLog(url, enabled=True, rate_limit=None)
    assert log.record_request("voice input").recorded
    name = url.rsplit("/", 1)[1]
    postgres.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
    assert log.record_request("voice output").recorded  # a server restart or proxy timeout costs nothing
    assert postgres.execute("SELECT capability FROM requests ORDER BY id", name) == [
        ("voice input",),
        ("voice output",),
    ]


def test_the_password_never_reaches_the_report_or_the_warnings(postgres, caplog):
    url = postgres.url("no_such_database", password="s3cret")
    log = GapLog(url, enabled=True)
    with caplog.at_level(logging.WARNING, logger="engine"):
        status = log.record_request("voice input")
    assert "s3cret" not in status.reason and "s3cret" not in caplog.text
    assert "s3cret" not in log.location and "postgres:***@" in log.location


def test_hide_password_covers_the_user_info_and_the_query_string():
    assert hide_password("postgresql://app:pa:ss@db.internal:5432/gaps?sslmode=require&password=x") == (
        "postgresql://app:***@db.internal:5432/gaps?sslmode=require&password=***"
    )
    assert hide_password("postgres://db/gaps") == "postgres://db/gaps"


def test_a_postgresql_url_without_psycopg_is_one_error_naming_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an install without the extra sees
    url = "postgresql://app@db.internal/gaps"
    with pytest.raises(GapLogError, match=r"pip install 'agent-capabilities\[postgres\]'"):
        GapLog(url, enabled=True)
    monkeypatch.setenv("AGENT_CAPABILITIES_DB", url)
    with pytest.raises(GapLogError, match="AGENT_CAPABILITIES_DB is a PostgreSQL URL"):
        GapLog(enabled=True)
    off = GapLog(enabled=False)  # recording off needs no driver until something is read
    with pytest.raises(GapLogError, match=r"agent-capabilities\[postgres\]"):
        gap_report(off)
    monkeypatch.setenv("AGENT_CAPABILITIES_DB", str(tmp_path / "gaps.db"))
    assert GapLog(enabled=True).record_request("voice input").recorded  # SQLite needs nothing


MALFORMED = "postgresql://app:s3cret@[::1/gaps"  # an unclosed IPv6 bracket: urlsplit itself fails


def test_a_malformed_url_is_one_error_at_start_without_the_password():
    assert hide_password(MALFORMED) == "postgresql://app:***@[::1/gaps"
    with pytest.raises(GapLogError) as caught:
        GapLog(MALFORMED, enabled=True)
    message = str(caught.value)
    assert "not a usable PostgreSQL URL" in message and "postgresql://USER:PASSWORD@HOST:PORT/DB" in message
    assert "s3cret" not in message and "\n" not in message


@pytest.mark.parametrize(
    ("command", "code"), [(["-m", "server"], 1), (["-m", "engine", "gaps"], 2)], ids=["server", "cli"]
)
def test_the_server_and_the_cli_refuse_a_malformed_url_in_one_line(command, code, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_DB": MALFORMED}
    proc = subprocess.run(
        [sys.executable, *command],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == code
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "not a usable PostgreSQL URL" in proc.stderr and "s3cret" not in proc.stderr
