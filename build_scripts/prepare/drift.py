r"""Which records to re-verify: every cited page that changed, moved or disappeared since it was read.

    python build_scripts/prepare/drift.py --agent gemini-cli --git-dir ~/mirrors/gemini-cli.git
    python build_scripts/prepare/drift.py --agent gemini-cli --dir ./newer-docs --old-dir ./older-docs
    python build_scripts/prepare/drift.py --agent codex --pages ./pages.json   # {url: text file}

Each source carries the revision it was verified at (``provenance.py``): a
repository file's blob, or a page text's sha256. Given a newer snapshot, a
source is

- unchanged when its file has the same blob (or its page the same hash);
- changed when the file is there with other content; the report shows the
  changed lines in the section the source's anchor points at (or the first
  changes when it has no anchor), and says when the anchor itself is gone;
- moved when its path is gone but the page's URL is now served by another
  file (the site module says which) or git sees a rename;
- gone when neither.

Only the records listed need a maintainer's eyes; everything else still
says what its source says.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare.build_docs_index import load_site  # noqa: E402
from build_scripts.prepare.provenance import served_by  # noqa: E402
from build_scripts.prepare.snapshots import Snapshot  # noqa: E402, F401 - re-exported

AGENTS = ROOT / "engine" / "data" / "agents"
MAX_LINES = 12  # changed lines shown per source: enough to judge, small enough to read


@dataclass
class Drift:
    agent: str
    capability: str
    url: str
    state: str  # changed | moved | gone
    path: str
    now: str | None = None  # the file that serves the page now (moved)
    lines: list[str] = field(default_factory=list)
    note: str = ""


def slug(heading: str) -> str:
    """The anchor a docs site gives a heading (GitHub-style: lower case, punctuation dropped, dashes)."""
    text = re.sub(r"<[^>]+>|`", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r" ", "-", text)


def section(lines: list[str], anchor: str) -> tuple[int, int] | None:
    """Line range [start, end) of the heading whose slug is the anchor, up to the next heading as high."""
    for i, line in enumerate(lines):
        found = re.match(r"^(#{1,6})\s+(.*?)\s*(?:\{#([\w-]+)\})?\s*$", line)
        if found and anchor in {slug(found.group(2)), found.group(3)}:
            level = len(found.group(1))
            for j in range(i + 1, len(lines)):
                deeper = re.match(r"^(#{1,6})\s", lines[j])
                if deeper and len(deeper.group(1)) <= level:
                    return i, j
            return i, len(lines)
    return None


def changed_lines(old: str, new: str, anchor: str) -> tuple[list[str], str]:
    """The diff lines that touch the anchor's section (or the first ones), and a note about the anchor."""
    a, b = old.splitlines(), new.splitlines()
    span = section(a, anchor) if anchor else None
    note = ""
    if anchor and span is None:
        note = f"anchor #{anchor} not found in the old text"
    elif anchor and section(b, anchor) is None:
        note = f"anchor #{anchor} is gone from the page"
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if span and not (i1 < span[1] and max(i2, i1 + 1) > span[0]):
            continue
        out += [f"- {line}" for line in a[i1:i2]] + [f"+ {line}" for line in b[j1:j2]]
        if len(out) >= MAX_LINES:
            break
    if span and not out:
        note = note or f"the section #{anchor} is unchanged; other parts of the page changed"
    return out[:MAX_LINES], note


def page_files(agent_id: str, snap: Snapshot) -> dict[str, str]:
    """URL -> file serving it in the snapshot, from the agent's site module (empty when it has none)."""
    try:
        site = load_site(agent_id)
    except SystemExit:
        return {}
    return served_by(site, snap.files, snap.read)


def drift_repo(
    agent: dict, new: Snapshot, old: Snapshot | None, repo: str, *, site: bool = True
) -> list[Drift]:
    """Drifts of the sources read from ``repo``, comparing each recorded blob with the new snapshot.

    ``site`` says ``repo`` is the agent's docs repository, whose site module can tell
    which file serves a page now; for another repository (the vendor's code) only
    git's renames can. A source whose revision names its ``branch`` (a legacy
    release line read on purpose) is compared with that branch's head instead.
    """
    served: dict[str, str] | None = None
    renames: dict[str, str] = {}
    branches: dict[str, Snapshot] = {}
    out: list[Drift] = []
    seen: dict[tuple[str, str, str], Drift | None] = {}
    for record in agent["capabilities"]:
        for source in record["sources"]:
            rev = source.get("revision") or {}
            if rev.get("repo") != repo or "blob" not in rev:
                continue
            url, _, anchor = source["url"].partition("#")
            branch = rev.get("branch", "") if new.git_dir else ""
            snap = _branch(new, branch, branches) if branch else new
            key = (rev["path"], source["url"], branch)
            if key not in seen and not snap.descends_from(rev["commit"]):
                seen[key] = None  # read on another branch (a legacy release line): not in this history
            if key not in seen:
                seen[key] = None
                now_blob = snap.blob(rev["path"])
                old_text = old.read(rev["path"]) if old else _old_text(snap, rev)
                if now_blob == rev["blob"]:
                    continue
                if now_blob:
                    lines, note = changed_lines(old_text, snap.read(rev["path"]), anchor)
                    seen[key] = Drift(
                        agent["id"], "", source["url"], "changed", rev["path"], None, lines, note
                    )
                else:
                    if branch:
                        now = snap.renames(rev["commit"]).get(rev["path"])
                    else:
                        if served is None:
                            served = page_files(agent["id"], new) if site else {}
                            if new.git_dir and old is None:
                                renames = new.renames(rev["commit"])
                        now = served.get(url.rstrip("/")) or renames.get(rev["path"])
                    if now:
                        lines, note = changed_lines(old_text, snap.read(now), anchor)
                        seen[key] = Drift(
                            agent["id"], "", source["url"], "moved", rev["path"], now, lines, note
                        )
                    else:
                        seen[key] = Drift(agent["id"], "", source["url"], "gone", rev["path"])
            found = seen[key]
            if found:
                out.append(Drift(**{**asdict(found), "capability": record["name"]}))
    return out


def _branch(new: Snapshot, branch: str, cache: dict[str, Snapshot]) -> Snapshot:
    """The head of a named branch in the same git directory (a local branch, or origin's)."""
    if branch not in cache:
        snap = Snapshot(git_dir=new.git_dir, rev=branch, missing=new.missing, errors=new.errors)
        if not snap.commit:
            snap = Snapshot(
                git_dir=new.git_dir, rev=f"origin/{branch}", missing=new.missing, errors=new.errors
            )
        cache[branch] = snap
    return cache[branch]


def _old_text(new: Snapshot, rev: dict) -> str:
    """The text that was verified, from the same git directory when it holds the old commit."""
    return new.read_blob(rev["blob"]) or ""


def drift_pages(agent: dict, pages: dict[str, Path]) -> list[Drift]:
    """Drifts of vendor pages recorded by sha256, against a folder of newer page texts."""
    out = []
    for record in agent["capabilities"]:
        for source in record["sources"]:
            rev = source.get("revision") or {}
            if "sha256" not in rev:
                continue
            url = source["url"].split("#")[0]
            text = pages.get(url)
            if text is None:
                continue  # no newer copy of this page was given: nothing to say
            if not text.is_file():
                out.append(Drift(agent["id"], record["name"], source["url"], "gone", str(text)))
            elif hashlib.sha256(text.read_bytes()).hexdigest() != rev["sha256"]:
                note = "the page's text changed since it was read (only its hash was kept: compare by hand)"
                out.append(Drift(agent["id"], record["name"], source["url"], "changed", str(text), note=note))
    return out


def render(drifts: list[Drift]) -> str:
    if not drifts:
        return "no cited page changed: nothing to re-verify\n"
    lines = []
    records = sorted({(d.agent, d.capability) for d in drifts})
    lines.append(f"{len(records)} record(s) to re-verify, {len(drifts)} source(s) drifted\n")
    for agent, capability in records:
        lines.append(f"\n{agent} / {capability}")
        for d in (d for d in drifts if (d.agent, d.capability) == (agent, capability)):
            where = f"{d.path} -> {d.now}" if d.now else d.path
            lines.append(f"  {d.state}: {d.url} ({where})")
            if d.note:
                lines.append(f"    {d.note}")
            lines += [f"    {line[:160]}" for line in d.lines]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True, help="agent id (its file in engine/data/agents)")
    parser.add_argument("--agents-dir", type=Path, default=AGENTS)
    newer = parser.add_mutually_exclusive_group(required=True)
    newer.add_argument("--git-dir", type=Path, help="git directory of the newer docs snapshot")
    newer.add_argument("--dir", type=Path, help="folder with the newer snapshot's files")
    newer.add_argument("--pages", type=Path, help="JSON {url: text file} of newer vendor pages")
    parser.add_argument("--rev", default="HEAD", help="revision to compare with --git-dir (default HEAD)")
    parser.add_argument("--old-dir", type=Path, help="folder with the verified files (for diffs with --dir)")
    parser.add_argument(
        "--repo", help="owner/name the snapshot is of (default: the agent's docsSnapshot repo)"
    )
    parser.add_argument("--json", action="store_true", help="print the drifts as JSON")
    args = parser.parse_args(argv)

    path = args.agents_dir / f"{args.agent}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in args.agents_dir.glob("*.json")))
        parser.error(f"no agent file {path}; known agents: {known}")
    agent = json.loads(path.read_text(encoding="utf-8"))
    if args.pages:
        doc = json.loads(args.pages.read_text(encoding="utf-8"))
        drifts = drift_pages(agent, {url: args.pages.parent / file for url, file in doc.items()})
    else:
        repo = args.repo or agent.get("docsSnapshot", {}).get("repo")
        if not repo:
            parser.error("the agent's docsSnapshot names no repository; pass --repo owner/name")
        # A report carries on past a missing or oddly encoded file: it says what it can.
        new = Snapshot(git_dir=args.git_dir, rev=args.rev, folder=args.dir, missing="empty", errors="replace")
        old = Snapshot(folder=args.old_dir, missing="empty", errors="replace") if args.old_dir else None
        drifts = drift_repo(agent, new, old, repo)
    sys.stdout.write(
        json.dumps([asdict(d) for d in drifts], indent=1) + "\n" if args.json else render(drifts)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
