"""The capability catalog: sourced records, matching questions to them, and the answers built from them."""

from .lookup import capability_index, capability_records, match, resolve_agent
from .model import DATA_DIR, Agent, Capability, Catalog, get_catalog, load_catalog

__all__ = [
    "DATA_DIR",
    "Agent",
    "Capability",
    "Catalog",
    "capability_index",
    "capability_records",
    "get_catalog",
    "load_catalog",
    "match",
    "resolve_agent",
]
