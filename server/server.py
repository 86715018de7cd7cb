"""The MCP server: four read-only tools wired to ``engine.answers``.

No matching or data logic lives here; this module only declares the tools,
turns engine errors into tool errors the model can read, and picks a transport.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from pydantic import Field

from engine import answers, capability_index, get_catalog
from engine.errors import EngineError

log = logging.getLogger("server")

AGENT_IDS = "claude-code, copilot-cli, gemini-cli, vscode-copilot"
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, openWorldHint=False, idempotentHint=True, destructiveHint=False
)

AgentArg = Annotated[str, Field(description=f"Agent id: {AGENT_IDS} (names like 'Claude Code' also work).")]
CapabilityArg = Annotated[
    str,
    Field(
        description="Capability in any words, e.g. 'MCP support', 'autocomplete', 'undo the agent's edits'."
    ),
]


def _dump(payload: dict) -> str:
    """Compact JSON: no indentation, no ASCII escaping, to keep responses cheap in tokens."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _call(func, *args) -> str:
    try:
        return _dump(func(*args))
    except EngineError as exc:
        raise ToolError(str(exc)) from exc


def _warm_engine() -> None:
    try:
        capability_index().warm()
    except Exception:  # noqa: BLE001 - a failed warm-up is retried, and reported, on first use
        log.debug("engine warm-up failed", exc_info=True)


@asynccontextmanager
async def _warm(_: MCPServer) -> AsyncIterator[None]:
    """Load the catalog now and the encoder in the background, so the handshake stays fast.

    Measured (build_scripts/bench_server.py): loading the encoder before the
    handshake, or in a thread racing the SDK's own imports, delayed
    `initialize` by ~0.2 s; loading it here overlaps the client's handshake.
    """
    get_catalog()
    threading.Thread(target=_warm_engine, name="warm-engine", daemon=True).start()
    yield


def build_server() -> MCPServer:
    """Create the server with its four tools."""
    server = MCPServer(
        name="agent-capabilities",
        instructions=(
            "Sourced facts about what coding agents (Claude Code, Copilot CLI, Gemini CLI, "
            "Copilot in VS Code) can do, how to set it up, and where it is documented."
        ),
        lifespan=_warm,
        log_level="WARNING",
    )

    @server.tool(
        description=(
            "Can agent X do Y, and how do I set it up? One agent, one capability: availability, tier, "
            "maturity, setup notes, doc URL and sources. Capability is fuzzy-matched."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def lookup_capability(agent: AgentArg, capability: CapabilityArg) -> str:
        return _call(answers.lookup, agent, capability)

    @server.tool(
        description=(
            "How does one capability differ across agents? Availability, tier and setup per agent. "
            "Use lookup_capability for one agent's full details."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def compare_capability(
        capability: CapabilityArg,
        agents: Annotated[
            list[str] | None, Field(description=f"Agents to compare (default: all): {AGENT_IDS}.")
        ] = None,
    ) -> str:
        return _call(answers.compare, capability, agents)

    @server.tool(
        description=(
            "List capability names for an agent and/or a category (name, category, tier, available; "
            "no setup notes). Give at least one of agent, category."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def list_capabilities(
        agent: Annotated[str | None, Field(description=f"Agent id: {AGENT_IDS}.")] = None,
        category: Annotated[
            str | None, Field(description="Category, e.g. customization, security, api-integration.")
        ] = None,
    ) -> str:
        return _call(answers.list_capabilities, agent, category)

    @server.tool(
        description=(
            "Documentation sources to cite (url, description, verifiedDate, status) for an agent "
            "and/or a capability. Give at least one."
        ),
        annotations=READ_ONLY,
        structured_output=False,
    )
    def get_sources(
        agent: Annotated[str | None, Field(description=f"Agent id: {AGENT_IDS}.")] = None,
        capability: Annotated[str | None, Field(description="Capability in any words.")] = None,
    ) -> str:
        return _call(answers.get_sources, agent, capability)

    return server


class BearerTokenMiddleware:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error":"missing or wrong bearer token; set the Authorization header"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, *, host: str, port: int, token: str | None, allowed_hosts: list[str]):
    """The streamable-HTTP ASGI app with Host/Origin checks and an optional bearer token."""
    local = {host, "127.0.0.1", "localhost"}
    names = sorted(f"[{h}]" if ":" in h else h for h in local)  # IPv6 hosts travel in brackets
    hosts = [f"{h}:{port}" for h in names] + [f"{h}:*" for h in allowed_hosts]
    origins = [f"http://{h}:{port}" for h in names]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )
    app = server.streamable_http_app(transport_security=security, host=host, stateless_http=True)
    return BearerTokenMiddleware(app, token) if token else app
