"""agent-capabilities engine: a curated catalog of coding-agent capabilities and a matcher for it.

>>> import engine
>>> engine.match("does claude code support mcp?").name
'MCP Support'
>>> engine.resolve_agent("copilot in vs code")
'vscode-copilot'
"""

import sys as _sys
from importlib import metadata as _metadata

from .common.privacy import disable_telemetry as _disable_telemetry

_disable_telemetry()  # before anything below can import onnxruntime

from . import gaps
from .catalog import (
    Agent,
    Capability,
    Catalog,
    answers,
    capability_index,
    capability_records,
    get_catalog,
    load_catalog,
    match,
    resolve_agent,
)
from .errors import (
    CatalogError,
    EngineError,
    GapLogError,
    InvalidQueryError,
    RateLimitError,
    UnknownAgentError,
    UnknownCategoryError,
)
from .matching import Candidate, Encoder, EncoderUnavailableError, Index, Match, Record, Tuning

# ``import engine.answers`` kept working when the module moved into ``engine.catalog``.
_sys.modules[__name__ + ".answers"] = answers


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
    "answers",
    "capability_index",
    "capability_records",
    "gaps",
    "get_catalog",
    "load_catalog",
    "match",
    "package_version",
    "resolve_agent",
]
