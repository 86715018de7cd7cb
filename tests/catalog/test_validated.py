"""The list of already-validated data files: it saves the schema check at start, never weakens it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_scripts.prepare import record_validated
from engine.catalog import schema
from engine.catalog.model import DATA_DIR, load_catalog
from engine.errors import CatalogError


@pytest.fixture
def validations(monkeypatch) -> list[Path]:
    """Each full schema validation made, by schema file."""
    calls: list[Path] = []
    real = schema.validate

    def counting(instance, schema_path, **kwargs):
        calls.append(Path(schema_path))
        return real(instance, schema_path, **kwargs)

    monkeypatch.setattr(schema, "validate", counting)
    return calls


def test_the_shipped_list_is_current_so_a_start_skips_the_schema_check(validations):
    expected = record_validated.render(record_validated.digests(DATA_DIR))
    assert (DATA_DIR / schema.VALIDATED_FILE).read_text() == expected, (
        "engine/data changed: run python build_scripts/prepare/record_validated.py"
    )
    validations.clear()
    load_catalog(DATA_DIR)
    assert validations == []


def test_an_edited_file_is_validated_in_full_and_the_others_are_not(data_copy, validations):
    path = data_copy / "agents" / "codex.json"
    path.write_text(json.dumps(json.loads(path.read_text())))  # same content, other bytes
    load_catalog(data_copy)
    assert [p.name for p in validations] == ["schema.json"]


def test_a_broken_edit_is_still_refused_with_the_list_in_place(data_copy):
    path = data_copy / "agents" / "codex.json"
    doc = json.loads(path.read_text())
    doc["capabilities"][0]["tier"] = "platinum"
    path.write_text(json.dumps(doc))
    assert (data_copy / schema.VALIDATED_FILE).is_file()
    with pytest.raises(CatalogError, match="platinum"):
        load_catalog(data_copy)


def test_an_edited_schema_revalidates_every_file_it_governs(data_copy, validations):
    path = data_copy / "schema.json"
    path.write_text(path.read_text() + "\n")
    load_catalog(data_copy)
    agents = json.loads((data_copy / "catalog.json").read_text())["agents"]
    assert [p.name for p in validations].count("schema.json") == len(agents)


@pytest.mark.parametrize("content", ["{not json", '{"sha256": 5}', "[1, 2]", ""])
def test_a_broken_list_means_full_validation_not_an_error(data_copy, validations, content):
    (data_copy / schema.VALIDATED_FILE).write_text(content)
    load_catalog(data_copy)
    assert len(validations) >= 4
