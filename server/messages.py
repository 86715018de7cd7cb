"""JSON-RPC messages checked before the SDK sees them, for both transports: errors that keep the request's id.

The SDK drops a stdio line it cannot parse (the client then waits forever)
and answers a bad HTTP body with pydantic's text and no id. ``triage`` checks
a message first, with the SDK's own parser: a bad one gets -32700 (parse
error) or -32600 (invalid request) naming what is wrong, with the request's id
whenever it can be read, even from a message too long or too deeply nested to
parse (``top_level_id`` finds it with a bounded scan). A UTF-8 byte order mark
before the JSON is dropped, and lone surrogate escapes (JavaScript writes them
for a string cut inside an emoji) become U+FFFD, so such requests are served.
"""

from __future__ import annotations

import contextlib
import json
import re
from json.decoder import scanstring

import mcp_types as types

MAX_LINE = 1 << 20  # a longer message is refused without parsing
SCAN_LIMIT = 16 << 20  # characters searched for the id of a message too long or deep to parse
BOM = "\ufeff"

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a UTF-16 surrogate written as a JSON escape
_SURROGATE = re.compile("[\ud800-\udfff]")


def _error(code: int, message: str, request_id=None) -> str:
    # ensure_ascii: an id is echoed exactly as sent, even one that holds a lone surrogate.
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


_JSON_KINDS = {dict: "an object", list: "an array", bool: "a boolean", float: "a number with a fraction"}
_JSON_KINDS[type(None)] = "null"


def _usable_id(value: object) -> bool:
    """MCP request ids are strings or integers (never null, and JSON true is not the integer 1)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _reason(exc: Exception) -> str:
    """The first problem pydantic found, as 'where: what' (its full text names internal types)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors(include_url=False)[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            message = first.get("msg", "")
            if "recursion limit" in message:
                return "JSON nested deeper than the parser's limit of about 200 levels"
            return f"{where}: {message}"[:160] if where else message[:160]
    return (str(exc).splitlines() or [type(exc).__name__])[0][:160]


def _without_lone_surrogates(line: str, doc: object) -> str:
    """``line`` with every lone surrogate escape turned into U+FFFD (pydantic's parser refuses them).

    ``json.loads`` has already paired valid surrogate escapes into one
    character, so any surrogate left in ``doc`` is a lone one.
    """
    if not _SURROGATE_ESCAPE.search(line):
        return line
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else line


_STRUCTURE = re.compile(r'["{}\[\]]')
_SPACE = re.compile(r"[ \t\n\r]*")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)(?![0-9.eE])")


def top_level_id(text: str, limit: int = SCAN_LIMIT) -> object:
    """The value of the object's top-level "id" when it is a string or an integer, else None.

    For a message that cannot be parsed whole (too long, nested deeper than
    the parser's recursion limit): one pass over its brackets and strings,
    depth counted in a loop, never recursing, strings skipped by the JSON
    module's C scanner, and at most ``limit`` characters searched.
    """
    start = _SPACE.match(text).end()
    if not text.startswith("{", start):
        return None
    depth, position = 0, start
    while True:
        found = _STRUCTURE.search(text, position, limit)
        if found is None:
            return None
        char, at = found.group(), found.start()
        if char == '"':
            try:
                key, position = scanstring(text, at + 1)
            except ValueError:
                return None
            if depth == 1 and key == "id":
                colon = _SPACE.match(text, position).end()
                if text.startswith(":", colon):
                    return _scalar_id(text, _SPACE.match(text, colon + 1).end())
        elif char in "{[":
            depth, position = depth + 1, at + 1
        else:
            depth, position = depth - 1, at + 1
            if depth <= 0:
                return None


def _scalar_id(text: str, at: int) -> object:
    """A string or integer JSON value starting at ``at``; None for any other kind."""
    if text.startswith('"', at):
        with contextlib.suppress(ValueError):
            return scanstring(text, at + 1)[0]
        return None
    number = _INTEGER.match(text, at)
    return int(number.group()) if number else None


def triage(line: str, *, unit: str = "line") -> tuple[str | None, str | None, object]:
    """(message to pass on, error reply to send, request id) for one message (a stdio line, an HTTP body).

    Every message that holds a request id either passes on (the SDK then
    answers it) or gets an error reply here, with that id: the SDK drops (stdio)
    or answers without an id (HTTP) what it cannot parse. ``unit`` names what
    carries one message, for the batch error.
    """
    line = line.removeprefix(BOM)  # some Windows tools start text with one; JSON parsers may ignore it
    if not line.strip():
        return None, None, None
    if len(line) > MAX_LINE:
        request_id = top_level_id(line)
        message = f"Invalid Request: message over {MAX_LINE} bytes"
        return None, _error(-32600, message, request_id), request_id
    try:
        doc = json.loads(line)
    except RecursionError:
        request_id = top_level_id(line)
        message = "Invalid Request: JSON nested deeper than the parser's limit of about 200 levels"
        return None, _error(-32600, message, request_id), request_id
    except ValueError as exc:
        return None, _error(-32700, f"Parse error: {str(exc)[:120]}"), None
    if isinstance(doc, list):
        message = f"Invalid Request: batches are not supported; send one message per {unit}"
        return None, _error(-32600, message), None
    if not isinstance(doc, dict):
        return None, _error(-32600, "Invalid Request: a message must be a JSON object"), None
    request_id = doc.get("id")
    if "method" in doc and "id" in doc and not _usable_id(request_id):
        kind = _JSON_KINDS.get(type(request_id), type(request_id).__name__)
        message = f"Invalid Request: id must be a string or an integer, got {kind}"
        return None, _error(-32600, message), None
    if isinstance(request_id, str) and _SURROGATE.search(request_id):
        message = "Invalid Request: id holds a lone UTF-16 surrogate; use a plain string or an integer"
        return None, _error(-32600, message, request_id), request_id
    try:
        passed = _without_lone_surrogates(line, doc)
        # The SDK's own parser: whatever it would refuse (and drop) is answered here instead.
        types.jsonrpc_message_adapter.validate_json(passed, by_name=False)
    except Exception as exc:  # noqa: BLE001 - any validation failure is an invalid request
        hint = " (params must be an object)" if isinstance(doc.get("params"), list) else ""
        return None, _error(-32600, f"Invalid Request{hint}: {_reason(exc)}", request_id), request_id
    return passed, None, request_id if "method" in doc else None
