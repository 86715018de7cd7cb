"""provenance.py flags a source pinned to a commit that is not on its repository's default branch."""

from __future__ import annotations

from build_scripts.prepare.provenance import off_branch
from build_scripts.prepare.snapshots import Mirrors
from tests.prepare.conftest import git


def mirror_with_a_legacy_branch(tmp_path, docs_repo) -> tuple[Mirrors, str]:
    """The docs repository as a mirror of o/r, plus a commit on a 'legacy' branch off its first commit."""
    git(docs_repo.path, "checkout", "-q", "-b", "legacy", docs_repo.old)
    (docs_repo.path / "legacy.md").write_text("# Legacy\n")
    git(docs_repo.path, "add", ".")
    git(docs_repo.path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "legacy")
    legacy = git(docs_repo.path, "rev-parse", "HEAD")
    git(docs_repo.path, "checkout", "-q", "main")
    (tmp_path / "mirrors" / "o+r").mkdir(parents=True)
    (tmp_path / "mirrors" / "o+r" / "repo").symlink_to(docs_repo.git_dir)
    return Mirrors([tmp_path / "mirrors"]), legacy


def doc(*revisions: dict) -> dict:
    sources = [{"url": f"https://example.com/{i}", "revision": r} for i, r in enumerate(revisions)]
    return {"id": "x", "capabilities": [{"name": "A", "sources": sources}]}


def test_a_pin_off_the_default_branch_is_flagged_and_one_on_it_is_not(tmp_path, docs_repo):
    mirrors, legacy = mirror_with_a_legacy_branch(tmp_path, docs_repo)
    on_main = {"repo": "o/r", "commit": docs_repo.old, "path": "docs/cli/rewind.md", "blob": "0" * 40}
    off = {**on_main, "commit": legacy}
    problems, unchecked = off_branch(doc(on_main, off), mirrors)
    assert unchecked == []
    assert len(problems) == 1
    assert f"o/r@{legacy[:12]}" in problems[0] and "not on its default branch (main at" in problems[0]


def test_a_pin_that_names_its_branch_is_checked_against_that_branch(tmp_path, docs_repo):
    mirrors, legacy = mirror_with_a_legacy_branch(tmp_path, docs_repo)
    rev = {"repo": "o/r", "commit": legacy, "path": "legacy.md", "blob": "0" * 40}
    assert off_branch(doc({**rev, "branch": "legacy"}), mirrors) == ([], [])
    problems, _ = off_branch(doc({**rev, "branch": "main"}), mirrors)
    assert len(problems) == 1 and "names branch main, which lacks" in problems[0]


def test_a_pin_whose_repository_or_commit_is_not_here_is_unchecked_not_passed(tmp_path, docs_repo):
    mirrors, _ = mirror_with_a_legacy_branch(tmp_path, docs_repo)
    absent_repo = {"repo": "o/elsewhere", "commit": docs_repo.old, "path": "a.md", "blob": "0" * 40}
    absent_commit = {"repo": "o/r", "commit": "f" * 40, "path": "a.md", "blob": "0" * 40}
    problems, unchecked = off_branch(doc(absent_repo, absent_commit), mirrors)
    assert problems == [] and len(unchecked) == 2
