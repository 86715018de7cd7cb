import json
import logging
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import engine
from build_scripts.prepare import calibrate_gap_grouping, seed_gaps_demo
from engine import answers, gaps
from engine.errors import GapLogError, InvalidQueryError, RateLimitError, UnknownAgentError
from engine.gaps.log import BUSY_RETRY_SECONDS, SCHEMA_VERSION, GapLog
from engine.gaps.report import GROUP_THRESHOLD, NEAR_CONFIDENCE, format_report, gap_report, group_phrasings
from engine.matching.index import default_encoder

ROOT = Path(__file__).resolve().parents[2]
CATALOG = engine.get_catalog()
# Read from the data, never pinned: which agents have web search changes as the docs do.
HAVE_WEB_SEARCH = [a for a in CATALOG.agent_ids if CATALOG.agents[a].records["Web Search"]["available"]]
HAVE_COMPLETION = [a for a in CATALOG.agent_ids if CATALOG.agents[a].records["Code Completion"]["available"]]
# An agent without code completion, for the "agent lacks it" states (Claude Code has none: a CLI agent).
LACKS_COMPLETION = next(a for a in CATALOG.agent_ids if a not in HAVE_COMPLETION)


class Clock:
    def __init__(self, now: float = 1_767_225_600.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, hours: float) -> None:
        self.now += hours * 3600


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "gaps.sqlite3"


@pytest.fixture
def gap_log(db: Path, clock: Clock):
    with GapLog(db, enabled=True, clock=clock, rate_limit=None) as log:
        yield log


def rows(path: Path, table: str = "requests") -> list[dict]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY id")]
    finally:
        conn.close()


def child_env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_CAPABILITIES_NO_LOG": ""}


# -- classification -----------------------------------------------------------


def test_classify_available_when_the_agent_has_it_points_to_lookup():
    answer = gaps.classify("web search", "Claude Code")
    assert answer["state"] == "available"
    assert answer["next_action"] == "use"
    assert answer["see"] == {
        "tool": "lookup_capability",
        "arguments": {"agent": "claude-code", "capability": "Web Search"},
    }


def test_classify_unavailable_gives_the_alternative_and_the_agents_that_have_it():
    # Read from the catalog which agent lacks code completion, so the test follows the data.
    answer = gaps.classify("inline code completion while I type", LACKS_COMPLETION)
    assert answer["state"] == "unavailable"
    assert answer["next_action"] == "use_alternative"
    assert answer["capability"] == "Code Completion"
    assert answer["availableIn"] == HAVE_COMPLETION
    assert answer["alternative"] == CATALOG.agents[LACKS_COMPLETION].records["Code Completion"]["alternative"]


def test_classify_uncataloged_when_nothing_fits_with_nearest_names():
    answer = gaps.classify("jupyter notebooks", "claude-code")
    assert answer["state"] == "uncataloged"
    assert answer["next_action"] == "recorded"
    assert answer["capability"] is None
    assert answer["nearest"] and all(set(n) == {"name", "matchConfidence"} for n in answer["nearest"])


def test_classify_without_agent_lists_the_agents_that_have_it():
    answer = gaps.classify("code completion")
    catalog = engine.get_catalog()
    have = [a for a in catalog.agent_ids if catalog.agents[a].records["Code Completion"]["available"]]
    assert (answer["state"], answer["availableIn"]) == ("available", have)
    assert "agent" not in answer


def test_classify_without_agent_is_unavailable_when_no_agent_has_it(monkeypatch):
    monkeypatch.setattr(gaps.requests, "agents_with", lambda name: [])
    answer = gaps.classify("code completion")
    assert (answer["state"], answer["next_action"]) == ("unavailable", "use_alternative")
    lacking = {a for a in CATALOG.agent_ids if a not in HAVE_COMPLETION}
    assert set(answer["alternatives"]) == {
        a for a in lacking if CATALOG.agents[a].records["Code Completion"].get("alternative")
    }


def test_classify_rejects_an_unknown_agent():
    with pytest.raises(UnknownAgentError):
        gaps.classify("web search", "not-an-agent")


def test_agents_with_names_the_agents_whose_record_is_available():
    assert gaps.agents_with("Web Search") == HAVE_WEB_SEARCH
    assert gaps.agents_with("Code Completion") == HAVE_COMPLETION


def test_request_capability_records_and_acknowledges(gap_log, db):
    answer = gaps.request_capability(gap_log, "jupyter notebooks", "claude", "editing a data notebook")
    assert answer["recorded"] is True and answer["timesAsked"] == 1
    [row] = rows(db)
    assert (row["capability"], row["agent"], row["context"], row["state"]) == (
        "jupyter notebooks",
        "claude-code",
        "editing a data notebook",
        "uncataloged",
    )


def test_request_capability_with_recording_off_says_so_and_next_action_is_none(db):
    log = GapLog(db, enabled=False)
    answer = gaps.request_capability(log, "jupyter notebooks")
    assert answer["recorded"] is False
    assert answer["next_action"] == "none"
    assert not db.parent.exists()


# -- storage: dedup, caps, off switch ------------------------------------------


def test_same_request_within_24h_counts_instead_of_adding_a_row(gap_log, db, clock):
    assert gap_log.record_request("Export chat to Markdown", agent="claude-code").count == 1
    clock.advance(23)
    assert gap_log.record_request("  export CHAT to markdown! ", agent="claude-code").count == 2
    [row] = rows(db)
    assert row["count"] == 2 and row["last_seen"] - row["first_seen"] == 23 * 3600


def test_same_request_after_24h_or_from_another_agent_is_a_new_row(gap_log, db, clock):
    gap_log.record_request("export chat to markdown", agent="claude-code")
    gap_log.record_request("export chat to markdown", agent="gemini-cli")
    gap_log.record_request("export chat to markdown")
    clock.advance(25)
    gap_log.record_request("export chat to markdown", agent="claude-code")
    assert [(r["agent"], r["count"]) for r in rows(db)] == [
        ("claude-code", 1),
        ("gemini-cli", 1),
        (None, 1),
        ("claude-code", 1),
    ]


def test_misses_are_deduplicated_too(gap_log, db, clock):
    for _ in range(3):
        gap_log.record_miss("jupyter notebooks", tool="lookup_capability", agent="claude-code")
        clock.advance(1)
    gap_log.record_miss("jupyter notebooks", tool="compare_capability")
    assert [(r["tool"], r["count"]) for r in rows(db, "misses")] == [
        ("lookup_capability", 3),
        ("compare_capability", 1),
    ]


def test_capability_over_500_characters_is_rejected_with_the_limit(gap_log, db):
    gap_log.record_request("x" * 500)
    with pytest.raises(InvalidQueryError, match="501 characters long; the limit is 500"):
        gap_log.record_request("x" * 501)
    with pytest.raises(InvalidQueryError, match="the limit is 500"):
        gaps.request_capability(gap_log, "y" * 600)
    assert len(rows(db)) == 1


def test_context_over_2000_characters_is_rejected_with_the_limit(gap_log, db):
    with pytest.raises(InvalidQueryError, match="the limit is 2000"):
        gap_log.record_request("voice input", context="c" * 2001)
    assert not db.exists()


def test_control_characters_are_stripped_before_storing(gap_log, db):
    gap_log.record_request(
        "voice\x00 in\u200bput\x1b\x07\r\n now", agent="claude-code", context="line one\x00\nline\u202e two"
    )
    [row] = rows(db)
    assert row["capability"] == "voice input now"
    assert row["context"] == "line one\nline two"


def test_lone_surrogates_are_stored_as_replacement_characters_not_an_encoding_error(gap_log, db):
    # JavaScript's JSON.stringify writes a string cut inside an emoji as a lone surrogate escape.
    answer = gaps.request_capability(gap_log, "voice \udfff input", context="cut \ud83d")
    assert answer["recorded"] is True
    status = gap_log.record_miss("teleport \ud800 me", tool="lookup_capability", agent="cl\udc00aude")
    assert status.recorded is True
    [request] = rows(db)
    assert (request["capability"], request["context"]) == ("voice \ufffd input", "cut \ufffd")
    [miss] = rows(db, "misses")
    assert (miss["query"], miss["agent"]) == ("teleport \ufffd me", "cl\ufffdaude")


def test_empty_capability_after_stripping_is_rejected(gap_log):
    with pytest.raises(InvalidQueryError, match="empty"):
        gap_log.record_request("\x00\x01  \u200b")


def test_no_log_env_writes_nothing_not_even_the_file(db, monkeypatch):
    monkeypatch.setenv("AGENT_CAPABILITIES_NO_LOG", "1")
    log = GapLog(db)
    assert not log.enabled
    assert log.record_request("voice input").recorded is False
    assert log.record_miss("voice input", tool="lookup_capability").recorded is False
    gaps.request_capability(log, "jupyter notebooks", "claude-code")
    assert not db.parent.exists()


def test_no_log_leaves_an_existing_database_untouched(gap_log, db, monkeypatch):
    gap_log.record_request("voice input")
    gap_log.close()
    before = db.read_bytes()
    monkeypatch.setenv("AGENT_CAPABILITIES_NO_LOG", "1")
    log = GapLog(db)
    log.record_request("voice input")
    log.record_miss("jupyter", tool="lookup_capability")
    assert db.read_bytes() == before
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name]


def test_db_env_overrides_the_default_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CAPABILITIES_DB", str(tmp_path / "elsewhere.db"))
    assert GapLog().path == tmp_path / "elsewhere.db"


def test_database_is_wal_with_the_current_schema_version(gap_log, db):
    gap_log.record_request("voice input")
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_oldest_rows_are_pruned_beyond_the_row_cap(db, clock):
    log = GapLog(db, enabled=True, clock=clock, rate_limit=None, max_rows=5)
    for i in range(8):
        log.record_request(f"need number {i}")
        log.record_miss(f"miss number {i}", tool="lookup_capability")
    assert [r["capability"] for r in rows(db)] == [f"need number {i}" for i in range(3, 8)]
    assert len(rows(db, "misses")) == 5


def test_rate_limit_raises_a_clear_error_for_requests_and_recovers(db, clock):
    log = GapLog(db, enabled=True, clock=clock, rate_limit=3, rate_window=60)
    for i in range(3):
        log.record_request(f"need {i}")
    with pytest.raises(RateLimitError, match="at most 3 per 60 seconds"):
        log.record_request("one too many")
    clock.advance(61 / 3600)
    assert log.record_request("after the window").recorded
    assert len(rows(db)) == 4


def test_writes_skipped_while_the_database_is_locked_do_not_count_against_the_rate_limit(gap_log, db, clock):
    # The audit's outage: requests answered "not recorded" used up the budget, and for a minute after the
    # database came back every request was refused as too many.
    gap_log.record_request("the file exists")
    log = GapLog(db, enabled=True, clock=clock, rate_limit=2, busy_timeout=0.05)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        skipped = [log.record_request(f"need {i}") for i in range(3)]
        skipped += [log.record_miss(f"miss {i}", tool="lookup_capability") for i in range(3)]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not any(status.recorded for status in skipped)
    clock.advance(BUSY_RETRY_SECONDS / 3600)  # past the pause silent misses take after a lock
    assert [log.record_request(f"after {i}").recorded for i in range(2)] == [True, True]
    assert [log.record_miss(f"after {i}", tool="lookup_capability").recorded for i in range(2)] == [
        True,
        True,
    ]
    with pytest.raises(RateLimitError):  # what was recorded still counts
        log.record_request("one too many")


def test_rate_limit_never_raises_for_silent_misses(db, clock):
    log = GapLog(db, enabled=True, clock=clock, rate_limit=2)
    statuses = [log.record_miss(f"miss {i}", tool="lookup_capability") for i in range(4)]
    assert [s.recorded for s in statuses] == [True, True, False, False]
    assert "rate limit" in statuses[-1].reason


# -- storage: broken files never break lookups ----------------------------------


def assert_off_with_one_warning(log: GapLog, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="engine"):
        first = log.record_request("voice input")
        second = log.record_miss("jupyter", tool="lookup_capability")
        answer = gaps.request_capability(log, "web search", "claude-code")
    assert (first.recorded, second.recorded, answer["recorded"]) == (False, False, False)
    assert answer["state"] == "available"
    warnings = [r for r in caplog.records if r.name == "engine" and "recording is off" in r.getMessage()]
    assert len(warnings) == 1


def test_corrupt_file_turns_recording_off_with_one_warning_and_is_kept(db, caplog):
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database " * 200)
    assert_off_with_one_warning(GapLog(db, enabled=True), caplog)
    assert db.read_bytes() == b"this is not a database " * 200
    with pytest.raises(GapLogError):
        gap_report(GapLog(db))


def test_path_that_is_a_directory_turns_recording_off(db, caplog):
    db.mkdir(parents=True)
    assert_off_with_one_warning(GapLog(db, enabled=True), caplog)


def test_unwritable_directory_turns_recording_off(tmp_path, caplog):
    # A regular file where the directory should be fails even for root, unlike chmod.
    (tmp_path / "not-a-dir").write_text("x")
    assert_off_with_one_warning(GapLog(tmp_path / "not-a-dir" / "gaps.sqlite3", enabled=True), caplog)


def test_a_locked_database_skips_writes_and_recording_resumes_once_it_is_free(gap_log, db, clock, caplog):
    gap_log.record_request("voice input")
    log = GapLog(db, enabled=True, clock=clock, busy_timeout=0.05)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with caplog.at_level(logging.WARNING, logger="engine"):
            first = log.record_miss("jupyter", tool="lookup_capability")
            request = log.record_request("voice output")
            answer = gaps.request_capability(log, "web search", "claude-code")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (first.recorded, request.recorded, answer["recorded"]) == (False, False, False)
    assert "locked" in first.reason and "locked" in answer["acknowledgement"]
    assert answer["state"] == "available"
    assert log.enabled  # a lock is not a broken file: recording stays on
    warnings = [r.getMessage() for r in caplog.records if r.name == "engine" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "locked" in warnings[0]
    assert log.record_request("voice output").recorded  # the lock is gone: the next request lands
    assert log.record_miss("jupyter", tool="lookup_capability").recorded
    assert [r["capability"] for r in rows(db)] == ["voice input", "voice output"]


def test_while_the_database_is_locked_silent_misses_do_not_wait_on_it_again(db, clock, monkeypatch):
    log = GapLog(db, enabled=True, clock=clock, busy_timeout=0.05)
    assert log.record_miss("first", tool="lookup_capability").recorded
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert not log.record_miss("second", tool="lookup_capability").recorded
        attempts = []
        real_write = GapLog._write
        monkeypatch.setattr(GapLog, "_write", lambda self, *a: attempts.append(a) or real_write(self, *a))
        skipped = log.record_miss("third", tool="lookup_capability")
        assert not skipped.recorded and "locked" in skipped.reason
        assert attempts == []  # skipped without touching SQLite
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    clock.advance(1)  # an hour later the miss path tries again
    assert log.record_miss("fourth", tool="lookup_capability").recorded
    assert [r["query"] for r in rows(db, "misses")] == ["first", "fourth"]


def test_writes_wait_on_a_locked_database_a_second_at_most_and_lookups_a_quarter(db, monkeypatch):
    waits = []
    real_write = GapLog._write
    monkeypatch.setattr(GapLog, "_write", lambda self, *a: waits.append(a[4]) or real_write(self, *a))
    log = GapLog(db, enabled=True)
    log.record_miss("jupyter", tool="lookup_capability")  # what a lookup that found nothing does
    log.record_request("voice input")
    assert waits == [0.25, 1.0]


def test_close_folds_the_wal_into_the_file_even_with_another_connection_open(gap_log, db, tmp_path):
    gap_log.record_request("voice input")
    other = sqlite3.connect(db)  # another process's connection: SQLite would not checkpoint on its own
    try:
        other.execute("SELECT count(*) FROM requests").fetchone()
        gap_log.close()
        copy = tmp_path / "copy.sqlite3"
        copy.write_bytes(db.read_bytes())  # the main file alone, as a backup or a move would take it
    finally:
        other.close()
    assert [r["capability"] for r in rows(copy)] == ["voice input"]


def test_newer_schema_turns_recording_off(db, caplog):
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    assert_off_with_one_warning(GapLog(db, enabled=True), caplog)


# -- storage: concurrency and durability ----------------------------------------

WRITER = """
import sys
from engine.gaps.log import GapLog
log = GapLog(sys.argv[1], enabled=True, rate_limit=None)
for i in range(int(sys.argv[3])):
    if not log.record_request(f"{sys.argv[2]} need {i}").recorded:
        sys.exit(1)
"""


def test_a_lock_seen_while_opening_the_log_is_retried_not_fatal(db, monkeypatch):
    """Two processes opening a new log at once can get "database is locked" from the WAL switch."""
    real_connect = sqlite3.connect
    failures = {"left": 2}

    class FlakyOpen:
        def __init__(self, conn):
            self._conn = conn

        def execute(self, sql, *args):
            if "journal_mode" in sql and failures["left"]:
                failures["left"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return self._conn.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self._conn, name)

    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: FlakyOpen(real_connect(*a, **k)))
    log = GapLog(db, enabled=True, rate_limit=None)
    assert log.record_request("voice input").recorded
    assert failures["left"] == 0 and log.enabled
    monkeypatch.setattr(sqlite3, "connect", real_connect)
    assert [r["capability"] for r in rows(db)] == ["voice input"]


def test_two_processes_writing_at_once_both_land(db):
    db.parent.mkdir(parents=True)
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), name, "40"], env=child_env())
        for name in ("first", "second")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    names = {r["capability"] for r in rows(db)}
    assert names == {f"{who} need {i}" for who in ("first", "second") for i in range(40)}


ACKER = """
import sys
from engine.gaps.log import GapLog
log = GapLog(sys.argv[1], enabled=True, rate_limit=None)
i = 0
while True:
    name = f"cycle {sys.argv[2]} need {i}"
    if log.record_request(name, agent="claude-code").recorded:
        print("ack " + name, flush=True)
    i += 1
"""


def test_sigkill_mid_stream_loses_no_acknowledged_request(db):
    db.parent.mkdir(parents=True)
    rng = random.Random(7)
    acknowledged: set[str] = set()
    for cycle in range(10):
        proc = subprocess.Popen(
            [sys.executable, "-c", ACKER, str(db), str(cycle)],
            env=child_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(rng.randint(1, 12)):
            line = proc.stdout.readline()
            assert line.startswith("ack "), f"child stopped early: {line!r}"
            acknowledged.add(line[4:].strip())
        os.kill(proc.pid, signal.SIGKILL)
        # Lines already printed were acknowledged too, even if read after the kill.
        acknowledged.update(line[4:].strip() for line in proc.stdout if line.startswith("ack "))
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {r[0] for r in conn.execute("SELECT capability FROM requests")}
    conn.close()
    assert len(acknowledged) >= 10
    assert acknowledged <= stored
    assert GapLog(db, enabled=True).record_request("after the kills").recorded


# -- passive capture -------------------------------------------------------------


def test_no_match_lookup_is_recorded_as_a_silent_miss(gap_log, db):
    answer = answers.lookup("claude-code", "jupyter notebooks")
    status = gaps.record_miss(gap_log, answer, tool="lookup_capability")
    assert status.recorded
    [row] = rows(db, "misses")
    assert (row["query"], row["agent"], row["tool"]) == (
        "jupyter notebooks",
        "claude-code",
        "lookup_capability",
    )
    nearest = json.loads(row["nearest"])
    assert [n["name"] for n in nearest] == [n["name"] for n in answer["nearest"]]


def test_a_confident_match_is_not_a_miss(gap_log, db):
    assert (
        gaps.record_miss(gap_log, answers.lookup("claude-code", "web search"), tool="lookup_capability")
        is None
    )
    assert not db.exists()


def test_record_miss_never_raises_on_odd_answers(gap_log):
    assert gaps.record_miss(gap_log, {"capability": None, "match": None}, tool="x") is None
    status = gaps.record_miss(gap_log, {"capability": None, "match": {"query": 5}}, tool="x")
    assert status is None


def test_only_what_the_caller_sent_is_stored(gap_log, db):
    gap_log.record_request("voice input")
    [row] = rows(db)
    assert row["agent"] is None and row["context"] is None
    assert set(row) == {
        "id",
        "capability",
        "norm",
        "agent",
        "context",
        "state",
        "nearest",
        "count",
        "first_seen",
        "last_seen",
    }


# -- the report ---------------------------------------------------------------


def test_grouping_puts_two_phrasings_of_one_need_together_and_keeps_another_apart():
    texts = ["export chat to markdown", "run on windows without wsl", "save the conversation as a file"]
    assert sorted(group_phrasings(texts)) == [[0, 2], [1]]


def test_report_groups_phrasings_of_one_need_into_one_gap(gap_log):
    gaps.request_capability(gap_log, "export chat to markdown", "claude-code")
    gaps.request_capability(gap_log, "save the conversation as a file", "gemini-cli")
    gap_log.record_miss("native windows support", tool="lookup_capability")
    report = gap_report(gap_log)
    first, second = report["gaps"]
    assert {first["representative"], *first["examples"]} == {
        "export chat to markdown",
        "save the conversation as a file",
    }
    assert first["agents"] == ["claude-code", "gemini-cli"]
    assert (first["requests"], first["misses"]) == (2, 0)
    assert second["representative"] == "native windows support"


def test_report_ranks_requests_above_misses(gap_log):
    gap_log.record_request("jupyter notebooks")
    gap_log.record_miss("native windows support", tool="lookup_capability")
    gap_log.record_miss("native windows support", tool="compare_capability")
    report = gap_report(gap_log)
    assert [g["representative"] for g in report["gaps"]] == ["jupyter notebooks", "native windows support"]
    assert [(g["requests"], g["misses"], g["score"]) for g in report["gaps"]] == [(1, 0, 3), (0, 2, 2)]


def test_report_classifies_uncataloged_and_agent_lacks(gap_log):
    gaps.request_capability(gap_log, "inline code completion while I type", LACKS_COMPLETION)
    gaps.request_capability(gap_log, "jupyter notebooks", "claude-code")
    by_text = {g["representative"]: g for g in gap_report(gap_log)["gaps"]}
    lacks = by_text["inline code completion while I type"]["classification"]
    assert (lacks["kind"], lacks["capability"], lacks["lackedBy"]) == (
        "agent_lacks",
        "Code Completion",
        [LACKS_COMPLETION],
    )
    assert lacks["availableIn"] == HAVE_COMPLETION
    assert by_text["jupyter notebooks"]["classification"]["kind"] == "uncataloged"
    assert set(by_text["jupyter notebooks"]["nearest"]) == {"name", "matchConfidence"}


def test_a_miss_close_to_a_capability_is_near_it_not_an_uncataloged_need(gap_log):
    # A wording the matcher does not answer, but whose nearest capability is close (Scheduled Tasks).
    gap_log.record_miss("queue up work for later", tool="lookup_capability", agent="cursor")
    gap_log.record_miss("jupyter notebooks", tool="lookup_capability")
    by_text = {g["representative"]: g for g in gap_report(gap_log)["gaps"]}
    near = by_text["queue up work for later"]
    assert near["nearest"]["matchConfidence"] >= NEAR_CONFIDENCE  # a miss, but a close one
    assert near["classification"]["kind"] == "near_capability"
    assert near["classification"]["capability"] == near["nearest"]["name"]
    assert "uncataloged" not in near["classification"]["label"]
    far = by_text["jupyter notebooks"]
    assert far["nearest"]["matchConfidence"] < NEAR_CONFIDENCE
    assert far["classification"]["kind"] == "uncataloged"


def test_report_filters_by_days_and_agent(gap_log, clock):
    gap_log.record_request("jupyter notebooks", agent="claude-code")
    clock.advance(24 * 10)
    gap_log.record_request("voice input", agent="gemini-cli")
    recent = gap_report(gap_log, since_days=3)
    assert [g["representative"] for g in recent["gaps"]] == ["voice input"]
    claude = gap_report(gap_log, agent="Claude Code")
    assert claude["filters"]["agent"] == "claude-code"
    assert [g["representative"] for g in claude["gaps"]] == ["jupyter notebooks"]
    with pytest.raises(InvalidQueryError):
        gap_report(gap_log, since_days=0)


def test_report_reads_a_bounded_number_of_rows(gap_log, monkeypatch):
    monkeypatch.setattr("engine.gaps.report.MAX_ROWS_READ", 3)
    for i in range(5):
        gap_log.record_miss(f"miss {i}", tool="lookup_capability")
    report = gap_report(gap_log)
    assert report["truncated"] is True
    assert report["totals"]["misses"] == 3


def test_report_embeds_only_the_most_weighted_phrasings(gap_log, monkeypatch):
    monkeypatch.setattr("engine.gaps.report.MAX_GROUPED", 2)
    embedded = []

    class Spy:
        def encode(self, texts):
            embedded.extend(texts)
            return default_encoder().encode(texts)

    gap_log.record_request("jupyter notebooks")
    gap_log.record_request("jupyter notebooks", agent="claude-code")
    gap_log.record_request("export chat to markdown")
    gap_log.record_miss("save the conversation as a file", tool="lookup_capability")
    report = gap_report(gap_log, encoder=Spy())
    assert embedded == ["jupyter notebooks", "export chat to markdown"]
    assert [g["representative"] for g in report["gaps"]] == [
        "jupyter notebooks",
        "export chat to markdown",
        "save the conversation as a file",
    ]


def test_report_on_a_missing_database_is_empty_and_creates_nothing(db):
    report = gap_report(GapLog(db))
    assert report["gaps"] == [] and report["totals"]["gaps"] == 0
    assert "Nothing recorded yet." in format_report(report)
    assert not db.parent.exists()


def test_format_report_is_a_readable_table(gap_log):
    gaps.request_capability(gap_log, "inline code completion while I type", LACKS_COMPLETION)
    gaps.request_capability(gap_log, "autocomplete suggestions as I type", LACKS_COMPLETION)
    text = format_report(gap_report(gap_log))
    lines = text.splitlines()
    assert any(line.lstrip().startswith("#  score") for line in lines)
    row = next(line for line in lines if line.lstrip().startswith("1 "))
    assert "Code Completion" in row and "agent lacks Code Completion" in row
    assert 'also: "' in text and f"agents: {LACKS_COMPLETION}" in text


def test_grouping_threshold_still_holds_on_the_labelled_phrasings():
    doc = json.loads(calibrate_gap_grouping.LABELLED.read_text())
    pools = calibrate_gap_grouping.pools(doc)
    tune = calibrate_gap_grouping.evaluate(pools["tune"], GROUP_THRESHOLD)
    holdout = calibrate_gap_grouping.evaluate(pools["holdout"], GROUP_THRESHOLD)
    assert tune["f1"] >= 0.68 and holdout["f1"] >= 0.9


def test_seeded_demo_top_gaps_are_the_seeded_needs(tmp_path):
    clock = seed_gaps_demo._Clock()
    with GapLog(tmp_path / "demo.sqlite3", enabled=True, clock=clock, rate_limit=None) as log:
        events = seed_gaps_demo.seed(log, clock, random.Random(10))
        report = gap_report(log, top=12)
    problems, _ = seed_gaps_demo.check(report)
    assert 150 <= events <= 250
    assert problems == []


def test_the_log_is_created_private_to_its_owner(tmp_path):
    # It holds what users asked, and their context: others on the machine must not read it.
    db = tmp_path / "new-dir" / "gaps.sqlite3"
    old = os.umask(0o022)  # the usual umask, under which SQLite alone creates the file 0644
    try:
        with GapLog(db, enabled=True) as log:
            assert log.record_request("voice input").recorded
            files = [p for p in db.parent.iterdir() if p.name.startswith(db.name)]
            modes = {p.name: p.stat().st_mode & 0o777 for p in files}
    finally:
        os.umask(old)
    assert db.name in modes and set(modes.values()) == {0o600}, modes
    assert db.parent.stat().st_mode & 0o777 == 0o700
