"""Data-freshness and truth report for the catalog: ``python build_scripts/prepare/check_catalog.py``.

Lists records whose sources were verified more than 90 days ago, URLs missing
from the docs page index (``engine/data/docs/``), URLs with tracking strings,
pre-release maturity on a generally available product, available records
without sources, and aliases that send an agent's own term for a capability
to a different one. Exits 1 when it finds anything, so it can gate a release.

``--agent ID`` checks one agent file on its own, including the schema and the
canonical capability list, which is handy while editing that file.

``--snapshots DIR`` (repeatable) adds two checks that need the cited texts:
each gotcha's key token (a flag, path, settings key or command) must appear in
one of its record's cited sources, and every pinned commit must be on its
repository's default branch. DIR holds local docs snapshots in the layout
``provenance.py`` reads (``<owner>+<name>/repo`` git directories, or files saved
one at a time under ``<owner>+<name>/<commit>/``) and page texts by hash
(``pages/<sha256>``, as ``refresh.py`` writes them). Without it the two checks
say they were not run; sources with no local text are counted as unchecked,
never passed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare.provenance import off_branch  # noqa: E402
from build_scripts.prepare.snapshots import Mirrors  # noqa: E402
from engine.catalog import checks, schema  # noqa: E402

DATA = ROOT / "engine" / "data"


def schema_problems(agent: dict) -> list[str]:
    """The agent file against schema.json and the canonical capability list."""
    problems = [
        f"{agent.get('id')} schema: {p}" for p in schema.validate(agent, DATA / "schema.json", limit=200)
    ]
    canon = {
        c["name"]: c["category"] for c in json.loads((DATA / "capabilities.json").read_text())["capabilities"]
    }
    names = [rec.get("name") for rec in agent.get("capabilities", [])]
    problems += [f"{agent.get('id')}: no record for '{n}'" for n in canon if n not in names]
    problems += [f"{agent.get('id')}: '{n}' is not a canonical capability" for n in names if n not in canon]
    for rec in agent.get("capabilities", []):
        if rec.get("name") in canon and rec.get("category") != canon[rec["name"]]:
            problems.append(f"{agent.get('id')} {rec['name']}: category should be '{canon[rec['name']]}'")
        if not rec.get("available") and not rec.get("alternative"):
            problems.append(
                f"{agent.get('id')} {rec.get('name')}: unavailable without an alternative "
                "(add one if any exists)"
            )
    return problems


def source_texts(roots: list[Path]) -> Callable[[dict], str | None]:
    """A source's text exactly as it was read, from local snapshots: its blob, or its page by sha256."""
    mirrors = Mirrors(roots, errors="replace")

    def text_of(source: dict) -> str | None:
        rev = source.get("revision") or {}
        if "blob" in rev:
            found = mirrors.read_blob(rev["repo"], rev["blob"])
            if found is None and mirrors.blob(rev["repo"], rev["commit"], rev["path"]) == rev["blob"]:
                found = mirrors.read(rev["repo"], rev["commit"], rev["path"])
            return found
        if "sha256" in rev:
            for root in roots:
                page = root / "pages" / rev["sha256"]
                if page.is_file():
                    return page.read_bytes().decode("utf-8", "replace")
        return None

    return text_of


def report(
    agent_ids: list[str] | None,
    today: dt.date,
    days: int,
    strict_schema: bool,
    snapshots: list[Path] | None = None,
) -> tuple[dict[str, list[str]], list[str]]:
    """(problems by section, notes on what was not checked)."""
    indexes = checks.load_docs_indexes(DATA)
    sections: dict[str, list[str]] = {
        "stale sources": [],
        "URLs not in the page index or with tracking strings": [],
        "inconsistent maturity": [],
        "records without sources": [],
        "agents without a docs index": [],
        "aliases that contradict a record's terminology": [],
    }
    if strict_schema:
        sections["schema and canonical list"] = []
    if snapshots:
        sections["gotchas whose key token is in no cited source"] = []
        sections["pins off their repository's default branch"] = []
        text_of, mirrors = source_texts(snapshots), Mirrors(snapshots)
    unchecked: dict[str, list[str]] = {"gotcha tokens": [], "branches": []}
    checked = []
    for path in sorted((DATA / "agents").glob("*.json")):
        agent = json.loads(path.read_text(encoding="utf-8"))
        if agent_ids and agent["id"] not in agent_ids:
            continue
        checked.append(agent)
        if strict_schema:
            sections["schema and canonical list"] += schema_problems(agent)
        sections["stale sources"] += checks.stale_sources(agent, today, days)
        sections["URLs not in the page index or with tracking strings"] += checks.url_problems(agent, indexes)
        sections["inconsistent maturity"] += checks.maturity_problems(agent)
        sections["records without sources"] += checks.source_problems(agent)
        if snapshots:
            found, left = checks.gotcha_tokens(agent, text_of)
            sections["gotchas whose key token is in no cited source"] += found
            unchecked["gotcha tokens"] += left
            found, left = off_branch(agent, mirrors)
            sections["pins off their repository's default branch"] += found
            unchecked["branches"] += left
        if agent["id"] not in indexes:
            sections["agents without a docs index"].append(
                f"{agent['id']}: no engine/data/docs/{agent['id']}.json"
            )
    aliases = json.loads((DATA / "aliases.json").read_text(encoding="utf-8"))["aliases"]
    sections["aliases that contradict a record's terminology"] = checks.alias_conflicts(aliases, checked)
    if snapshots and not agent_ids:
        found, left = off_branch(json.loads((DATA / "uncovered.json").read_text(encoding="utf-8")), mirrors)
        sections["pins off their repository's default branch"] += found
        unchecked["branches"] += left
    if not snapshots:
        notes = ["gotcha tokens and branches: not run (pass --snapshots DIR with the docs snapshots)"]
    else:
        notes = [
            f"{what}: {len(left)} not checked (no local text or commit)" for what, left in unchecked.items()
        ]
        notes += [f"  {line}" for left in unchecked.values() for line in left]
    return sections, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--agent", action="append", help="check only this agent (repeatable); adds schema checks"
    )
    parser.add_argument(
        "--days", type=int, default=checks.STALE_DAYS, help="staleness limit in days (default 90)"
    )
    parser.add_argument("--today", type=dt.date.fromisoformat, default=dt.date.today(), help="reference date")
    parser.add_argument(
        "--snapshots",
        type=Path,
        action="append",
        help="folder of local docs snapshots (repeatable): adds the gotcha-token and branch checks",
    )
    parser.add_argument("--verbose", action="store_true", help="list every unchecked gotcha and pin")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.snapshots or [] if not p.is_dir()]
    if missing:
        parser.error(f"--snapshots: no folder {', '.join(missing)}")
    sections, notes = report(
        args.agent, args.today, args.days, strict_schema=bool(args.agent), snapshots=args.snapshots
    )
    total = 0
    for title, problems in sections.items():
        print(f"## {title}: {len(problems)}")
        for problem in problems:
            print(f"- {problem}")
        total += len(problems)
    print()
    for note in notes:
        if args.verbose or not note.startswith("  "):
            print(note)
    print(f"\n{total} problem(s)")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
