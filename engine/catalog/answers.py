"""The answers the MCP server gives, as plain dicts: lookup, compare, list, sources, and migrate.

``migrate`` is built in ``migration`` and re-exported here, so every answer is one import away.

All data shaping lives here so the server only wires MCP to these functions.
Inputs are validated; bad ones raise ``EngineError`` subclasses whose text
lists the valid values. Responses omit anything the caller already knows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from ..common.text import validate_query
from ..errors import InvalidQueryError
from ..matching.results import Match
from .lookup import match
from .migration import migrate  # noqa: F401 - one place for every answer; built in its own module
from .model import Agent, Catalog, get_catalog
from .uncovered import AgentNotCoveredError, UncoveredAgent, covered_or_uncovered

MAX_AGENTS = 10
_RECORD_FIELDS = ("name", "category", "available", "tier", "maturityLevel", "description", "terminology")


def match_info(result: Match) -> dict:
    """How a capability query was resolved: always shown, so a caller can judge it.

    In a degraded mode (no encoder, no confidence model) ``matchConfidence`` is
    not the probability that the answer is right; then ``"calibrated": false``
    and ``degraded`` say so and why, and every confidence is capped.
    """
    info = {
        "query": result.query,
        "resolvedTo": result.name,
        "method": result.method,
        "matchConfidence": result.confidence,
    }
    if result.ambiguous:
        info["ambiguous"] = True
    if not result.calibrated:
        info["calibrated"] = False
        info["degraded"] = result.degraded
    return info


# How to list the catalog, per surface: the note names the command the caller can actually run.
LIST_HINTS = {
    "mcp": "call list_capabilities{scope} to see them all, or request_capability to record the need",
    "cli": "run `agent-capabilities list{cli_scope}` to see them all",
}


def _no_match(result: Match, catalog: Catalog, agent: str | None = None, surface: str = "mcp") -> dict:
    """A truthful 'not in the catalog' answer with the nearest names and a next step."""
    hint = LIST_HINTS.get(surface, LIST_HINTS["mcp"]).format(
        scope=f" for {agent}" if agent else "", cli_scope=f" --agent {agent}" if agent else ""
    )
    return {
        "match": match_info(result),
        "nearest": [{"name": c.name, "matchConfidence": c.confidence} for c in result.candidates],
        "note": (
            f"No catalog capability matches '{result.query}'. The catalog has "
            f"{len(catalog.capabilities)} capabilities; if a nearest name fits, ask again with it, "
            f"or {hint}. Do not infer support from this catalog."
        ),
    }


def _alternatives(result: Match, catalog: Catalog, agent_id: str | None = None) -> list[dict]:
    """The runners-up of a close call, with the agent's availability when one agent is asked about."""
    rows = []
    for candidate in result.candidates[1:]:
        row = {"name": candidate.name, "matchConfidence": candidate.confidence}
        if agent_id is not None:
            row["available"] = catalog.agents[agent_id].records[candidate.name]["available"]
        rows.append(row)
    return rows


def available_in(name: str, catalog: Catalog) -> list[str]:
    """Agent ids whose record for this capability says it is available."""
    return [a.id for a in catalog.agents.values() if a.records[name]["available"]]


STALE_AFTER_DAYS = 60  # older docs snapshots are flagged so the caller can fetch the start page


def freshness(agent: Agent, record: dict, today: dt.date | None = None) -> dict:
    """How old an answer's facts are: the docs revision read, the kind of evidence, and a plain warning.

    The warning appears when the docs snapshot is more than ``STALE_AFTER_DAYS`` old, so a calling
    agent can decide to read ``startUrl`` itself before relying on details.
    """
    snap = agent.docs_snapshot
    out = {
        "checked": checked_on(record),
        "docsSnapshot": snap["date"],
        "docsRevision": f"{snap['repo']}@{snap['commit'][:12]}" if "repo" in snap else snap["site"],
        "evidence": agent.evidence_kind,
    }
    age = ((today or dt.date.today()) - dt.date.fromisoformat(snap["date"])).days
    if age > STALE_AFTER_DAYS:
        out["stale"] = True
        out["note"] = (
            f"Verified against {agent.display_name}'s docs as of {snap['date']} ({age} days ago); "
            "newer docs may differ, so read startUrl before relying on details."
        )
    return out


def cited(sources: list[dict]) -> list[dict]:
    """Sources as a caller cites them: the revision read stays in the data, for maintainers."""
    return [{k: v for k, v in src.items() if k != "revision"} for src in sources]


def checked_on(record: dict) -> str | None:
    """The newest date a source of this record was verified: how fresh the answer is."""
    dates = [src["verifiedDate"] for src in record.get("sources", [])]
    return max(dates) if dates else None


def _resolve_capability(
    capability: object, agent: str | None = None, *, across_agents: bool = False
) -> tuple[Match, bool]:
    """Match the capability text for ``agent`` (its own words count); True when something was found."""
    text = validate_query(capability, field="capability")
    result = match(text, k=3, agent=agent, across_agents=across_agents)
    return result, result.name is not None


# Below the answer threshold a lookup still leads with its top candidate, unless even that is
# this unlikely: then the text matches nothing in the catalog and the reply says only that.
LIKELY_FLOOR = 0.2


def likely(result: Match) -> tuple[str, float] | None:
    """The unanswered match's most likely capability and its confidence, if it is worth leading with.

    Only a calibrated confidence is a probability a caller can act on; in a degraded mode the
    reply stays "no match".
    """
    if result.name is not None or not result.candidates or not result.calibrated:
        return None
    top = result.candidates[0]
    return (top.name, top.confidence) if top.confidence >= LIKELY_FLOOR else None


def _agents(agents: object, catalog: Catalog) -> list[str]:
    if agents is None:
        return catalog.agent_ids
    if isinstance(agents, str):
        agents = [agents]
    if not isinstance(agents, Iterable) or isinstance(agents, dict):
        raise InvalidQueryError(
            f"agents must be a list of agent ids; valid ids: {', '.join(catalog.agent_ids)}"
        )
    agents = list(agents)
    if not agents:
        raise InvalidQueryError(
            "agents is an empty list; omit it to compare every agent, "
            f"or list ids from: {', '.join(catalog.agent_ids)}"
        )
    if len(agents) > MAX_AGENTS:
        raise InvalidQueryError(f"agents lists {len(agents)} entries; at most {MAX_AGENTS} are accepted")
    return list(dict.fromkeys(_agent_id(a, catalog) for a in agents))


def _agent_id(agent: object, catalog: Catalog) -> str:
    text = validate_query(agent, field="agent")
    found = covered_or_uncovered(text, catalog)
    if isinstance(found, UncoveredAgent):
        raise AgentNotCoveredError(text, catalog.agent_ids, found)
    return found.id


def lookup(agent: str, capability: str, *, surface: str = "mcp") -> dict:
    """Everything about one agent's capability: facts, setup notes, sources, and how it matched."""
    catalog = get_catalog()
    agent_id = _agent_id(agent, catalog)
    result, found = _resolve_capability(capability, agent_id)
    guess = None if found else likely(result)
    if not found and guess is None:
        return {"agent": agent_id, "capability": None, **_no_match(result, catalog, agent_id, surface)}
    name = result.name or guess[0]
    agent_obj = catalog.agents[agent_id]
    record = agent_obj.record(name)
    body = {key: record[key] for key in _RECORD_FIELDS if key in record}
    for key in ("maturityNote", "alternative", "implementationNotes", "disputes"):
        if record.get(key):
            body[key] = record[key]
    body["sources"] = cited(record["sources"])
    if not record["available"]:
        body["availableIn"] = available_in(name, catalog)
    answer = {"agent": agent_id, "capability": body, "match": match_info(result)}
    if guess is not None:
        # Not sure enough to answer, but sure enough to lead with: the same record, flagged.
        answer = {"agent": agent_id, "likely": {**body, "matchConfidence": guess[1]}, "capability": None}
        answer["match"] = match_info(result)
        answer["nearest"] = [{"name": c.name, "matchConfidence": c.confidence} for c in result.candidates]
        answer["note"] = (
            f"Not sure: the likeliest capability is {guess[0]}, with a {guess[1]:.0%} chance of being "
            "the one meant, below the answer threshold. Use it if it fits the need; otherwise ask "
            "again with a nearest name or in other words."
        )
    answer["freshness"] = freshness(agent_obj, record)
    if agent_obj.status_facts:
        answer["agentStatus"] = agent_obj.status_lines()
    if result.ambiguous and guess is None:
        answer["alternatives"] = _alternatives(result, catalog, agent_id)
    return answer


def compare(capability: str, agents: list[str] | None = None, *, surface: str = "mcp") -> dict:
    """One capability across agents; agents without it appear as ``{agent, available: false}``."""
    catalog = get_catalog()
    agent_ids = _agents(agents, catalog)
    result, found = _resolve_capability(capability, across_agents=True)
    if not found:
        return {"capability": None, **_no_match(result, catalog, surface=surface)}
    rows = []
    for agent_id in agent_ids:
        record = catalog.agents[agent_id].records[result.name]
        if not record["available"]:
            rows.append({"agent": agent_id, "available": False, "checked": checked_on(record)})
            continue
        notes = record.get("implementationNotes", {})
        row = {
            "agent": agent_id,
            "available": True,
            "tier": record["tier"],
            "maturityLevel": record["maturityLevel"],
        }
        if record.get("terminology"):
            row["terminology"] = record["terminology"]
        if record.get("disputes"):
            row["disputed"] = [d["field"] for d in record["disputes"]]
        row["implementationNotes"] = {k: notes[k] for k in ("setup", "startUrl") if k in notes}
        row["checked"] = checked_on(record)
        rows.append(row)
    answer = {
        "capability": result.name,
        "match": match_info(result),
        "comparison": rows,
        "availableIn": available_in(result.name, catalog),
    }
    if result.ambiguous:
        answer["alternatives"] = _alternatives(result, catalog)
    return answer


def list_capabilities(agent: str | None = None, category: str | None = None) -> dict:
    """Compact list by agent and/or category: name, category, tier, available. No setup notes."""
    catalog = get_catalog()
    if agent is None and category is None:
        raise InvalidQueryError(
            "list_capabilities needs agent or category (or both). "
            f"Agents: {', '.join(catalog.agent_ids)}. Categories: {', '.join(catalog.categories)}."
        )
    agent_ids = [_agent_id(agent, catalog)] if agent is not None else catalog.agent_ids
    cat = catalog.category(validate_query(category, field="category")) if category is not None else None
    names = [c.name for c in catalog.capabilities if cat is None or c.category == cat]
    answer: dict = {}
    if agent is not None:
        answer["agent"] = agent_ids[0]
    if cat is not None:
        answer["category"] = cat
    items = []
    for agent_id in agent_ids:
        for name in names:
            record = catalog.agents[agent_id].records[name]
            item = {} if agent is not None else {"agent": agent_id}
            item["name"] = name
            if cat is None:
                item["category"] = record["category"]
            item["tier"] = record["tier"]
            item["available"] = record["available"]
            items.append(item)
    answer["capabilities"] = items
    answer["docsSnapshot"] = {a: catalog.agents[a].docs_snapshot["date"] for a in agent_ids}
    return answer


def get_sources(agent: str | None = None, capability: str | None = None, *, surface: str = "mcp") -> dict:
    """Source citations (url, description, verifiedDate, status) by agent and/or capability."""
    catalog = get_catalog()
    if agent is None and capability is None:
        raise InvalidQueryError(
            "get_sources needs agent or capability (or both). "
            f"Agents: {', '.join(catalog.agent_ids)}; capability is any capability name or description."
        )
    agent_ids = [_agent_id(agent, catalog)] if agent is not None else catalog.agent_ids
    if capability is None:
        # Whole agent: group by URL, since many records cite the same page.
        agent_obj = catalog.agents[agent_ids[0]]
        by_url: dict[str, dict] = {}
        for name, record in agent_obj.records.items():
            for src in cited(record["sources"]):
                entry = by_url.setdefault(src["url"], {**src, "capabilities": []})
                entry["capabilities"].append(name)
        return {"agent": agent_obj.id, "docsUrl": agent_obj.docs_url, "sources": list(by_url.values())}
    result, found = _resolve_capability(capability, agent_ids[0] if agent is not None else None)
    if not found:
        return {"capability": None, **_no_match(result, catalog, agent_ids[0] if agent else None, surface)}
    if agent is not None:
        record = catalog.agents[agent_ids[0]].records[result.name]
        return {
            "agent": agent_ids[0],
            "capability": result.name,
            "match": match_info(result),
            "sources": cited(record["sources"]),
        }
    return {
        "capability": result.name,
        "match": match_info(result),
        "sources": {a: cited(catalog.agents[a].records[result.name]["sources"]) for a in agent_ids},
    }
