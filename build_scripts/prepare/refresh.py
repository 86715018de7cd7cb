r"""Bring every agent's newest docs and list every record to re-verify, in one command (needs a network).

    python build_scripts/prepare/refresh.py --work ~/.cache/agent-capabilities/snapshots --out refresh-report
    python build_scripts/prepare/refresh.py --work /path/to/snapshots --offline --out report   # no fetching

For each agent file, by the kind of evidence its sources record:

- a source read from a repository (``revision.repo``: the docs repository, a
  docs mirror or the vendor's code) gets a git fetch of that repository, once
  per repository, into ``<work>/<owner>+<name>/repo`` (a bare clone whose HEAD
  follows the remote's default branch);
- a source read from a vendor page (``revision.sha256``) gets an HTTP GET of its
  URL; the page's text is kept as ``<work>/pages/<sha256>`` and its hash recorded.

Then it runs the drift report (``drift.py``) over every agent against those
snapshots and writes one report, ``refresh.md`` and ``refresh.json``, listing
every record to re-verify, every fetch that failed and the sha256 of every page
fetched. It exits 1 when any record needs re-verifying or any fetch failed (an
unknown state is not a pass), 0 otherwise. ``<work>`` has the layout
``check_catalog.py --snapshots`` reads.

Every fetch is bounded: ``--timeout`` seconds per page and ``--git-timeout`` per
clone or fetch (which also gives up on a transfer stalled for a minute),
``--max-bytes`` per page and per repository file (larger files are not
downloaded), ``--max-redirects`` and ``--concurrency``. Only
https (and, for tests and local mirrors, plain paths and loopback http) is
fetched. Vendor pages are hashed as served, so the first refresh after sources
were read from stored copies reports those pages as changed; compare by hand.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare.drift import Drift, drift_repo, render  # noqa: E402
from build_scripts.prepare.snapshots import Snapshot  # noqa: E402

AGENTS = ROOT / "engine" / "data" / "agents"
GITHUB = "https://github.com/{repo}.git"
USER_AGENT = "agent-capabilities-refresh"


@dataclass(frozen=True)
class Limits:
    timeout: float = 60.0  # seconds per page
    git_timeout: float = 900.0  # seconds per repository clone or fetch (github/docs is ~2 GB)
    max_bytes: int = 5_000_000  # per page, and per file of a repository
    max_redirects: int = 5
    concurrency: int = 4


@dataclass
class Fetched:
    """What one fetch brought: a repository's head, or a page's hash and where it was served from."""

    target: str  # owner/name or URL
    ok: bool
    head: str = ""  # repository: the default branch's commit
    date: str = ""
    sha256: str = ""  # page: hash of its text
    final_url: str = ""  # page: the URL after redirects
    gone: bool = False  # page: 404 or 410
    error: str = ""


@dataclass
class Report:
    drifts: list[Drift] = field(default_factory=list)
    repos: dict[str, Fetched] = field(default_factory=dict)
    pages: dict[str, Fetched] = field(default_factory=dict)
    unfetched_pages: int = 0  # offline: cited vendor pages nobody fetched
    offline: bool = False

    @property
    def records(self) -> list[tuple[str, str]]:
        return sorted({(d.agent, d.capability) for d in self.drifts})

    @property
    def errors(self) -> list[Fetched]:
        return [f for f in [*self.repos.values(), *self.pages.values()] if f.error]


# -- what each agent cites ---------------------------------------------------------------------------


def cited_repos(agent: dict) -> list[str]:
    """Repositories the agent's sources were read from, its docs repository first."""
    repos = [r["revision"]["repo"] for r in _sources(agent) if "blob" in (r.get("revision") or {})]
    docs = (agent.get("docsSnapshot") or {}).get("repo")
    return list(dict.fromkeys([docs, *repos] if docs in repos else repos))


def cited_pages(agent: dict) -> list[str]:
    """URLs (no anchor) of the vendor pages the agent's sources were read from by hash."""
    urls = [s["url"].split("#")[0] for s in _sources(agent) if "sha256" in (s.get("revision") or {})]
    return list(dict.fromkeys(urls))


def _sources(agent: dict) -> list[dict]:
    return [s for record in agent["capabilities"] for s in record["sources"]]


# -- bounded fetches -----------------------------------------------------------------------------------


def _git_env() -> dict[str, str]:
    # No prompt for credentials, no protocol but https and local paths, no user or system config.
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": "https:file",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }


def fetch_repo(repo: str, work: Path, remote_template: str, limits: Limits) -> Fetched:
    """Clone ``repo`` bare into the work folder, or fetch it; HEAD follows the remote's default branch."""
    git_dir = work / repo.replace("/", "+") / "repo"
    owner, _, name = repo.partition("/")
    url = remote_template.format(repo=repo, owner=owner, name=name)
    bounded = [
        "-c",
        f"http.followRedirects={'initial' if limits.max_redirects else 'false'}",
        "-c",
        "http.lowSpeedLimit=1000",
        "-c",
        "http.lowSpeedTime=60",  # a transfer stalled below 1 kB/s for a minute is given up
    ]

    def git(*args: str, where: Path | None = git_dir) -> str:
        where_args = [f"--git-dir={where}"] if where else []
        done = subprocess.run(
            ["git", *bounded, *where_args, *args],
            capture_output=True,
            text=True,
            timeout=limits.git_timeout,
            env=_git_env(),
        )
        if done.returncode:
            raise RuntimeError((done.stderr.strip().splitlines() or ["git failed"])[-1])
        return done.stdout

    try:
        if not (git_dir / "HEAD").is_file():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            git(
                "clone",
                "--bare",
                "--quiet",
                f"--filter=blob:limit={limits.max_bytes}",
                url,
                str(git_dir),
                where=None,
            )
            git("config", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
        git("fetch", "--quiet", "--prune", "origin")
        for line in git("ls-remote", "--symref", "origin", "HEAD").splitlines():
            if line.startswith("ref: ") and line.endswith("\tHEAD"):
                git("symbolic-ref", "HEAD", line[5:].split("\t")[0])
        snap = Snapshot(git_dir=git_dir, missing="empty", errors="replace")
        return Fetched(
            repo, bool(snap.commit), head=snap.commit, date=snap.date, error="" if snap.commit else "empty"
        )
    except subprocess.TimeoutExpired:
        return Fetched(repo, False, error=f"git did not finish within {limits.git_timeout:g} s")
    except RuntimeError as exc:
        return Fetched(repo, False, error=str(exc))


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows at most ``limit`` redirects for one fetch (urllib's own limit always follows the first)."""

    def __init__(self, limit: int):
        self.limit, self.followed = limit, 0

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.followed += 1
        if self.followed > self.limit:
            raise urllib.error.HTTPError(req.full_url, code, "too many redirects", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch_page(url: str, pages: Path, limits: Limits) -> Fetched:
    """GET one page within the limits; keep its text as ``pages/<sha256>``."""
    if urlsplit(url).scheme not in ("https", "http"):
        return Fetched(url, False, error="not an http(s) URL")
    if urlsplit(url).scheme == "http" and urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        return Fetched(url, False, error="plain http is fetched only from loopback")
    opener = urllib.request.build_opener(_Redirects(limits.max_redirects))
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    deadline = time.monotonic() + limits.timeout
    try:
        with opener.open(request, timeout=limits.timeout) as response:
            body = b""
            while chunk := response.read(65536):
                body += chunk
                if len(body) > limits.max_bytes:
                    return Fetched(url, False, error=f"larger than {limits.max_bytes} bytes")
                if time.monotonic() > deadline:
                    return Fetched(url, False, error=f"not received within {limits.timeout:g} s")
            charset = response.headers.get_content_charset() or "utf-8"
            final = response.geturl()
    except urllib.error.HTTPError as exc:
        if exc.code in (404, 410):
            return Fetched(url, True, gone=True, error="")
        reason = "too many redirects" if exc.code in (301, 302, 303, 307, 308) else f"HTTP {exc.code}"
        return Fetched(url, False, error=reason)
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Fetched(url, False, error=f"unreachable ({reason})")
    text = body.decode(charset, "replace")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    pages.mkdir(parents=True, exist_ok=True)
    (pages / digest).write_text(text, encoding="utf-8")
    return Fetched(url, True, sha256=digest, final_url=final if final != url else "")


# -- drift over everything -----------------------------------------------------------------------------


def page_drifts(agent: dict, pages: dict[str, Fetched]) -> list[Drift]:
    """Vendor pages whose text changed, that now redirect elsewhere, or that are gone."""
    out = []
    for record in agent["capabilities"]:
        for source in record["sources"]:
            rev = source.get("revision") or {}
            got = pages.get(source["url"].split("#")[0])
            if "sha256" not in rev or got is None or not got.ok:
                continue
            base = Drift(agent["id"], record["name"], source["url"], "changed", "")
            if got.gone:
                out.append(Drift(**{**asdict(base), "state": "gone"}))
            elif got.final_url:
                note = "the page redirects elsewhere now; re-read it there"
                out.append(Drift(**{**asdict(base), "state": "moved", "now": got.final_url, "note": note}))
            elif got.sha256 != rev["sha256"]:
                note = f"text hash {got.sha256[:12]} is not the {rev['sha256'][:12]} read: compare by hand"
                out.append(Drift(**{**asdict(base), "path": f"pages/{got.sha256}", "note": note}))
    return out


def refresh(
    agents: list[dict],
    work: Path,
    *,
    remote_template: str = GITHUB,
    limits: Limits = Limits(),
    offline: bool = False,
) -> Report:
    """Fetch (unless offline) every cited repository and page, then the drift of every agent."""
    report = Report(offline=offline)
    repos = list(dict.fromkeys(r for a in agents for r in cited_repos(a)))
    urls = list(dict.fromkeys(u for a in agents for u in cited_pages(a)))
    if offline:
        report.unfetched_pages = len(urls)
        for repo in repos:
            snap = _snapshot(work, repo)
            ok = snap is not None
            error = "" if ok else "no local snapshot"
            report.repos[repo] = Fetched(
                repo, ok, snap.commit if ok else "", snap.date if ok else "", error=error
            )
    else:
        with ThreadPoolExecutor(max_workers=max(1, limits.concurrency)) as pool:
            got = pool.map(lambda r: fetch_repo(r, work, remote_template, limits), repos)
            report.repos = {f.target: f for f in got}
            got = pool.map(lambda u: fetch_page(u, work / "pages", limits), urls)
            report.pages = {f.target: f for f in got}
    for agent in agents:
        docs_repo = (agent.get("docsSnapshot") or {}).get("repo")
        for repo in cited_repos(agent):
            snap = _snapshot(work, repo) if report.repos[repo].ok else None
            if snap is not None:
                report.drifts += drift_repo(agent, snap, None, repo, site=repo == docs_repo)
        report.drifts += page_drifts(agent, report.pages)
    return report


def _snapshot(work: Path, repo: str) -> Snapshot | None:
    git_dir = work / repo.replace("/", "+") / "repo"
    if not (git_dir / "HEAD").is_file():
        return None
    snap = Snapshot(git_dir=git_dir, missing="empty", errors="replace")
    return snap if snap.commit else None


# -- the report ------------------------------------------------------------------------------------------


def to_json(report: Report, when: str) -> dict:
    return {
        "generated": when,
        "recordsToReverify": [{"agent": a, "capability": c} for a, c in report.records],
        "drifts": [asdict(d) for d in report.drifts],
        "repositories": {k: asdict(v) for k, v in report.repos.items()},
        "pages": {k: asdict(v) for k, v in report.pages.items()},
        "fetchErrors": [{"target": f.target, "error": f.error} for f in report.errors],
        "pagesNotFetched": report.unfetched_pages,
    }


def to_markdown(report: Report, when: str) -> str:
    lines = [f"# Docs refresh, {when}", ""]
    failed = "snapshot(s) missing" if report.offline else "fetch(es) failed"
    lines.append(f"{len(report.records)} record(s) to re-verify; {len(report.errors)} {failed}.")
    lines += ["", "## Snapshots", ""]
    lines += [f"- {f.target}: {f.head[:12]} ({f.date})" for f in report.repos.values() if f.ok]
    fetched = [f for f in report.pages.values() if f.ok]
    if fetched:
        lines.append(f"- {len(fetched)} vendor page(s) fetched ({sum(f.gone for f in fetched)} gone)")
    if report.unfetched_pages:
        lines.append(f"- {report.unfetched_pages} vendor page(s) not fetched (offline): not checked")
    lines += ["", "## Records to re-verify", "", "```", render(report.drifts).rstrip(), "```"]
    if report.errors:
        lines += ["", "## Snapshots missing" if report.offline else "## Fetches that failed", ""]
        lines += [f"- {f.target}: {f.error}" for f in report.errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--work", type=Path, required=True, help="folder for the snapshots (kept between runs)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for refresh.md and refresh.json")
    parser.add_argument("--agents-dir", type=Path, default=AGENTS)
    parser.add_argument("--agent", action="append", help="only this agent (repeatable; default every agent)")
    parser.add_argument(
        "--offline", action="store_true", help="fetch nothing: report on the snapshots in --work"
    )
    parser.add_argument(
        "--remote-template",
        default=GITHUB,
        help="git URL of a repository, with {repo} or {owner} and {name} (default %(default)s)",
    )
    parser.add_argument("--timeout", type=float, default=Limits.timeout, help="seconds per page (default 60)")
    parser.add_argument(
        "--git-timeout", type=float, default=Limits.git_timeout, help="seconds per git clone or fetch (900)"
    )
    parser.add_argument("--max-bytes", type=int, default=Limits.max_bytes, help="largest page or file (5 MB)")
    parser.add_argument("--max-redirects", type=int, default=Limits.max_redirects, help="default 5")
    parser.add_argument(
        "--concurrency", type=int, default=Limits.concurrency, help="fetches at once (default 4)"
    )
    args = parser.parse_args(argv)
    if "{repo}" not in args.remote_template and "{name}" not in args.remote_template:
        parser.error(
            "--remote-template needs {repo} (or {owner} and {name}), e.g. https://github.com/{repo}.git"
        )
    if min(args.timeout, args.git_timeout, args.max_bytes, args.concurrency) <= 0 or args.max_redirects < 0:
        parser.error(
            "the timeouts, --max-bytes and --concurrency must be positive; --max-redirects 0 or more"
        )
    paths = sorted(args.agents_dir.glob("*.json"))
    if args.agent:
        known = {p.stem for p in paths}
        unknown = sorted(set(args.agent) - known)
        if unknown:
            parser.error(f"no agent file for {', '.join(unknown)}; known agents: {', '.join(sorted(known))}")
        paths = [p for p in paths if p.stem in args.agent]
    agents = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    limits = Limits(args.timeout, args.git_timeout, args.max_bytes, args.max_redirects, args.concurrency)
    report = refresh(
        agents, args.work, remote_template=args.remote_template, limits=limits, offline=args.offline
    )
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "refresh.json").write_text(
        json.dumps(to_json(report, when), indent=1) + "\n", encoding="utf-8"
    )
    (args.out / "refresh.md").write_text(to_markdown(report, when), encoding="utf-8")
    print(
        f"{len(report.records)} record(s) to re-verify, {len(report.errors)} fetch(es) failed: "
        f"{args.out / 'refresh.md'}",
        file=sys.stderr,
    )
    return 1 if report.records or report.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
