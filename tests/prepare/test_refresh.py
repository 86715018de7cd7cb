"""One refresh for every agent: fetch the newest docs (git, vendor pages), bounded; list what to re-verify.

Nothing here touches the network: the remotes are local repositories holding two real commits of
gemini-cli's docs (tests/fixtures/drift), and the vendor pages come from a loopback HTTP server.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from build_scripts.prepare import refresh
from tests.prepare.conftest import DRIFT, git

OLD_PAGE = "# Pricing\n\nFree for individuals.\n"
PAGES = {
    "/same": (200, "# Same\n\nUnchanged text.\n"),
    "/changed": (200, "# Pricing\n\nFree for individuals, with a daily limit.\n"),
    "/moved": (301, "/new-home"),
    "/new-home": (200, OLD_PAGE),
    "/loop": (302, "/loop"),
    "/big": (200, "x" * 5000),
}
RELEASE = threading.Event()  # holds /slow until the test is done


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server API
        if self.path == "/slow":
            RELEASE.wait(10)
        code, body = PAGES.get(self.path, (404, "not found"))
        self.send_response(code)
        if code in (301, 302):
            self.send_header("Location", body)
            body = ""
        data = body.encode()
        self.send_header("Content-Type", "text/markdown; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    RELEASE.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    RELEASE.set()
    server.shutdown()
    server.server_close()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def page_record(name: str, url: str, text: str) -> dict:
    return {"name": name, "sources": [{"url": url, "revision": {"sha256": sha(text)}}]}


@pytest.fixture
def world(tmp_path, docs_repo, site):
    """An agents folder (gemini-cli's four drift records, read at the old commit, plus four vendor pages),
    a remote holding the old commit as its default branch, and an empty work folder."""
    agent = json.loads((DRIFT / "gemini-cli.json").read_text())
    for record in agent["capabilities"]:
        for source in record["sources"]:
            source["revision"]["commit"] = docs_repo.old
    agent["capabilities"] += [
        page_record("Page Same", f"{site}/same#intro", PAGES["/same"][1]),
        page_record("Page Changed", f"{site}/changed", OLD_PAGE),
        page_record("Page Moved", f"{site}/moved", OLD_PAGE),
        page_record("Page Gone", f"{site}/gone", OLD_PAGE),
    ]
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "gemini-cli.json").write_text(json.dumps(agent))
    remote = tmp_path / "remotes" / "google-gemini" / "gemini-cli.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(docs_repo.path), str(remote)], check=True)
    git(remote, "update-ref", "refs/heads/main", docs_repo.old)
    return {
        "agents": agents,
        "remote": remote,
        "remotes": str(tmp_path / "remotes") + "/{owner}/{name}.git",
        "site": site,
        "work": tmp_path / "work",
        "out": tmp_path / "out",
    }


def run(world) -> tuple[int, dict, str]:
    code = refresh.main(
        [
            "--agents-dir",
            str(world["agents"]),
            "--work",
            str(world["work"]),
            "--out",
            str(world["out"]),
            "--remote-template",
            world["remotes"],
            "--timeout",
            "20",
            "--git-timeout",
            "60",
        ]
    )
    doc = json.loads((world["out"] / "refresh.json").read_text())
    return code, doc, (world["out"] / "refresh.md").read_text()


def test_a_new_commit_on_the_remote_and_changed_moved_and_gone_pages_are_listed_to_re_verify(
    world, docs_repo
):
    code, doc, _ = run(world)
    first = {r["capability"] for r in doc["recordsToReverify"]}
    assert first == {"Page Changed", "Page Moved", "Page Gone"}, "the repository is unchanged at first"
    assert doc["repositories"]["google-gemini/gemini-cli"]["head"] == docs_repo.old

    git(world["remote"], "update-ref", "refs/heads/main", docs_repo.new)  # the docs move on
    code, doc, markdown = run(world)
    found = {r["capability"]: r for r in doc["drifts"]}
    assert code == 1
    assert {r["capability"] for r in doc["recordsToReverify"]} == {
        "Plan Mode",
        "Model Providers",
        "Headless Mode",
        "Page Changed",
        "Page Moved",
        "Page Gone",
    }
    assert doc["repositories"]["google-gemini/gemini-cli"]["head"] == docs_repo.new
    assert (found["Model Providers"]["state"], found["Model Providers"]["now"]) == (
        "moved",
        "docs/get-started/authentication.mdx",
    )
    assert (found["Page Moved"]["state"], found["Page Moved"]["now"]) == (
        "moved",
        f"{world['site']}/new-home",
    )
    assert found["Page Gone"]["state"] == "gone"
    changed = doc["pages"][f"{world['site']}/changed"]["sha256"]
    assert changed == sha(PAGES["/changed"][1])
    assert (world["work"] / "pages" / changed).read_text() == PAGES["/changed"][1]
    assert "gemini-cli / Plan Mode" in markdown and "Page Same" not in markdown


def test_nothing_to_re_verify_exits_0(world, docs_repo):
    agent_file = world["agents"] / "gemini-cli.json"
    agent = json.loads(agent_file.read_text())
    agent["capabilities"] = [r for r in agent["capabilities"] if r["name"] in ("Checkpoints", "Page Same")]
    agent_file.write_text(json.dumps(agent))
    git(world["remote"], "update-ref", "refs/heads/main", docs_repo.new)
    code, doc, markdown = run(world)
    assert (code, doc["recordsToReverify"], doc["fetchErrors"]) == (0, [], [])
    assert "nothing to re-verify" in markdown


def test_a_remote_that_cannot_be_fetched_is_a_failure_in_the_report_not_a_pass(world):
    world["remotes"] = world["remotes"].replace("/remotes/", "/no-remotes/")
    code, doc, markdown = run(world)
    assert code == 1
    assert [e["target"] for e in doc["fetchErrors"]] == ["google-gemini/gemini-cli"]
    assert "## Fetches that failed" in markdown


def test_every_page_fetch_is_bounded_in_size_redirects_and_time(site, tmp_path):
    def fetch(path: str, **limits) -> refresh.Fetched:
        return refresh.fetch_page(f"{site}{path}", tmp_path, refresh.Limits(**limits))

    assert "larger than 100 bytes" in fetch("/big", max_bytes=100).error
    assert fetch("/loop", max_redirects=3).error == "too many redirects"
    assert fetch("/moved", max_redirects=0).error == "too many redirects"
    assert fetch("/slow", timeout=0.5).error.startswith("unreachable")
    assert fetch("/moved").final_url == f"{site}/new-home"


def test_plain_http_is_refused_unless_loopback_so_nothing_leaves_the_machine_by_mistake(tmp_path):
    got = refresh.fetch_page("http://example.com/docs", tmp_path, refresh.Limits())
    assert (got.ok, got.error) == (False, "plain http is fetched only from loopback")
    assert refresh.fetch_page("ftp://example.com/x", tmp_path, refresh.Limits()).error == "not an http(s) URL"
