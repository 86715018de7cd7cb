"""A throwaway PostgreSQL cluster for the team-mode tests: initdb into a temporary directory, then start it.

The cluster listens on 127.0.0.1 at a free port and on a unix socket in its
own directory, trusts local connections, and is removed when the tests end.
initdb refuses to run as root, so as root the cluster runs as the
``postgres`` user (or ``nobody``). fsync is off: these tests kill servers of
ours, never PostgreSQL, so its own crash safety is not what they measure.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from itertools import count
from pathlib import Path

BIN_GLOBS = ("/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/bin")
_names = count(1)


def find_bindir() -> Path | None:
    """The directory holding initdb and pg_ctl: on PATH, or the newest of the usual install places."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    candidates = [Path(d) for pattern in BIN_GLOBS for d in glob.glob(pattern)]
    candidates = [d for d in candidates if (d / "initdb").is_file() and (d / "pg_ctl").is_file()]

    def version(path: Path) -> tuple:
        return tuple(int(p) for p in path.parent.name.split(".") if p.isdigit())

    return max(candidates, key=version) if candidates else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """One running cluster; ``new_database()`` gives each test an empty database of its own."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="agent-capabilities-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._prefix: list[str] = []
        if os.geteuid() == 0:
            user = "postgres" if _has_user("postgres") else "nobody"
            shutil.chown(self.root, user=user)
            self._prefix = ["runuser", "-u", user, "--"]

    def _run(self, *args: str) -> None:
        proc = subprocess.run([*self._prefix, *args], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed: {proc.stderr.strip()}\n{tail}")

    def start(self) -> Cluster:
        initdb, pg_ctl = str(self.bindir / "initdb"), str(self.bindir / "pg_ctl")
        self._run(initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c full_page_writes=off -c max_connections=50"
        )
        log = str(self.root / "server.log")
        self._run(pg_ctl, "-D", str(self.data), "-l", log, "-o", options, "-w", "start")
        return self

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = f":{password}" if password else ""
        return f"postgresql://postgres{secret}@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, database: str = "postgres") -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def new_database(self) -> str:
        """An empty database; returns its URL."""
        name = f"gaps_{os.getpid()}_{next(_names)}"
        self.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
