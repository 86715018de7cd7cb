"""Regression tests for the reliability defects (issue 8): bounded work, thread safety, bad text, bad data."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import CatalogError, EngineError, Index, InvalidQueryError, answers
from engine.catalog.lookup import capability_records
from engine.catalog.model import load_catalog
from engine.matching import lexical as lexical_module
from engine.matching.index import Record
from engine.matching.lexical import CACHE_SIZE, MAX_VARIANTS, LexicalIndex
from engine.matching.store import load_store
from tests.conftest import USE_TEST_DATA, probe_env

ROOT = Path(__file__).resolve().parent.parent


def catalog_lexicon() -> LexicalIndex:
    """A fresh lexical index over the real catalog's words, built as the engine builds it (no encoder)."""
    return Index(capability_records(engine.get_catalog()), semantic=False).lexical


# --- 1. long words ---------------------------------------------------------------------------------


def test_a_long_word_is_not_sent_to_the_spelling_corrector(monkeypatch):
    lexicon = catalog_lexicon()
    calls = []
    monkeypatch.setattr(lexicon, "_candidates", lambda term, limit: calls.append(term) or set())
    assert lexicon.correct("x" * 1000) is None
    assert calls == []


def test_deletion_variants_are_capped():
    assert len(lexical_module._deletions("abcdefghijklmnopqrstuvwxyz" * 4, 2)) <= MAX_VARIANTS + 10_000


def test_matching_a_1000_character_word_stays_small():
    engine.match("warm up the index")
    tracemalloc.start()
    engine.match("q" * 1000)
    engine.match("a1" * 499)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


# Distinct letters matter: deleting letters from "zzzz..." gives few distinct strings.
VARIED_WORD = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + i // 36) % 36] for i in range(1500))


def test_an_index_over_a_record_with_a_huge_word_stays_small():
    tracemalloc.start()
    index = Index.from_records(
        [{"id": "a", "name": "big", "description": VARIED_WORD}, {"id": "b", "name": "git_log"}],
        semantic=False,
    )
    index.match("gti logg")  # forces the corrector's table to be built
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB"


# --- 2. cold-start race ----------------------------------------------------------------------------

TYPOS = ["agnet", "instrucions", "checkpoitns", "sandboxng", "compation", "completoin", "debuging", "refactr"]


def test_concurrent_first_corrections_agree_with_sequential_ones():
    reference = catalog_lexicon()
    expected = {word: reference.correct(word) for word in TYPOS}
    for _ in range(3):
        lexicon = catalog_lexicon()
        barrier = threading.Barrier(len(TYPOS))
        got: dict[str, str | None] = {}

        def worker(word: str, lexicon=lexicon, barrier=barrier, got=got) -> None:
            barrier.wait()
            got[word] = lexicon.correct(word)

        threads = [threading.Thread(target=worker, args=(w,)) for w in TYPOS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == expected
        assert {w: lexicon.correct(w) for w in TYPOS} == expected  # and nothing wrong was cached


RACE_SCRIPT = """
import json, sys, threading, engine
queries = json.loads(sys.argv[1])
barrier = threading.Barrier(len(queries))
out = {}
def run(q):
    barrier.wait()
    out[q] = engine.match(q).name
threads = [threading.Thread(target=run, args=(q,)) for q in queries]
[t.start() for t in threads]; [t.join() for t in threads]
print(json.dumps([out, {q: engine.match(q).name for q in queries}]))
"""


def test_a_cold_process_hit_by_concurrent_typo_queries_answers_like_a_sequential_one():
    queries = [
        "agnet mode",
        "custm instrucions",
        "checkpoitns",
        "sandboxng",
        "contxt compation",
        "mcp suport",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", RACE_SCRIPT, json.dumps(queries)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    concurrent, afterwards = json.loads(proc.stdout)
    sequential = {q: engine.match(q).name for q in queries}
    assert concurrent == sequential
    assert afterwards == sequential


# --- 3. lone surrogates ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["\ud800abc", "mcp \udfff support", "\udc00"])
def test_lone_surrogates_get_an_answer_not_a_type_error(text):
    assert engine.match(text).method in {"exact", "alias", "semantic", "lexical", "none"}
    for call in (
        lambda: answers.lookup("claude", text),
        lambda: answers.compare(text),
        lambda: answers.get_sources("gemini", text),
        lambda: answers.lookup(text, "mcp"),
    ):
        try:
            json.dumps(call())
        except EngineError:
            pass


def test_an_index_with_a_surrogate_in_a_record_still_matches():
    index = Index.from_records(
        [{"id": "a", "name": "bad\ud800name", "description": "x\udfff"}, {"id": "b", "name": "read_file"}]
    )
    assert index.match("open a file and read it").name == "read_file"


# --- 4. broken catalog data ------------------------------------------------------------------------


def write(path: Path, doc) -> None:
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_capability_without_summary_names_file_record_and_field(data_copy):
    doc = json.loads((data_copy / "capabilities.json").read_text())
    del doc["capabilities"][2]["summary"]
    write(data_copy / "capabilities.json", doc)
    with pytest.raises(CatalogError) as err:
        load_catalog(data_copy)
    message = str(err.value)
    assert (
        "capabilities.json" in message and "summary" in message and doc["capabilities"][2]["name"] in message
    )


def test_aliases_given_as_a_list_is_a_catalog_error(data_copy):
    write(data_copy / "aliases.json", {"aliases": ["mcp", "hooks"]})
    with pytest.raises(CatalogError, match="aliases.json.*expected object"):
        load_catalog(data_copy)


def test_examples_given_as_a_string_is_a_catalog_error_not_split_into_letters(data_copy):
    doc = json.loads((data_copy / "capabilities.json").read_text())
    doc["capabilities"][0]["examples"] = "just one string"
    write(data_copy / "capabilities.json", doc)
    with pytest.raises(CatalogError, match="examples.*expected array"):
        load_catalog(data_copy)


def test_a_deleted_agent_file_is_reported(data_copy):
    victim = engine.get_catalog().agent_ids[-1]
    (data_copy / "agents" / f"{victim}.json").unlink()
    with pytest.raises(CatalogError, match=f"no file for agent.*{victim}"):
        load_catalog(data_copy)


def test_the_cli_reports_broken_data_in_one_line(data_copy):
    write(data_copy / "aliases.json", [])
    script = (
        "import sys, engine.catalog.model as c; c.DATA_DIR = c.Path(sys.argv[1]); "
        "from engine.cli import main; raise SystemExit(main(['match', 'mcp']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(data_copy)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "aliases.json" in proc.stderr


def break_schema_type(folder: Path) -> None:
    """The audit's edit: the first "string" in schema.json becomes "strng"."""
    path = folder / "schema.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"string"', '"strng"', 1), encoding="utf-8")


def set_ref(folder: Path) -> None:
    doc = json.loads((folder / "schema.json").read_text())
    doc["properties"]["docsSnapshot"]["$ref"] = "#/$defs/nothing"
    write(folder / "schema.json", doc)


@pytest.mark.parametrize(
    ("breaking", "message"),
    [
        (
            break_schema_type,
            r"schema.json: not a valid JSON Schema at properties.id.type: 'strng' is not a JSON Schema type; "
            r"use one of array, boolean, integer, null, number, object, string",
        ),
        (set_ref, r"schema.json: the schema cannot be applied \(.*nothing.*\)"),
        (
            lambda f: write(f / "capabilities.schema.json", {"type": None}),
            r"capabilities.schema.json: not a valid",
        ),
        (
            lambda f: write(f / "catalog.schema.json", {"$defs": "x"}),
            r"catalog.schema.json: not a valid .* \$defs",
        ),
        (
            lambda f: (f / "aliases.schema.json").write_bytes(b"\xff\xfe"),
            r"aliases.schema.json: cannot be read",
        ),
        (lambda f: (f / "schema.json").unlink(), r"schema.json: file is missing"),
    ],
)
def test_a_broken_schema_file_is_a_catalog_error_naming_it(data_copy, breaking, message):
    breaking(data_copy)
    with pytest.raises(CatalogError, match=message):
        load_catalog(data_copy)


def test_the_cli_reports_an_unknown_schema_type_in_one_line_not_a_traceback(data_copy):
    break_schema_type(data_copy)
    script = (
        "import sys, engine.catalog.model as c; c.DATA_DIR = c.Path(sys.argv[1]); "
        "from engine.cli import main; raise SystemExit(main(['lookup', 'claude', 'mcp']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(data_copy)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "schema.json: not a valid JSON Schema" in proc.stderr and "Traceback" not in proc.stderr


# --- 5. the vector store is checked ----------------------------------------------------------------


def rewrite_vectors(path: Path, make) -> None:
    doc = json.loads(path.read_text())
    rng = np.random.default_rng(0)
    for entry in doc["entries"]:
        entry["vector"] = base64.b64encode(make(rng).astype("<f4").tobytes()).decode()
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda rng: np.full(384, np.nan), "NaN"),
        (lambda rng: np.zeros(384), "unit length"),
        (lambda rng: np.ones(100) / 10.0, "shape"),
    ],
)
def test_a_store_with_bad_vectors_is_refused_on_load(tmp_path, vectors_copy, make, reason):
    path = vectors_copy / "capability-vectors.json"
    rewrite_vectors(path, make)
    with pytest.raises(ValueError, match=reason):
        load_store(path)


def test_a_store_from_another_model_is_refused(vectors_copy):
    path = vectors_copy / "capability-vectors.json"
    doc = json.loads(path.read_text())
    doc["model"] = "some/other-model"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="other-model"):
        load_store(path)


PROBE = (
    "import json, engine; r = engine.match('how do I undo what the agent changed'); "
    "print(json.dumps([r.method, r.name, r.confidence]))"
)


def run_probe(vectors_dir: Path, data_dir: Path | None = None) -> subprocess.CompletedProcess:
    env = probe_env(vectors_dir, data_dir)
    return subprocess.run(
        [sys.executable, "-c", USE_TEST_DATA + PROBE], capture_output=True, text=True, env=env, timeout=120
    )


def test_nan_vectors_fall_back_to_reembedding_and_never_emit_nan(vectors_copy, one_agent_data):
    rewrite_vectors(vectors_copy / "capability-vectors.json", lambda rng: np.full(384, np.nan))
    proc = run_probe(vectors_copy, one_agent_data)
    assert proc.returncode == 0, proc.stderr
    assert "NaN" not in proc.stdout
    assert json.loads(proc.stdout)[:2] == ["semantic", "Checkpoints"]
    assert proc.stderr.count("contains NaN") == 1  # one warning, then the texts are re-embedded


def test_random_unit_vectors_are_caught_by_the_spot_check_even_in_a_stale_store(vectors_copy, one_agent_data):
    # The one-agent catalog leaves the store stale (some texts differ): its remaining rows must be
    # checked too, not reused unchecked.
    def random_unit(rng):
        v = rng.normal(size=384)
        return v / np.linalg.norm(v)

    rewrite_vectors(vectors_copy / "capability-vectors.json", random_unit)
    proc = run_probe(vectors_copy, one_agent_data)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[:2] == ["semantic", "Checkpoints"]
    assert proc.stderr.count("does not match the encoder") == 1


# --- 6. Index.from_records input checks -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"records": 5}, "records must be a list"),
        ({"records": None}, "records must be a list"),
        ({"records": [{"id": "a", "name": "b", "aliases": 5}]}, "aliases must be a list"),
        ({"records": [{"id": "a", "name": "b", "aliases": {"x": "y"}}]}, "aliases must be a list"),
        ({"records": [{"id": "a", "name": "b"}], "vectors": 5}, "vectors must be"),
        ({"records": [{"id": "a", "name": "b", "description": 7}]}, "'description' must be a string"),
    ],
)
def test_bad_index_arguments_raise_invalid_query_error(kwargs, message):
    records = kwargs.pop("records")
    with pytest.raises(InvalidQueryError, match=message):
        Index.from_records(records, **kwargs)


def test_records_given_as_objects_are_accepted():
    index = Index.from_records([Record("a", "read_file", "Read a file")], semantic=False)
    assert index.match("read_file").name == "read_file"


# --- 7. bounded correction cache -------------------------------------------------------------------


def test_the_correction_cache_is_bounded():
    lexicon = catalog_lexicon()
    for i in range(CACHE_SIZE + 500):
        lexicon.correct(f"zqx{i:05d}w")
    assert len(lexicon._corrections) <= CACHE_SIZE
