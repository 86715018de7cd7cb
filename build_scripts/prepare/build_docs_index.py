r"""Write ``engine/data/docs/<agent-id>.json``: the pages an agent's official docs site has at a snapshot.

The tests check every start URL, official source URL and ``docsUrl`` against
this list, so a moved page fails a test instead of reaching a user. The list
holds URLs only, never page text.

Each site has a small module in ``build_scripts/prepare/docs_sites/<agent-id>.py``
with ``SITE`` (base URL), ``REPO`` (owner/name) and
``pages(list_files, read) -> list[str]``, which turns the repository's file
paths (and, where the site has one, its table of contents) into full URLs.
A vendor site with no docs repository (``REPO = None``) names the docs it
covers in ``SNAPSHOT_SITE`` instead; its snapshot is that site and the date
its stored pages were read, matching the agent's ``docsSnapshot``.

The docs repositories are read from a local copy, never from the network:

    python build_scripts/prepare/build_docs_index.py --agent gemini-cli --git-dir /path/to/gemini-cli.git
    python build_scripts/prepare/build_docs_index.py --agent vscode-copilot --dir ./vscode-docs \\
        --commit <sha> --date 2026-11-26
    python build_scripts/prepare/build_docs_index.py --agent kiro-cli --dir ./saved-pages --date 2026-11-28

``--git-dir`` reads the tree at ``--rev`` (default HEAD) and records its commit
and date; ``--dir`` reads a plain folder (a partial checkout or the files a
maintainer saved) and needs ``--commit`` and ``--date`` (only ``--date`` for a
vendor site, which has no commit).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare.snapshots import Snapshot, SnapshotError  # noqa: E402

SITES = Path(__file__).resolve().parent / "docs_sites"
OUT = ROOT / "engine" / "data" / "docs"


def load_site(agent_id: str):
    """The site module for an agent, or SystemExit naming the modules that exist."""
    path = SITES / f"{agent_id}.py"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in SITES.glob("*.py") if not p.stem.startswith("_")))
        raise SystemExit(f"no site module {path}; known agents: {known}")
    spec = importlib.util.spec_from_file_location(f"docs_site_{agent_id.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(agent_id: str, list_files, read, commit: str | None, date: str) -> dict:
    """The index document for one agent."""
    site = load_site(agent_id)
    pages = sorted(set(site.pages(list_files, read)))
    if not pages:
        raise SystemExit(f"{agent_id}: the site module found no pages; check the source folder")
    outside = [p for p in pages if not p.startswith(site.SITE)]
    if outside:
        raise SystemExit(f"{agent_id}: pages outside {site.SITE}: {outside[:3]}")
    return {"site": site.SITE, "snapshot": snapshot(site, commit, date), "pages": pages}


def snapshot(site, commit: str | None, date: str) -> dict:
    """The docs revision: a repository commit, or for a vendor site without one, its site and reading date."""
    if site.REPO is None:
        return {"site": site.SNAPSHOT_SITE, "date": date}
    return {"repo": site.REPO, "commit": commit, "date": date}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True, help="agent id, e.g. gemini-cli")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--git-dir", type=Path, help="a git directory of the docs repository")
    source.add_argument("--dir", type=Path, help="a plain folder with the docs repository's files")
    parser.add_argument("--rev", default="HEAD", help="revision to read with --git-dir (default HEAD)")
    parser.add_argument("--commit", help="the snapshot's commit (needed with --dir)")
    parser.add_argument("--date", help="the snapshot's date, YYYY-MM-DD (needed with --dir)")
    parser.add_argument("--out", type=Path, help="output file (default engine/data/docs/<agent>.json)")
    args = parser.parse_args(argv)

    if args.dir:
        vendor_site = load_site(args.agent).REPO is None
        if not args.date or not (args.commit or vendor_site):
            parser.error("--dir needs --date, and --commit unless the site has no repository")
    try:
        # A build stops at a missing or undecodable file rather than write a partial page list.
        snap = Snapshot(git_dir=args.git_dir, rev=args.rev, folder=args.dir, missing="raise", errors="strict")
        commit, date = (snap.commit, snap.date) if args.git_dir else (args.commit, args.date)
        doc = build(args.agent, snap.files, snap.read, commit, date)
    except (SnapshotError, UnicodeDecodeError) as exc:
        parser.error(str(exc))
    out = args.out or OUT / f"{args.agent}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    where = doc["snapshot"].get("repo", doc["snapshot"].get("site"))
    at = f"@{commit[:7]}" if commit else ""
    print(f"{out}: {len(doc['pages'])} pages at {where}{at} ({date})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
