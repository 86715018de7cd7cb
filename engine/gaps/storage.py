"""What the two gap-log databases share: the schema's migrations and the rule that counts a repeat.

``GapLog`` keeps the policy (cleaning, rate limits, pausing, turning off) and
hands each write to a store: ``SqliteStore`` (one local file, the default) or
``PostgresStore`` (one database shared by replicas). A store has the same few
methods either way, and no base class:

- ``where``: what to call the database in messages (a URL's password hidden);
- ``check()``: raise ``GapLogError`` now if the store can never work (a
  PostgreSQL URL without psycopg), before a server says it is serving;
- ``write(table, key, row, now, wait, max_rows) -> int``: one ``upsert`` in
  its own committed transaction, waiting at most ``wait`` seconds; raises
  ``StoreBusy`` when the database is locked or unreachable for now (skip this
  write, try the next) and ``GapLogError`` when it cannot be used at all;
- ``read(since, agent, limit, wait) -> (requests, misses)``: rows as dicts,
  never creating anything; raises ``GapLogError``;
- ``close()`` and ``drop()``: let go of the connection, cleanly or after a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEDUP_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Migration:
    """One schema version, spelled for each database: the two lists move in step."""

    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


def _tables(key: str, real: str) -> tuple[str, ...]:
    """The two tables and their indexes, with the id and time column types of one database."""
    return (
        f"""CREATE TABLE requests (
            id {key},
            capability TEXT NOT NULL,
            norm TEXT NOT NULL,
            agent TEXT,
            context TEXT,
            state TEXT,
            nearest TEXT NOT NULL DEFAULT '[]',
            count INTEGER NOT NULL DEFAULT 1,
            first_seen {real} NOT NULL,
            last_seen {real} NOT NULL
        )""",
        "CREATE INDEX requests_dedup ON requests (norm, agent, first_seen)",
        "CREATE INDEX requests_last_seen ON requests (last_seen)",
        f"""CREATE TABLE misses (
            id {key},
            query TEXT NOT NULL,
            norm TEXT NOT NULL,
            agent TEXT,
            tool TEXT NOT NULL,
            nearest TEXT NOT NULL DEFAULT '[]',
            count INTEGER NOT NULL DEFAULT 1,
            first_seen {real} NOT NULL,
            last_seen {real} NOT NULL
        )""",
        "CREATE INDEX misses_dedup ON misses (norm, agent, tool, first_seen)",
        "CREATE INDEX misses_last_seen ON misses (last_seen)",
    )


# Each entry moves the schema one version up. Append new steps, never edit old ones: a user's
# database may be at any earlier version. PostgreSQL's REAL is 4 bytes, too coarse for Unix seconds.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        sqlite=_tables("INTEGER PRIMARY KEY", "REAL"),
        postgres=_tables("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "DOUBLE PRECISION"),
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreBusy(Exception):
    """The database is locked or out of reach for now: this write is skipped, recording stays on.

    ``reason`` is the sentence a caller is shown ("... recording resumes once ..."),
    naming no path or host; the message is the driver's own words, for the log.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class Dialect:
    """The few words of SQL the two databases spell differently."""

    mark: str  # parameter placeholder
    same: str  # equality that holds for two NULLs
    greatest: str  # the larger of two values
    returning: bool  # INSERT ... RETURNING id (SQLite before 3.35, still shipped, lacks it)


SQLITE = Dialect(mark="?", same="IS", greatest="MAX", returning=False)
POSTGRES = Dialect(mark="%s", same="IS NOT DISTINCT FROM", greatest="GREATEST", returning=True)


def upsert(
    execute: Callable[[str, tuple], Any],
    dialect: Dialect,
    table: str,
    key: tuple,
    row: dict,
    now: float,
    max_rows: int,
) -> int:
    """Count a repeat within 24 hours of its first sighting, else insert; return the new count.

    Runs inside the caller's transaction; ``execute(sql, params)`` returns a
    cursor. The caller makes sure no other writer counts the same key at the
    same time (SQLite: one writer at a time; PostgreSQL: a lock on the key).
    """
    m = dialect.mark
    match = f"norm = {m} AND agent {dialect.same} {m}" + (f" AND tool = {m}" if table == "misses" else "")
    found = execute(
        f"SELECT id, count FROM {table} WHERE {match} AND first_seen > {m} ORDER BY first_seen DESC LIMIT 1",
        (*key, now - DEDUP_SECONDS),
    ).fetchone()
    if found:
        row_id, count = found[0], found[1] + 1
        if table == "requests":
            extra, params = f", context = COALESCE(context, {m})", (count, now, row["context"], row_id)
        else:
            extra, params = "", (count, now, row_id)
        execute(
            f"UPDATE {table} SET count = {m}, last_seen = {dialect.greatest}(last_seen, {m}){extra} "
            f"WHERE id = {m}",
            params,
        )
        return count
    columns = {"norm": key[0], "agent": key[1], **row, "count": 1, "first_seen": now, "last_seen": now}
    if table == "misses":
        columns["tool"] = key[2]
    marks = ", ".join(m for _ in columns)
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
    cursor = execute(sql + (" RETURNING id" if dialect.returning else ""), tuple(columns.values()))
    new_id = cursor.fetchone()[0] if dialect.returning else cursor.lastrowid
    # Ids only grow and only the oldest rows go, so this keeps at most the newest max_rows.
    execute(f"DELETE FROM {table} WHERE id <= {m}", (new_id - max_rows,))
    return 1


def read_query(dialect: Dialect, table: str, since: float | None, agent: str | None) -> tuple[str, tuple]:
    """The newest rows of one table, optionally since a time and for one agent; LIMIT is the last mark."""
    m = dialect.mark
    where, params = ["1 = 1"], []
    if since is not None:
        where.append(f"last_seen >= {m}")
        params.append(since)
    if agent is not None:
        where.append(f"agent = {m}")
        params.append(agent)
    clause = " AND ".join(where)
    return f"SELECT * FROM {table} WHERE {clause} ORDER BY last_seen DESC LIMIT {m}", tuple(params)
