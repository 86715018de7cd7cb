"""The command line's arguments: help texts, one error format, and a did-you-mean for any mistyped word.

Every usage mistake ends the same way, ``agent-capabilities: error: <what> (see <where> --help)`` on
stderr and exit code 2, whether argparse or the command line itself found it, so a script or a
person can rely on one shape. The catalog's agent ids and categories appear in ``--help`` but are
read only when help is printed: parsing a normal command never loads the catalog twice.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import NoReturn

from .common.text import closest, edit_distance

PROG = "agent-capabilities"
COMMANDS = ("match", "lookup", "compare", "list", "sources", "migrate", "gaps", "export")

ENVIRONMENT = """\
environment:
  AGENT_CAPABILITIES_DB       the gap log `gaps` reads (default: gaps.sqlite3 in your user data folder)
  AGENT_CAPABILITIES_VECTORS  a folder with another encoder and vector store (default: the installed one)
  AGENT_CAPABILITIES_CACHE    where file hashes are cached (default: your user cache folder)"""

_PLACEHOLDERS = ("{agents}", "{categories}")


def usage_error(message: str, command: str | None = None) -> NoReturn:
    """Print the one error line every usage mistake gets, then exit 2."""
    where = f"{PROG} {command}" if command else PROG
    sys.stderr.write(f"{PROG}: error: {message} (see {where} --help)\n")
    raise SystemExit(2)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number; give one of at least 1") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def positive_days(text: str) -> float:
    """An argparse type: a number of days above zero (fractions allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of days; give one such as 30") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of days above 0, got {text}")
    return value


def _catalog_lists() -> dict[str, str]:
    """Agent ids and categories for help texts; a broken catalog must not break ``--help``."""
    from .catalog.model import get_catalog
    from .errors import EngineError

    try:
        catalog = get_catalog()
    except EngineError:
        unreadable = "(the catalog could not be read; run a command to see why)"
        return {"{agents}": unreadable, "{categories}": unreadable}
    return {"{agents}": ", ".join(catalog.agent_ids), "{categories}": ", ".join(catalog.categories)}


def _fill(text: str, values: dict[str, str]) -> str:
    """Replace each placeholder line ``label: {agents}`` with the values, wrapped under the label."""
    lines = []
    for line in text.splitlines():
        key = next((k for k in _PLACEHOLDERS if k in line), None)
        if key is None:
            lines.append(line)
            continue
        head = line.replace(key, "").rstrip() + " "
        lines.append(
            textwrap.fill(
                values[key],
                width=100,
                initial_indent=head,
                subsequent_indent=" " * len(head),
                break_on_hyphens=False,
            )
        )
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


class Parser(argparse.ArgumentParser):
    """argparse with the command line's error format and did-you-mean suggestions."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, Parser] = {}
        self._given: list[str] = []

    @property
    def command(self) -> str | None:
        """The subcommand this parser reads (``lookup``), or None for the top-level parser."""
        return self.prog[len(PROG) :].strip() or None

    def option_names(self) -> list[str]:
        return sorted(self._option_string_actions)  # noqa: SLF001 - argparse offers no public list

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        text = super().format_help()
        if any(key in text for key in _PLACEHOLDERS):
            text = _fill(text, _catalog_lists())
        return text

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        if "invalid choice" in message and "argument COMMAND" in message:
            given = message.split("'")[1] if "'" in message else ""
            near = closest(given, list(COMMANDS))
            hint = f" Did you mean '{near}'?" if near else ""
            message = f"unknown command '{given}'.{hint} Commands: {', '.join(COMMANDS)}"
        elif "required: COMMAND" in message:
            unknown = [a for a in self._given if a.startswith("-") and a not in self.option_names()]
            message = (
                unknown_option(unknown[0], self.option_names())
                if unknown
                else f"name a command: {', '.join(COMMANDS)}"
            )
        usage_error(message, self.command)

    def reject_extras(self, extras: list[str], command: str | None) -> NoReturn:
        """End with one line naming the first argument nothing accepted, with a suggestion."""
        parser = self.subcommands.get(command or "", self)
        options = [a for a in extras if a.startswith("-") and len(a) > 1]
        if options:
            usage_error(unknown_option(options[0], parser.option_names()), parser.command)
        usage_error(f"unexpected argument '{extras[0]}'", parser.command)


def unknown_option(given: str, options: list[str]) -> str:
    """'unknown option --versoin. Did you mean --version?' with the options that exist."""
    name = given.split("=", 1)[0]
    near = _nearest_spelling(name.lstrip("-"), [o.lstrip("-") for o in options if o.startswith("--")])
    hint = f" Did you mean '--{near}'?" if near else ""
    return f"unknown option '{name}'.{hint} Options: {', '.join(o for o in options if o.startswith('--'))}"


def _nearest_spelling(word: str, options: list[str]) -> str | None:
    """The option fewest typing slips away (``tranport`` -> ``transport``, not ``port``)."""
    ranked = sorted((edit_distance(word, option, limit=3), option) for option in options)
    if ranked and ranked[0][0] <= 3:
        return ranked[0][1]
    return closest(word, options)


def _command(commands, name: str, summary: str, description: str, epilog: str = "") -> Parser:
    sub = commands.add_parser(name, help=summary, description=description, epilog=epilog)
    if name != "export":
        sub.add_argument("--json", action="store_true", help="print the machine-readable answer (JSON)")
    return sub


AGENTS_LINE = (
    "agents: {agents}\n  (names and aliases such as 'Claude Code', 'gemini' or 'copilot cli' work too)"
)


def build_parser(version: str) -> Parser:
    """The ``agent-capabilities`` parser: eight subcommands, each with its own help."""
    parser = Parser(
        prog=PROG,
        description="What can coding agents do, how do you set it up, and where is it documented?",
        epilog=(
            "examples:\n"
            f"  {PROG} lookup claude mcp\n"
            f"  {PROG} compare voice input --agent gemini --agent claude\n"
            f"  {PROG} list claude\n"
            f"  {PROG} sources gemini checkpoints\n"
            f"  {PROG} migrate claude codex\n"
            f"  {PROG} gaps --since 30\n\n"
            f"{AGENTS_LINE}\n\n{ENVIRONMENT}\n\n"
            "The MCP server: agent-capabilities mcp [options], the same as agent-capabilities-mcp "
            "(see agent-capabilities-mcp --help)"
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")

    p = _command(
        commands,
        "match",
        "resolve words to a canonical capability",
        "Resolve any wording to the catalog's capability name, with how it matched and how sure it is.",
        f"examples:\n  {PROG} match let it think longer before answering\n  {PROG} match -k 5 mcp\n"
        f"  {PROG} match --agent cline focus chain",
    )
    p.add_argument("query", nargs="+", help="the capability in any words, quoted or not")
    p.add_argument("-k", type=positive_int, default=3, help="candidates to show (default 3)")
    p.add_argument(
        "--agent", metavar="AGENT", help="match for this agent: its own words for its features count"
    )

    p = _command(
        commands,
        "lookup",
        "one agent's record for a capability",
        "One agent's record for a capability: available or not, tier, maturity, setup, "
        "the page to read next.",
        f'examples:\n  {PROG} lookup claude mcp\n  {PROG} lookup "Gemini CLI" undo the agent\'s edits\n\n'
        f"{AGENTS_LINE}",
    )
    p.add_argument("agent", help="agent id or name (see the list below)")
    p.add_argument("capability", nargs="+", help="the capability in any words, quoted or not")

    p = _command(
        commands,
        "compare",
        "one capability across agents",
        "How one capability differs across agents: availability, tier and setup for each.",
        f"examples:\n  {PROG} compare voice input\n"
        f"  {PROG} compare autocomplete --agent gemini --agent claude\n\n"
        f"{AGENTS_LINE}",
    )
    p.add_argument("capability", nargs="+", help="the capability in any words, quoted or not")
    p.add_argument(
        "--agent",
        action="append",
        dest="agents",
        metavar="AGENT",
        help="compare only this agent (repeatable)",
    )

    p = _command(
        commands,
        "list",
        "capabilities of an agent and/or a category",
        "The capability names of an agent, of a category, or of an agent within a category.",
        f"examples:\n  {PROG} list claude\n  {PROG} list --category security\n"
        f"  {PROG} list gemini --category customization\n\n{AGENTS_LINE}\ncategories: {{categories}}",
    )
    p.add_argument("target", nargs="*", metavar="AGENT", help="an agent id or name (or a category)")
    p.add_argument("--agent", metavar="AGENT", help="the same as the positional agent")
    p.add_argument("--category", metavar="CATEGORY", help="only this category (see the list below)")

    p = _command(
        commands,
        "sources",
        "sources to cite for an agent and/or a capability",
        "The documentation pages to cite, with the date each was checked, for an agent, a capability, "
        "or both.",
        f"examples:\n  {PROG} sources claude hooks\n  {PROG} sources gemini\n  {PROG} sources checkpoints\n\n"
        f"{AGENTS_LINE}",
    )
    p.add_argument(
        "words", nargs="*", metavar="WORDS", help="an agent, a capability, or an agent then a capability"
    )
    p.add_argument("--agent", metavar="AGENT", help="the agent, when the words should all be the capability")

    p = _command(
        commands,
        "migrate",
        "moving from one agent to another: each capability as the new agent has it",
        "For each capability the old agent has: the new agent's term, or its alternative where it lacks\n"
        "it, and the config files to carry over. --category adds setup, start pages and each file's source.\n"
        "An old agent the catalog does not cover gets what became of it and what the new one offers.",
        f"examples:\n  {PROG} migrate claude codex\n  {PROG} migrate cursor cline --category customization\n"
        f'  {PROG} migrate "Roo Code" cline\n\n{AGENTS_LINE}\ncategories: {{categories}}',
    )
    p.add_argument("from_agent", metavar="FROM", help="the agent you move from (quote a name with spaces)")
    p.add_argument("to_agent", metavar="TO", help="the agent you move to")
    p.add_argument("--category", metavar="CATEGORY", help="only this category, with setup details")

    p = _command(
        commands,
        "gaps",
        "ranked needs the catalog or an agent lacks (from the local gap log)",
        "Ranked gaps from the local gap log: what users asked for that the catalog or an agent lacks.",
        f"examples:\n  {PROG} gaps\n  {PROG} gaps --since 30 --agent gemini --top 5\n\n"
        f"{AGENTS_LINE}\n\nenvironment:\n"
        "  AGENT_CAPABILITIES_DB  the gap log to read (default: gaps.sqlite3 in your user data folder)",
    )
    p.add_argument("--since", type=positive_days, metavar="DAYS", help="only the last DAYS days")
    p.add_argument("--agent", metavar="AGENT", help="only needs asked about this agent")
    p.add_argument("--top", type=positive_int, default=20, metavar="N", help="gaps to show (default 20)")

    _command(
        commands,
        "export",
        "print the whole catalog as JSON",
        "Print the whole catalog, every agent and every record, as one JSON document.",
        f"example:\n  {PROG} export > catalog.json",
    )
    parser.subcommands = dict(commands.choices)
    return parser
