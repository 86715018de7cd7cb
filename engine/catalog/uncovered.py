"""Agents users name that the catalog does not cover, and what happened to them (renamed, discontinued).

Naming one should get "not covered" plus what an official source says became
of it (Windsurf is now Devin Desktop, Roo Code shut down), never a bare
"unknown agent". The facts are data (``engine/data/uncovered.json``), each
with an official URL and the revision read, like every other fact.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..common.text import light, squash
from ..errors import CatalogError, UnknownAgentError
from . import schema as schema_check
from .model import DATA_DIR

FILE = "uncovered.json"


@dataclass(frozen=True)
class UncoveredAgent:
    id: str
    display_name: str
    vendor: str
    aliases: tuple[str, ...]
    docs_url: str
    status: str
    successor: str | None
    facts: tuple[dict, ...]
    disputes: tuple[dict, ...] = ()  # official sources that contradict each other about this entry

    def summary(self) -> str:
        """Short lines for an error or a note: what it is, what happened, each fact, where its docs are.

        One line per part, because the facts quote sources at length: as one line
        the Windsurf answer was 866 characters.
        """
        parts = [f"{self.display_name} ({self.vendor}) is not covered by this catalog."]
        if self.status != "active":
            became = f" {self.status}" + (f"; its successor is {self.successor}" if self.successor else "")
            parts.append(f"Status:{became}.")
        for fact in sorted(self.facts, key=lambda f: f["date"] or "", reverse=True)[:2]:
            when = fact["date"] or "date not stated by the source"
            parts.append(f"{when}: {fact['fact']} ({fact['url']})")
        for dispute in self.disputes:  # said, not settled silently: the reader sees both sides
            urls = ", ".join(s["url"] for s in dispute["sources"])
            parts.append(f"Disputed ({dispute['field']}): {dispute['note']} ({urls})")
        parts.append(f"Its own docs: {self.docs_url}.")
        return "\n".join(parts)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "displayName": self.display_name,
            "covered": False,
            "status": self.status,
            "successor": self.successor,
            "docsUrl": self.docs_url,
            "facts": [{k: f[k] for k in ("date", "kind", "fact", "url")} for f in self.facts],
            "disputes": [
                {"field": d["field"], "note": d["note"], "sources": [s["url"] for s in d["sources"]]}
                for d in self.disputes
            ],
        }


@cache
def load_uncovered(data_dir: Path = DATA_DIR) -> dict[str, UncoveredAgent]:
    """Name key -> agent, for every id, display name and alias (case, spacing and punctuation folded)."""
    path = data_dir / FILE
    if not path.is_file():
        return {}
    try:
        raw = path.read_bytes()
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CatalogError(f"{path}: unreadable ({exc}); restore it from the package") from exc
    problems = schema_check.check(doc, raw, data_dir / "uncovered.schema.json")
    if problems:
        raise CatalogError(f"{path}: {'; '.join(problems[:5])}")
    out: dict[str, UncoveredAgent] = {}
    for raw in doc["agents"]:
        agent = UncoveredAgent(
            raw["id"],
            raw["displayName"],
            raw["vendor"],
            tuple(raw["aliases"]),
            raw["docsUrl"],
            raw["status"],
            raw.get("successor"),
            tuple(raw["facts"]),
            tuple(raw.get("disputes", ())),
        )
        for name in (agent.id, agent.display_name, *agent.aliases):
            for key in (light(name), squash(name)):
                if key:
                    out.setdefault(key, agent)
    return out


def find_uncovered(text: object) -> UncoveredAgent | None:
    """The uncovered agent ``text`` names, or None."""
    if not isinstance(text, str):
        return None
    table = load_uncovered()
    return table.get(light(text)) or table.get(squash(text))


def covered_or_uncovered(text: str, catalog) -> object:
    """The covered agent ``text`` names (``catalog.agent``), else the uncovered one it names.

    Raises ``UnknownAgentError`` when it names neither, or names several covered agents
    (an ambiguous name is not read as an uncovered one).
    """
    try:
        return catalog.agent(text)
    except UnknownAgentError as exc:
        uncovered = None if exc.ambiguous else find_uncovered(text)
        if uncovered is None:
            raise
        return uncovered


class AgentNotCoveredError(UnknownAgentError):
    """An agent users name that this catalog does not cover; the message says what became of it."""

    def __init__(self, text: str, valid: list[str], agent: UncoveredAgent) -> None:
        super().__init__(text, valid, None)
        self.agent = agent
        self.args = (f"{agent.summary()}\nAgents this catalog covers: {', '.join(valid)}.",)

    def __str__(self) -> str:
        return self.args[0]
