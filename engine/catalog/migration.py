"""Answers for someone moving from one coding agent to another, read from the two agents' records.

For every capability the old agent has, the new agent's record gives its own term, setup and start
page, or, where it lacks the capability, the alternative it names; the config files to carry over
pair the two records' ``configFile`` notes, each cited from its record's sources. Nothing here
knows any agent by name.
"""

from __future__ import annotations

from urllib.parse import urldefrag

from ..common.text import validate_query
from ..errors import EngineError, InvalidQueryError, UnknownAgentError
from .model import Agent, Catalog, get_catalog
from .uncovered import AgentNotCoveredError, UncoveredAgent, covered_or_uncovered

TOOL = "migrate_between_agents"


def migrate(from_agent: str, to_agent: str, category: str | None = None, *, surface: str = "mcp") -> dict:
    """Every capability ``from_agent`` has, as ``to_agent`` provides it, and the config files to carry over.

    A whole pair has to fit a model's context (about 2,000 tokens), so without ``category`` each
    row holds only the new agent's term, or its alternative where it lacks the capability, and
    each file pair only the two paths; asking for one category adds the setup and start page per
    row and the cited page for each file. An old agent the catalog does not cover gets what an
    official source says happened to it and what ``to_agent`` offers instead of an error, since
    people leaving a discontinued agent are the ones most likely to ask. ``surface`` ("mcp" or
    "cli") picks how the notes phrase the next call.
    """
    catalog = get_catalog()
    source = _resolve(from_agent, "from_agent", catalog)
    target = _resolve(to_agent, "to_agent", catalog)
    if isinstance(target, UncoveredAgent):  # nothing to map onto: no record says what it offers
        raise _naming(AgentNotCoveredError(target.display_name, catalog.agent_ids, target), "to_agent")
    cat = catalog.category(validate_query(category, field="category")) if category is not None else None
    if isinstance(source, UncoveredAgent):
        return _from_uncovered(source, target, catalog, cat, surface)
    if source.id == target.id:
        others = ", ".join(a for a in catalog.agent_ids if a != source.id)
        raise InvalidQueryError(
            f"from_agent and to_agent are both '{source.id}'; to_agent must be another agent: {others}"
        )
    names = _available(source, cat)
    detail = cat is not None
    answer: dict = {"from": source.id, "to": target.id}
    if detail:
        answer["category"] = cat
    answer["capabilities"] = _rows(names, target, detail=detail)
    answer["configFiles"] = config_files(source, target, names, detail=detail)
    answer["docsSnapshot"] = {a.id: a.docs_snapshot["date"] for a in (source, target)}
    if not detail:
        answer["note"] = (
            f"One row per capability {source.id} has, as {target.id}'s record gives it; available: false "
            f"marks what {target.id} lacks. Setup, start pages and each config file's source: "
            f"{next_call(surface, source.id, target.id, by_category=True)}."
        )
    return answer


def next_call(surface: str, from_id: str, to_id: str, *, by_category: bool = False) -> str:
    """The call that asks for more, phrased for the surface the caller is on."""
    if surface == "cli":
        return f"run `agent-capabilities migrate {from_id} {to_id}" + (
            " --category CATEGORY` (a category above)" if by_category else "`"
        )
    if by_category:
        return f"call {TOOL} again with category (a key of capabilities)"
    return f"call {TOOL} with from_agent '{from_id}'"


def _resolve(text: object, field: str, catalog: Catalog) -> Agent | UncoveredAgent:
    """The covered agent ``text`` names, or the uncovered one; otherwise an error naming ``field``."""
    try:
        return covered_or_uncovered(validate_query(text, field="agent"), catalog)
    except (UnknownAgentError, InvalidQueryError) as exc:
        raise _naming(exc, field) from None


def _naming(exc: EngineError, field: str) -> EngineError:
    """The same error, its message led by the argument at fault: two agent arguments look alike."""
    exc.args = (f"{field}: {exc}",)
    return exc


def _available(agent: Agent, category: str | None) -> list[str]:
    """The capabilities an agent's records say it has, in catalog order, optionally one category's."""
    return [
        name
        for name, record in agent.records.items()
        if record["available"] and (category is None or record["category"] == category)
    ]


def _rows(names: list[str], target: Agent, *, detail: bool) -> dict[str, list[dict]]:
    """Category -> one row per capability, in catalog order: categories cost less as keys than per row."""
    out: dict[str, list[dict]] = {}
    for name in names:
        record = target.records[name]
        out.setdefault(record["category"], []).append(to_row(record, detail=detail))
    return out


def to_row(record: dict, *, detail: bool) -> dict:
    """How the new agent's record answers one capability: its term (and setup), or its alternative.

    Only a capability the new agent lacks carries ``available: false``; leaving ``true`` out on
    the rest keeps a whole pair within budget.
    """
    row: dict = {"name": record["name"]}
    if not record["available"]:
        row["available"] = False
        if record.get("alternative"):
            row["alternative"] = record["alternative"]
        return row
    if record.get("terminology"):
        row["term"] = record["terminology"]
    if detail:
        notes = record.get("implementationNotes", {})
        row.update({k: notes[k] for k in ("setup", "startUrl") if k in notes})
    return row


def config_files(source: Agent, target: Agent, names: list[str], *, detail: bool = False) -> list[dict]:
    """File pairs to carry over: capabilities for which both records name a ``configFile``.

    The paths are the records' own text. With ``detail`` each side is cited with the page of its
    record that documents it (``file_source``), so a reader can check both paths.
    """
    rows = []
    for name in names:
        old, new = source.records[name], target.records[name]
        old_file = old.get("implementationNotes", {}).get("configFile")
        new_file = new.get("implementationNotes", {}).get("configFile")
        if not (old_file and new_file and new["available"]):
            continue
        row = {"capability": name, "from": old_file, "to": new_file}
        if detail:
            row["fromSource"], row["toSource"] = file_source(old), file_source(new)
        rows.append(row)
    return rows


def file_source(record: dict) -> str | None:
    """The cited page for a record's config file: its source for the start page, else its first source.

    The start page is the one the record sends a reader to for setup, so it is the likeliest to
    name the file; only a page among the record's sources is cited.
    """
    urls = [s["url"] for s in record["sources"]]
    start = record.get("implementationNotes", {}).get("startUrl")
    if start is not None:
        page = urldefrag(start).url
        for url in urls:
            if urldefrag(url).url == page:
                return url
    return urls[0] if urls else None


def _from_uncovered(
    uncovered: UncoveredAgent, target: Agent, catalog: Catalog, category: str | None, surface: str
) -> dict:
    """An old agent the catalog does not cover: what became of it, and what the new agent offers.

    Nothing is said about the old agent's capabilities, since no record holds them. When its
    successor is a covered agent other than ``target``, the note names the call that maps each
    capability from that successor.
    """
    answer: dict = {"from": uncovered.to_dict(), "to": target.id}
    if category is not None:
        answer["category"] = category
    answer["capabilities"] = _rows(_available(target, category), target, detail=category is not None)
    answer["docsSnapshot"] = {target.id: target.docs_snapshot["date"]}
    note = [
        f"{uncovered.display_name} is not covered by this catalog, so its capabilities are unknown here; "
        f"listed instead: what {target.id} offers."
    ]
    successor = catalog.resolve_agent(uncovered.successor) if uncovered.successor else None
    if successor == target.id:
        note.append(f"The catalog records {target.id} as its successor.")
    elif successor is not None:
        note.append(
            f"Its successor {uncovered.successor} is covered: for a row per capability, "
            f"{next_call(surface, successor, target.id)}."
        )
    if category is None:
        note.append(
            f"Setup and start pages: {next_call(surface, uncovered.id, target.id, by_category=True)}."
        )
    answer["note"] = " ".join(note)
    return answer


__all__ = ["config_files", "file_source", "migrate", "next_call", "to_row"]
