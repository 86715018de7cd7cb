"""JSON Schema validation of the catalog files, with messages that name the file, record and field.

The schemas live next to the data (``schema.json`` for agent files,
``capabilities.schema.json``, ``aliases.schema.json``, ``catalog.schema.json``).
Validation uses the ``jsonschema`` package, which the runtime already has
through the ``mcp`` SDK; this module only turns its errors into sentences.

Validating the shipped files costs about half a second, most of a cold start.
So ``validated.json`` beside the data lists the sha256 of every (schema, file)
pair that passed in full when it was written (``python
build_scripts/prepare/record_validated.py``). A file whose bytes and schema match
a listed digest has passed before and is not checked again; any other file,
edited, broken or new, is validated in full. The list only ever saves time: a
stale or missing list makes loading slower, never laxer.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import CatalogError


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


JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")


@cache
def _validator(schema_path: Path) -> jsonschema.Draft202012Validator:
    """The validator for one schema file, checked against the JSON Schema meta-schema first.

    The schemas ship with the package, but a hand edit ("type": "strng") or a
    damaged install must be reported like any other broken data file, not
    surface as a jsonschema traceback on the first validation.
    """
    try:
        schema = json.loads(schema_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise CatalogError(
            f"{schema_path}: file is missing; reinstall the package or restore the file."
        ) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CatalogError(f"{schema_path}: cannot be read as JSON ({exc}).") from exc
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = list(exc.absolute_path)
        where = _describe(path, schema)
        problem = exc.message
        if path[-1:] == ["type"] and path[-2:-1] != ["properties"]:
            problem = f"{exc.instance!r} is not a JSON Schema type; use one of {', '.join(JSON_TYPES)}"
        raise CatalogError(
            f"{schema_path}: not a valid JSON Schema at {where}: {problem}. "
            "Restore the file from the package (git checkout or reinstall)."
        ) from exc
    return jsonschema.Draft202012Validator(schema)


def validate(instance: Any, schema_path: Path, *, limit: int = 20) -> list[str]:
    """Every violation of the schema at ``schema_path`` in ``instance``, as readable messages.

    Raises ``CatalogError`` naming the schema file when the schema itself is
    unusable: unreadable, not a JSON Schema, or failing while it is applied.
    """
    validator = _validator(Path(schema_path))
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    except Exception as exc:  # noqa: BLE001 - a schema that passes the meta-schema can still break on use
        raise CatalogError(
            f"{schema_path}: the schema cannot be applied ({type(exc).__name__}: {exc}). "
            "Restore the file from the package (git checkout or reinstall)."
        ) from exc
    return [f"{_describe(list(e.absolute_path), instance)}: {_message(e)}" for e in errors[:limit]]


VALIDATED_FILE = "validated.json"

# Set to False to validate every file in full, whatever validated.json says (the recording step does).
trust_recorded = True
# Digests of the (schema, file) pairs that passed a full validation in this process.
passed_in_full: set[str] = set()


def digest(schema_path: Path, raw: bytes) -> str:
    """One key for a file's bytes checked against one schema's bytes; either changing changes it."""
    try:
        schema_bytes = Path(schema_path).read_bytes()
    except OSError:
        return ""  # an unreadable schema never matches; ``validate`` reports it
    return hashlib.sha256(schema_bytes + b"\0" + raw).hexdigest()


def _recorded(data_dir: Path) -> frozenset[str]:
    try:
        doc = json.loads((data_dir / VALIDATED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return frozenset()  # no list, or an unreadable one: every file is validated
    listed = doc.get("sha256") if isinstance(doc, dict) else None
    return frozenset(d for d in listed if isinstance(d, str)) if isinstance(listed, list) else frozenset()


def check(doc: Any, raw: bytes, schema_path: Path, *, limit: int = 20) -> list[str]:
    """``validate``, skipped when this exact file passed against this exact schema before."""
    schema_path = Path(schema_path)
    key = digest(schema_path, raw)
    if trust_recorded and key and key in _recorded(schema_path.parent):
        return []
    problems = validate(doc, schema_path, limit=limit)
    if not problems and key:
        passed_in_full.add(key)
    return problems
