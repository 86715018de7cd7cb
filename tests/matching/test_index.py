import json
import logging
import subprocess
import sys

import numpy as np
import pytest

from engine import Encoder, Index, InvalidQueryError, Record
from engine.matching.index import record_entries
from engine.matching.store import dump_store, load_store
from tests.conftest import ROOT, USE_TEST_DATA, probe_env

TOOLS = [
    {
        "id": "fs:read_file",
        "name": "read_file",
        "description": "Read the complete contents of a file from disk.",
    },
    {
        "id": "fs:write_file",
        "name": "write_file",
        "description": "Create a new file or overwrite an existing one.",
    },
    {"id": "git:git_log", "name": "git_log", "description": "Show the commit history of a repository."},
    {"id": "time:get_current_time", "name": "get_current_time", "description": "Current time in a timezone."},
    {
        "id": "fetch:fetch",
        "name": "fetch",
        "description": "Fetch a URL and return the page as markdown.",
        "aliases": ["download web page"],
    },
]


@pytest.fixture(scope="module")
def tools_index() -> Index:
    return Index.from_records(TOOLS)


def test_any_records_can_be_indexed_and_matched_by_meaning(tools_index):
    result = tools_index.match("what changed in the repo recently, list the commits", k=3)
    assert result.id == "git:git_log"
    assert result.method == "semantic"
    assert [c.id for c in result.candidates][0] == "git:git_log"
    assert len(result.candidates) == 3


def test_exact_tool_names_and_aliases_resolve_without_embedding(tools_index):
    assert tools_index.match("read_file").method == "exact"
    assert tools_index.match("fs:write_file").id == "fs:write_file"
    alias = tools_index.match("Download web page")
    assert (alias.id, alias.method) == ("fetch:fetch", "alias")


def test_k_bounds_the_candidates(tools_index):
    assert len(tools_index.match("save text to a file", k=2).candidates) == 2
    assert len(tools_index.match("save text to a file", k=50).candidates) == len(TOOLS)


def test_unrelated_queries_match_nothing(tools_index):
    result = tools_index.match("bake a chocolate cake")
    assert result.name is None and result.method == "none"


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([], "at least one record"),
        ([{"name": "x"}], "id"),
        ([{"id": "a", "name": ""}], "name"),
        ([{"id": "a", "name": "x"}, {"id": "a", "name": "y"}], "twice"),
        ([{"id": "a", "name": "x", "aliases": "not-a-list"}], "aliases"),
        (["just a string"], "dict"),
    ],
)
def test_bad_records_are_rejected_with_what_is_wrong(records, message):
    with pytest.raises(InvalidQueryError, match=message):
        Index.from_records(records)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([Record("a", None, "d")], r"record 0 \('a'\): 'name' must be a non-empty string, got NoneType"),
        ([Record(7, "x")], r"record 0: 'id' must be a non-empty string, got int"),
        ([Record("a", "   ")], r"'name' must be a non-empty string, got a blank string"),
        ([Record("a", "x", b"bytes")], r"'description' must be a string, got bytes"),
        ([Record("a", "x", aliases="one")], r"aliases must be a list of strings, got str"),
        (
            [Record("a", "x", texts=("ok", 3))],
            r"texts must be a list of strings, but it holds a value of type int",
        ),
        ([Record("a", "x", keywords=5)], r"keywords must be a list of strings, got int"),
        ([Record("a", "x"), Record("a", "y")], r"record 1: id 'a' appears twice \(also record 0\)"),
        (
            [Record("a", "Read File"), {"id": "b", "name": "read file "}],
            r"record 1 \('b'\): name .* record 0",
        ),
    ],
)
def test_record_objects_are_checked_like_dicts_and_the_error_names_record_and_field(records, message):
    with pytest.raises(InvalidQueryError, match=message):
        Index.from_records(records, semantic=False)


def test_record_objects_keep_their_texts_and_keywords():
    index = Index.from_records(
        [
            Record("a", "read_file", "Read a file", texts=("open a document",), keywords=("cat",)),
            Record("b", "x"),
        ],
        semantic=False,
    )
    assert index.records[0].texts == ("open a document",) and index.records[0].keywords == ("cat",)
    assert index.match("cat").id == "a"


def test_semantic_can_be_switched_off_for_lexical_matching():
    index = Index.from_records(TOOLS, semantic=False)
    result = index.match("commit history of a repository")
    assert result.id == "git:git_log"
    assert result.method == "lexical"


def test_precomputed_vectors_are_used_as_given(tmp_path):
    records = [Record(t["id"], t["name"], t["description"]) for t in TOOLS]
    entries = [e for r in records for e in record_entries(r)]
    encoder = Encoder()
    store_path = tmp_path / "tools.json"
    dump_store(entries, encoder.encode([e.text for e in entries]), store_path)
    index = Index.from_records(records, vectors=store_path)
    assert index.match("list the commits in the repository").id == "git:git_log"


def test_a_stale_store_warns_once_and_reembeds_only_what_changed(tmp_path, caplog):
    records = [Record(t["id"], t["name"], t["description"]) for t in TOOLS]
    entries = [e for r in records for e in record_entries(r)]
    encoder = Encoder()
    store_path = tmp_path / "tools.json"
    dump_store(entries[1:], encoder.encode([e.text for e in entries[1:]]), store_path)
    index = Index.from_records(records, vectors=store_path)
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert index.match("open a file and show me what is inside").id == "fs:read_file"
        index.match("current time in Tokyo")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "stale (1 of" in warnings[0].getMessage()


def test_a_missing_store_path_warns_and_embeds_everything(tmp_path, caplog):
    index = Index.from_records(TOOLS, vectors=tmp_path / "missing.json")
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert index.match("what time is it in Tokyo").id == "time:get_current_time"
    assert any("not found" in r.getMessage() for r in caplog.records)


def test_store_files_are_deterministic(tmp_path):
    records = [Record(t["id"], t["name"], t["description"]) for t in TOOLS]
    entries = [e for r in records for e in record_entries(r)]
    matrix = Encoder().encode([e.text for e in entries])
    dump_store(entries, matrix, tmp_path / "a.json")
    dump_store(entries, matrix, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    loaded = load_store(tmp_path / "a.json")
    assert np.array_equal(loaded.matrix, matrix)


def test_the_committed_store_matches_the_catalog():
    from engine.catalog.lookup import capability_index

    index = capability_index()
    store = load_store(ROOT / "vectors" / "capability-vectors.json")
    assert [(e.id, e.kind, e.text) for e in store.entries] == [(e.id, e.kind, e.text) for e in index.entries]
    assert store.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert store.matrix.shape == (len(index.entries), 384)
    assert np.allclose(np.linalg.norm(store.matrix, axis=1), 1.0, atol=1e-4)


PROBE = (
    "import json, engine; r = engine.match('how do I undo what the agent changed'); "
    "a = engine.match('autocomplete'); print(json.dumps([r.method, r.name, a.method, a.name]))"
)


def run_probe(vectors_dir, data_dir=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", USE_TEST_DATA + PROBE],
        capture_output=True,
        text=True,
        env=probe_env(vectors_dir, data_dir),
        timeout=120,
        cwd=ROOT,
    )


def test_missing_encoder_falls_back_with_one_warning_and_clean_stdout(vectors_copy):
    (vectors_copy / "encoder" / "manifest.json").unlink()
    proc = run_probe(vectors_copy)
    assert proc.returncode == 0, proc.stderr
    method, _name, alias_method, alias_name = json.loads(proc.stdout)
    assert method in {"lexical", "none"}
    assert (alias_method, alias_name) == ("alias", "Code Completion")
    assert proc.stderr.count("semantic matching is off") == 1


def test_corrupt_encoder_is_detected_by_sha256_and_falls_back(vectors_copy):
    model = next((vectors_copy / "encoder").glob("*.onnx"))
    data = bytearray(model.read_bytes())
    data[1000] ^= 0xFF
    model.write_bytes(bytes(data))
    proc = run_probe(vectors_copy)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0] in {"lexical", "none"}
    assert "sha256" in proc.stderr
    assert proc.stderr.count("WARNING") + proc.stderr.count("semantic matching is off") >= 1
    assert len(proc.stdout.strip().splitlines()) == 1


def test_missing_vector_store_reembeds_with_the_onnx_encoder(vectors_copy, one_agent_data):
    (vectors_copy / "capability-vectors.json").unlink()
    proc = run_probe(vectors_copy, one_agent_data)
    assert proc.returncode == 0, proc.stderr
    method, name, _, _ = json.loads(proc.stdout)
    assert (method, name) == ("semantic", "Checkpoints")
    assert proc.stderr.count("not found") == 1


def test_corrupt_vector_store_reembeds_with_one_warning(vectors_copy, one_agent_data):
    (vectors_copy / "capability-vectors.json").write_text("{broken")
    proc = run_probe(vectors_copy, one_agent_data)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[:2] == ["semantic", "Checkpoints"]
    assert proc.stderr.count("unreadable") == 1


def test_a_stale_catalog_store_reembeds_the_changed_texts(vectors_copy):
    path = vectors_copy / "capability-vectors.json"
    doc = json.loads(path.read_text())
    doc["entries"] = doc["entries"][5:]
    path.write_text(json.dumps(doc))
    proc = run_probe(vectors_copy)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[:2] == ["semantic", "Checkpoints"]
    assert proc.stderr.count("stale (5 of") == 1
