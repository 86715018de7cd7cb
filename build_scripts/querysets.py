"""The labelled query sets in ``queries/``, read through their manifest so every reader agrees on roles.

``queries/manifest.json`` says, for each set, who wrote it, when, how many
items it holds, its role and what reads it. The fitting step asks for sets by
role and ``read`` refuses a set whose file disagrees with the manifest, so a
held-out set cannot be fitted on by renaming or mislabelling it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERIES = ROOT / "queries"
MANIFEST = QUERIES / "manifest.json"
# Roles whose sets may be fitted on; everything else is only ever reported.
FIT_ROLES = frozenset({"own", "training", "calibration", "probe", "gap-grouping"})
LABELLED_ROLES = ("own", "training", "calibration", "selection", "held-out")


@dataclass(frozen=True)
class QuerySet:
    name: str
    file: str
    role: str
    writer: str
    written: str
    size: int
    usedFor: str  # noqa: N815 - the manifest's key
    origin: str = (
        "written"  # "real" for text people wrote in public trackers, "written" for sets written to order
    )

    @property
    def path(self) -> Path:
        return QUERIES / self.file


@cache
def manifest() -> tuple[QuerySet, ...]:
    doc = json.loads(MANIFEST.read_text(encoding="utf-8"))
    fields = QuerySet.__dataclass_fields__
    return tuple(QuerySet(**{k: v for k, v in entry.items() if k in fields}) for entry in doc["sets"])


def by_role(*roles: str) -> tuple[QuerySet, ...]:
    """The sets with one of these roles, in manifest order."""
    return tuple(s for s in manifest() if s.role in roles)


def get(name: str) -> QuerySet:
    for s in manifest():
        if s.name == name:
            return s
    raise KeyError(
        f"no query set named {name!r} in {MANIFEST}; known: {', '.join(s.name for s in manifest())}"
    )


@cache
def read(name: str) -> dict:
    """A labelled set's document, after checking that the file's own role agrees with the manifest."""
    entry = get(name)
    doc = json.loads(entry.path.read_text(encoding="utf-8"))
    if doc.get("role", entry.role) != entry.role:
        raise ValueError(
            f"{entry.path}: the file says role {doc['role']!r}, the manifest says {entry.role!r}"
        )
    return doc


def queries(name: str) -> list[dict]:
    return read(name)["queries"]


def read_for_fit(name: str) -> dict:
    """A set a fitting step may learn from; anything held out or kept for selection raises."""
    entry = get(name)
    if entry.role not in FIT_ROLES:
        raise PermissionError(
            f"{name} is a {entry.role} set: fitting steps may read only {sorted(FIT_ROLES)}"
        )
    return read(name)


def item_agent(item: dict) -> str | None:
    """The agent a labelled item is about, as matching at run time would know it.

    Real items carry the tracker's agent (``agent``; "other" for trackers outside the
    catalog): the caller of ``lookup`` knows it. Otherwise the one agent the text names
    (``engine.catalog.lookup.asked_agent``), as ``engine.match`` finds it.
    """
    from engine.catalog.lookup import asked_agent
    from engine.catalog.model import get_catalog

    catalog = get_catalog()
    given = item.get("agent")
    if given is not None:
        return given if given in catalog.agents else None
    return asked_agent(item["query"], None, catalog)
