"""Streamable HTTP: Host/Origin checks, an optional bearer token, and bounded connections.

The SDK's own DNS-rebinding check is replaced by ``Gate`` so that
``--allow-host NAME`` accepts NAME with or without a port, names compare
case-insensitively, and every refusal says which flag or header would allow
the request. Bodies are read up front with a size and time limit, and a
connection that sends no request line in time is closed, so slow or idle
clients cannot hold the server.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
from urllib.parse import urlsplit

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("server")

TOKEN_ENV = "AGENT_CAPABILITIES_TOKEN"
TIMEOUT_ENV = "AGENT_CAPABILITIES_HTTP_TIMEOUT"  # overrides the body and header timeouts (seconds)
MAX_BODY = 1 << 20  # 1 MiB: a tool call is a few hundred bytes
BODY_TIMEOUT = float(os.environ.get(TIMEOUT_ENV) or 10)  # seconds to receive a whole request body
HEADER_TIMEOUT = BODY_TIMEOUT  # seconds from connect to a complete request head
KEEP_ALIVE_TIMEOUT = 5  # idle seconds between requests on one connection
STREAM_LIMIT = 300.0  # longest a single response (e.g. an idle GET stream) may stay open
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SINGLE_HEADERS = (b"authorization", b"origin", b"host")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> str:
    """'Example.COM:8000' -> 'example.com'; '[::1]:8000' -> '::1'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


async def _respond(send, status: int, payload: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Gate:
    """ASGI middleware in front of the MCP app: header sanity, Host/Origin, token, body limits."""

    def __init__(self, app, *, bind_host: str, allowed_hosts: list[str], token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.allowed = {split_host(h) for h in [*LOOPBACK, bind_host, *allowed_hosts]} - {"0.0.0.0", "::"}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked_send(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._serve(scope, receive, tracked_send)
        except asyncio.CancelledError:
            # Shutting down (Ctrl-C) with this request still open: answer it if we can, then end quietly.
            if not started:
                try:
                    await _respond(send, 503, {"error": "the server is shutting down; retry later"})
                except Exception:  # noqa: BLE001 - the client may already be gone
                    pass

    async def _serve(self, scope, receive, send) -> None:
        headers = scope.get("headers") or []
        for name in SINGLE_HEADERS:
            if sum(1 for key, _ in headers if key == name) > 1:
                await _respond(send, 400, {"error": f"duplicate {name.decode()} header; send it once"})
                return
        values = {key.decode("latin-1"): value.decode("latin-1") for key, value in headers}
        path = scope.get("path", "")
        if path.startswith("/.well-known/") or path == "/register":
            # No OAuth here: a 404 tells OAuth-capable clients to use a plain bearer token.
            await _respond(
                send, 404, {"error": "not_found", "error_description": "this server has no OAuth endpoints"}
            )
            return
        host = split_host(values.get("host", ""))
        if host not in self.allowed:
            await _respond(
                send,
                421,
                {
                    "error": f"Host '{host}' is not allowed; "
                    f"start the server with --allow-host {host} to accept it"
                },
            )
            return
        origin = values.get("origin")
        if origin:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() not in self.allowed:
                name = parts.hostname or origin
                await _respond(
                    send,
                    403,
                    {
                        "error": f"Origin '{origin}' is not allowed; "
                        f"start the server with --allow-host {name} to accept it"
                    },
                )
                return
        client = (scope.get("client") or ("", 0))[0]
        if self.token is None and client and not is_loopback(client):
            await _respond(
                send, 403, {"error": f"remote clients need a token: start the server with {TOKEN_ENV} set"}
            )
            return
        if self.token is not None and not self._authorized(values.get("authorization", "")):
            await _respond(
                send,
                401,
                {
                    "error": "invalid_token",
                    "error_description": "this server needs a bearer token: send the header "
                    "'Authorization: Bearer <token>' with the token the server was started with",
                },
                [(b"www-authenticate", b'Bearer error="invalid_token"')],
            )
            return
        if scope.get("method") == "POST":
            receive = await self._buffered_body(receive, send)
            if receive is None:
                return
        try:
            async with asyncio.timeout(STREAM_LIMIT):
                await self.app(scope, receive, send)
        except TimeoutError:
            log.info("closed a response that stayed open longer than %.0f s", STREAM_LIMIT)

    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token)

    @staticmethod
    async def _buffered_body(receive, send):
        """Read the whole body within the size and time limits; None when a refusal was sent."""
        chunks, size = [], 0
        try:
            async with asyncio.timeout(BODY_TIMEOUT):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > MAX_BODY:
                        await _respond(send, 413, {"error": f"request body over {MAX_BODY} bytes"})
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body"):
                        break
        except TimeoutError:
            await _respond(send, 408, {"error": f"request body not received within {BODY_TIMEOUT:.0f} s"})
            return None
        body = b"".join(chunks)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus a deadline for the first request head (slow-header clients)."""

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = self.loop.call_later(HEADER_TIMEOUT, self._head_timeout)

    def _head_timeout(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()

    def connection_lost(self, exc) -> None:
        self._head_timer.cancel()
        super().connection_lost(exc)


class QuietShutdown(logging.Filter):
    """Lower uvicorn's shutdown chatter about cancelled requests to INFO: Ctrl-C is not an error."""

    NOISE = ("Cancel ", "ASGI callable returned without completing response")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and any(n in record.getMessage() for n in self.NOISE):
            record.levelno, record.levelname = logging.INFO, "INFO"
            return logging.getLogger(record.name).isEnabledFor(logging.INFO)
        return True


def http_app(server: MCPServer, *, host: str, port: int, token: str | None, allowed_hosts: list[str]):
    """The streamable-HTTP ASGI app behind ``Gate``."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(transport_security=security, host=host, stateless_http=True)
    return Gate(app, bind_host=host, allowed_hosts=allowed_hosts, token=token)
