"""The gap log in one local SQLite file: the default store, nothing to install or run.

WAL mode, every write committed with ``synchronous=FULL`` before ``write``
returns, and the WAL folded back into the file on ``close`` (a copy of the
file alone then holds every row). A lock held by another program is
``StoreBusy``; a file that cannot be used is ``GapLogError``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from ..errors import GapLogError
from .storage import MIGRATIONS, SCHEMA_VERSION, SQLITE, StoreBusy, read_query, upsert

log = logging.getLogger("engine")

CLOSE_BUSY_TIMEOUT = 0.5  # longest the checkpoint at close waits for another connection


def _is_busy(exc: sqlite3.Error) -> bool:
    """True for "database is locked/busy": another connection holds the lock, nothing is broken."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


class SqliteStore:
    """One SQLite file, opened on the first write (never by a read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)
        self._conn: sqlite3.Connection | None = None

    def check(self) -> None:
        """Nothing to check before the first write: the file is created then."""

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
        self._create_private()
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

    def _create_private(self) -> None:
        """Create the directory (0700) and the file (0600) if missing: the log holds what users asked.

        SQLite would create the file 0644 under the usual umask, readable by
        anyone who can traverse the home directory; its ``-wal`` and ``-shm``
        files take the main file's mode. An existing file or directory keeps
        the mode its owner gave it.
        """
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring the schema to ``SCHEMA_VERSION`` in one transaction (safe against a second process).

        ``PRAGMA user_version`` counts the applied migrations.
        """
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise GapLogError(
                    f"{self.path} has schema version {version}; this engine knows up to {SCHEMA_VERSION}"
                )
            for migration in MIGRATIONS[version:]:
                for statement in migration.sqlite:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def drop(self) -> None:
        """Close the connection after a failure, without a checkpoint."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Fold the WAL back into the file and close the connection (the next write reopens it).

        SQLite checkpoints by itself only when the last connection to the file
        closes; with another process still attached, the rows would stay in
        ``-wal`` and a copy of the file alone would miss them. A checkpoint the
        other process blocks is skipped after ``CLOSE_BUSY_TIMEOUT``: the rows
        are safe in the WAL either way.
        """
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute(f"PRAGMA busy_timeout = {int(CLOSE_BUSY_TIMEOUT * 1000)}")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self.drop()

    # -- writing and reading ------------------------------------------------

    def write(self, table: str, key: tuple, row: dict, now: float, wait: float, max_rows: int) -> int:
        """One upsert in its own ``BEGIN IMMEDIATE`` transaction; return the key's new count."""
        try:
            if self._conn is None:
                self._conn = self._connect(wait)
            conn = self._conn
            conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            conn.execute("BEGIN IMMEDIATE")
            try:
                count = upsert(conn.execute, SQLITE, table, key, row, now, max_rows)
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            return count
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                reason = "the gap log is locked by another program; recording resumes once it is free"
                raise StoreBusy(reason, str(exc)) from exc
            raise GapLogError(str(exc)) from exc
        except (sqlite3.Error, OSError) as exc:
            raise GapLogError(str(exc)) from exc

    def read(
        self, since: float | None, agent: str | None, limit: int, wait: float
    ) -> tuple[list[dict], list[dict]]:
        """Open the file read-only and never create it: a missing file is an empty log."""
        if not self.path.is_file():
            if self.path.exists():
                raise GapLogError(f"{self.path} is not a file")
            return [], []
        try:
            conn = sqlite3.connect(f"file:{quote(str(self.path.resolve()))}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise GapLogError(f"cannot open {self.path}: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                return [], []
            if version > SCHEMA_VERSION:
                raise GapLogError(
                    f"{self.path} has schema version {version}; this engine reads up to {SCHEMA_VERSION}"
                )
            out = []
            for table in ("requests", "misses"):
                sql, params = read_query(SQLITE, table, since, agent)
                rows = conn.execute(sql, (*params, limit)).fetchall()
                out.append([{**dict(r), "nearest": json.loads(r["nearest"] or "[]")} for r in rows])
        except (sqlite3.Error, ValueError) as exc:
            raise GapLogError(f"cannot read {self.path}: {exc}") from exc
        finally:
            conn.close()
        return out[0], out[1]
