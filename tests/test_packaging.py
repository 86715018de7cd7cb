"""Packaging: what a wheel and an editable install carry, and the metadata a package index shows."""

from __future__ import annotations

import json
import re
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from hatchling.builders.wheel import WheelBuilder

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def editable_wheel(tmp_path_factory) -> Path:
    """An editable wheel built by hatchling from this checkout (a .pth file, no copy of the code)."""
    out = tmp_path_factory.mktemp("wheel")
    [artifact] = list(WheelBuilder(str(ROOT)).build(directory=str(out), versions=["editable"]))
    return Path(artifact)


def forced_files(version: str, tmp_path: Path) -> dict[str, str]:
    """The files the build hooks force into a wheel of this kind, as hatchling collects them."""
    builder = WheelBuilder(str(ROOT))
    build_data = builder.get_default_build_data()
    builder.set_build_data_defaults(build_data)
    for hook in builder.get_build_hooks(str(tmp_path)).values():
        hook.initialize(version, build_data)
    return build_data["force_include"]


def test_an_editable_install_does_not_copy_the_vectors(editable_wheel):
    names = zipfile.ZipFile(editable_wheel).namelist()
    assert not [n for n in names if n.startswith("engine/")], names


def test_a_standard_wheel_carries_the_vectors_inside_the_package(tmp_path):
    assert forced_files("standard", tmp_path) == {"vectors": "engine/_vectors"}
    assert forced_files("editable", tmp_path) == {}


def test_the_package_metadata_has_project_urls_classifiers_and_keywords(editable_wheel):
    with zipfile.ZipFile(editable_wheel) as wheel:
        [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = HeaderParser().parsestr(wheel.read(name).decode("utf-8"))
    urls = dict(line.split(", ", 1) for line in metadata.get_all("Project-URL", []))
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls)
    assert all(url.startswith("https://github.com/") for url in urls.values())
    classifiers = metadata.get_all("Classifier", [])
    assert "Programming Language :: Python :: 3 :: Only" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)
    assert "mcp" in metadata["Keywords"].split(",")


def test_the_changelog_has_an_unreleased_section_and_one_for_the_package_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert re.search(r"^## \[Unreleased\]$", text, re.MULTILINE)
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.MULTILINE)
    assert re.search(rf"^\[{re.escape(version)}\]: https://\S+/v{re.escape(version)}$", text, re.MULTILINE)
    assert "vX.Y.Z" in text  # the tag scheme is stated


def test_the_github_owner_is_one_setting_that_every_mention_agrees_with():
    from build_scripts.prepare import set_owner

    found = set_owner.mentions()
    assert {path.name for path, _ in found} >= {"pyproject.toml", "server.json", "README.md", "SECURITY.md"}
    assert {account for _, account in found} == {set_owner.owner()}


def test_setting_the_owner_writes_it_everywhere(tmp_path):
    from build_scripts.prepare import set_owner

    for pattern in set_owner.FILES:
        for path in ROOT.glob(pattern):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    assert set_owner.set_owner("some-org", tmp_path)
    assert set_owner.owner(tmp_path) == "some-org"
    assert {account for _, account in set_owner.mentions(tmp_path)} == {"some-org"}
    server_json = json.loads((tmp_path / "server.json").read_text(encoding="utf-8"))
    assert server_json["name"] == "io.github.some-org/agent-capabilities"
    assert "mcp-name: io.github.some-org/agent-capabilities" in (tmp_path / "README.md").read_text(
        encoding="utf-8"
    )
    with pytest.raises(ValueError):
        set_owner.set_owner("not/a name", tmp_path)
