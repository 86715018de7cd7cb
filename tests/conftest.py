"""Shared fixtures: project paths and helpers to build broken copies of the data."""

from __future__ import annotations

import base64
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

# Tests never write to the user's gap log or cache: servers started here, and children, use scratch ones.
_SCRATCH = Path(tempfile.mkdtemp(prefix="agent-capabilities-tests-"))
os.environ["AGENT_CAPABILITIES_DB"] = str(_SCRATCH / "gaps.db")
os.environ["AGENT_CAPABILITIES_CACHE"] = str(_SCRATCH / "cache")
FIXTURES = ROOT / "tests" / "fixtures"


def decode(vector: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(vector), dtype="<f4")


@pytest.fixture(scope="session")
def reference_vectors() -> dict:
    doc = json.loads((FIXTURES / "st_reference_vectors.json").read_text())
    return {
        "texts": np.vstack([decode(v) for v in doc["texts"]]),
        "evalQueries": np.vstack([decode(v) for v in doc["evalQueries"]]),
    }


@pytest.fixture(scope="session")
def parity_texts() -> list[str]:
    return json.loads((FIXTURES / "parity_texts.json").read_text())["texts"]


@pytest.fixture(scope="session")
def eval_queries() -> list[dict]:
    return json.loads((ROOT / "queries" / "own" / "own.json").read_text())["queries"]


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged catalog data."""
    target = tmp_path / "data"
    shutil.copytree(ROOT / "engine" / "data", target)
    return target


@pytest.fixture
def one_agent_data(data_copy: Path) -> Path:
    """The catalog cut to its first agent, one example per capability and a few aliases.

    Tests that check a fall-back to re-embedding the whole catalog (a missing or broken vector
    store) embed every text one at a time in a fresh process; the property is the same for a
    smaller catalog, and the suite stays fast. Use it with ``probe_env``.
    """
    manifest = json.loads((data_copy / "catalog.json").read_text())
    for dropped in manifest["agents"][1:]:
        (data_copy / "agents" / f"{dropped}.json").unlink()
    manifest["agents"] = manifest["agents"][:1]
    (data_copy / "catalog.json").write_text(json.dumps(manifest))
    canon = json.loads((data_copy / "capabilities.json").read_text())
    for capability in canon["capabilities"]:
        capability["examples"] = capability["examples"][:1]
    (data_copy / "capabilities.json").write_text(json.dumps(canon))
    aliases = json.loads((data_copy / "aliases.json").read_text())
    kept = dict(list(aliases["aliases"].items())[:10])
    kept["autocomplete"] = aliases["aliases"]["autocomplete"]
    aliases["aliases"] = kept
    (data_copy / "aliases.json").write_text(json.dumps(aliases))
    return data_copy


# Prefix for a probe run in a child process: read the catalog from AC_TEST_DATA instead of the package.
USE_TEST_DATA = (
    "import os, pathlib, engine.catalog.model as _m; "
    "_d = os.environ.get('AC_TEST_DATA'); "
    "_m.DATA_DIR = pathlib.Path(_d) if _d else _m.DATA_DIR; "
)


def probe_env(vectors_dir: Path, data_dir: Path | None = None) -> dict:
    env = {**os.environ, "AGENT_CAPABILITIES_VECTORS": str(vectors_dir), "PYTHONPATH": str(ROOT)}
    if data_dir is not None:
        env["AC_TEST_DATA"] = str(data_dir)
    return env


@pytest.fixture
def five_agent_data(data_copy: Path) -> Path:
    """A copy of the catalog with a fifth agent added through data alone (a renamed copy of one agent)."""
    doc = json.loads((data_copy / "agents" / "gemini-cli.json").read_text())
    doc.update(id="example-agent", displayName="Example Agent", aliases=["example agent"])
    (data_copy / "agents" / "example-agent.json").write_text(json.dumps(doc))
    manifest = json.loads((data_copy / "catalog.json").read_text())
    manifest["agents"].append("example-agent")
    (data_copy / "catalog.json").write_text(json.dumps(manifest))
    return data_copy


@pytest.fixture
def vectors_copy(tmp_path: Path) -> Path:
    """A writable copy of vectors/ (encoder + store) to break in degraded-mode tests."""
    target = tmp_path / "vectors"
    shutil.copytree(ROOT / "vectors", target)
    return target


class FakeEncoder:
    """A deterministic stand-in for the ONNX encoder: hashed bag of words, unit length, 384 dimensions.

    Texts that share words get similar vectors, which is enough to test the
    pipeline's logic (ranking, thresholds, segments, close calls) in
    milliseconds, without the ONNX model. Parity and quality tests use the real one.
    """

    variant = "fake"

    def load(self) -> None:
        pass

    def vocabulary(self) -> set[str]:
        return set()

    def encode(self, texts):
        import re
        import zlib

        rows = np.zeros((len(texts), 384), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                rows[i, zlib.crc32(word.encode()) % 384] += 1.0
            rows[i] /= np.linalg.norm(rows[i]) or 1.0
        return rows


@pytest.fixture
def fake_encoder() -> FakeEncoder:
    return FakeEncoder()


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL cluster (``tests/postgres.py``); skipped, saying why, where none can run.

    In CI (``CI`` set) a missing PostgreSQL fails instead: ``.ci/run`` installs it.
    """
    from tests.postgres import Cluster, find_bindir

    bindir = find_bindir()
    problem = None
    if bindir is None:
        problem = "no PostgreSQL binaries found (initdb and pg_ctl, on PATH or in /usr/lib/postgresql/*/bin)"
    else:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            problem = "psycopg is not installed: pip install -e '.[postgres]'"
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"{problem}; .ci/run should have installed it")
        pytest.skip(f"{problem}; the PostgreSQL gap-log tests need it")
    cluster = Cluster(bindir).start()
    yield cluster
    cluster.stop()
