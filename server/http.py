"""Streamable HTTP: Host/Origin checks, an optional bearer token, and bounded connections.

The SDK's own DNS-rebinding check is replaced by ``Gate``: Host and Origin
must name an accepted host *and* port (the server's own port, or one given
as ``--allow-host NAME:PORT``; ``--allow-host NAME`` also accepts the default
ports 80 and 443, for a reverse proxy), names compare case-insensitively,
malformed values are refused, and every refusal says which flag or header
would allow the request. Bodies are read up front with a size and time limit,
and every request head (the first on a connection, and each next one after a
response) has a deadline too, so slow or idle clients cannot hold the server;
nor can one that pipelines requests and never reads the answers.
Running out of file descriptors is one warning, not a traceback per accept.
``listen`` binds the port before anything is printed, and ``AnnouncingServer``
says "serving" only once uvicorn accepts connections.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import json
import logging
import os
import re
import socket
from collections.abc import Callable

import uvicorn
from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from uvicorn.protocols.http.h11_impl import H11Protocol

from .messages import triage

try:  # imported now: once file descriptors run out, importing a module fails too
    import resource
except ImportError:  # Windows
    resource = None

log = logging.getLogger("server")

TOKEN_ENV = "AGENT_CAPABILITIES_TOKEN"
TIMEOUT_ENV = "AGENT_CAPABILITIES_HTTP_TIMEOUT"  # overrides the body and header timeouts (seconds)
MAX_BODY = 1 << 20  # 1 MiB: a tool call is a few hundred bytes
BODY_TIMEOUT = float(os.environ.get(TIMEOUT_ENV) or 10)  # seconds to receive a whole request body
HEADER_TIMEOUT = BODY_TIMEOUT  # seconds from connect, or from the last response, to a complete request head
KEEP_ALIVE_TIMEOUT = 5  # idle seconds between requests on one connection
WRITE_TIMEOUT = BODY_TIMEOUT  # seconds a response may wait for a client that has stopped reading
MAX_PIPELINED = 16  # requests in a row sent before the previous answer, after which the connection closes
STREAM_LIMIT = 300.0  # longest a single response (e.g. an idle GET stream) may stay open
MCP_PATH = "/mcp"
INLINE_CHECK = 1 << 16  # bodies up to this size are checked on the event loop (a tool call is ~300 bytes)
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
WILDCARDS = {"0.0.0.0", "::"}
DEFAULT_PORTS = {"http": 80, "https": 443}
SINGLE_HEADERS = (b"authorization", b"origin", b"host")
BACKLOG = 2048  # uvicorn's default

_HOST = r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[a-z0-9_.-]+))(?::(?P<port>[0-9]{1,5}))?"
_HOST_HEADER = re.compile(_HOST, re.IGNORECASE)
_ORIGIN = re.compile(rf"(?P<scheme>https?)://{_HOST}/?", re.IGNORECASE)
BEARER_HINT = (
    "send the header 'Authorization: Bearer <token>', where <token> is the value of "
    f"{TOKEN_ENV} the server was started with"
)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_port(match: re.Match) -> tuple[str, int | None] | None:
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    return (match["v6"] or match["name"]).lower(), port


def parse_host(value: str) -> tuple[str, int | None] | None:
    """A Host header as (name, port or None): 'Example.COM:8000' -> ('example.com', 8000); None if malformed.

    Strict on purpose: 'localhost:8000.evil.com' or 'localhost:80@evil.com'
    are not a host and a port, whatever a lax split would make of them.
    """
    match = _HOST_HEADER.fullmatch(value.strip())
    return _host_port(match) if match else None


def parse_origin(value: str) -> tuple[str, int] | None:
    """An Origin header as (name, port), the port filled in from the scheme; None if malformed or 'null'."""
    match = _ORIGIN.fullmatch(value.strip())
    if not match:
        return None
    parsed = _host_port(match)
    if parsed is None:
        return None
    name, port = parsed
    return name, port if port is not None else DEFAULT_PORTS[match["scheme"].lower()]


def parse_allowed_host(value: str) -> tuple[str, int | None]:
    """An ``--allow-host`` value as (name, port or None); raises ValueError saying what is accepted."""
    text = value.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address: every colon belongs to the address
    parsed = parse_host(text)
    if parsed is None:
        raise ValueError(
            f"'{value}' is not a host name; give NAME or NAME:PORT, e.g. mybox.local or mybox.local:8443"
        )
    return parsed


def _shown(name: str) -> str:
    return f"[{name}]" if ":" in name else name


def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for ``host:port``, bound before anything is printed (as asyncio would bind them).

    Raises ``OSError`` (a port in use, an unknown name) for ``bind_error`` to put in one line.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    unavailable: OSError | None = None
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                sock.close()
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise
                unavailable = exc  # e.g. '::1' for localhost without IPv6: asyncio skips it too
                continue
            sockets.append(sock)
            sock.listen(BACKLOG)
        if not sockets:
            raise unavailable or OSError(errno.EADDRNOTAVAIL, f"no address for {host}")
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def bind_error(exc: OSError, host: str, port: int) -> str:
    """One line saying why ``host:port`` cannot be served and what to do instead."""
    if isinstance(exc, socket.gaierror):
        why = f"'{host}' is not an address of this machine; use an IP address such as 127.0.0.1"
    elif exc.errno == errno.EADDRINUSE:
        why = "the port is already in use by another program; choose another with --port"
    elif exc.errno == errno.EACCES:
        why = "permission denied (ports below 1024 need privileges); choose another with --port"
    elif exc.errno == errno.EADDRNOTAVAIL:
        why = f"this machine has no address {host}; use 127.0.0.1 or one of its own addresses"
    else:
        why = exc.strerror or str(exc)
    return f"cannot serve on {_shown(host)}:{port}: {why}"


class AnnouncingServer(uvicorn.Server):
    """uvicorn's server, calling ``announce`` once it accepts connections (not before, and not on failure)."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[], None]) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            self.announce()


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

    def __init__(
        self, app, *, bind_host: str, port: int, allowed_hosts: list[str], token: str | None
    ) -> None:
        self.app = app
        self.port = port
        self.token = token.encode() if token else None
        own = {name for name, _ in map(parse_allowed_host, [*LOOPBACK, bind_host])} - WILDCARDS
        # (name, port) pairs accepted; names given without a port also take the default ports (a proxy).
        self.accepted = {(name, port) for name in own}
        self.proxied: set[str] = set()
        for entry in allowed_hosts:
            name, given = parse_allowed_host(entry)
            self.accepted.add((name, given or port))
            if given is None:
                self.proxied.add(name)
        self.names = {name for name, _ in self.accepted}

    def _accepts(self, name: str, port: int) -> bool:
        return (name, port) in self.accepted or (name in self.proxied and port in DEFAULT_PORTS.values())

    def _refusal(self, what: str, raw: str, name: str, port: int, explicit: bool) -> str:
        """Why a Host or Origin is refused, and the --allow-host value that would accept it."""
        default = not explicit and port in DEFAULT_PORTS.values()
        flag = _shown(name) if port == self.port or default else f"{_shown(name)}:{port}"
        if name not in self.names:
            why = f"{what} '{raw}' is not allowed"
        elif default:
            why = f"{what} '{raw}' has no port, so port {port}, but this server listens on port {self.port}"
        else:
            why = f"{what} '{raw}' names port {port}, but this server listens on port {self.port}"
        return f"{why}; start the server with --allow-host {flag} to accept it"

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
            await self._no_oauth(send)
            return
        refusal = self._check_host(values.get("host", "")) or self._check_origin(values.get("origin"))
        if refusal:
            await _respond(send, *refusal)
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
                    "error_description": f"this server needs a bearer token: {BEARER_HINT}",
                },
                [
                    (
                        b"www-authenticate",
                        f'Bearer error="invalid_token", error_description="{BEARER_HINT}"'.encode(),
                    )
                ],
            )
            return
        if scope.get("method") == "POST":
            receive = await self._buffered_body(receive, send, checked=path.rstrip("/") == MCP_PATH)
            if receive is None:
                return
        try:
            async with asyncio.timeout(STREAM_LIMIT):
                await self.app(scope, receive, send)
        except TimeoutError:
            log.info("closed a response that stayed open longer than %.0f s", STREAM_LIMIT)

    async def _no_oauth(self, send) -> None:
        """Answer OAuth discovery and registration with what to do instead.

        An OAuth-capable client that got no token (the TypeScript SDK with an
        ``authProvider``, Claude Code) looks for metadata, finds none, falls
        back to registering at ``/register``, and shows that answer's
        ``error_description``: so it says to send the bearer header. The 404
        keeps such clients from starting an OAuth flow this server cannot finish.
        """
        if self.token is None:
            description = "this server has no OAuth and needs no token: connect to /mcp without authorization"
        else:
            description = f"this server has no OAuth: it takes a fixed bearer token; {BEARER_HINT}"
        await _respond(send, 404, {"error": "not_found", "error_description": description})

    def _check_host(self, raw: str) -> tuple[int, dict] | None:
        """None when the Host header names an accepted host and port, else (status, body)."""
        parsed = parse_host(raw)
        if parsed is None:
            return 421, {"error": f"Host header '{raw}' is malformed; send HOST or HOST:PORT"}
        name, port = parsed
        effective = port if port is not None else DEFAULT_PORTS["http"]
        if self._accepts(name, effective):
            return None
        return 421, {"error": self._refusal("Host", raw, name, effective, explicit=port is not None)}

    def _check_origin(self, raw: str | None) -> tuple[int, dict] | None:
        """None when there is no Origin or it names an accepted host and port, else (status, body)."""
        if not raw:
            return None
        parsed = parse_origin(raw)
        if parsed is None:
            return 403, {
                "error": f"Origin '{raw}' is not allowed: only http(s)://HOST[:PORT] origins can be accepted"
            }
        name, port = parsed
        if self._accepts(name, port):
            return None
        explicit = _ORIGIN.fullmatch(raw.strip())["port"] is not None
        return 403, {"error": self._refusal("Origin", raw, name, port, explicit)}

    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token)

    @staticmethod
    async def _buffered_body(receive, send, *, checked: bool = False):
        """Read the whole body within the size and time limits; None when a refusal was sent.

        ``checked``: the body is a JSON-RPC message for the MCP app, which goes
        through ``triage`` as a stdio line does. The SDK would answer a batch
        with pydantic's text, an id that is an object with 202 and no body, and
        a lone surrogate escape with a 400; each gets a JSON-RPC error naming
        the problem (with the id when it can be read) or is served.
        """
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
        if checked:
            body = await _checked_message(body, send)
            if body is None:
                return None
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


async def _checked_message(body: bytes, send) -> bytes | None:
    """The body to hand to the MCP app (maybe repaired), or None when an error reply was sent."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        await _respond(send, 400, _rpc_error(-32700, f"Parse error: the body is not UTF-8 ({exc.reason})"))
        return None
    if len(text) > INLINE_CHECK:  # a deep megabyte takes ~0.4 s to scan: not on the event loop
        passed, reply, _ = await asyncio.to_thread(triage, text, unit="request")
    else:
        passed, reply, _ = triage(text, unit="request")
    if reply is not None:
        await _respond(send, 400, json.loads(reply))
        return None
    return body if passed is None or passed == text else passed.encode("utf-8")


def _rpc_error(code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


class BoundedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, plus deadlines for request heads and bounds for clients that do not read.

    The head deadline starts when the connection opens and again whenever a response is complete and the
    connection waits for its next request: a client that trickles the next head, or the rest of a body
    the server answered without reading (a 401, a 408, a 413), is closed at the deadline instead of
    holding the connection. uvicorn's own keep-alive timer only covers a connection that sends nothing.

    A client that pipelines requests and never reads the answers made the server work flat out for it:
    in the audit 50 such connections sent 193,000 requests in 20 s and slowed every other client about
    100 times. Answers nobody reads are bounded two ways: after ``MAX_PIPELINED`` requests in a row that
    arrived before the previous answer was sent, the connection is closed once that answer is out (HTTP
    lets a server close between pipelined requests; the client sends the rest again on a new
    connection, and no client we serve pipelines at all); and an answer that waits more than
    ``WRITE_TIMEOUT`` for a client to take it (the buffers are full) ends the connection.
    """

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        FD_EXHAUSTION.accepted()
        self._head_timer = None
        self._write_timer = None
        self._pipelined = 0
        self._arm_head_deadline()

    def _arm_head_deadline(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(HEADER_TIMEOUT, self._head_timeout, self.cycle)

    def _head_timeout(self, waiting_after) -> None:
        # Still no new request since the deadline was set: the head (or a leftover body) is too slow.
        idle = self.cycle is None or self.cycle.response_complete
        if self.cycle is waiting_after and idle and not self.transport.is_closing():
            self.transport.close()

    def on_response_complete(self) -> None:
        # Bytes of the next request already here when this answer is complete: it was sent without
        # waiting for the answer (pipelined), and nothing shows the client reads what it is sent.
        self._pipelined = self._pipelined + 1 if self.conn.trailing_data[0] else 0
        if self._pipelined > MAX_PIPELINED and not self.transport.is_closing():
            log.info("closed a connection that sent %d requests in a row without waiting", self._pipelined)
            self.server_state.total_requests += 1
            self.transport.close()  # once the answers already written are out, or, if they never are:
            self._write_timer = self._write_timer or self.loop.call_later(WRITE_TIMEOUT, self.transport.abort)
            return
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._arm_head_deadline()

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(WRITE_TIMEOUT, self._write_timeout)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_timeout(self) -> None:
        # The client took none of the answer for WRITE_TIMEOUT: close() would wait for it forever.
        self._write_timer = None
        if self.flow.write_paused and not self.transport.is_closing():
            log.info("closed a connection whose client stopped reading for %.0f s", WRITE_TIMEOUT)
            self.transport.abort()

    def connection_lost(self, exc) -> None:
        for timer in (self._head_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)


class FdExhaustion:
    """Says once that the process ran out of file descriptors, instead of one traceback per accept.

    asyncio reports every failed ``accept()`` to the loop's exception handler, with a traceback;
    the audit saw 311,709 of them in 40 s. Here a shortage is one warning, and its end one more,
    at most once a minute however often it comes and goes.
    """

    INTERVAL = 60.0

    def __init__(self) -> None:
        self.exhausted = False
        self.announced = False  # this shortage was logged, so its end will be too
        self.last_warning = float("-inf")
        self.failures = 0

    def handle(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """An event-loop exception handler: fd exhaustion here, anything else to asyncio's default."""
        exc = context.get("exception")
        if not (isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE)):
            loop.default_exception_handler(context)
            return
        self.failures += 1
        if self.exhausted:
            return
        self.exhausted = True
        now = loop.time()
        self.announced = now - self.last_warning >= self.INTERVAL
        if self.announced:
            self.last_warning = now
            limit = _fd_limit()
            log.warning(
                "out of file descriptors (%s%s): new connections wait until open ones close or time out; "
                "raise the limit (ulimit -n) to serve more clients at once",
                exc.strerror,
                f", limit {limit}" if limit else "",
            )

    def accepted(self) -> None:
        """A connection was accepted: a shortage is over."""
        if self.exhausted:
            self.exhausted = False
            if self.announced:
                log.warning("accepting connections again (%d accepts had failed)", self.failures)
            self.failures = 0


def _fd_limit() -> int | None:
    if resource is None:
        return None
    try:
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (OSError, ValueError):
        return None


FD_EXHAUSTION = FdExhaustion()


class BoundedAcceptLoop(asyncio.SelectorEventLoop):
    """asyncio's selector loop (uvicorn's ``loop="server.http:BoundedAcceptLoop"``), one accept per event.

    CPython's accept loop (before gh-151615) keeps calling ``accept()`` after running out of file
    descriptors, up to the backlog (2048 here) times per event, each failure reported and each
    scheduling another retry. One accept per event makes that one failure and one retry a second.
    """

    def __init__(self) -> None:
        super().__init__()
        self.set_exception_handler(FD_EXHAUSTION.handle)

    def _accept_connection(self, protocol_factory, sock, sslcontext=None, server=None, backlog=100, *rest):
        super()._accept_connection(protocol_factory, sock, sslcontext, server, 1, *rest)


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
    # Stateless, with plain JSON answers: no session lives in one replica's memory, so any replica can
    # answer any request behind a round-robin balancer, and no proxy has an event stream to buffer.
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        host=host,
        stateless_http=True,
        json_response=True,
    )
    return Gate(app, bind_host=host, port=port, allowed_hosts=allowed_hosts, token=token)
