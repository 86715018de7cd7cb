"""Command line: the MCP server's answers for a person (``--json`` for scripts).

``agent-capabilities match|lookup|compare|list|sources|migrate|gaps|export``; ``python -m engine`` does
the same.
A thin layer over ``engine.answers``: this module reads what each command asks
about and formats the answer dicts as short text; ``cli_args`` holds the
argument parser. Errors are one line on stderr (a longer explanation follows on
indented lines), exit 2.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
import textwrap

from . import package_version
from .catalog import answers
from .catalog.lookup import match
from .catalog.model import get_catalog
from .cli_args import PROG, build_parser, usage_error
from .common.text import closest
from .errors import EngineError, UnknownAgentError, UnknownCategoryError


def export_catalog() -> dict:
    """The whole catalog as one JSON document."""
    catalog = get_catalog()
    return {
        "agents": [
            {
                "id": agent.id,
                "displayName": agent.display_name,
                "vendor": agent.vendor,
                "aliases": list(agent.aliases),
                "docsUrl": agent.docs_url,
                "docsSnapshot": agent.docs_snapshot,
                "statusFacts": list(agent.status_facts),
                "capabilities": [agent.record(name) for name in agent.records],
            }
            for agent in catalog.agents.values()
        ]
    }


# -- text formats -------------------------------------------------------------------------------


def _conf(value: float) -> str:
    """Two decimals, never ``0.00``: a runner-up that small would read as impossible; it prints ``<0.01``."""
    return f"{value:.2f}" if value >= 0.005 else "<0.01"


def _nearest(answer: dict) -> str:
    return ", ".join(f"{n['name']} ({_conf(n['matchConfidence'])})" for n in answer.get("nearest", []))


def _no_match_text(answer: dict) -> list[str]:
    """The answer's note (it already says nothing matched and what to do), then the nearest names."""
    nearest = _nearest(answer)
    return [answer["note"], f"Nearest: {nearest}."] if nearest else [answer["note"]]


def _close_call(answer: dict) -> list[str]:
    rows = answer.get("alternatives") or []
    return [f"  or: {r['name']} ({_conf(r['matchConfidence'])})" for r in rows]


def format_match(result, k: int) -> list[str]:
    if result.name is None:
        guess = answers.likely(result)
        if guess is not None:
            # Below the answer threshold: lead with the likeliest capability and its honest confidence.
            lines = [f"likely {guess[0]}  (confidence {_conf(guess[1])}, below the answer threshold)"]
            rest = result.candidates[1:k]
            return lines + [f"  {i}. {c.name} ({_conf(c.confidence)})" for i, c in enumerate(rest, 2)]
        near = ", ".join(f"{c.name} ({_conf(c.confidence)})" for c in result.candidates[:k])
        return [f"no match (nearest: {near})" if near else "no match: name a capability, not only an agent"]
    flag = " [close call]" if result.ambiguous else ""
    lines = [f"{result.name}  ({result.method}, confidence {_conf(result.confidence)}){flag}"]
    lines += [f"  {i}. {c.name} ({_conf(c.confidence)})" for i, c in enumerate(result.candidates[1:k], 2)]
    return lines


def format_lookup(answer: dict) -> list[str]:
    if answer["capability"] is None and "likely" not in answer:
        return _no_match_text(answer)
    agent = get_catalog().agents[answer["agent"]].display_name
    cap = answer["capability"] or answer["likely"]
    if answer["capability"] is None:
        agent = f"{agent} (likely, confidence {_conf(cap['matchConfidence'])}; below the answer threshold)"
    if not cap["available"]:
        lines = [f"{agent}: {cap['name']} — not available. {cap['description']}"]
        if cap.get("alternative"):
            lines.append(f"Alternative: {cap['alternative']}")
        if cap.get("availableIn"):
            lines.append(f"Available in: {', '.join(cap['availableIn'])}")
    else:
        notes = cap.get("implementationNotes", {})
        head = f"{agent}: {cap['name']} — available ({cap['tier']}, {cap['maturityLevel']})."
        parts = [head, f"Setup: {notes['setup']}."] if notes.get("setup") else [head]
        if notes.get("configFile"):
            parts.append(f"Config: {notes['configFile']}.")
        if notes.get("startUrl"):
            parts.append(f"Read next: {notes['startUrl']}")
        lines = [" ".join(parts)]
        lines += [f"  ! {g}" for g in notes.get("gotchas", [])]
    fresh = answer.get("freshness", {})
    lines.append(f"(sources checked {fresh.get('checked')}; docs snapshot {fresh.get('docsSnapshot')})")
    return lines + _close_call(answer)


def format_compare(answer: dict) -> list[str]:
    if answer["capability"] is None:
        return _no_match_text(answer)
    lines = [f"{answer['capability']}:"]
    for row in answer["comparison"]:
        if not row["available"]:
            lines.append(f"  {row['agent']:16} not available")
            continue
        setup = row.get("implementationNotes", {}).get("setup", "")
        lines.append(f"  {row['agent']:16} {row['tier']}, {row['maturityLevel']}. {setup}")
    return lines + _close_call(answer)


def format_list(answer: dict) -> list[str]:
    lines = []
    for item in answer["capabilities"]:
        who = f"{item['agent']:16} " if "agent" in item else ""
        state = f"yes ({item['tier']})" if item["available"] else "no"
        lines.append(f"{who}{item['name']:28} {item.get('category', answer.get('category', '')):22} {state}")
    return lines


def format_sources(answer: dict) -> list[str]:
    if answer.get("capability") is None and "match" in answer:
        return _no_match_text(answer)
    sources = answer["sources"]
    if isinstance(sources, dict):  # one capability across agents
        return [
            f"{agent}: {s['url']} (verified {s['verifiedDate']})"
            for agent, rows in sources.items()
            for s in rows
        ]
    return [f"{s['url']} — {s['description']} (verified {s['verifiedDate']})" for s in sources]


def format_migrate(answer: dict) -> list[str]:
    """Rows by category; a capability the new agent lacks shows its alternative, then the file pairs.

    An old agent the catalog does not cover comes first with what its sources say became of it.
    """
    source, new = answer["from"], answer["to"]
    snapshots = ", ".join(f"{agent} {date}" for agent, date in answer["docsSnapshot"].items())
    if isinstance(source, str):
        lines = [f"{source} -> {new} (docs snapshots: {snapshots})"]
    else:
        lines = [f"{source['displayName']} ({source['status']}) -> {new} (docs snapshot: {snapshots})"]
        lines += [f"  {f['date'] or 'undated'}: {f['fact']} ({f['url']})" for f in source["facts"]]
    for category, rows in answer["capabilities"].items():
        lines.append(f"{category}:")
        for row in rows:
            if row.get("available") is False:
                lines.append(
                    f"  {row['name']}: not in {new}. Alternative: {row.get('alternative', 'none recorded')}"
                )
                continue
            term = f" (as {row['term']})" if row.get("term") else ""
            setup = (
                f" — setup: {row['setup'].rstrip('.')}. Read: {row['startUrl']}" if row.get("setup") else ""
            )
            lines.append(f"  {row['name']}{term}{setup}")
    if answer.get("configFiles"):
        lines.append("config files to carry over:")
    for row in answer.get("configFiles", []):
        cited = f" ({row['fromSource']} -> {row['toSource']})" if row.get("toSource") else ""
        lines.append(f"  {row['capability']}: {row['from']} -> {row['to']}{cited}")
    if answer.get("note"):
        lines.append(answer["note"])
    return lines


# -- what a command asks about ------------------------------------------------------------------


def list_scope(target: list[str], agent: str | None, category: str | None) -> tuple[str | None, str | None]:
    """(agent, category) for ``list``: ``list claude`` and ``list --agent claude`` mean the same.

    A positional word that names no agent but names a category (``list security``)
    is taken as the category, so neither reading needs a flag.
    """
    catalog = get_catalog()
    named = " ".join(target) or None
    if named and agent:
        usage_error(f"give the agent once: `{PROG} list {named}` or `{PROG} list --agent {agent}`", "list")
    if named and not catalog.agents_named(named) and category is None:
        try:
            return None, catalog.category(named)
        except UnknownCategoryError:
            pass
        options = [*catalog.agent_ids, *catalog.categories]
        near = closest(named, options)
        hint = f" Did you mean '{near}'?" if near else ""
        usage_error(
            f"'{named}' is neither an agent nor a category.{hint} Agents: {', '.join(catalog.agent_ids)}. "
            f"Categories: {', '.join(catalog.categories)}",
            "list",
        )
    agent = named or agent
    if agent is None and category is None:
        usage_error(
            f"list needs an agent, a category or both, e.g. `{PROG} list claude` or "
            f"`{PROG} list --category security`. Agents: {', '.join(catalog.agent_ids)}. "
            f"Categories: {', '.join(catalog.categories)}",
            "list",
        )
    return agent, category


def sources_scope(words: list[str], agent: str | None) -> tuple[str | None, str | None]:
    """(agent, capability) for ``sources``: leading words that name an agent are the agent.

    ``sources claude hooks`` asks about Claude Code's hooks, ``sources hooks``
    about hooks in every agent. The longest leading name wins, so ``copilot cli``
    is Copilot CLI; a name that fits two agents (``copilot``) is an error naming
    both rather than a silent guess. ``--agent`` keeps every word for the capability.
    """
    text = " ".join(words) or None
    if agent is not None:
        return agent, text
    catalog = get_catalog()
    if text is None:
        usage_error(
            f"sources needs an agent, a capability or both, e.g. `{PROG} sources claude hooks`. "
            f"Agents: {', '.join(catalog.agent_ids)}",
            "sources",
        )
    longest = max(len(n.split()) for a in catalog.agents.values() for n in (a.id, a.display_name, *a.aliases))
    for size in range(min(longest, len(words)), 0, -1):
        name = " ".join(words[:size])
        ids = catalog.agents_named(name)
        if len(ids) == 1:
            return ids[0], " ".join(words[size:]) or None
        if len(ids) > 1:
            raise UnknownAgentError(name, catalog.agent_ids, None, ambiguous=ids)
    return None, text


# -- running ------------------------------------------------------------------------------------


def _stdout_encoding() -> str:
    return codecs.lookup(getattr(sys.stdout, "encoding", None) or "utf-8").name


def _json(document, indent: int | None = None) -> str:
    """JSON for stdout: UTF-8 as is, or escaped (the same JSON) when stdout cannot hold every character."""
    return json.dumps(document, ensure_ascii=not _stdout_encoding().startswith("utf"), indent=indent)


def _write(lines: list[str]) -> None:
    """Print lines; a character stdout's encoding lacks (``LC_ALL=C``) prints as ``?``, never a traceback."""
    text = "\n".join(lines) + "\n"
    encoding = _stdout_encoding()
    sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent-capabilities`` console script.

    A reader that stops early (``agent-capabilities export | head``) closes the
    pipe; that ends the command quietly with exit code 0, as ripgrep does, because
    the reader got what it asked for. stdout is then pointed at /dev/null so the
    interpreter's last flush cannot print a traceback either.
    """
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return 0


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (tests, embedding)
        pass


def _main(argv: list[str] | None) -> int:
    parser = build_parser(package_version())
    args, extras = parser.parse_known_args(argv)
    if extras:
        parser.reject_extras(extras, args.command)
    try:
        return _run(args)
    except EngineError as exc:
        sys.stderr.write(error_text(str(exc)))
        return 2


def error_text(message: str, width: int = 100) -> str:
    """``agent-capabilities: error: ...`` on one line, or, for a message of several parts, wrapped lines.

    Each later part starts an indented line, so a long explanation (an agent the
    catalog does not cover, with dated facts) stays readable in a terminal.
    """
    first, *more = message.splitlines() or [""]
    if not more:
        return f"{PROG}: error: {first}\n"
    wrap = {"width": width, "break_long_words": False, "break_on_hyphens": False}
    lines = textwrap.wrap(f"{PROG}: error: {first}", subsequent_indent="    ", **wrap)
    for part in more:
        lines += textwrap.wrap(part, initial_indent="  ", subsequent_indent="    ", **wrap)
    return "\n".join(lines) + "\n"


def _run(args) -> int:
    as_json = getattr(args, "json", False)
    if args.command == "export":
        _write([_json(export_catalog(), indent=2)])
        return 0
    if args.command == "match":
        result = match(" ".join(args.query), k=args.k, agent=args.agent)
        _write([_json(result.to_dict())] if as_json else format_match(result, args.k))
        return 0
    if args.command == "gaps":
        from .gaps.log import GapLog
        from .gaps.report import format_report, gap_report

        report = gap_report(GapLog(), since_days=args.since, agent=args.agent, top=args.top)
        _write([_json(report, indent=1)] if as_json else [format_report(report)])
        return 0
    if args.command == "lookup":
        answer, fmt = answers.lookup(args.agent, " ".join(args.capability), surface="cli"), format_lookup
    elif args.command == "compare":
        answer, fmt = answers.compare(" ".join(args.capability), args.agents, surface="cli"), format_compare
    elif args.command == "migrate":
        answer = answers.migrate(args.from_agent, args.to_agent, args.category, surface="cli")
        fmt = format_migrate
    elif args.command == "list":
        agent, category = list_scope(args.target, args.agent, args.category)
        answer, fmt = answers.list_capabilities(agent, category), format_list
    else:
        agent, capability = sources_scope(args.words, args.agent)
        answer, fmt = answers.get_sources(agent, capability, surface="cli"), format_sources
    _write([_json(answer, indent=1)] if as_json else fmt(answer))
    return 0
