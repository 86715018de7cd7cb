"""A docs repository in a temporary folder: the real gemini-cli files of tests/fixtures/drift, two commits."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

DRIFT = ROOT / "tests" / "fixtures" / "drift"


@dataclass
class DocsRepo:
    path: Path  # a working repository; its .git is what the readers are given
    old: str  # commit holding tests/fixtures/drift/old
    new: str  # commit holding tests/fixtures/drift/new (the branch head)

    @property
    def git_dir(self) -> Path:
        return self.path / ".git"


def git(repo: Path, *args: str, date: str = "2026-03-01T00:00:00Z") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    )
    return done.stdout.strip()


def commit_tree(repo: Path, tree: Path, message: str, date: str) -> str:
    """Make the work tree exactly ``tree``'s files and commit them."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    shutil.copytree(tree, repo, dirs_exist_ok=True)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message, date=date)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def docs_repo(tmp_path: Path) -> DocsRepo:
    repo = tmp_path / "gemini-cli"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    old = commit_tree(repo, DRIFT / "old", "old docs", "2026-03-01T00:00:00Z")
    new = commit_tree(repo, DRIFT / "new", "new docs", "2026-08-21T00:00:00Z")
    return DocsRepo(repo, old, new)
