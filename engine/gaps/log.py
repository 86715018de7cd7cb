"""The gap log: a local SQLite file of capability requests and silent misses.

One file (``AGENT_CAPABILITIES_DB`` or the user's data directory), WAL mode,
every write committed with ``synchronous=FULL`` before a method returns, and
the WAL folded back into the file on ``close`` (a copy of the file alone then
holds every row). Recording never breaks a lookup: when the file cannot be
used, recording turns off with one warning and the methods say nothing was
recorded; when another program holds a lock on it, writes wait briefly, are
skipped while the lock lasts, and resume once it is gone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from ..common.text import clean_text
from ..errors import GapLogError, InvalidQueryError, RateLimitError

log = logging.getLogger("engine")

DB_ENV = "AGENT_CAPABILITIES_DB"
NO_LOG_ENV = "AGENT_CAPABILITIES_NO_LOG"
DB_NAME = "gaps.sqlite3"

MAX_CAPABILITY_CHARS = 500
MAX_CONTEXT_CHARS = 2000
MAX_AGENT_CHARS = 100
MAX_TOOL_CHARS = 64
MAX_NEAREST = 5
DEDUP_SECONDS = 24 * 3600
MAX_ROWS = 100_000
# A lock held by another program: an explicit request waits up to the log's busy_timeout (this by
# default), a silent miss (on the lookup path) at most MISS_BUSY_TIMEOUT, and after a write found
# the file locked, silent misses are skipped for BUSY_RETRY_SECONDS instead of each waiting again.
BUSY_TIMEOUT = 1.0
MISS_BUSY_TIMEOUT = 0.25
BUSY_RETRY_SECONDS = 10.0
CLOSE_BUSY_TIMEOUT = 0.5  # longest the checkpoint at close waits for another connection

# Each entry moves the schema one version up; PRAGMA user_version counts the applied ones.
# Append new steps, never edit old ones: a user's file may be at any earlier version.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE requests (
            id INTEGER PRIMARY KEY,
            capability TEXT NOT NULL,
            norm TEXT NOT NULL,
            agent TEXT,
            context TEXT,
            state TEXT,
            nearest TEXT NOT NULL DEFAULT '[]',
            count INTEGER NOT NULL DEFAULT 1,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL
        )""",
        "CREATE INDEX requests_dedup ON requests (norm, agent, first_seen)",
        "CREATE INDEX requests_last_seen ON requests (last_seen)",
        """CREATE TABLE misses (
            id INTEGER PRIMARY KEY,
            query TEXT NOT NULL,
            norm TEXT NOT NULL,
            agent TEXT,
            tool TEXT NOT NULL,
            nearest TEXT NOT NULL DEFAULT '[]',
            count INTEGER NOT NULL DEFAULT 1,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL
        )""",
        "CREATE INDEX misses_dedup ON misses (norm, agent, tool, first_seen)",
        "CREATE INDEX misses_last_seen ON misses (last_seen)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def default_db_path() -> Path:
    """``AGENT_CAPABILITIES_DB`` if set, else ``gaps.sqlite3`` in the user's data directory."""
    override = os.environ.get(DB_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs  # only needed when no path is given

    return Path(platformdirs.user_data_dir("agent-capabilities")) / DB_NAME


def logging_disabled() -> bool:
    """True when ``AGENT_CAPABILITIES_NO_LOG`` asks for no recording (any value but '', 0, false, no)."""
    return os.environ.get(NO_LOG_ENV, "").strip().casefold() not in ("", "0", "false", "no")


def strip_controls(text: str, *, keep_newlines: bool = False) -> str:
    """Drop control and invisible format characters; tabs and line breaks become spaces.

    Format characters (zero-width, bidi overrides) go too: they could make a
    logged phrase print differently from what it is in a maintainer's terminal.
    Lone surrogates (a JavaScript string cut inside an emoji) become U+FFFD:
    SQLite cannot store them, and the rest of the text stays readable.
    """
    out = []
    for ch in clean_text(text):
        if ch == "\n" and keep_newlines:
            out.append(ch)
        elif ch in "\t\r\n\v\f":
            out.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cf"):
            out.append(ch)
    return "".join(out)


def clean_field(value: object, *, field: str, limit: int, multiline: bool = False) -> str:
    """Return ``value`` without control characters and surplus spaces, or raise ``InvalidQueryError``."""
    if not isinstance(value, str):
        raise InvalidQueryError(f"{field} must be a string, got {type(value).__name__}")
    text = strip_controls(value, keep_newlines=multiline)
    if multiline:
        text = "\n".join(" ".join(line.split()) for line in text.split("\n")).strip()
    else:
        text = " ".join(text.split())
    if len(text) > limit:
        raise InvalidQueryError(
            f"{field} is {len(text)} characters long; the limit is {limit}. "
            "Describe the need in a sentence or two."
        )
    return text


def clean_capability(value: object) -> str:
    """A capability request as stored: stripped, at most 500 characters, not empty."""
    text = clean_field(value, field="capability", limit=MAX_CAPABILITY_CHARS)
    if not text:
        raise InvalidQueryError("capability is empty. Describe the need in the user's words.")
    return text


def clean_context(value: object) -> str | None:
    """Optional context as stored: stripped, at most 2,000 characters; empty becomes None."""
    if value is None:
        return None
    return clean_field(value, field="context", limit=MAX_CONTEXT_CHARS, multiline=True) or None


def normalize(text: str) -> str:
    """The dedup key of a phrasing: case, width, punctuation and spacing folded.

    Keeps letters of every script, so requests in other languages do not collapse to one key.
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZ" else ch for ch in text)
    return " ".join(kept.split()) or " ".join(text.split())


@dataclass(frozen=True)
class RecordStatus:
    """Whether a write landed; ``count`` is how often the request was seen in its 24-hour window."""

    recorded: bool
    count: int = 0
    reason: str | None = None

    def to_dict(self) -> dict:
        """JSON-ready form."""
        out: dict = {"recorded": self.recorded}
        if self.recorded:
            out["count"] = self.count
        if self.reason:
            out["reason"] = self.reason
        return out


class _RateLimiter:
    """At most ``limit`` events per ``window`` seconds (a sliding window)."""

    def __init__(self, limit: int | None, window: float) -> None:
        self.limit = limit
        self.window = window
        self._times: deque[float] = deque()

    def allow(self, now: float) -> bool:
        if self.limit is None:
            return True
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        if len(self._times) >= self.limit:
            return False
        self._times.append(now)
        return True


def _is_busy(exc: sqlite3.Error) -> bool:
    """True for "database is locked/busy": another connection holds the lock, nothing is broken."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _nearest_json(nearest: Iterable[dict] | None) -> str:
    """Keep only names and confidences of the first few candidates: nothing else goes in the log."""
    rows = []
    for item in list(nearest or ())[:MAX_NEAREST]:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            confidence = item.get("matchConfidence", item.get("confidence"))
            row: dict = {"name": clean_text(item["name"][:MAX_CAPABILITY_CHARS])}
            if isinstance(confidence, (int, float)):
                row["matchConfidence"] = round(float(confidence), 3)
            rows.append(row)
    return json.dumps(rows, ensure_ascii=False)


class GapLog:
    """Append-mostly log of capability requests and silent misses in one SQLite file.

    The file is created on the first write, never when recording is off.
    ``clock`` returns Unix seconds (tests inject one to cross the 24-hour
    dedup window); ``rate_limit`` is writes per ``rate_window`` seconds for
    each of the two tables (None: no limit).
    """

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.time,
        rate_limit: int | None = 60,
        rate_window: float = 60.0,
        max_rows: int = MAX_ROWS,
        busy_timeout: float = BUSY_TIMEOUT,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.enabled = not logging_disabled() if enabled is None else bool(enabled)
        self.disabled_reason = None if self.enabled else "recording is turned off"
        self.clock = clock
        self.max_rows = max_rows
        self.busy_timeout = busy_timeout
        self._limits = {
            "requests": _RateLimiter(rate_limit, rate_window),
            "misses": _RateLimiter(rate_limit, rate_window),
        }
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._warned = False
        self._busy_since: float | None = None  # clock time of the write that found the file locked

    # -- connection -------------------------------------------------------

    def _connect(self, wait: float) -> sqlite3.Connection:
        """Open, switch to WAL and migrate, retrying a busy database for ``wait`` seconds.

        SQLite does not always wait on its busy handler while two processes
        open the same new file at once (the switch to WAL and the first read
        of the shared-memory index can report "database is locked" at once),
        so a lock seen here is retried for as long as the write would wait.
        """
        deadline = time.monotonic() + wait
        delay = 0.01
        while True:
            try:
                return self._open(wait)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _open(self, wait: float) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=wait, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot switch to WAL mode (journal mode is {mode})")
            conn.execute("PRAGMA synchronous = FULL")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the schema to ``SCHEMA_VERSION`` in one transaction (safe against a second process)."""
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise GapLogError(
                    f"{self.path} has schema version {version}; this engine knows up to {SCHEMA_VERSION}"
                )
            for steps in MIGRATIONS[version:]:
                for statement in steps:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _disable(self, reason: str) -> None:
        self.enabled = False
        self.disabled_reason = reason
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        if not self._warned:
            self._warned = True
            log.warning("capability gap recording is off: %s", reason)

    def close(self) -> None:
        """Fold the WAL back into the file and close the connection (the next write reopens it).

        SQLite checkpoints by itself only when the last connection to the file
        closes; with another process still attached, the rows would stay in
        ``-wal`` and a copy of the file alone would miss them. A checkpoint the
        other process blocks is skipped after ``CLOSE_BUSY_TIMEOUT``: the rows
        are safe in the WAL either way.
        """
        if not self._lock.acquire(timeout=self.busy_timeout + CLOSE_BUSY_TIMEOUT + 1):
            log.warning("gap log %s: a write is still running; closing without a checkpoint", self.path)
            return
        try:
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute(f"PRAGMA busy_timeout = {int(CLOSE_BUSY_TIMEOUT * 1000)}")
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None
        finally:
            self._lock.release()

    def __enter__(self) -> GapLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ----------------------------------------------------------

    def record_request(
        self,
        capability: str,
        *,
        agent: str | None = None,
        context: str | None = None,
        state: str | None = None,
        nearest: Iterable[dict] | None = None,
    ) -> RecordStatus:
        """Log an explicit capability request; raises on bad input or when over the rate limit."""
        text = clean_capability(capability)
        context = clean_context(context)
        if agent is not None:
            agent = clean_field(agent, field="agent", limit=MAX_AGENT_CHARS) or None
        if not self.enabled:
            return RecordStatus(False, reason=self.disabled_reason)
        now = self.clock()
        if not self._limits["requests"].allow(now):
            limiter = self._limits["requests"]
            raise RateLimitError(
                f"too many capability requests: at most {limiter.limit} per {limiter.window:g} seconds "
                "are recorded. This one was not; try again later."
            )
        key = (normalize(text), agent)
        row = {"capability": text, "context": context, "state": state, "nearest": _nearest_json(nearest)}
        return self._write("requests", key, row, now, self.busy_timeout)

    def record_miss(
        self, query: str, *, tool: str, agent: str | None = None, nearest: Iterable[dict] | None = None
    ) -> RecordStatus:
        """Log a lookup that found nothing; never raises (over-long text is cut, not rejected)."""
        if not self.enabled:
            return RecordStatus(False, reason=self.disabled_reason)
        if not isinstance(query, str) or not isinstance(tool, str):
            return RecordStatus(False, reason="query and tool must be strings")
        text = " ".join(strip_controls(query).split())[:MAX_CAPABILITY_CHARS]
        if not text:
            return RecordStatus(False, reason="empty query")
        tool = " ".join(strip_controls(tool).split())[:MAX_TOOL_CHARS]
        if isinstance(agent, str):
            agent = " ".join(strip_controls(agent).split())[:MAX_AGENT_CHARS] or None
        else:
            agent = None
        now = self.clock()
        if self._waiting_for_lock(now):
            return RecordStatus(False, reason=self._busy_reason())
        if not self._limits["misses"].allow(now):
            return RecordStatus(False, reason="rate limit reached; miss not recorded")
        key = (normalize(text), agent, tool)
        wait = min(self.busy_timeout, MISS_BUSY_TIMEOUT)
        return self._write("misses", key, {"query": text, "nearest": _nearest_json(nearest)}, now, wait)

    def _write(self, table: str, key: tuple, row: dict, now: float, wait: float) -> RecordStatus:
        """Run one upsert in its own transaction, waiting at most ``wait`` seconds for a lock.

        A lock held by another program skips this write and leaves recording
        on (the next write tries again); any other storage failure turns
        recording off.
        """
        with self._lock:
            if not self.enabled:
                return RecordStatus(False, reason=self.disabled_reason)
            try:
                if self._conn is None:
                    self._conn = self._connect(wait)
                self._conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    count = self._upsert(self._conn, table, key, row, now)
                    self._conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    self._disable(f"cannot write to {self.path} ({exc})")
                    return RecordStatus(False, reason=self.disabled_reason)
                if self._busy_since is None:
                    log.warning(
                        "capability gap recording is paused: %s is locked by another program (%s); "
                        "retrying while it stays locked",
                        self.path,
                        exc,
                    )
                self._busy_since = now
                return RecordStatus(False, reason=self._busy_reason())
            except (sqlite3.Error, OSError, GapLogError) as exc:
                self._disable(f"cannot write to {self.path} ({exc})")
                return RecordStatus(False, reason=self.disabled_reason)
            if self._busy_since is not None:
                self._busy_since = None
                log.warning("capability gap recording resumed: %s is no longer locked", self.path)
        return RecordStatus(True, count=count)

    def _waiting_for_lock(self, now: float) -> bool:
        """True while a recent write found the file locked (silent misses then skip SQLite entirely)."""
        since = self._busy_since
        return since is not None and since <= now < since + BUSY_RETRY_SECONDS

    def _busy_reason(self) -> str:
        return f"{self.path} is locked by another program; recording resumes once it is free"

    def _upsert(self, conn: sqlite3.Connection, table: str, key: tuple, row: dict, now: float) -> int:
        """Count a repeat within 24 hours of its first sighting, else insert; return the new count."""
        match = "norm = ? AND agent IS ?" + (" AND tool = ?" if table == "misses" else "")
        found = conn.execute(
            f"SELECT id, count FROM {table} WHERE {match} AND first_seen > ? "
            "ORDER BY first_seen DESC LIMIT 1",
            (*key, now - DEDUP_SECONDS),
        ).fetchone()
        if found:
            row_id, count = found[0], found[1] + 1
            if table == "requests":
                sql, params = ", context = COALESCE(context, ?)", (count, now, row["context"], row_id)
            else:
                sql, params = "", (count, now, row_id)
            conn.execute(
                f"UPDATE {table} SET count = ?, last_seen = MAX(last_seen, ?){sql} WHERE id = ?", params
            )
            return count
        columns = {"norm": key[0], "agent": key[1], **row, "count": 1, "first_seen": now, "last_seen": now}
        if table == "misses":
            columns["tool"] = key[2]
        marks = ", ".join("?" for _ in columns)
        cursor = conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", tuple(columns.values())
        )
        # Ids only grow and only the oldest rows go, so this keeps exactly the newest max_rows.
        conn.execute(f"DELETE FROM {table} WHERE id <= ?", (cursor.lastrowid - self.max_rows,))
        return 1

    # -- reading ----------------------------------------------------------

    def read(
        self, *, since: float | None = None, agent: str | None = None, limit: int = 5000
    ) -> tuple[list[dict], list[dict]]:
        """The newest ``limit`` request rows and miss rows (by last seen), optionally filtered.

        Opens the file read-only and never creates it: a missing file is an
        empty log. Raises ``GapLogError`` when the file exists but is unreadable.
        """
        if not self.path.is_file():
            if self.path.exists():
                raise GapLogError(f"{self.path} is not a file")
            return [], []
        where, params = ["1 = 1"], []
        if since is not None:
            where.append("last_seen >= ?")
            params.append(since)
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        clause = " AND ".join(where)
        try:
            conn = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise GapLogError(f"cannot open {self.path}: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                return [], []
            if version > SCHEMA_VERSION:
                raise GapLogError(
                    f"{self.path} has schema version {version}; this engine reads up to {SCHEMA_VERSION}"
                )
            out = []
            for table in ("requests", "misses"):
                rows = conn.execute(
                    f"SELECT * FROM {table} WHERE {clause} ORDER BY last_seen DESC LIMIT ?",
                    (*params, limit),
                ).fetchall()
                out.append([{**dict(r), "nearest": json.loads(r["nearest"] or "[]")} for r in rows])
        except (sqlite3.Error, ValueError) as exc:
            raise GapLogError(f"cannot read {self.path}: {exc}") from exc
        finally:
            conn.close()
        return out[0], out[1]
