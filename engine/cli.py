"""Command line: the MCP server's answers for a person (``--json`` for scripts).

``agent-capabilities match|lookup|compare|list|sources|gaps|export``; ``python -m engine`` does the same.
A thin layer over ``engine.answers``: this module only parses arguments and
formats the answer dicts as short text. Errors are one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import package_version
from .catalog import answers
from .catalog.lookup import match
from .catalog.model import get_catalog
from .common.text import closest
from .errors import EngineError


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
    return f"{value:.2f}"


def _nearest(answer: dict) -> str:
    return ", ".join(f"{n['name']} ({_conf(n['matchConfidence'])})" for n in answer.get("nearest", []))


def _no_match_text(answer: dict) -> list[str]:
    return [
        f"No capability matches '{answer['match']['query']}'. Nearest: {_nearest(answer)}.",
        answer["note"],
    ]


def _close_call(answer: dict) -> list[str]:
    rows = answer.get("alternatives") or []
    return [f"  or: {r['name']} ({_conf(r['matchConfidence'])})" for r in rows]


def format_match(result, k: int) -> list[str]:
    if result.name is None:
        near = ", ".join(f"{c.name} ({_conf(c.confidence)})" for c in result.candidates[:k])
        return [f"no match (nearest: {near})" if near else "no match: name a capability, not only an agent"]
    flag = " [close call]" if result.ambiguous else ""
    lines = [f"{result.name}  ({result.method}, confidence {_conf(result.confidence)}){flag}"]
    lines += [f"  {i}. {c.name} ({_conf(c.confidence)})" for i, c in enumerate(result.candidates[1:k], 2)]
    return lines


def format_lookup(answer: dict) -> list[str]:
    if answer["capability"] is None:
        return _no_match_text(answer)
    agent = get_catalog().agents[answer["agent"]].display_name
    cap = answer["capability"]
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


# -- arguments ----------------------------------------------------------------------------------

COMMANDS = ("match", "lookup", "compare", "list", "sources", "gaps", "export")


class _Parser(argparse.ArgumentParser):
    """One-line errors, and a did-you-mean for a mistyped command."""

    def error(self, message: str):  # type: ignore[override]
        if "invalid choice" in message and "argument command" in message:
            given = message.split("'")[1] if "'" in message else ""
            near = closest(given, list(COMMANDS))
            hint = f" Did you mean '{near}'?" if near else ""
            message = f"unknown command '{given}'.{hint} Commands: {', '.join(COMMANDS)}"
        elif "required: command" in message:
            message = f"name a command: {', '.join(COMMANDS)}"
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agent-capabilities", description="What can coding agents do, and how to set it up."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--json", action="store_true", help="print the machine-readable answer")
        return sub

    p = command("match", "resolve words to a canonical capability")
    p.add_argument("query", nargs="+", help="words, quoted or not")
    p.add_argument("-k", type=int, default=3, help="number of candidates to show (default 3)")
    p = command("lookup", "one agent's record for a capability")
    p.add_argument("agent")
    p.add_argument("capability", nargs="+")
    p = command("compare", "one capability across agents")
    p.add_argument("capability", nargs="+")
    p.add_argument("--agent", action="append", dest="agents", help="limit to this agent (repeatable)")
    p = command("list", "capabilities of an agent and/or a category")
    p.add_argument("--agent")
    p.add_argument("--category")
    p = command("sources", "sources to cite for an agent and/or a capability")
    p.add_argument("--agent")
    p.add_argument("capability", nargs="*")
    p = command("gaps", "ranked needs the catalog or an agent lacks (from the local gap log)")
    p.add_argument("--since", type=float, metavar="DAYS", help="only the last DAYS days")
    p.add_argument("--agent")
    p.add_argument("--top", type=int, default=20, help="number of gaps to show (default 20)")
    commands.add_parser("export", help="print the whole catalog as JSON")
    return parser


def _write(lines: list[str]) -> None:
    sys.stdout.write("\n".join(lines) + "\n")


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
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except EngineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2


def _run(args) -> int:
    as_json = getattr(args, "json", False)
    if args.command == "export":
        sys.stdout.write(json.dumps(export_catalog(), ensure_ascii=False, indent=2) + "\n")
        return 0
    if args.command == "match":
        result = match(" ".join(args.query), k=args.k)
        _write(
            [json.dumps(result.to_dict(), ensure_ascii=False)] if as_json else format_match(result, args.k)
        )
        return 0
    if args.command == "gaps":
        from .gaps.log import GapLog
        from .gaps.report import format_report, gap_report

        report = gap_report(GapLog(), since_days=args.since, agent=args.agent, top=args.top)
        _write([json.dumps(report, ensure_ascii=False, indent=1)] if as_json else [format_report(report)])
        return 0
    if args.command == "lookup":
        answer, fmt = answers.lookup(args.agent, " ".join(args.capability), surface="cli"), format_lookup
    elif args.command == "compare":
        answer, fmt = answers.compare(" ".join(args.capability), args.agents, surface="cli"), format_compare
    elif args.command == "list":
        answer, fmt = answers.list_capabilities(args.agent, args.category), format_list
    else:
        capability = " ".join(args.capability) or None
        answer, fmt = answers.get_sources(args.agent, capability, surface="cli"), format_sources
    _write([json.dumps(answer, ensure_ascii=False, indent=1)] if as_json else fmt(answer))
    return 0
