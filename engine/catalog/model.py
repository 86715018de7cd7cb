"""The curated capability catalog: agents, their capability records, aliases and categories.

Data is package data under ``engine/data/`` (one JSON file per agent, the
canonical capability list, the alias table and a JSON Schema). Loading
validates everything and fails with the file, record and field at fault.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..common.text import closest, fold, light, squash
from ..errors import CatalogError, UnknownAgentError, UnknownCategoryError
from . import schema as schema_check

DATA_DIR = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True)
class Capability:
    """One canonical capability: the thing users ask about, independent of any agent."""

    id: str
    name: str
    category: str
    summary: str
    examples: tuple[str, ...] = ()  # how users phrase it, for semantic matching
    aliases: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # agents' own words for it ("Google Search grounding")


@dataclass(frozen=True, eq=False)
class Agent:
    """A coding agent with one record per canonical capability."""

    id: str
    display_name: str
    vendor: str
    aliases: tuple[str, ...]
    docs_url: str
    records: dict[str, dict] = field(repr=False)
    docs_snapshot: dict = field(
        default_factory=dict
    )  # {"repo", "commit", "date"} the facts were checked against
    status_facts: tuple[dict, ...] = ()  # GA dates, sign-in and plan changes, renames
    evidence_kind: str = (
        "docs-repository"  # docs-repository | docs-mirror | vendor-site: where facts were read
    )

    def status_lines(self) -> list[str]:
        """Agent-level facts that change many answers at once, one line each ('2026-06-18 sign-in: ...')."""
        return [f"{f['date']} {f['kind']}: {f['fact']}" for f in self.status_facts]

    def record(self, capability: str) -> dict:
        """A copy of this agent's record for a canonical capability name."""
        return copy.deepcopy(self.records[capability])


@dataclass(frozen=True, eq=False)
class Catalog:
    """Everything the engine knows, loaded and validated once."""

    agents: dict[str, Agent]
    capabilities: tuple[Capability, ...]
    aliases: dict[str, str]  # alias -> canonical name, as written in aliases.json
    out_of_scope: tuple[str, ...] = ()  # topics the catalog does not answer, for abstaining

    @property
    def agent_ids(self) -> list[str]:
        """Agent ids in a stable order."""
        return list(self.agents)

    @property
    def categories(self) -> list[str]:
        """Every category used by a canonical capability, in catalog order."""
        return list(dict.fromkeys(cap.category for cap in self.capabilities))

    def capability(self, name: str) -> Capability:
        """The canonical capability with this exact name."""
        for cap in self.capabilities:
            if cap.name == name:
                return cap
        raise KeyError(name)

    def agent(self, text: str) -> Agent:
        """The agent named by ``text`` (id, display name or alias), or ``UnknownAgentError``."""
        agent_id = self.resolve_agent(text)
        shared = self.agents_named(text) if agent_id is None else []
        if shared:
            raise UnknownAgentError(str(text), self.agent_ids, None, ambiguous=shared)
        if agent_id is None:
            options = [n for a in self.agents.values() for n in (a.id, a.display_name, *a.aliases)]
            near = closest(str(text), options)
            near_id = self.resolve_agent(near) if near else None
            raise UnknownAgentError(str(text), self.agent_ids, near_id)
        return self.agents[agent_id]

    def resolve_agent(self, text: str) -> str | None:
        """Agent id for an id, display name or alias ('claude', 'copilot in vscode').

        None when unknown, and when the name fits several agents ('copilot').
        """
        ids = self.agents_named(text)
        return ids[0] if len(ids) == 1 else None

    def agents_named(self, text: str) -> list[str]:
        """Every agent id a name could mean: one for most names, several for 'copilot'."""
        if not isinstance(text, str):
            return []
        light_keys, squash_keys = _agent_keys(self)
        for key, table in ((light(text), light_keys), (squash(text), squash_keys)):
            if key and key in table:
                return table[key]
        return []

    def category(self, text: str) -> str:
        """The canonical category named by ``text``, or ``UnknownCategoryError``."""
        key = squash(str(text))
        for cat in self.categories:
            if squash(cat) == key:
                return cat
        raise UnknownCategoryError(str(text), self.categories, closest(str(text), self.categories))


@cache
def _agent_keys(catalog: Catalog) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Name -> agent ids, keyed with symbols kept ('@github/copilot') and without."""
    light_keys: dict[str, list[str]] = {}
    squash_keys: dict[str, list[str]] = {}
    for agent in catalog.agents.values():
        for name in (agent.id, agent.display_name, *agent.aliases):
            for key, table in ((light(name), light_keys), (squash(name), squash_keys)):
                ids = table.setdefault(key, [])
                if agent.id not in ids:
                    ids.append(agent.id)
    # A symbol-free key shared by two agents only counts when the exact spelling says which.
    return light_keys, squash_keys


def slug(name: str) -> str:
    """Stable id for a capability name: 'CI/CD Integration' -> 'ci-cd-integration'."""
    return fold(name).replace(" ", "-")


def _read_raw(path: Path) -> tuple[bytes, dict]:
    try:
        raw = path.read_bytes()
        return raw, json.loads(raw.decode("utf-8"))
    except FileNotFoundError as exc:
        raise CatalogError(f"{path}: file is missing; reinstall the package or restore the file.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise CatalogError(f"{path}: cannot be read as JSON ({exc}).") from exc


def _read_json(path: Path) -> dict:
    return _read_raw(path)[1]


def _read_valid(path: Path, schema: str) -> dict:
    """Read a data file and check it against its schema; ``CatalogError`` names file, record and field."""
    raw, doc = _read_raw(path)
    data_dir = path.parent.parent if path.parent.name == "agents" else path.parent
    problems = schema_check.check(doc, raw, data_dir / schema)
    if problems:
        shown = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise CatalogError(f"{path}: {shown}{more}")
    return doc


def _check_agent(data: dict, canon: dict[str, Capability]) -> list[str]:
    """Rules the schema cannot say: every canonical name once, complete available records."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, rec in enumerate(data["capabilities"]):
        where = f"capabilities[{index}] ({rec['name']})"
        if rec["name"] not in canon:
            problems.append(f"{where}: not a canonical capability name")
            continue
        if rec["name"] in seen:
            problems.append(f"{where}: duplicate record")
        seen.add(rec["name"])
        if rec["category"] != canon[rec["name"]].category:
            problems.append(f"{where}.category: expected '{canon[rec['name']].category}'")
        if rec["available"]:
            notes = rec.get("implementationNotes", {})
            for key in ("setup", "startUrl"):
                if not notes.get(key):
                    problems.append(f"{where}.implementationNotes.{key}: required when available")
            for key in ("tier", "maturityLevel"):
                if rec.get(key) is None:
                    problems.append(f"{where}.{key}: required when available")
            if not rec["sources"]:
                problems.append(f"{where}.sources: at least one source when available")
    for missing in sorted(set(canon) - seen):
        problems.append(f"no record for '{missing}' (add one with \"available\": false if absent)")
    return problems


def load_catalog(data_dir: Path | str = DATA_DIR) -> Catalog:
    """Read and validate a catalog directory; raise ``CatalogError`` naming what is broken."""
    data_dir = Path(data_dir)
    manifest = _read_valid(data_dir / "catalog.json", "catalog.schema.json")
    canon_doc = _read_valid(data_dir / "capabilities.json", "capabilities.schema.json")
    alias_doc = _read_valid(data_dir / "aliases.json", "aliases.schema.json")
    from .uncovered import load_uncovered  # it imports this module for DATA_DIR

    load_uncovered(data_dir)  # read on demand later; a broken file is found at start, like the rest

    canon: dict[str, Capability] = {}
    for index, entry in enumerate(canon_doc["capabilities"]):
        if entry["name"] in canon:
            raise CatalogError(
                f"{data_dir / 'capabilities.json'}: capabilities[{index}] ({entry['name']}) appears twice"
            )
        canon[entry["name"]] = Capability(
            id=slug(entry["name"]),
            name=entry["name"],
            category=entry["category"],
            summary=entry["summary"],
            examples=tuple(entry.get("examples", ())),
        )
    aliases: dict[str, str] = alias_doc["aliases"]
    bad = sorted(f"'{a}' -> '{n}'" for a, n in aliases.items() if n not in canon)
    if bad:
        raise CatalogError(f"{data_dir / 'aliases.json'}: unknown capability in {', '.join(bad[:5])}")

    expected = manifest["agents"]
    found = sorted(p.stem for p in (data_dir / "agents").glob("*.json"))
    missing = [a for a in expected if a not in found]
    if missing:
        raise CatalogError(
            f"{data_dir / 'agents'}: no file for agent(s) {', '.join(missing)} listed in catalog.json; "
            "restore the file or remove the agent from catalog.json"
        )
    extra = [a for a in found if a not in expected]
    if extra:
        raise CatalogError(
            f"{data_dir / 'agents'}: agent file(s) {', '.join(extra)} are not listed in catalog.json; "
            "add them there"
        )

    agents: dict[str, Agent] = {}
    terms: dict[str, list[str]] = {name: [] for name in canon}
    for agent_id in expected:
        path = data_dir / "agents" / f"{agent_id}.json"
        data = _read_valid(path, "schema.json")
        problems = _check_agent(data, canon)
        if data["id"] != agent_id:
            problems.insert(0, f"id: '{data['id']}' does not match the file name '{agent_id}.json'")
        if problems:
            shown = "; ".join(problems[:5])
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise CatalogError(f"{path}: {shown}{more}")
        records = {rec["name"]: rec for rec in data["capabilities"]}
        agents[data["id"]] = Agent(
            id=data["id"],
            display_name=data["displayName"],
            vendor=data["vendor"],
            aliases=tuple(data["aliases"]),
            docs_url=data["docsUrl"],
            records={name: records[name] for name in canon},
            docs_snapshot=dict(data["docsSnapshot"]),
            status_facts=tuple(data.get("statusFacts", ())),
            evidence_kind=data.get("evidenceKind", "docs-repository"),
        )
        for rec in records.values():
            if rec.get("terminology") and rec["available"]:
                terms[rec["name"]].append(rec["terminology"])

    by_name: dict[str, list[str]] = {name: [] for name in canon}
    for alias, name in aliases.items():
        by_name[name].append(alias)
    capabilities = tuple(
        Capability(
            id=cap.id,
            name=cap.name,
            category=cap.category,
            summary=cap.summary,
            examples=cap.examples,
            aliases=tuple(by_name[cap.name]),
            terms=tuple(dict.fromkeys(terms[cap.name])),
        )
        for cap in canon.values()
    )
    return Catalog(
        agents=agents,
        capabilities=capabilities,
        aliases=aliases,
        out_of_scope=tuple(canon_doc.get("outOfScope", ())),
    )


@cache
def get_catalog() -> Catalog:
    """The packaged catalog, loaded once per process."""
    return load_catalog(DATA_DIR)
