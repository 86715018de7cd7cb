"""Command line: ``python -m engine match "QUERY"``, ``export``, ``lookup AGENT CAPABILITY``.

A thin layer over the library; errors are one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import answers
from .capabilities import match
from .catalog import get_catalog
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
                "capabilities": [agent.record(name) for name in agent.records],
            }
            for agent in catalog.agents.values()
        ]
    }


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent-capabilities`` console script."""
    parser = argparse.ArgumentParser(
        prog="agent-capabilities", description="Query the coding-agent capability catalog."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    p_match = commands.add_parser("match", help="resolve words to a canonical capability")
    p_match.add_argument("query")
    p_match.add_argument("-k", type=int, default=3, help="number of candidates (default 3)")
    p_match.add_argument("--json", action="store_true", help="print the full result as JSON")
    commands.add_parser("export", help="print the whole catalog as JSON")
    p_lookup = commands.add_parser("lookup", help="one agent's record for a capability, as JSON")
    p_lookup.add_argument("agent")
    p_lookup.add_argument("capability")
    args = parser.parse_args(argv)

    try:
        if args.command == "match":
            result = match(args.query, k=args.k)
            if args.json:
                _write(json.dumps(result.to_dict(), ensure_ascii=False))
            elif result.name is None:
                near = ", ".join(f"{c.name} ({c.confidence:.2f})" for c in result.candidates)
                _write(f"no match (nearest: {near})")
            else:
                flag = " [ambiguous]" if result.ambiguous else ""
                _write(f"{result.name}  ({result.method}, confidence {result.confidence:.2f}){flag}")
                if result.ambiguous:
                    for c in result.candidates[1:]:
                        _write(f"  or {c.name} ({c.confidence:.2f})")
        elif args.command == "export":
            _write(json.dumps(export_catalog(), ensure_ascii=False, indent=2))
        else:
            _write(json.dumps(answers.lookup(args.agent, args.capability), ensure_ascii=False, indent=2))
    except EngineError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0
