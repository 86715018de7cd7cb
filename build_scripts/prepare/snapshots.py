"""One reader for local docs snapshots: a git directory at a revision, or a plain folder of files.

The docs index, provenance, drift and the gotcha-token check all read the same
snapshots; they differ only in what a missing file means and how strictly its
bytes decode, so those are the reader's two arguments rather than three readers.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

MISSING = ("empty", "raise")  # a missing file reads as "" (reports carry on) or raises (builds stop)
DECODING = ("strict", "replace")  # what to do with bytes that are not UTF-8


class SnapshotError(Exception):
    """A snapshot that cannot be read as asked: an unknown revision, or an absent file (missing="raise")."""


def git_blob_sha(data: bytes) -> str:
    """The blob id git gives these bytes (so a saved copy of a file can be matched to a repository)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@dataclass
class Snapshot:
    """Files of one revision: ``git_dir`` at ``rev``, or ``folder``.

    ``missing`` says what reading an absent file gives: ``"empty"`` returns "",
    ``"raise"`` raises :class:`SnapshotError`. ``errors`` is the UTF-8 decoding
    policy, ``"strict"`` or ``"replace"``. A git revision that does not resolve
    raises when ``missing="raise"`` and leaves ``commit`` empty otherwise.
    """

    git_dir: Path | None = None
    rev: str = "HEAD"
    folder: Path | None = None
    missing: str = "empty"
    errors: str = "replace"
    commit: str = field(init=False, default="")

    def __post_init__(self) -> None:
        if (self.git_dir is None) == (self.folder is None):
            raise ValueError("a Snapshot reads either a git_dir or a folder, not both or neither")
        if self.missing not in MISSING:
            raise ValueError(f"missing={self.missing!r}; valid: {', '.join(MISSING)}")
        if self.errors not in DECODING:
            raise ValueError(f"errors={self.errors!r}; valid: {', '.join(DECODING)}")
        if self.git_dir is not None:
            self.commit = (self.git("rev-parse", "--verify", "-q", f"{self.rev}^{{commit}}") or "").strip()
            if not self.commit and self.missing == "raise":
                raise SnapshotError(f"{self.git_dir}: no commit {self.rev!r}")

    def git(self, *args: str) -> str | None:
        """Output of a git command on this snapshot's directory, or None when git fails."""
        done = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True)
        return self._decode(done.stdout) if done.returncode == 0 else None

    def _decode(self, data: bytes) -> str:
        return data.decode("utf-8", self.errors)

    def _absent(self, path: str) -> str:
        if self.missing == "raise":
            raise SnapshotError(f"{self.git_dir or self.folder}: no file {path}")
        return ""

    @property
    def date(self) -> str:
        """The commit's date (YYYY-MM-DD); empty for a folder, whose date the caller must give."""
        return (self.git("log", "-1", "--format=%cs", self.commit) or "").strip() if self.commit else ""

    def files(self) -> list[str]:
        if self.folder is not None:
            return sorted(str(p.relative_to(self.folder)) for p in self.folder.rglob("*") if p.is_file())
        if not self.commit:
            return []
        return (self.git("ls-tree", "-r", "--name-only", self.commit) or "").splitlines()

    def blob(self, path: str) -> str | None:
        """The file's blob id, or None when the snapshot has no such file."""
        if self.folder is not None:
            file = self.folder / path
            return git_blob_sha(file.read_bytes()) if file.is_file() else None
        if not self.commit:
            return None
        return (self.git("rev-parse", "--verify", "-q", f"{self.commit}:{path}") or "").strip() or None

    def read(self, path: str) -> str:
        if self.folder is not None:
            file = self.folder / path
            return self._decode(file.read_bytes()) if file.is_file() else self._absent(path)
        found = self.git("show", f"{self.commit}:{path}") if self.commit else None
        return found if found is not None else self._absent(path)

    def read_blob(self, blob: str) -> str | None:
        """The text of a blob by its id, wherever in the repository's history it is (None when absent)."""
        return self.git("cat-file", "blob", blob) if self.git_dir is not None else None

    @property
    def branch(self) -> str:
        """The branch HEAD names (a fetched or cloned repository's default branch); empty when detached."""
        if self.git_dir is None:
            return ""
        return (self.git("symbolic-ref", "--short", "-q", "HEAD") or "").strip()

    def has(self, commit: str) -> bool:
        """Whether the repository holds ``commit`` at all (a shallow or partial copy may not)."""
        return self.git_dir is not None and self.git("cat-file", "-e", f"{commit}^{{commit}}") is not None

    def on_branch(self, commit: str, branch: str) -> bool:
        """Whether ``commit`` is in the history of ``branch`` (a local branch, or origin's of that name)."""
        return any(
            self.git("merge-base", "--is-ancestor", commit, ref) is not None
            for ref in (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
        )

    def descends_from(self, commit: str) -> bool:
        """Whether ``commit`` is in this snapshot's history (always true for a plain folder)."""
        if self.folder is not None:
            return True
        return self.git("merge-base", "--is-ancestor", commit, self.commit) is not None

    def renames(self, since: str) -> dict[str, str]:
        """Old path -> new path for the files git sees renamed between ``since`` and this revision."""
        out = {}
        for line in (self.git("diff", "-M", "--name-status", since, self.commit) or "").splitlines():
            parts = line.split("\t")
            if parts[0].startswith("R") and len(parts) == 3:
                out[parts[1]] = parts[2]
        return out


class Mirrors:
    """Local snapshots of many repositories, found by owner/name under one or more roots.

    A repository is ``<root>/<owner>+<name>/repo`` (the layout the project's fetch
    tool writes) or ``<root>/<owner>+<name>`` as a git directory; a file saved one
    at a time from a repository too large to fetch is ``<root>/<owner>+<name>/<commit>/<path>``.
    """

    def __init__(self, roots: list[Path], *, missing: str = "empty", errors: str = "strict"):
        self.roots, self.missing, self.errors = roots, missing, errors

    @cache  # noqa: B019 - one Mirrors per run
    def git_dir(self, repo: str) -> Path | None:
        for root in self.roots:
            for candidate in (root / repo.replace("/", "+") / "repo", root / repo.replace("/", "+")):
                if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
                    return candidate
        return None

    @cache  # noqa: B019 - one Mirrors per run
    def at(self, repo: str, rev: str = "HEAD") -> Snapshot | None:
        """The repository at a revision, or None when it is not here or has no such revision."""
        git_dir = self.git_dir(repo)
        if git_dir is None:
            return None
        snap = Snapshot(git_dir=git_dir, rev=rev, missing="empty", errors=self.errors)
        return snap if snap.commit else None

    def saved(self, repo: str, commit: str) -> Snapshot | None:
        """Files saved one by one at ``commit`` (see the class docstring), or None."""
        for root in self.roots:
            folder = root / repo.replace("/", "+") / commit
            if folder.is_dir():
                return Snapshot(folder=folder, missing=self.missing, errors=self.errors)
        return None

    def commit(self, repo: str, ref: str) -> str | None:
        snap = self.at(repo, ref)
        return snap.commit if snap else None

    def blob(self, repo: str, commit: str, path: str) -> str | None:
        """The blob id from a git directory, or computed from a saved copy's bytes exactly as git would."""
        snap = self.at(repo, commit)
        found = snap.blob(path) if snap else None
        if found:
            return found
        saved = self.saved(repo, commit)
        return saved.blob(path) if saved else None

    def files(self, repo: str, commit: str) -> list[str]:
        snap = self.at(repo, commit)
        return snap.files() if snap else []

    def read(self, repo: str, commit: str, path: str) -> str:
        snap = self.at(repo, commit) or self.saved(repo, commit)
        if snap and snap.blob(path):
            return snap.read(path)
        if self.missing == "raise":
            raise SnapshotError(f"{repo}@{commit[:12]}: no file {path}")
        return ""

    def read_blob(self, repo: str, blob: str) -> str | None:
        """A blob's text by id from the repository's git directory (None when it is not there)."""
        snap = self.at(repo)
        return snap.read_blob(blob) if snap else None
