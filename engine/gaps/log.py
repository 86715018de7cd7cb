"""The gap log: capability requests and silent misses, in a local SQLite file or a shared PostgreSQL.

``AGENT_CAPABILITIES_DB`` names the database: a file path (default: the
user's data directory), or a ``postgresql://`` URL for replicas that share one
log (``engine.gaps.postgres_store``). Every write is committed before a method
returns. Recording never breaks a lookup: when the database cannot be used,
recording turns off with one warning and the methods say nothing was
recorded; when it is locked or out of reach, writes wait briefly, are skipped
while that lasts, and resume once it is gone.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..common.text import clean_text
from ..errors import GapLogError, InvalidQueryError, RateLimitError
from .postgres_store import PostgresStore, is_postgres_url
from .sqlite_store import CLOSE_BUSY_TIMEOUT, SqliteStore
from .storage import DEDUP_SECONDS, MIGRATIONS, SCHEMA_VERSION, StoreBusy

__all__ = ["DEDUP_SECONDS", "MIGRATIONS", "SCHEMA_VERSION", "GapLog", "RecordStatus", "normalize"]

log = logging.getLogger("engine")

DB_ENV = "AGENT_CAPABILITIES_DB"
NO_LOG_ENV = "AGENT_CAPABILITIES_NO_LOG"
DB_NAME = "gaps.sqlite3"

MAX_CAPABILITY_CHARS = 500
MAX_CONTEXT_CHARS = 2000
MAX_AGENT_CHARS = 100
MAX_TOOL_CHARS = 64
MAX_NEAREST = 5
MAX_ROWS = 100_000
# A lock held by another program: an explicit request waits up to the log's busy_timeout (this by
# default), a silent miss (on the lookup path) at most MISS_BUSY_TIMEOUT, and after a write found
# the file locked, silent misses are skipped for BUSY_RETRY_SECONDS instead of each waiting again.
BUSY_TIMEOUT = 1.0
MISS_BUSY_TIMEOUT = 0.25
BUSY_RETRY_SECONDS = 10.0
# What a client is told when the log cannot be used: never the file's path or the database's host, which
# would show every token holder the server's user name and layout. The warning on stderr has them.
UNWRITABLE = "the gap log cannot be written, so recording is off (the warning on stderr says why)"


def default_db_path() -> Path:
    """``gaps.sqlite3`` in the user's data directory, or the file ``AGENT_CAPABILITIES_DB`` names."""
    override = os.environ.get(DB_ENV)
    if override and not is_postgres_url(override):
        return Path(override).expanduser()
    import platformdirs  # only needed when no path is given

    return Path(platformdirs.user_data_dir("agent-capabilities")) / DB_NAME


def open_store(location: Path | str | None = None) -> SqliteStore | PostgresStore:
    """The store for ``location`` (else ``AGENT_CAPABILITIES_DB``): a ``postgresql://`` URL or a file path."""
    if location is None:
        override = os.environ.get(DB_ENV)
        return PostgresStore(override) if is_postgres_url(override) else SqliteStore(default_db_path())
    if is_postgres_url(location):
        return PostgresStore(str(location))
    return SqliteStore(Path(location))


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
    """At most ``limit`` recorded writes per ``window`` seconds (a sliding window).

    ``allows`` only looks; ``spend`` counts a write once it has landed. A write
    skipped while the database was out of reach costs nothing, so the budget is
    whole again when it comes back (an outage of a minute used to leave every
    request refused for the next minute).
    """

    def __init__(self, limit: int | None, window: float) -> None:
        self.limit = limit
        self.window = window
        self._times: deque[float] = deque()

    def allows(self, now: float) -> bool:
        if self.limit is None:
            return True
        while self._times and self._times[0] <= now - self.window:
            self._times.popleft()
        return len(self._times) < self.limit

    def spend(self, now: float) -> None:
        if self.limit is not None:
            self._times.append(now)


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
    """Append-mostly log of capability requests and silent misses, in SQLite or PostgreSQL.

    ``location`` is a file path or a ``postgresql://`` URL (default:
    ``AGENT_CAPABILITIES_DB``, else the user's data directory); a file is
    created on the first write, never when recording is off. ``clock``
    returns Unix seconds (tests inject one to cross the 24-hour dedup
    window); ``rate_limit`` is recorded writes per ``rate_window`` seconds for each of
    the two tables, in this process (None: no limit). Raises ``GapLogError``
    at once for a PostgreSQL URL when psycopg is not installed and recording is on.
    """

    def __init__(
        self,
        location: Path | str | None = None,
        *,
        enabled: bool | None = None,
        clock: Callable[[], float] = time.time,
        rate_limit: int | None = 60,
        rate_window: float = 60.0,
        max_rows: int = MAX_ROWS,
        busy_timeout: float = BUSY_TIMEOUT,
    ) -> None:
        self._store = open_store(location)
        # The SQLite file, or None for PostgreSQL; ``location`` names either (a URL's password hidden),
        # for the log and a maintainer's terminal; ``kind`` is all a client is told.
        self.path = self._store.path if isinstance(self._store, SqliteStore) else None
        self.kind = "sqlite" if isinstance(self._store, SqliteStore) else "postgresql"
        self.location: str = self._store.where
        self.enabled = not logging_disabled() if enabled is None else bool(enabled)
        self.disabled_reason = None if self.enabled else "recording is turned off"
        if self.enabled:
            self._store.check()
        self.clock = clock
        self.max_rows = max_rows
        self.busy_timeout = busy_timeout
        self._limits = {
            "requests": _RateLimiter(rate_limit, rate_window),
            "misses": _RateLimiter(rate_limit, rate_window),
        }
        self._lock = threading.Lock()
        self._warned = False
        self._busy_since: float | None = None  # clock time of the write that found the database busy
        self._busy_reason = ""

    # -- connection -------------------------------------------------------

    def _disable(self, reason: str, detail: str) -> None:
        """Turn recording off: callers are told ``reason``; ``detail``, with the location, is logged."""
        self.enabled = False
        self.disabled_reason = reason
        self._store.drop()
        if not self._warned:
            self._warned = True
            log.warning("capability gap recording is off: %s", detail)

    def close(self) -> None:
        """Let go of the database; a SQLite file gets its WAL folded back in first (see ``SqliteStore``).

        The next write reopens it.
        """
        if not self._lock.acquire(timeout=self.busy_timeout + CLOSE_BUSY_TIMEOUT + 1):
            log.warning("gap log %s: a write is still running; closing without a checkpoint", self.location)
            return
        try:
            self._store.close()
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
        if not self._limits["requests"].allows(now):
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
            return RecordStatus(False, reason=self._busy_reason)
        if not self._limits["misses"].allows(now):
            return RecordStatus(False, reason="rate limit reached; miss not recorded")
        key = (normalize(text), agent, tool)
        wait = min(self.busy_timeout, MISS_BUSY_TIMEOUT)
        return self._write("misses", key, {"query": text, "nearest": _nearest_json(nearest)}, now, wait)

    def _write(self, table: str, key: tuple, row: dict, now: float, wait: float) -> RecordStatus:
        """Run one upsert in its own transaction, waiting at most ``wait`` seconds for a lock.

        A database that is locked or out of reach skips this write and leaves
        recording on (the next write tries again); any other storage failure
        turns recording off.
        """
        with self._lock:
            if not self.enabled:
                return RecordStatus(False, reason=self.disabled_reason)
            try:
                count = self._store.write(table, key, row, now, wait, self.max_rows)
            except StoreBusy as exc:
                if self._busy_since is None:
                    log.warning(
                        "capability gap recording is paused: %s: %s (%s)", self.location, exc.reason, exc
                    )
                self._busy_since, self._busy_reason = now, exc.reason
                return RecordStatus(False, reason=exc.reason)
            except GapLogError as exc:
                self._disable(UNWRITABLE, f"cannot write to {self.location} ({exc})")
                return RecordStatus(False, reason=self.disabled_reason)
            self._limits[table].spend(now)  # only what was recorded counts against the limit
            if self._busy_since is not None:
                self._busy_since = None
                log.warning("capability gap recording resumed: %s can be written again", self.location)
        return RecordStatus(True, count=count)

    def _waiting_for_lock(self, now: float) -> bool:
        """True while a recent write found the database busy (silent misses then skip it entirely)."""
        since = self._busy_since
        return since is not None and since <= now < since + BUSY_RETRY_SECONDS

    # -- reading ----------------------------------------------------------

    def read(
        self, *, since: float | None = None, agent: str | None = None, limit: int = 5000
    ) -> tuple[list[dict], list[dict]]:
        """The newest ``limit`` request rows and miss rows (by last seen), optionally filtered.

        Never creates the database or its tables: a missing one is an empty
        log. Raises ``GapLogError`` when it exists but cannot be read.
        """
        return self._store.read(since, agent, limit, self.busy_timeout)
