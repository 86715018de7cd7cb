"""agent-capabilities engine: a curated catalog of coding-agent capabilities and a matcher for it.

>>> import engine
>>> engine.match("does claude code support mcp?").name
'MCP Support'
>>> engine.resolve_agent("copilot in vs code")
'vscode-copilot'
"""

from importlib import metadata as _metadata

from .capabilities import capability_index, capability_records, match, resolve_agent
from .catalog import Agent, Capability, Catalog, get_catalog, load_catalog
from .encoder import Encoder, EncoderUnavailableError
from .errors import (
    CatalogError,
    EngineError,
    GapLogError,
    InvalidQueryError,
    RateLimitError,
    UnknownAgentError,
    UnknownCategoryError,
)
from .index import Index, Record, Tuning
from .results import Candidate, Match


def package_version() -> str:
    """The installed package's version ('0+unknown' when run from a checkout that is not installed)."""
    try:
        return _metadata.version("agent-capabilities")
    except _metadata.PackageNotFoundError:
        return "0+unknown"


__all__ = [
    "Agent",
    "Candidate",
    "Capability",
    "Catalog",
    "CatalogError",
    "Encoder",
    "EncoderUnavailableError",
    "EngineError",
    "GapLogError",
    "Index",
    "InvalidQueryError",
    "Match",
    "RateLimitError",
    "Record",
    "Tuning",
    "UnknownAgentError",
    "UnknownCategoryError",
    "capability_index",
    "capability_records",
    "get_catalog",
    "load_catalog",
    "match",
    "package_version",
    "resolve_agent",
]
