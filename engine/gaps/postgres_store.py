"""The gap log in a PostgreSQL database, shared by every replica of a team's server.

Chosen by ``AGENT_CAPABILITIES_DB=postgresql://...``; needs psycopg 3 (the
``postgres`` extra). Same tables, migrations, 24-hour counting and row cap as
the SQLite file. Each write is one transaction committed before ``write``
returns; a lock on the request's key makes two replicas counting the same
need at once add up instead of both inserting. A server that cannot be
reached, or a write that waits too long, is ``StoreBusy``: that write is
skipped and the next one reconnects.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import GapLogError
from .storage import MIGRATIONS, POSTGRES, SCHEMA_VERSION, StoreBusy, read_query, upsert

SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'agent-capabilities[postgres]'"
VERSION_TABLE = "gap_log_schema"  # one row: how many migrations this database has had
MIGRATION_LOCK = 0x6761_7073  # pg_advisory_lock key: replicas starting at once migrate one at a time
READ_TIMEOUT_MS = 10_000  # a report reads at most a few thousand rows per table
URL_FORM = "postgresql://USER:PASSWORD@HOST:PORT/DB"
_USER_PASSWORD = re.compile(r"(://[^:@/]*:)[^@/]*@")
_QUERY_PASSWORD = re.compile(r"(password=)[^&\s]*", re.IGNORECASE)


def is_postgres_url(text: object) -> bool:
    """True for ``postgresql://...`` or ``postgres://...`` (the two schemes libpq accepts)."""
    return isinstance(text, str) and text.strip().lower().startswith(SCHEMES)


def _mask_passwords(text: str) -> str:
    """``user:password@`` and ``password=`` in free text (a URL, or a message quoting one) as ``***``."""
    return _QUERY_PASSWORD.sub(r"\1***", _USER_PASSWORD.sub(r"\1***@", text))


def hide_password(url: str) -> str:
    """The URL as it may be shown in logs and reports: any password replaced by ``***``.

    A URL ``urlsplit`` cannot read (an unclosed IPv6 bracket) is masked by
    pattern instead, so a typo in the URL is one line, not a traceback.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return _mask_passwords(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="/:*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class PostgresStore:
    """One PostgreSQL database; psycopg is imported on first use, never by the SQLite default."""

    def __init__(self, url: str) -> None:
        self.url = url.strip()
        self.where = hide_password(self.url)
        self._conn: Any = None
        self._driver: Any = None

    def check(self) -> None:
        """Raise ``GapLogError`` when psycopg is missing (naming the extra) or the URL cannot be read.

        Both can never work, so a server or command stops at start with one
        line instead of warning on every write.
        """
        self._conninfo()

    def _psycopg(self):
        if self._driver is None:
            try:
                import psycopg
            except ImportError as exc:
                raise GapLogError(
                    f"AGENT_CAPABILITIES_DB is a PostgreSQL URL ({self.where}), which needs psycopg 3: "
                    f"{INSTALL_HINT} ({exc})"
                ) from None
            self._driver = psycopg
        return self._driver

    def _conninfo(self) -> dict:
        """The URL's connection parameters; parsing only, no connection is made."""
        psycopg = self._psycopg()
        try:
            return psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise GapLogError(
                f"AGENT_CAPABILITIES_DB is not a usable PostgreSQL URL ({self.where}): {self._scrub(exc)}; "
                f"the form is {URL_FORM}"
            ) from None

    def _scrub(self, exc: Exception) -> str:
        """The driver's message on one line, with the URL it may quote (password and all) masked."""
        return " ".join(_mask_passwords(str(exc).replace(self.url, self.where)).split())

    def _params(self, wait: float) -> dict:
        params = self._conninfo()
        params.setdefault("connect_timeout", max(2, math.ceil(wait)))  # libpq's shortest is 2 s
        params.setdefault("application_name", "agent-capabilities")
        return params

    # -- connection -------------------------------------------------------

    def _connect(self, wait: float):
        conn = self._psycopg().connect(**self._params(wait), autocommit=True)
        try:
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _version(conn) -> int | None:
        """The schema version, or None when the version table does not exist yet."""
        if _value(conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()) is None:
            return None
        row = conn.execute(f"SELECT version FROM {VERSION_TABLE}").fetchone()
        return _value(row) if row else 0

    def _migrate(self, conn) -> None:
        """Bring the schema to ``SCHEMA_VERSION`` in one transaction, one replica at a time.

        The current version is read first without a lock or DDL, so a user
        that may write rows but not create tables can use a migrated database.
        The lock is the session's, taken before the transaction starts: a
        transaction that began before another replica's migration committed
        can still look table names up as they were, and create them twice.
        """
        if self._version(conn) == SCHEMA_VERSION:
            return
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        try:
            with conn.transaction():
                version = self._version(conn)
                if version is None:
                    conn.execute(f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL)")
                if (version or 0) > SCHEMA_VERSION:
                    raise GapLogError(
                        f"{self.where} has gap-log schema version {version}; "
                        f"this engine knows up to {SCHEMA_VERSION}"
                    )
                for migration in MIGRATIONS[version or 0 :]:
                    for statement in migration.postgres:
                        conn.execute(statement)
                if version is None or conn.execute(f"SELECT 1 FROM {VERSION_TABLE}").fetchone() is None:
                    conn.execute(f"INSERT INTO {VERSION_TABLE} (version) VALUES (%s)", (SCHEMA_VERSION,))
                else:
                    conn.execute(f"UPDATE {VERSION_TABLE} SET version = %s", (SCHEMA_VERSION,))
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))

    def drop(self) -> None:
        """Close the connection (after a failure too); the next write opens a new one."""
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Every write is committed already: closing only lets go of the connection."""
        self.drop()

    # -- writing and reading ------------------------------------------------

    def write(self, table: str, key: tuple, row: dict, now: float, wait: float, max_rows: int) -> int:
        """One upsert in its own transaction, holding a lock on the key so replicas count in turn.

        A kept connection the server has dropped since (a restart, an idle
        timeout in a proxy) fails before anything is written: that write is
        tried once more on a new connection. A failure later in the
        transaction is not retried, since the commit may have landed.
        """
        psycopg = self._psycopg()
        try:
            try:
                return self._attempt(table, key, row, now, wait, max_rows)
            except _StaleConnection:
                self.drop()
                return self._attempt(table, key, row, now, wait, max_rows)
        except psycopg.OperationalError as exc:
            self.drop()  # the connection may be gone: the next write reconnects
            reason = "the gap-log database cannot be reached or is busy; recording resumes once it answers"
            raise StoreBusy(reason, " ".join(str(exc).split())) from exc
        except psycopg.Error as exc:
            raise GapLogError(" ".join(str(exc).split())) from exc

    def _attempt(self, table: str, key: tuple, row: dict, now: float, wait: float, max_rows: int) -> int:
        reused = self._conn is not None and not self._conn.closed
        if not reused:
            self._conn = self._connect(wait)
        conn, started = self._conn, False
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {max(1, int(wait * 1000))}")
                started = True
                lock_key = "\x1f".join(str(part) for part in (table, *key))
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
                return upsert(conn.execute, POSTGRES, table, key, row, now, max_rows)
        except self._driver.OperationalError as exc:
            if reused and not started:
                raise _StaleConnection from exc
            raise

    def read(
        self, since: float | None, agent: str | None, limit: int, wait: float
    ) -> tuple[list[dict], list[dict]]:
        """The newest rows of both tables over a connection of its own; an unmigrated database is empty."""
        psycopg = self._psycopg()
        from psycopg.rows import dict_row

        try:
            with psycopg.connect(**self._params(wait), autocommit=True, row_factory=dict_row) as conn:
                conn.execute(f"SET statement_timeout = {READ_TIMEOUT_MS}")
                version = self._version(conn)
                if not version:
                    return [], []
                if version > SCHEMA_VERSION:
                    raise GapLogError(
                        f"{self.where} has gap-log schema version {version}; "
                        f"this engine reads up to {SCHEMA_VERSION}"
                    )
                out = []
                for table in ("requests", "misses"):
                    sql, params = read_query(POSTGRES, table, since, agent)
                    rows = conn.execute(sql, (*params, limit)).fetchall()
                    out.append([{**r, "nearest": json.loads(r["nearest"] or "[]")} for r in rows])
        except (psycopg.Error, ValueError) as exc:
            raise GapLogError(f"cannot read {self.where}: {' '.join(str(exc).split())}") from exc
        return out[0], out[1]


class _StaleConnection(Exception):
    """A kept connection failed before the transaction wrote anything: safe to try again."""


def _value(row) -> Any:
    """The first column of a row, whether it came as a tuple or as a dict."""
    return next(iter(row.values())) if isinstance(row, dict) else row[0]
