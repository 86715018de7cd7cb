"""JSON Schema validation of the catalog files, with messages that name the file, record and field.

The schemas live next to the data (``schema.json`` for agent files,
``capabilities.schema.json``, ``aliases.schema.json``, ``catalog.schema.json``).
Validation uses the ``jsonschema`` package, which the runtime already has
through the ``mcp`` SDK; this module only turns its errors into sentences.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jsonschema


def _describe(path: list[str | int], doc: Any) -> str:
    """'capabilities[3] (MCP Support).tier' from a path into the document."""
    parts: list[str] = []
    node = doc
    for step in path:
        if isinstance(step, int):
            label = f"[{step}]"
            node = node[step] if isinstance(node, list) and step < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                label += f" ({node['name']})"
            parts.append(label)
        else:
            parts.append(f".{step}" if parts else str(step))
            node = node.get(step) if isinstance(node, dict) else None
    return "".join(parts) or "top level"


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "enum":
        allowed = ", ".join("null" if v is None else repr(v) for v in error.validator_value)
        return f"{error.instance!r} is not allowed; use one of {allowed}"
    if error.validator == "type":
        return f"expected {error.validator_value}, got {type(error.instance).__name__}"
    if error.validator == "required":
        return error.message.replace("is a required property", "is missing (required)")
    if error.validator == "additionalProperties":
        allowed = ", ".join(error.schema.get("properties", {}))
        return f"{error.message} (allowed: {allowed})"
    if error.validator == "minLength":
        return "must not be empty"
    return error.message


@cache
def _validator(schema_path: Path) -> jsonschema.Draft202012Validator:
    import json

    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def validate(instance: Any, schema_path: Path, *, limit: int = 20) -> list[str]:
    """Every violation of the schema at ``schema_path`` in ``instance``, as readable messages."""
    errors = sorted(_validator(Path(schema_path)).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{_describe(list(e.absolute_path), instance)}: {_message(e)}" for e in errors[:limit]]
