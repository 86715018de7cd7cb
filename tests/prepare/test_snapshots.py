"""One reader for docs snapshots: a git revision and a plain folder read alike and report gaps alike."""

from __future__ import annotations

import pytest

from build_scripts.prepare.snapshots import Mirrors, Snapshot, SnapshotError, git_blob_sha
from tests.prepare.conftest import DRIFT


def test_a_git_revision_and_the_same_files_in_a_folder_read_alike(docs_repo):
    in_git = Snapshot(git_dir=docs_repo.git_dir, rev=docs_repo.old)
    in_folder = Snapshot(folder=DRIFT / "old")
    assert in_git.files() == in_folder.files()
    for path in in_git.files():
        assert in_git.blob(path) == in_folder.blob(path) == git_blob_sha((DRIFT / "old" / path).read_bytes())
        assert in_git.read(path) == in_folder.read(path)
    assert (in_git.commit, in_git.date) == (docs_repo.old, "2026-03-01")


@pytest.mark.parametrize("where", ["git", "folder"])
def test_a_missing_file_reads_empty_or_raises_as_the_caller_asks(docs_repo, where):
    kind = {"git_dir": docs_repo.git_dir} if where == "git" else {"folder": DRIFT / "new"}
    assert Snapshot(**kind, missing="empty").read("docs/get-started/examples.md") == ""
    assert Snapshot(**kind).blob("docs/get-started/examples.md") is None
    with pytest.raises(SnapshotError, match="no file docs/get-started/examples.md"):
        Snapshot(**kind, missing="raise").read("docs/get-started/examples.md")


def test_bytes_that_are_not_utf8_are_replaced_or_refused_as_the_caller_asks(tmp_path):
    (tmp_path / "page.md").write_bytes(b"caf\xe9\n")
    assert Snapshot(folder=tmp_path, errors="replace").read("page.md") == "caf\ufffd\n"
    with pytest.raises(UnicodeDecodeError):
        Snapshot(folder=tmp_path, errors="strict").read("page.md")


def test_an_unknown_revision_raises_only_when_the_caller_asks(docs_repo):
    assert Snapshot(git_dir=docs_repo.git_dir, rev="no-such-branch").files() == []
    with pytest.raises(SnapshotError, match="no commit 'no-such-branch'"):
        Snapshot(git_dir=docs_repo.git_dir, rev="no-such-branch", missing="raise")


def test_bad_arguments_say_what_is_valid(tmp_path):
    with pytest.raises(ValueError, match="valid: empty, raise"):
        Snapshot(folder=tmp_path, missing="skip")
    with pytest.raises(ValueError, match="either a git_dir or a folder"):
        Snapshot()


def test_mirrors_find_a_repository_by_owner_and_name_and_a_file_saved_on_its_own(docs_repo, tmp_path):
    roots = tmp_path / "mirrors"
    (roots / "google-gemini+gemini-cli").mkdir(parents=True)
    (roots / "google-gemini+gemini-cli" / "repo").symlink_to(docs_repo.git_dir)
    saved = roots / "o+big" / "abc123" / "docs"
    saved.mkdir(parents=True)
    (saved / "page.md").write_text("# Saved\n")
    mirrors = Mirrors([roots])
    assert mirrors.commit("google-gemini/gemini-cli", "HEAD") == docs_repo.new
    assert (
        mirrors.read("google-gemini/gemini-cli", docs_repo.old, "docs/cli/rewind.md")
        == (DRIFT / "old" / "docs/cli/rewind.md").read_text()
    )
    assert mirrors.blob("o/big", "abc123", "docs/page.md") == git_blob_sha(b"# Saved\n")
    assert mirrors.read("o/big", "abc123", "docs/page.md") == "# Saved\n"
    assert mirrors.read("o/absent", "abc123", "x.md") == ""
