"""The capability catalog as an ``Index``: what ``engine.match`` and ``engine.resolve_agent`` use."""

from __future__ import annotations

import dataclasses
import re
import threading
from functools import cache

from ..common.paths import vectors_dir
from ..common.text import content_tokens, squash, validate_query
from ..matching.identifiers import identifiers_in
from ..matching.index import Index, Record
from ..matching.judge import load_judge
from ..matching.results import Match
from .model import Catalog, get_catalog

VECTOR_FILE = "capability-vectors.json"
JUDGE_FILE = "confidence-model.json"


def record_identifiers(rec: dict) -> list[str]:
    """Commands, flags, keys and file names an available record's own notes use (setup, config, gotchas)."""
    notes = rec.get("implementationNotes", {})
    parts = [
        notes.get("setup", ""),
        notes.get("configFile", ""),
        rec.get("terminology", ""),
        *notes.get("gotchas", []),
    ]
    return identifiers_in(" ".join(p for p in parts if p))


def url_words(url: str) -> str:
    """A documentation URL's path and anchor as words: '.../agent/plan-mode#cli' -> 'agent plan mode cli'."""
    path = url.split("://", 1)[-1].partition("/")[2]
    return " ".join(re.split(r"[/#._\-?=&]+", path)).strip()


def agent_vocabulary(rec: dict) -> list[str]:
    """One agent's own words for one capability, from its record: what that agent calls it and how it is used.

    The terminology, description, setup, config file and gotchas, and each cited page's
    description and URL path. Only an available record speaks for the capability: an
    unavailable one describes what the agent lacks, and its alternative names another feature.
    """
    if not rec["available"]:
        return [rec["terminology"]] if rec.get("terminology") else []
    notes = rec.get("implementationNotes", {})
    texts = [
        rec.get("terminology", ""),
        rec["description"],
        notes.get("setup", ""),
        notes.get("configFile", ""),
    ]
    texts += notes.get("gotchas", [])
    texts.append(url_words(notes.get("startUrl", "")))
    for src in rec.get("sources", []):
        texts += [src.get("description", ""), url_words(src.get("url", ""))]
    return [t for t in texts if t]


def capability_records(catalog: Catalog) -> list[Record]:
    """One record per canonical capability: agent-neutral summary, aliases and agents' own terms.

    Each agent's own words for it (``agent_vocabulary``) are scoped to that agent: they count
    only when a query is matched for that agent.
    """
    records = []
    # An agent's own name (`claude`, `opencode`) appears in many setups and names no capability.
    agent_names = {n.lower() for a in catalog.agents.values() for n in (a.id, a.display_name, *a.aliases)}
    for cap in catalog.capabilities:
        texts, keywords, scoped = list(cap.examples), [], []
        named = [key for alias in cap.aliases for key in identifiers_in(alias)]
        for agent in catalog.agents.values():
            rec = agent.records[cap.name]
            scoped.extend((agent.id, text) for text in agent_vocabulary(rec))
            if rec["available"]:
                texts.append(rec["description"])
                notes = rec.get("implementationNotes", {})
                keywords.extend(notes.get(key, "") for key in ("setup", "configFile"))
                named.extend(record_identifiers(rec))
        records.append(
            Record(
                cap.id,
                cap.name,
                cap.summary,
                aliases=tuple(dict.fromkeys([*cap.aliases, *cap.terms])),
                texts=tuple(dict.fromkeys(texts)),
                keywords=tuple(k for k in keywords if k),
                identifiers=tuple(k for k in dict.fromkeys(named) if k not in agent_names),
                scoped=tuple(scoped),
            )
        )
    return records


_INDEX_LOCK = threading.Lock()


@cache
def _capability_index() -> Index:
    catalog = get_catalog()
    return Index.from_records(
        capability_records(catalog),
        vectors=vectors_dir() / VECTOR_FILE,
        out_of_scope=catalog.out_of_scope,
        judge=load_judge(vectors_dir() / JUDGE_FILE),
    )


def capability_index() -> Index:
    """The process-wide index over the packaged catalog (vectors load on first semantic query)."""
    with _INDEX_LOCK:
        return _capability_index()


_QUALIFIER = re.compile(r"\(([^)]+)\)")


def host_names(catalog: Catalog) -> set[str]:
    """Squashed names of the editors agents run in, read from display names: 'GitHub Copilot (VS Code)'.

    Such a name is an alias of its agent ('vscode' resolves to vscode-copilot),
    but in a capability question it names the editor: "does Gemini CLI work
    inside VS Code?" asks about IDE Integration, so it is not stripped.
    """
    return {squash(q) for a in catalog.agents.values() for q in _QUALIFIER.findall(a.display_name)}


@cache
def _agent_pattern(catalog: Catalog) -> re.Pattern:
    hosts = host_names(catalog)
    names = {
        n.casefold()
        for a in catalog.agents.values()
        for n in (a.id, a.display_name, *a.aliases)
        if squash(n) not in hosts
    }
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # Not inside file names, flags or ids: CLAUDE.md, claude-code-action, gemini-cli's flags stay.
    return re.compile(rf"(?<![\w./-])(?:{alternatives})(?:'s)?(?![\w-]|\.\w)", re.IGNORECASE)


# Issue-tracker boilerplate at the start of a title: "[BUG]", "[Feature Request]:", "Feature request:".
_TRACKER_TAGS = re.compile(
    r"^\s*(?:(?:\[[^\]\n]{1,30}\]|\((?:bug|feature|enhancement)\))\s*:?\s*)+"
    r"|^\s*(?:bug(?: report)?|feature(?: request)?|enhancement|proposal|request|question|suggestion|idea)"
    r"\s*[:\-\u2013]\s+",
    re.IGNORECASE,
)


def strip_agents(query: str, catalog: Catalog | None = None) -> str:
    """Drop agent names and tracker tags from a capability query, if words remain.

    'claude code hooks' -> 'hooks'; '[BUG] /compact hangs' -> '/compact hangs'. Neither says which
    capability is meant, and a "[BUG]" prefix made real bug titles read as out of domain.
    """
    untagged = _TRACKER_TAGS.sub("", query, count=1)
    stripped = " ".join(_agent_pattern(catalog or get_catalog()).sub(" ", untagged).split())
    # A tag can follow the agent's name ("Copilot CLI bug: ..."): drop it once the name is gone, so
    # that stripping twice changes nothing.
    stripped = _TRACKER_TAGS.sub("", stripped, count=1)
    return stripped if content_tokens(stripped) else query


def names_only_agents(query: str, catalog: Catalog | None = None) -> bool:
    """True when the query is nothing but agent names ('copilot', 'claude code?'): no capability asked."""
    pattern = _agent_pattern(catalog or get_catalog())
    return bool(pattern.search(query)) and not content_tokens(pattern.sub(" ", query))


def agents_named(query: str, catalog: Catalog | None = None) -> list[str]:
    """Ids of the agents a query names, in order of first mention ('does Cline have YOLO mode' -> cline)."""
    catalog = catalog or get_catalog()
    found = []
    for hit in _agent_pattern(catalog).finditer(query):
        name = re.sub(r"'s$", "", hit.group(0), flags=re.IGNORECASE)
        agent = catalog.resolve_agent(name)
        if agent is not None:
            found.append(agent)
    return list(dict.fromkeys(found))


def asked_agent(query: str, agent: str | None, catalog: Catalog | None = None) -> str | None:
    """The agent a capability query is about: the one passed, else the only one the text names.

    A query naming two agents ('cursor vs cline') asks about neither alone, so none is used.
    A passed agent that the catalog does not know raises ``UnknownAgentError`` listing the ids.
    """
    catalog = catalog or get_catalog()
    if agent is not None:
        return catalog.agent(validate_query(agent, field="agent")).id
    named = agents_named(query, catalog)
    return named[0] if len(named) == 1 else None


def match(query: str, *, k: int = 3, agent: str | None = None, across_agents: bool = False) -> Match:
    """Resolve a capability question or name to a canonical capability.

    Order: exact name -> alias -> semantic (MiniLM) -> lexical -> no match.
    Agent names are taken out of the text ('does Claude Code support MCP?'), but the
    agent asked about (``agent``, or the one agent the text names) is used: that agent's
    own words for its features ("Composer", "Focus Chain") count for it alone.
    ``across_agents`` (``compare``) matches for no single agent, whatever the text names.
    """
    text = validate_query(query)
    agent_id = None if across_agents else asked_agent(text, agent)
    if names_only_agents(text):
        return Match(text, None, None, 0.0, "none", [], False)
    result = capability_index().match(strip_agents(text), k=k, agent=agent_id)
    return dataclasses.replace(result, query=text)


def resolve_agent(text: str) -> str | None:
    """Agent id for an id, name or alias ('Claude', 'copilot in vscode'); None if unknown."""
    return get_catalog().resolve_agent(text)
