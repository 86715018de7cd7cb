"""The MCP server: read-only catalog tools wired to ``engine.catalog.answers``.

No matching or data logic lives here; this module only declares the tools,
checks their arguments, turns engine errors into tool errors the model can
read, and names the agents the catalog holds in the tool descriptions.
"""

import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from engine import answers, capability_index, gaps, get_catalog, package_version
from engine.errors import EngineError
from engine.gaps import report as gapreport
from engine.gaps.log import GapLog

from .arguments import check_arguments
from .schemas import CompareAnswer, ListAnswer, LookupAnswer, MigrateAnswer, SourcesAnswer
from .turns import READING

log = logging.getLogger("server")

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, openWorldHint=False, idempotentHint=True, destructiveHint=False
)
# request_capability appends to a local log (not read-only), never deletes, and repeats are counted once.
RECORDS = ToolAnnotations(readOnlyHint=False, openWorldHint=False, idempotentHint=True, destructiveHint=False)


def _dump(payload: dict) -> str:
    """Compact JSON: no indentation, no ASCII escaping, never NaN (invalid JSON)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _call(func, *args, gap_log: GapLog | None = None, tool: str = "") -> str:
    return _answer(func, *args, gap_log=gap_log, tool=tool)[1]


def _structured(func, *args, gap_log: GapLog | None = None, tool: str = "") -> CallToolResult:
    """The answer twice: as structuredContent, and as the same compact JSON text for text-only clients.

    Only read-only tools answer this way, and they take turns in arrival order (``turns.py``).
    """
    with READING:
        payload, text = _answer(func, *args, gap_log=gap_log, tool=tool)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


def _answer(func, *args, gap_log: GapLog | None = None, tool: str = "") -> tuple[dict, str]:
    try:
        payload = func(*args)
        if gap_log is not None:
            gaps.record_miss(gap_log, payload, tool=tool)  # never raises: recording must not break answers
        return payload, _dump(payload)
    except EngineError as exc:
        raise ToolError(str(exc)) from exc
    except ValueError as exc:  # a non-finite number would have made invalid JSON
        log.error("refusing to send an answer with a non-finite number: %s", exc)
        raise ToolError("internal error: the answer contained an invalid number; please report it") from exc


class CapabilityServer(MCPServer):
    """MCPServer that checks arguments itself, so errors name the argument and the valid values."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        """Every tool error starts like the ones the SDK wraps: ``Error executing tool NAME: ...``."""
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            tools = ", ".join(t.name for t in self._tool_manager.list_tools())
            raise ToolError(f"Error executing tool {name}: no tool has that name. Tools: {tools}.")
        problem = check_arguments(name, arguments or {}, tool.parameters)
        if problem:
            raise ToolError(f"Error executing tool {name}: {problem}")
        return await super().call_tool(name, arguments, context)


def _warm_engine() -> None:
    """Load the encoder, and keep trying while a transient failure (out of file descriptors) lasts.

    Without the retries here the next try would wait for a lookup to make it,
    and that lookup would pay for the load.
    """
    try:
        index = capability_index()
        while not index.warm():
            wait = index.retry_in()
            if wait is None:  # on, or off for good (broken files): nothing to wait for
                return
            time.sleep(wait)
    except Exception:  # noqa: BLE001 - a failed warm-up is retried, and reported, on first use
        log.debug("engine warm-up failed", exc_info=True)


@asynccontextmanager
async def _warm(_: MCPServer) -> AsyncIterator[None]:
    """Load the catalog now and the encoder in the background, so the handshake stays fast.

    Measured (build_scripts/measure/bench_server.py): loading the encoder before the
    handshake, or in a thread racing the SDK's own imports, delayed
    `initialize` by ~0.2 s; loading it here overlaps the client's handshake.
    """
    get_catalog()
    threading.Thread(target=_warm_engine, name="warm-engine", daemon=True).start()
    yield


def build_server(gap_log: GapLog | None = None) -> MCPServer:
    """Create the server with its tools; agent names in the descriptions come from the catalog.

    ``gap_log`` receives capability requests and silent misses (no match, or a
    match below the answer threshold); by default it is the user's local
    database, or nothing when ``AGENT_CAPABILITIES_NO_LOG=1``.
    """
    catalog = get_catalog()
    gap_log = gap_log if gap_log is not None else GapLog()
    agent_ids = ", ".join(catalog.agent_ids)
    agent_names = ", ".join(a.display_name for a in catalog.agents.values())
    server = CapabilityServer(
        name="agent-capabilities",
        version=package_version(),
        instructions=(
            f"Sourced facts about what coding agents ({agent_names}) can do, how to set it up, "
            "and where it is documented."
        ),
        lifespan=_warm,
        log_level="WARNING",
    )
    agent_arg = Annotated[
        str, Field(description=f"Agent id: {agent_ids} (names like 'Claude Code' also work).")
    ]
    capability_arg = Annotated[
        str,
        Field(
            description=(
                "Capability in any words, e.g. 'MCP support', 'autocomplete', 'undo the agent's edits'."
            )
        ),
    ]

    @server.tool(
        title="Look up an agent's capability",
        description=(
            "Can agent X do Y, and how do I set it up? One agent, one capability: availability, tier, "
            "maturity, setup notes, doc URL and sources. matchConfidence is the probability the match is "
            "right; below 0.5 capability is null and `likely` holds the likeliest record."
        ),
        annotations=READ_ONLY,
    )
    def lookup_capability(
        agent: agent_arg, capability: capability_arg
    ) -> Annotated[CallToolResult, LookupAnswer]:
        return _structured(answers.lookup, agent, capability, gap_log=gap_log, tool="lookup_capability")

    @server.tool(
        title="Compare a capability across agents",
        description=(
            "How does one capability differ across agents? Availability, tier and setup per agent. "
            "Use lookup_capability for one agent's full details."
        ),
        annotations=READ_ONLY,
    )
    def compare_capability(
        capability: capability_arg,
        agents: Annotated[
            list[str] | None,
            Field(description=f"Agents to compare; omit for all. Ids: {agent_ids}."),
        ] = None,
    ) -> Annotated[CallToolResult, CompareAnswer]:
        return _structured(answers.compare, capability, agents, gap_log=gap_log, tool="compare_capability")

    @server.tool(
        title="List capabilities",
        description=(
            "List capability names for an agent and/or a category (name, category, tier, available; "
            "no setup notes). Give at least one of agent, category."
        ),
        annotations=READ_ONLY,
    )
    def list_capabilities(
        agent: Annotated[str | None, Field(description=f"Agent id: {agent_ids}.")] = None,
        category: Annotated[
            str | None, Field(description="Category, e.g. customization, security, api-integration.")
        ] = None,
    ) -> Annotated[CallToolResult, ListAnswer]:
        return _structured(answers.list_capabilities, agent, category)

    @server.tool(
        title="Get documentation sources",
        description=(
            "Documentation sources to cite (url, description, verifiedDate, status) for an agent "
            "and/or a capability. Give at least one."
        ),
        annotations=READ_ONLY,
    )
    def get_sources(
        agent: Annotated[str | None, Field(description=f"Agent id: {agent_ids}.")] = None,
        capability: Annotated[str | None, Field(description="Capability in any words.")] = None,
    ) -> Annotated[CallToolResult, SourcesAnswer]:
        return _structured(answers.get_sources, agent, capability, gap_log=gap_log, tool="get_sources")

    @server.tool(
        title="Move from one agent to another",
        description=(
            "Moving from agent X to Y? For each capability X has: Y's term, or Y's alternative where Y "
            "lacks it, and the config files to carry over. Give category for setup, start pages and "
            "file sources. An uncovered X gets what happened to it and what Y offers."
        ),
        annotations=READ_ONLY,
    )
    def migrate_between_agents(
        from_agent: Annotated[
            str,
            Field(description=f"The agent moved from: {agent_ids}, or one the catalog does not cover."),
        ],
        to_agent: Annotated[str, Field(description="The agent moved to (ids as for from_agent).")],
        category: Annotated[
            str | None,
            Field(description="Only this category, with setup details, e.g. customization, security."),
        ] = None,
    ) -> Annotated[CallToolResult, MigrateAnswer]:
        return _structured(answers.migrate, from_agent, to_agent, category)

    @server.tool(
        title="Request a missing capability",
        description=(
            "Use when the user needs something no catalog capability provides, or the asked agent lacks. "
            "Records the need in a local log for the catalog's maintainers; says if it is available, "
            "missing for that agent (alternative, agents that have it) or not cataloged."
        ),
        annotations=RECORDS,
        structured_output=False,
    )
    def request_capability(
        capability: Annotated[
            str, Field(description="The need in the user's own words (at most 500 characters).")
        ],
        agent: Annotated[
            str | None, Field(description=f"Agent id, if one was asked about: {agent_ids}.")
        ] = None,
        context: Annotated[
            str | None,
            Field(description="What the user was trying to do (optional, at most 2,000 characters)."),
        ] = None,
    ) -> str:
        return _call(gaps.request_capability, gap_log, capability, agent, context)

    @server.resource(
        "gaps://report",
        name="gap-report",
        description="Ranked capability gaps: what users asked for that the catalog or an agent lacks.",
        mime_type="application/json",
    )
    def gap_report() -> str:
        return _dump(_client_report(gap_log))

    _drop_unused_methods(server)
    return server


def _client_report(gap_log: GapLog) -> dict:
    """The gap report as clients see it: the database's kind, not its path or host (those go to stderr)."""
    try:
        return {**gapreport.gap_report(gap_log), "database": gap_log.kind}
    except EngineError as exc:
        log.warning("gaps://report: %s", exc)
        return {"error": "the gap log cannot be read (the server's stderr says why)"}


def _drop_unused_methods(
    server: MCPServer, unused: tuple[str, ...] = ("prompts/list", "prompts/get")
) -> None:
    """Stop advertising features the server does not offer: the SDK announces every handler it has."""
    handlers = server._lowlevel_server._request_handlers  # noqa: SLF001 - the SDK has no public switch
    for method in unused:
        handlers.pop(method, None)
