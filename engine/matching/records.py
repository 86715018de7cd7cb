"""Records given by a caller, checked: dicts or ``Record``s in, validated ``Record``s out.

Every bad record raises ``InvalidQueryError`` naming the record (position and
id) and the field, and saying what is valid, so a caller building an index
over their own tools never sees a TypeError from deep inside matching.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..common.text import clean_text, light
from ..errors import InvalidQueryError
from .scoring import Record

_RECORD_SHAPE = "records look like {'id': ..., 'name': ..., 'description': ..., 'aliases': [...]}"


def _text_field(raw: dict, key: str, where: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidQueryError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    return clean_text(value)


def _required_text(raw: dict, key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        got = type(value).__name__ if not isinstance(value, str) else "a blank string"
        raise InvalidQueryError(f"{where}: '{key}' must be a non-empty string, got {got}; {_RECORD_SHAPE}")
    return clean_text(value)


def _string_list(raw: dict, key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key)
    if value is None:
        return ()
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, Iterable):
        raise InvalidQueryError(f"{where}: {key} must be a list of strings, got {type(value).__name__}")
    items = list(value)
    wrong = [type(item).__name__ for item in items if not isinstance(item, str)]
    if wrong:
        raise InvalidQueryError(
            f"{where}: {key} must be a list of strings, but it holds a value of type {wrong[0]}"
        )
    return tuple(clean_text(item) for item in items)


def _coerce_record(raw: object, position: int) -> Record:
    """One validated ``Record`` from a dict or a ``Record``; the error names the record and the field.

    A ``Record`` is checked like a dict (it is a plain dataclass, so nothing
    stopped its fields from holding None or numbers); it also keeps its
    ``texts`` and ``keywords``, which dicts do not carry.
    """
    if isinstance(raw, Record):
        fields = {f.name: getattr(raw, f.name) for f in dataclasses.fields(Record)}
        lists = ("aliases", "texts", "keywords", "identifiers")
    elif isinstance(raw, dict):
        fields, lists = raw, ("aliases", "identifiers")
    else:
        raise InvalidQueryError(
            f"record {position} must be a dict with 'id' and 'name' (or an engine.Record), "
            f"got {type(raw).__name__}"
        )
    rid = _required_text(fields, "id", f"record {position}")
    where = f"record {position} ('{rid}')"
    name = _required_text(fields, "name", where)
    description = _text_field(fields, "description", where)
    extra = {key: _string_list(fields, key, where) for key in lists}
    return Record(rid, name, description, **extra, scoped=_scoped(fields.get("scoped"), where))


def _scoped(value: object, where: str) -> tuple[tuple[str, str], ...]:
    """``scoped`` as (scope, text) pairs, from a dict ``{scope: [texts]}`` or a sequence of pairs."""
    if value is None:
        return ()
    wrong = (
        f"{where}: scoped must map a scope (such as an agent id) to a list of strings, "
        "e.g. {'cursor': ['Composer', 'Tab']}"
    )
    if isinstance(value, dict):
        pairs = [
            (scope, text)
            for scope, texts in value.items()
            for text in _string_list(value, scope, f"{where}: scoped")
        ]
    elif isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidQueryError(wrong)
    else:
        pairs = list(value)
        if not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
            raise InvalidQueryError(wrong)
    if not all(isinstance(scope, str) and scope and isinstance(text, str) for scope, text in pairs):
        raise InvalidQueryError(wrong)
    return tuple((scope, clean_text(text)) for scope, text in pairs)


def coerce_records(records: Iterable[dict | Record]) -> list[Record]:
    """Validate raw records and turn them into ``Record``s, with errors naming the record.

    Ids must be unique, and so must names (ignoring case and spacing): an
    exact-name query answers at confidence 1.0, which two records of one name
    would make a coin toss.
    """
    if isinstance(records, (str, bytes, dict)) or not isinstance(records, Iterable):
        raise InvalidQueryError(
            f"records must be a list of dicts like {{'id': ..., 'name': ...}}, got {type(records).__name__}"
        )
    out: list[Record] = []
    ids: dict[str, int] = {}
    names: dict[str, int] = {}
    for position, raw in enumerate(records):
        rec = _coerce_record(raw, position)
        if rec.id in ids:
            raise InvalidQueryError(
                f"record {position}: id '{rec.id}' appears twice (also record {ids[rec.id]}); "
                "ids must be unique"
            )
        key = light(rec.name)
        if key in names:
            raise InvalidQueryError(
                f"record {position} ('{rec.id}'): name '{rec.name}' is already used by record {names[key]}; "
                "names must be unique (make them say which, e.g. 'git: log' and 'hg: log')"
            )
        ids[rec.id] = position
        names[key] = position
        out.append(rec)
    if not out:
        raise InvalidQueryError("an index needs at least one record")
    return out
