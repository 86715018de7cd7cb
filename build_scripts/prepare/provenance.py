r"""Record the revision behind every source: the blob of a repository file, or the sha256 of a page's text.

    python build_scripts/prepare/provenance.py                    # fill what is missing, every agent
    python build_scripts/prepare/provenance.py --agent codex --mirrors /work/.mirror
    python build_scripts/prepare/provenance.py --check            # no revision, or off-branch; exit 1

A source's ``revision`` says exactly what was read, so the drift report
(``build_scripts/prepare/drift.py``) can tell later whether that page changed:

- ``{"repo", "commit", "path", "blob"}`` for a file of a git repository: the
  docs' own repository, a verbatim mirror, or the vendor's code repository;
- ``{"sha256"}`` for a page read from the vendor's site through a stored copy:
  the hash of the text that was read.

Nothing here is typed by hand. For a source with no revision yet the script
works it out from the agent's ``docsSnapshot`` and its site module
(``docs_sites/<agent>.py``: which file serves which URL), or from a
``github.com/<owner>/<repo>/blob/<ref>/<path>`` URL; for a partial revision
written while verifying (``{"repo", "commit", "path"}`` or ``{"textFile"}``)
it computes the blob or the hash. Repositories are read from local git
directories (``--mirrors``, one ``<owner>+<name>/repo`` folder per repository,
the layout the project's fetch tool writes), never from the network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare.build_docs_index import load_site  # noqa: E402
from build_scripts.prepare.snapshots import Mirrors, git_blob_sha  # noqa: E402, F401 - re-exported

AGENTS = ROOT / "engine" / "data" / "agents"
UNCOVERED = ROOT / "engine" / "data" / "uncovered.json"
HEX40 = re.compile(r"^[0-9a-f]{40}$")
BLOB_URL = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/blob/([^/]+)/([^#?]+)")


def served_by(site, list_files, read) -> dict[str, str]:
    """URL (no anchor, no trailing slash) -> the file that serves it, from a site module.

    Site modules map a file list to URLs; asking them one file at a time, minus
    what they list with no files at all (pages from a table of contents), tells
    which file serves which URL without a second, hand-kept mapping. Pages that
    only a table of contents lists get the file the usual conventions give
    (``<path>.md``, ``.mdx``, ``<path>/index.md``).
    """
    files = list_files()
    present = set(files)
    baseline = set(site.pages(lambda: [], read))
    out: dict[str, str] = {}
    for path in files:
        if path.endswith((".md", ".mdx")):
            for url in set(site.pages(lambda p=path: [p], read)) - baseline:
                out.setdefault(url.rstrip("/"), path)
    parts = site.SITE.split("/", 3)
    prefix = parts[3] + "/" if len(parts) > 3 and parts[3] else ""
    for url in baseline:
        rest = url[len(site.SITE) :].strip("/")
        stems = (
            [f"{prefix}{rest}", rest, f"docs/{rest}"] if rest else [f"{prefix}index", "index", "docs/index"]
        )
        for stem in stems:
            hit = next(
                (
                    f
                    for f in (f"{stem}.md", f"{stem}.mdx", f"{stem}/index.md", f"{stem}/index.mdx")
                    if f.lstrip("/") in present
                ),
                None,
            )
            if hit:
                out.setdefault(url.rstrip("/"), hit.lstrip("/"))
                break
    return out


def page_files(agent_id: str, mirrors: Mirrors, snapshot: dict) -> dict[str, str]:
    """URL -> file at the agent's docs snapshot (empty when the repository or site module is missing)."""
    repo, commit = snapshot.get("repo"), snapshot.get("commit")
    if not repo or mirrors.git_dir(repo) is None or mirrors.commit(repo, commit) is None:
        return {}
    try:
        site = load_site(agent_id)
    except SystemExit:
        return {}
    return served_by(site, lambda: mirrors.files(repo, commit), lambda path: mirrors.read(repo, commit, path))


def resolve(source: dict, agent: dict, mirrors: Mirrors, pages: dict[str, str]) -> dict | None:
    """The full revision for one source, or None when nothing on this machine can tell."""
    rev = dict(source.get("revision") or {})
    if "blob" in rev or "sha256" in rev:
        return rev
    if "textFile" in rev:
        path = Path(rev["textFile"])
        if not path.is_file():
            return None
        out = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
        if rev.get("stored"):
            out["stored"] = rev["stored"]
        return out
    if {"repo", "commit", "path"} <= rev.keys():
        commit = mirrors.commit(rev["repo"], rev["commit"]) or (
            rev["commit"] if HEX40.match(rev["commit"]) else None
        )
        blob = mirrors.blob(rev["repo"], rev["commit"], rev["path"]) if commit else None
        if blob:
            return {"repo": rev["repo"], "commit": commit, "path": rev["path"], "blob": blob}
        return None
    url = source["url"].split("#")[0].rstrip("/")
    snapshot = agent.get("docsSnapshot", {})
    if url in pages and "repo" in snapshot:
        path = pages[url]
        blob = mirrors.blob(snapshot["repo"], snapshot["commit"], path)
        if blob:
            return {"repo": snapshot["repo"], "commit": snapshot["commit"], "path": path, "blob": blob}
    found = BLOB_URL.match(source["url"])
    if found:
        owner, name, ref, path = found.groups()
        repo = f"{owner}/{name}"
        commit = mirrors.commit(repo, ref) or mirrors.commit(repo, "HEAD")
        blob = mirrors.blob(repo, commit, path) if commit else None
        if blob:
            return {"repo": repo, "commit": commit, "path": path, "blob": blob}
    parts = urlsplit(source["url"])
    segments = [s for s in parts.path.split("/") if s]
    if parts.netloc == "github.com" and len(segments) == 2:  # a repository's front page is its README
        repo = "/".join(segments)
        commit = mirrors.commit(repo, "HEAD")
        for readme in ("README.md", "readme.md", "README"):
            blob = mirrors.blob(repo, commit, readme) if commit else None
            if blob:
                return {"repo": repo, "commit": commit, "path": readme, "blob": blob}
    return None


def cited(doc: dict) -> list[tuple[str, dict]]:
    """(where, source) for everything a file cites: record sources, status facts, lifecycle facts."""
    out = []
    for record in doc.get("capabilities", []):
        out += [(f"{doc['id']} / {record['name']}", s) for s in record["sources"]]
    out += [(f"{doc['id']} / statusFacts", f) for f in doc.get("statusFacts", [])]
    for agent in doc.get("agents", []):  # uncovered.json
        out += [(f"{agent['id']} / facts", f) for f in agent["facts"]]
        for dispute in agent.get("disputes", []):
            out += [(f"{agent['id']} / disputes", s) for s in dispute["sources"]]
    return out


def off_branch(doc: dict, mirrors: Mirrors) -> tuple[list[str], list[str]]:
    """Sources pinned to a commit that is not on its repository's default branch: (problems, unchecked).

    A pin off the default branch (a release line, a pull request's merge ref)
    says what one build said, not what the docs say; drift cannot follow it and
    a reader cannot find it from the page. The default branch is the one HEAD
    names in the local copy (a fetch or a clone sets it to the remote's). A
    revision that names its ``branch`` on purpose (a legacy release line) is
    checked against that branch instead. Sources whose repository or commit is
    not here are unchecked, not passed.
    """
    problems: list[str] = []
    unchecked: list[str] = []
    for where, source in cited(doc):
        rev = source.get("revision") or {}
        if "commit" not in rev or "repo" not in rev:
            continue
        head = mirrors.at(rev["repo"])
        pin = f"{rev['repo']}@{rev['commit'][:12]}"
        if head is None or not head.has(rev["commit"]):
            unchecked.append(f"{where}: {pin} is not in a local copy")
        elif rev.get("branch"):
            if not head.on_branch(rev["commit"], rev["branch"]):
                problems.append(f"{where}: {source['url']} names branch {rev['branch']}, which lacks {pin}")
        elif not head.descends_from(rev["commit"]):
            problems.append(
                f"{where}: {source['url']} is pinned to {pin}, which is not on its default branch "
                f"({head.branch or 'HEAD'} at {head.commit[:12]}); re-pin it there, or name its branch"
            )
    return problems, unchecked


def fill(path: Path, mirrors: Mirrors) -> tuple[int, list[str]]:
    """Fill every cited source's revision in one data file; (filled, [sources still without one])."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    pages = page_files(doc["id"], mirrors, doc.get("docsSnapshot", {})) if "id" in doc else {}
    filled, missing = 0, []
    for where, source in cited(doc):
        rev = resolve(source, doc, mirrors, pages)
        if rev is None:
            missing.append(f"{where}: {source['url']}")
            continue
        if rev != source.get("revision"):
            source["revision"] = rev
            filled += 1
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return filled, missing


def complete(revision: dict | None) -> bool:
    return bool(revision) and ("blob" in revision or "sha256" in revision)


def without_revision(path: Path) -> list[str]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [f"{where}: {s['url']}" for where, s in cited(doc) if not complete(s.get("revision"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", action="append", help="agent id (default: every agent file)")
    parser.add_argument("--agents-dir", type=Path, default=AGENTS)
    parser.add_argument("--mirrors", type=Path, action="append", help="folder of local git mirrors")
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing: list sources without a revision and pins off their repository's default branch",
    )
    args = parser.parse_args(argv)
    paths = sorted(args.agents_dir.glob("*.json"))
    if args.agent:
        paths = [p for p in paths if p.stem in args.agent]
    elif args.agents_dir == AGENTS:
        paths.append(UNCOVERED)
    missing: list[str] = []
    mirrors = Mirrors(args.mirrors or [Path("/work/.mirror")])
    for path in paths:
        if args.check:
            missing += without_revision(path)
            off, unchecked = off_branch(json.loads(path.read_text(encoding="utf-8")), mirrors)
            missing += off
            if unchecked:
                print(
                    f"{path.stem}: {len(unchecked)} pins not checked for their branch (no local copy)",
                    file=sys.stderr,
                )
            continue
        filled, left = fill(path, mirrors)
        print(f"{path.stem}: {filled} revisions written, {len(left)} sources without one", file=sys.stderr)
        missing += left
    for line in missing:
        print(line)
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
