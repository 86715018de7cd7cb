"""Tool-argument checks with messages a model can act on, in place of the SDK's pydantic text.

The SDK would answer a wrong type with pydantic's wording and a pydantic.dev
link, and would silently drop an unknown argument such as ``agnet``. Checking
the arguments against the tool's own input schema first gives one sentence
that names the argument, says what was wrong and lists what is valid.
"""

from __future__ import annotations

from typing import Any

from engine.common.text import closest

_JSON_TYPES = {
    "string": str,
    "array": list,
    "object": dict,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "null": type(None),
}


def _type_name(value: Any) -> str:
    for name, kind in _JSON_TYPES.items():
        if isinstance(value, kind) and not (name in ("integer", "number") and isinstance(value, bool)):
            return name
    return type(value).__name__


def _allowed_types(schema: dict) -> list[str]:
    if "type" in schema:
        kinds = schema["type"]
        return kinds if isinstance(kinds, list) else [kinds]
    return [t for sub in schema.get("anyOf", []) for t in _allowed_types(sub)]


def _item_schema(schema: dict) -> dict | None:
    if "items" in schema:
        return schema["items"]
    for sub in schema.get("anyOf", []):
        if sub.get("type") == "array":
            return sub.get("items")
    return None


def _matches(value: Any, kinds: list[str]) -> bool:
    if not kinds:
        return True
    actual = _type_name(value)
    return actual in kinds or (actual == "integer" and "number" in kinds)


def check_arguments(tool: str, arguments: dict[str, Any], schema: dict) -> str | None:
    """A message describing what is wrong with ``arguments``, or None when they fit ``schema``."""
    properties: dict[str, dict] = schema.get("properties", {})
    valid = ", ".join(properties) or "none"
    for name in arguments:
        if name not in properties:
            near = closest(name, list(properties))
            hint = f" Did you mean '{near}'?" if near else ""
            return f"{tool} has no argument '{name}'.{hint} Valid arguments: {valid}."
    for name in schema.get("required", []):
        if name not in arguments:
            about = properties.get(name, {}).get("description", "")
            return f"{tool} needs the argument '{name}'. {about}".strip()
    for name, value in arguments.items():
        spec = properties[name]
        kinds = _allowed_types(spec)
        about = spec.get("description", "")
        if not _matches(value, kinds):
            expected = " or ".join(k for k in kinds)
            return f"{tool}: '{name}' must be {expected}, got {_type_name(value)}. {about}".strip()
        items = _item_schema(spec)
        if isinstance(value, list) and items:
            item_kinds = _allowed_types(items)
            for position, item in enumerate(value):
                if not _matches(item, item_kinds):
                    return (
                        f"{tool}: '{name}[{position}]' must be {' or '.join(item_kinds)}, "
                        f"got {_type_name(item)}. {about}"
                    ).strip()
    return None
