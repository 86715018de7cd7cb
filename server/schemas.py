"""The shapes of the catalog tools' answers, published as each tool's ``outputSchema``.

``engine/catalog/answers.py`` builds the answers; these types only describe
them for clients that read ``structuredContent``. They name the top-level keys
and their types and stop there. Measured with build_scripts/measure/bench_tokens.py
when they were chosen, ``tools/list`` was 917 tokens without output schemas and
4,078 with every nested record, source and note described; with these it is
1,795 tokens (cl100k; ``tests/server/test_tool_cost.py`` fails when this figure
drifts): a cost every client pays each session, while the tool descriptions
already say what a record holds.

TypedDicts with optional keys say exactly what the engine does: a key that
depends on the kind of answer (a close call, no match) is absent, not null.
The SDK checks each structured answer against its type and ignores unknown
keys, so a field the engine adds later passes through instead of turning a
good answer into an error. ``tests/server/test_server_structured.py`` checks
every kind of answer against the published schemas.
"""

from __future__ import annotations

from typing import Any, Required

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic needs typing_extensions' TypedDict before 3.12


def _compact(schema: dict[str, Any]) -> None:
    """Drop what pydantic adds but a client does not need.

    Titles, 'additionalProperties: true' (the JSON Schema default) and 'or null' spelled as anyOf.
    """
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        _drop_open_objects(prop)
        variants = prop.get("anyOf", [])
        if variants and all(set(v) == {"type"} for v in variants):
            prop["type"] = [v["type"] for v in prop.pop("anyOf")]


def _drop_open_objects(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("additionalProperties") is True:
            del node["additionalProperties"]
        for value in node.values():
            _drop_open_objects(value)
    elif isinstance(node, list):
        for value in node:
            _drop_open_objects(value)


_CONFIG = ConfigDict(json_schema_extra=_compact)

Record = dict[str, Any]


class LookupAnswer(TypedDict, total=False):
    """lookup_capability: the agent's record; or null, led by the likeliest record or the nearest names."""

    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    agent: Required[str]
    likely: Record  # below the answer threshold: the likeliest capability's record and its matchConfidence
    capability: Required[Record | None]
    match: Required[Record]
    freshness: Record
    agentStatus: list[str]
    alternatives: list[Record]
    nearest: list[Record]
    note: str


class CompareAnswer(TypedDict, total=False):
    """compare_capability: one row per agent, or null with the nearest names when nothing matched."""

    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    capability: Required[str | None]
    match: Required[Record]
    comparison: list[Record]
    availableIn: list[str]
    alternatives: list[Record]
    nearest: list[Record]
    note: str


class ListAnswer(TypedDict, total=False):
    """list_capabilities: name, category, tier and available per capability."""

    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    agent: str
    category: str
    capabilities: Required[list[Record]]
    docsSnapshot: Required[dict[str, str]]


class SourcesAnswer(TypedDict, total=False):
    """get_sources: a list of sources, or agent id -> list for one capability across agents."""

    __pydantic_config__ = _CONFIG  # type: ignore[misc]
    agent: str
    docsUrl: str
    capability: str | None
    match: Record
    sources: list[Record] | dict[str, list[Record]]
    nearest: list[Record]
    note: str


# "from" is a Python keyword, so this one is declared the functional way.
MigrateAnswer = with_config(_CONFIG)(
    TypedDict(
        "MigrateAnswer",
        {
            "from": Required[str | Record],
            "to": Required[str],
            "category": str,
            "capabilities": Required[dict[str, list[Record]]],
            "configFiles": list[Record],
            "docsSnapshot": Required[dict[str, str]],
            "note": str,
        },
        total=False,
    )
)
MigrateAnswer.__doc__ = (
    "migrate_between_agents: per category, the new agent's row for each capability the old one has."
)
