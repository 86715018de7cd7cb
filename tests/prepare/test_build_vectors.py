"""build_scripts/prepare/build_vectors.py: a rebuild keeps the builder the store was built with."""

from __future__ import annotations

import json
import shutil

import pytest

from build_scripts.prepare import build_vectors
from tests.conftest import ROOT

STORE = ROOT / "vectors" / "capability-vectors.json"


class Stop(Exception):
    """Raised in place of embedding: the test only needs to know which builder was chosen."""


@pytest.fixture
def chosen(monkeypatch) -> list[str]:
    builders: list[str] = []

    def fake_embed(texts, builder):
        builders.append(builder)
        raise Stop

    monkeypatch.setattr(build_vectors, "embed", fake_embed)
    return builders


def test_a_plain_rebuild_of_the_committed_store_uses_the_builder_it_records(tmp_path, chosen):
    copy = tmp_path / "capability-vectors.json"
    shutil.copy(STORE, copy)
    with pytest.raises(Stop):
        build_vectors.main(["--out", str(copy)])
    recorded = json.loads(STORE.read_text(encoding="utf-8"))["builtWith"]
    assert chosen == [recorded.split(":")[0]]


@pytest.mark.parametrize(
    ("header", "builder"),
    [
        ({"builtWith": "sentence-transformers"}, "sentence-transformers"),
        ({"builtWith": "onnx:int8-attn"}, "onnx"),
        ({}, "sentence-transformers"),  # written before builtWith existed, as .ci/run assumes
    ],
)
def test_the_recorded_builder_is_read_from_builtwith(tmp_path, header, builder):
    store = tmp_path / "store.json"
    store.write_text(json.dumps({"model": "m", **header}), encoding="utf-8")
    assert build_vectors.recorded_builder(store) == builder


def test_a_new_store_defaults_to_the_shipped_encoder(tmp_path):
    assert build_vectors.recorded_builder(tmp_path / "absent.json") == "onnx"


def test_an_unknown_recorded_builder_says_which_flags_choose_one(tmp_path):
    store = tmp_path / "store.json"
    store.write_text(json.dumps({"builtWith": "word2vec"}), encoding="utf-8")
    with pytest.raises(SystemExit, match="--with onnx or --with sentence-transformers"):
        build_vectors.recorded_builder(store)


def test_with_overrides_the_recorded_builder(tmp_path, chosen):
    copy = tmp_path / "capability-vectors.json"
    shutil.copy(STORE, copy)
    with pytest.raises(Stop):
        build_vectors.main(["--out", str(copy), "--with", "onnx"])
    assert chosen == ["onnx"]


def test_a_custom_catalog_without_out_is_refused_instead_of_overwriting_the_capability_store(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_vectors.main(["--catalog", "tools.json"])
    assert exit_info.value.code == 2
    assert "--catalog needs --out" in capsys.readouterr().err


def test_a_sentence_transformers_build_refuses_a_fine_tuned_shipped_encoder(tmp_path, monkeypatch, chosen):
    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "manifest.json").write_text(json.dumps({"fineTuned": True, "files": {}}), encoding="utf-8")
    monkeypatch.setenv("AGENT_CAPABILITIES_VECTORS", str(tmp_path))
    with pytest.raises(SystemExit, match="fine-tuned encoder.*--with onnx"):
        build_vectors.main(["--with", "sentence-transformers", "--out", str(tmp_path / "store.json")])
    assert chosen == []
    with pytest.raises(Stop):
        build_vectors.main(["--with", "onnx", "--out", str(tmp_path / "store.json")])
    assert chosen == ["onnx"]
