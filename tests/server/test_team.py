"""Serving a team: the entry point an image would run, and replicas behind a round-robin balancer.

The replicas are ``agent-capabilities-mcp --transport http --host 0.0.0.0``,
exactly as ``docs/deploying.md`` says to run them, sharing one PostgreSQL gap
log (a throwaway cluster, ``tests/postgres.py``). The "balancer" is the test
itself: it sends each request to the next replica with the balancer's Host
header, and no request carries anything that ties it to a replica.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import server
from tests.server.test_server_http import MCP_HEADERS, free_port, rpc_result

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).with_name("agent-capabilities-mcp")
TOKEN = "team-token-for-the-replica-tests"
BALANCER = "lb.test:8080"  # the name clients use; each replica accepts it with --allow-host
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def entry_point_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CAPABILITIES_")}
    env["AGENT_CAPABILITIES_CACHE"] = os.environ["AGENT_CAPABILITIES_CACHE"]  # the tests' scratch cache
    return {**env, **extra}


class Replica:
    """One ``agent-capabilities-mcp --transport http --host 0.0.0.0`` process."""

    def __init__(self, env: dict, log: Path) -> None:
        assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (pip install -e .)"
        self.port = free_port()
        self.log = log
        with log.open("w") as stderr:
            self.proc = subprocess.Popen(
                [str(ENTRY_POINT), "--transport", "http", "--host", "0.0.0.0", "--port", str(self.port)]
                + ["--allow-host", BALANCER],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    def wait_until_serving(self, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text()
            if "serving " in text:
                return text
            assert self.proc.poll() is None, f"replica exited with {self.proc.returncode}: {text}"
            time.sleep(0.05)
        raise AssertionError(f"replica on port {self.port} did not start within {timeout} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def call_tool(port: int, request_id: int, name: str, arguments: dict) -> httpx2.Response:
    """One stateless tools/call sent straight to a replica, as the balancer forwards it."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    body["params"] = {"name": name, "arguments": arguments}
    headers = {**MCP_HEADERS, **AUTH, "Host": BALANCER}
    return httpx2.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=60)


class RoundRobin(httpx2.AsyncBaseTransport):
    """A balancer with no session affinity: each request goes to the next replica, Host unchanged."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = itertools.cycle(ports)
        self.inner = httpx2.AsyncHTTPTransport()
        self.routes: list[tuple[str, int, str | None]] = []

    async def handle_async_request(self, request):
        port = next(self.ports)
        method = json.loads(request.content).get("method") if request.content else request.method
        request.url = request.url.copy_with(host="127.0.0.1", port=port)
        response = await self.inner.handle_async_request(request)
        self.routes.append((method, port, response.headers.get("mcp-session-id")))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- the entry point an image runs ------------------------------------------------------------


def test_the_entry_point_refuses_to_serve_off_loopback_without_a_token():
    port = free_port()
    proc = subprocess.run(
        [str(ENTRY_POINT), "--transport", "http", "--host", "0.0.0.0", "--port", str(port)],
        env=entry_point_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "refusing to serve on 0.0.0.0 without a token" in line and "AGENT_CAPABILITIES_TOKEN" in line


def test_the_entry_point_with_a_token_serves_remote_clients_and_writes_where_its_environment_says(tmp_path):
    db = tmp_path / "gaps.sqlite3"
    replica = Replica(
        entry_point_env(AGENT_CAPABILITIES_TOKEN=TOKEN, AGENT_CAPABILITIES_DB=str(db)), tmp_path / "a"
    )
    try:
        started = replica.wait_until_serving()
        assert f"serving http://0.0.0.0:{replica.port}/mcp" in started
        assert f"remote clients need the bearer token and an allowed Host: {BALANCER}" in started
        arguments = {"capability": "teleport the user"}
        no_token = httpx2.post(
            f"http://127.0.0.1:{replica.port}/mcp", json={}, headers={**MCP_HEADERS, "Host": BALANCER}
        )
        assert no_token.status_code == 401
        response = call_tool(replica.port, 1, "request_capability", arguments)
        # Stateless and plain JSON: no session to pin the client to this replica, no stream to buffer.
        assert "mcp-session-id" not in response.headers
        assert response.headers["content-type"].startswith("application/json")
        assert json.loads(rpc_result(response)["content"][0]["text"])["recorded"] is True
        # A 2026-07-28 client sends no initialize: each request carries its version and capabilities.
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        body["params"] = {"name": "list_capabilities", "arguments": {"agent": "claude"}, "_meta": meta}
        headers = {**MCP_HEADERS, **AUTH, "Host": BALANCER, "MCP-Protocol-Version": "2026-07-28"}
        headers.update({"Mcp-Method": "tools/call", "Mcp-Name": "list_capabilities"})
        modern = httpx2.post(f"http://127.0.0.1:{replica.port}/mcp", json=body, headers=headers, timeout=60)
        assert json.loads(rpc_result(modern)["content"][0]["text"])["agent"] == "claude-code"
    finally:
        replica.stop()
    assert db.is_file()


def test_every_environment_variable_the_server_reads_is_in_its_help_and_the_deploy_guide(capsys):
    sources = [p.read_text() for folder in ("engine", "server") for p in (ROOT / folder).rglob("*.py")]
    names = set(re.findall(r"AGENT_CAPABILITIES_[A-Z_]+", "\n".join(sources)))
    assert {"AGENT_CAPABILITIES_TOKEN", "AGENT_CAPABILITIES_DB"} <= names
    with pytest.raises(SystemExit):
        server.main(["--help"])
    help_text = capsys.readouterr().out
    guide = (ROOT / "docs" / "deploying.md").read_text()
    assert sorted(n for n in names if n not in help_text) == []
    assert sorted(n for n in names if n not in guide) == []
    assert "agent-capabilities-mcp --transport http --host 0.0.0.0" in guide


def test_a_postgresql_gap_log_without_psycopg_stops_the_server_with_one_line(tmp_path):
    code = "import sys; sys.modules['psycopg'] = None; import server; sys.exit(server.main())"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=entry_point_env(AGENT_CAPABILITIES_DB="postgresql://app@db.internal/gaps", PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert "cannot start" in line and "pip install 'agent-capabilities[postgres]'" in line


# -- replicas on one PostgreSQL ---------------------------------------------------------------


def request_need(port: int, request_id: int, need: str) -> dict | None:
    """request_capability on one replica: its answer if acknowledged, None if the replica is gone."""
    try:
        response = call_tool(port, request_id, "request_capability", {"capability": need})
    except httpx2.TransportError:
        return None
    assert "mcp-session-id" not in response.headers  # stateless: nothing ties the client to this replica
    assert response.headers["content-type"].startswith("application/json")
    answer = json.loads(rpc_result(response)["content"][0]["text"])
    return answer if answer["recorded"] else None


def wait_for(condition, timeout: float = 30, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_replicas_behind_a_round_robin_balancer_share_one_gap_log_and_a_kill_loses_no_acknowledgement(
    postgres, tmp_path
):
    import psycopg  # the postgres fixture has checked it is installed

    url = postgres.new_database()
    name = url.rsplit("/", 1)[1]
    replicas = [
        # application_name tells the replicas' connections apart in pg_stat_activity.
        Replica(
            entry_point_env(
                AGENT_CAPABILITIES_TOKEN=TOKEN, AGENT_CAPABILITIES_DB=f"{url}?application_name=r{i}"
            ),
            tmp_path / f"replica-{i}.log",
        )
        for i in range(2)
    ]
    try:
        for replica in replicas:
            replica.wait_until_serving()
        ports = [r.port for r in replicas]

        # 1. An SDK client through the balancer: initialize on one replica, every later request on the next.
        async def one_session() -> list[int]:
            balancer = RoundRobin(ports)
            async with httpx2.AsyncClient(transport=balancer, headers=AUTH, timeout=60) as http:
                async with Client(
                    streamable_http_client(f"http://{BALANCER}/mcp", http_client=http)
                ) as client:
                    counts = []
                    for _ in range(8):
                        result = await client.call_tool(
                            "request_capability", {"capability": "export chat as PDF"}
                        )
                        assert result.is_error is False, result.content
                        counts.append(json.loads(result.content[0].text)["timesAsked"])
            assert {port for _, port, _ in balancer.routes} == set(ports), balancer.routes
            assert [session for _, _, session in balancer.routes] == [None] * len(balancer.routes)
            return counts

        # Both replicas counted the same need in one row: each answer saw the other replica's writes.
        assert anyio.run(one_session) == list(range(1, 9))

        # 2. Four clients send distinct needs round-robin; one replica is killed with a write open.
        acknowledged: set[str] = set()
        sent: set[str] = set()
        lock = threading.Lock()
        numbers = itertools.count()

        def client() -> None:
            while (i := next(numbers)) < 48:  # well under the per-replica rate limit of 60 a minute
                need = f"team need number {i}"
                with lock:
                    sent.add(need)
                answer = request_need(ports[i % 2], 100 + i, need)
                if answer is not None:
                    assert answer["timesAsked"] == 1
                    with lock:
                        acknowledged.add(need)

        def victim_acknowledged() -> int:
            with lock:
                return sum(1 for need in acknowledged if int(need.rsplit(" ", 1)[1]) % 2 == 1)

        def victim_waits_inside_a_write() -> bool:
            sql = (
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE application_name = 'r1' AND wait_event_type = 'Lock'"
            )
            return postgres.execute(sql, name) != [(0,)]

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        victim = replicas[1]
        wait_for(lambda: victim_acknowledged() >= 3, what="the replica to be killed to acknowledge requests")
        # Hold writers still at their INSERT, wait until the victim is there (its transaction open, its
        # answer not sent), kill it, then let everyone go on: its write must not land half done.
        with psycopg.connect(url) as holder:
            holder.execute("LOCK TABLE requests IN SHARE MODE")
            wait_for(victim_waits_inside_a_write, timeout=10, what="the victim to start a write")
            victim.proc.send_signal(signal.SIGKILL)
            assert victim.proc.wait(timeout=10) == -signal.SIGKILL
            holder.rollback()
        for thread in threads:
            thread.join(timeout=120)

        stored = dict(postgres.execute("SELECT capability, count FROM requests", name))
        phase_two = {need: count for need, count in stored.items() if need.startswith("team need")}
        assert acknowledged <= phase_two.keys() <= sent  # no acknowledged request lost, nothing invented
        assert set(phase_two.values()) == {1}
        assert len(acknowledged) >= 8

        # 3. The surviving replica's report counts every stored request, from both replicas.
        body = {"jsonrpc": "2.0", "id": 999, "method": "resources/read", "params": {"uri": "gaps://report"}}
        headers = {**MCP_HEADERS, **AUTH, "Host": BALANCER}
        response = httpx2.post(f"http://127.0.0.1:{ports[0]}/mcp", json=body, headers=headers, timeout=60)
        report = json.loads(rpc_result(response)["contents"][0]["text"])
        assert report["totals"]["requests"] == 8 + len(phase_two)
        [pdf] = [gap for gap in report["gaps"] if gap["representative"] == "export chat as PDF"]
        assert pdf["requests"] == 8
        assert report["database"] == "postgresql"  # the kind: the host stays on the server
    finally:
        for replica in replicas:
            replica.stop()
