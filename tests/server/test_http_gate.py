"""``server.http.Gate`` as an ASGI unit: who gets in, decided without sockets."""

from __future__ import annotations

import asyncio
import json

import pytest

from server.http import Gate


async def _ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def call(
    gate: Gate, *, client: str, host: str = "mybox", headers: dict | None = None
) -> tuple[int, dict | bytes]:
    raw = [(b"host", host.encode())] + [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": "GET", "path": "/mcp", "headers": raw, "client": (client, 40000)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(gate(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, (json.loads(body) if body.startswith(b"{") else body)


def test_off_loopback_without_a_token_remote_clients_are_refused_and_told_why():
    gate = Gate(_ok_app, bind_host="0.0.0.0", allowed_hosts=["mybox"], token=None)
    status, body = call(gate, client="10.1.2.3")
    assert status == 403 and "AGENT_CAPABILITIES_TOKEN" in body["error"]
    assert call(gate, client="127.0.0.1")[0] == 200


def test_off_loopback_a_remote_client_needs_an_allowed_host_and_the_token():
    gate = Gate(_ok_app, bind_host="0.0.0.0", allowed_hosts=["mybox"], token="t0k")
    assert call(gate, client="10.1.2.3", headers={"Authorization": "Bearer t0k"})[0] == 200
    assert call(gate, client="10.1.2.3")[0] == 401
    status, body = call(gate, client="10.1.2.3", host="other:8000", headers={"Authorization": "Bearer t0k"})
    assert status == 421 and "--allow-host other" in body["error"]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_wildcard_bind_address_is_never_an_accepted_host(bind):
    gate = Gate(_ok_app, bind_host=bind, allowed_hosts=[], token=None)
    assert call(gate, client="127.0.0.1", host=bind)[0] == 421
