"""``server.http.Gate`` as an ASGI unit: who gets in, decided without sockets."""

from __future__ import annotations

import asyncio
import json

import pytest

from server.http import Gate, parse_allowed_host

PORT = 8000


async def _ok_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def call(
    gate: Gate,
    *,
    client: str = "127.0.0.1",
    host: str = "mybox",
    headers: dict | None = None,
    path: str = "/mcp",
    method: str = "GET",
) -> tuple[int, dict | bytes]:
    raw = [(b"host", host.encode())] + [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {"type": "http", "method": method, "path": path, "headers": raw, "client": (client, 40000)}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(gate(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, (json.loads(body) if body.startswith(b"{") else body)


def loopback_gate(*allowed: str, token: str | None = None) -> Gate:
    return Gate(_ok_app, bind_host="127.0.0.1", port=PORT, allowed_hosts=list(allowed), token=token)


def test_off_loopback_without_a_token_remote_clients_are_refused_and_told_why():
    gate = Gate(_ok_app, bind_host="0.0.0.0", port=PORT, allowed_hosts=["mybox"], token=None)
    status, body = call(gate, client="10.1.2.3")
    assert status == 403 and "AGENT_CAPABILITIES_TOKEN" in body["error"]
    assert call(gate, client="127.0.0.1")[0] == 200


def test_off_loopback_a_remote_client_needs_an_allowed_host_and_the_token():
    gate = Gate(_ok_app, bind_host="0.0.0.0", port=PORT, allowed_hosts=["mybox"], token="t0k")
    assert call(gate, client="10.1.2.3", headers={"Authorization": "Bearer t0k"})[0] == 200
    assert call(gate, client="10.1.2.3")[0] == 401
    status, body = call(gate, client="10.1.2.3", host="other:8000", headers={"Authorization": "Bearer t0k"})
    assert status == 421 and "--allow-host other " in body["error"]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_wildcard_bind_address_is_never_an_accepted_host(bind):
    gate = Gate(_ok_app, bind_host=bind, port=PORT, allowed_hosts=[], token=None)
    assert call(gate, client="127.0.0.1", host=bind)[0] == 421


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LocalHost:8000"])
def test_loopback_hosts_on_the_servers_port_are_served(host):
    assert call(loopback_gate(), host=host)[0] == 200


def test_a_host_on_another_port_is_refused_naming_the_flag_with_that_port():
    status, body = call(loopback_gate(), host="localhost:9999")
    assert status == 421
    assert "port 9999" in body["error"] and "--allow-host localhost:9999 " in body["error"]
    assert call(loopback_gate("localhost:9999"), host="localhost:9999")[0] == 200
    assert call(loopback_gate("localhost:9999"), host="localhost:9998")[0] == 421


def test_a_loopback_host_without_a_port_is_port_80_and_refused():
    status, body = call(loopback_gate(), host="localhost")
    assert status == 421 and "has no port" in body["error"] and "--allow-host localhost " in body["error"]


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("mybox.local", 200),  # behind a proxy on a default port
        ("mybox.local:80", 200),
        ("mybox.local:443", 200),
        (f"MyBox.local:{PORT}", 200),
        ("mybox.local:8123", 421),
    ],
)
def test_an_allowed_name_without_a_port_takes_the_servers_port_and_the_default_ones(host, status):
    assert call(loopback_gate("MyBox.local"), host=host)[0] == status


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8000.evil.com", "localhost:evil.com", "localhost:8000@evil.com", "localhost:99999", ""],
)
def test_a_malformed_host_header_is_refused(host):
    status, body = call(loopback_gate(), host=host)
    assert status == 421 and "Host" in body["error"]


@pytest.mark.parametrize(
    ("origin", "status", "flag"),
    [
        ("http://localhost:8000", 200, None),
        ("http://127.0.0.1:8000", 200, None),
        ("http://localhost:3000", 403, "--allow-host localhost:3000 "),
        ("http://localhost", 403, "--allow-host localhost "),
        ("http://evil.example:8000", 403, "--allow-host evil.example "),
        ("http://evil.com\\@localhost:8000", 403, None),
        ("http://localhost:8000@evil.com", 403, None),
        ("null", 403, None),
    ],
)
def test_origin_is_checked_with_its_port(origin, status, flag):
    got, body = call(loopback_gate(), host="localhost:8000", headers={"Origin": origin})
    assert got == status
    if flag:
        assert flag in body["error"]


def test_an_allowed_name_is_accepted_as_an_origin_on_default_ports_too():
    gate = loopback_gate("mybox.local")
    for origin in ("https://mybox.local", "http://mybox.local", "http://mybox.local:8000"):
        assert call(gate, host="mybox.local", headers={"Origin": origin})[0] == 200
    assert call(gate, host="mybox.local", headers={"Origin": "http://mybox.local:8123"})[0] == 403


@pytest.mark.parametrize("value", ["foo:bar", "a b", "mybox:0", "mybox:70000", ""])
def test_an_allow_host_value_that_is_not_a_host_is_rejected_with_the_accepted_forms(value):
    with pytest.raises(ValueError, match="NAME or NAME:PORT"):
        parse_allowed_host(value)


def test_a_bare_ipv6_allow_host_is_one_address():
    assert parse_allowed_host("fe80::1") == ("fe80::1", None)
    assert parse_allowed_host("[fe80::1]:8443") == ("fe80::1", 8443)


@pytest.mark.parametrize(
    "path",
    ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/register"],
)
def test_oauth_discovery_tells_a_client_without_a_token_to_send_the_bearer_header(path):
    # An OAuth-capable client finds no metadata, tries to register, and shows this error_description.
    status, body = call(loopback_gate(token="t0k"), host="localhost:8000", path=path, method="POST")
    assert status == 404
    description = body["error_description"]
    assert "Authorization: Bearer <token>" in description and "AGENT_CAPABILITIES_TOKEN" in description


def test_a_request_without_the_token_is_told_which_header_and_variable():
    status, body = call(loopback_gate(token="t0k"), host="localhost:8000")
    assert status == 401
    assert "Authorization: Bearer <token>" in body["error_description"]
    assert "AGENT_CAPABILITIES_TOKEN" in body["error_description"]
