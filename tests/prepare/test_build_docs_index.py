"""The page index of a vendor site with no docs repository: built from saved pages, dated by the reading."""

from __future__ import annotations

import json

import pytest

from build_scripts.prepare import build_docs_index
from build_scripts.prepare.snapshots import Snapshot


def saved_pages(tmp_path, manifest: dict) -> tuple:
    (tmp_path / "pages.json").write_text(json.dumps(manifest))
    for file in manifest.values():
        if file:
            (tmp_path / file).write_text("page text")
    snap = Snapshot(folder=tmp_path)
    return snap.files, snap.read


def test_a_vendor_site_index_records_the_site_and_date_instead_of_a_commit(tmp_path):
    list_files, read = saved_pages(tmp_path, {"https://kiro.dev/docs/cli/acp": "acp.txt"})
    doc = build_docs_index.build("kiro-cli", list_files, read, None, "2026-11-28")
    assert doc["snapshot"] == {"site": "https://kiro.dev/docs/cli", "date": "2026-11-28"}
    assert doc["pages"] == ["https://kiro.dev/docs/cli/acp"]


def test_a_vendor_site_lists_linked_pages_and_leaves_out_pages_whose_file_is_missing(tmp_path):
    manifest = {"https://kiro.dev/docs/cli": None, "https://kiro.dev/docs/cli/hooks": "hooks.txt"}
    list_files, read = saved_pages(tmp_path, manifest)
    (tmp_path / "hooks.txt").unlink()
    doc = build_docs_index.build("kiro-cli", list_files, read, None, "2026-11-28")
    assert doc["pages"] == ["https://kiro.dev/docs/cli"]


def test_the_shipped_kiro_index_matches_the_agents_snapshot():
    index = json.loads((build_docs_index.OUT / "kiro-cli.json").read_text())
    agent = json.loads((build_docs_index.ROOT / "engine/data/agents/kiro-cli.json").read_text())
    assert index["snapshot"] == agent["docsSnapshot"]


def test_a_vendor_site_needs_a_date_but_no_commit(tmp_path, capsys):
    saved_pages(tmp_path, {"https://kiro.dev/docs/cli": None})
    with pytest.raises(SystemExit):
        build_docs_index.main(["--agent", "kiro-cli", "--dir", str(tmp_path)])
    assert "--dir needs --date" in capsys.readouterr().err
    out = tmp_path / "index.json"
    assert (
        build_docs_index.main(
            ["--agent", "kiro-cli", "--dir", str(tmp_path), "--date", "2026-11-28", "--out", str(out)]
        )
        == 0
    )
    assert json.loads(out.read_text())["snapshot"]["date"] == "2026-11-28"
