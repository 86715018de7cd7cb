"""A small JSON Schema checker for the catalog files, with messages a person can act on.

It covers the keywords ``data/schema.json`` uses (type, enum, required,
properties, additionalProperties, items, minItems, minLength, pattern, $ref).
Loading stays fast and needs no extra dependency; the test suite checks the
same files with the full ``jsonschema`` library so the two cannot drift.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _describe(path: list[str | int], instance_root: Any) -> str:
    """'capabilities[3] (MCP Support) field tier' from a path into the document."""
    parts: list[str] = []
    node = instance_root
    for step in path:
        if isinstance(step, int):
            label = f"[{step}]"
            node = node[step] if isinstance(node, list) and step < len(node) else None
            if isinstance(node, dict) and isinstance(node.get("name"), str):
                label += f" ({node['name']})"
            parts.append(label)
        else:
            parts.append(f".{step}" if parts else step)
            node = node.get(step) if isinstance(node, dict) else None
    return "".join(parts) or "top level"


def validate(instance: Any, schema: dict) -> list[str]:
    """Return every violation of ``schema`` in ``instance`` as a readable message."""
    errors: list[str] = []
    _check(instance, schema, schema, [], errors, instance)
    return errors


def _check(value: Any, schema: dict, root: dict, path: list, errors: list, doc: Any) -> None:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = root["$defs"][name]
    where = _describe(path, doc)

    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join("null" if v is None else repr(v) for v in schema["enum"])
        errors.append(f"{where}: {value!r} is not allowed; use one of {allowed}")
        return
    expected = schema.get("type")
    if expected:
        py_type = _TYPES[expected]
        if not isinstance(value, py_type) or (expected != "boolean" and isinstance(value, bool)):
            errors.append(f"{where}: expected {expected}, got {type(value).__name__}")
            return
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: must not be empty")
        pattern = schema.get("pattern")
        if pattern and not re.search(pattern, value):
            errors.append(f"{where}: {value!r} does not match {pattern}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: needs at least {schema['minItems']} item(s)")
        if "items" in schema:
            for index, item in enumerate(value):
                _check(item, schema["items"], root, [*path, index], errors, doc)
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{where}: missing required field '{key}'")
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    allowed = ", ".join(properties)
                    errors.append(f"{where}: unknown field '{key}' (allowed: {allowed})")
        for key, sub in properties.items():
            if key in value:
                _check(value[key], sub, root, [*path, key], errors, doc)
