"""The precomputed vector store: which texts were embedded for which record, and their vectors.

Format (``vectors/capability-vectors.json``): model id, dimension,
normalisation, a sha256 of exactly the texts embedded, and one entry per
text with its vector as base64 little-endian float32 (exact and compact).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384


@dataclass(frozen=True)
class Entry:
    """One embedded text: the record it belongs to, what kind of text, the text."""

    id: str
    kind: str
    text: str


def content_hash(entries: list[Entry]) -> str:
    """sha256 over the (id, kind, text) triples, in order: recorded so readers can tell what was embedded."""
    payload = json.dumps([[e.id, e.kind, e.text] for e in entries], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class VectorStore:
    """Entries and their unit-length vectors (row i belongs to entry i)."""

    model: str
    entries: list[Entry]
    matrix: np.ndarray

    def lookup(self) -> dict[Entry, np.ndarray]:
        """Vectors keyed by entry, to reuse what is unchanged."""
        return {entry: self.matrix[i] for i, entry in enumerate(self.entries)}


def encode_vector(vector: np.ndarray) -> str:
    """float32 little-endian bytes as base64 text."""
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def dump_store(
    entries: list[Entry],
    matrix: np.ndarray,
    path: Path,
    *,
    model: str = MODEL_ID,
    built_with: str | None = None,
) -> None:
    """Write a store deterministically: same entries and vectors -> identical bytes."""
    doc = {
        "model": model,
        **({"builtWith": built_with} if built_with else {}),
        "dimension": int(matrix.shape[1]) if len(entries) else DIMENSION,
        "normalized": True,
        "dtype": "float32-le-base64",
        "contentHash": content_hash(entries),
        "count": len(entries),
        "entries": [
            {"id": e.id, "kind": e.kind, "text": e.text, "vector": encode_vector(matrix[i])}
            for i, e in enumerate(entries)
        ],
    }
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load_store(path: Path) -> VectorStore:
    """Read a store; raise ``ValueError`` with the reason when it is unusable."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        dim = int(doc["dimension"])
        entries = [Entry(e["id"], e["kind"], e["text"]) for e in doc["entries"]]
        blob = b"".join(base64.b64decode(e["vector"]) for e in doc["entries"])
        matrix = np.frombuffer(blob, dtype="<f4").reshape(len(entries), dim)
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"vector store {path} is unreadable: {exc}") from exc
    model = doc.get("model", "")
    check_matrix(matrix, where=f"vector store {path}", model=model)
    return VectorStore(model=model, entries=entries, matrix=matrix.astype(np.float32))


def check_matrix(matrix: np.ndarray, *, where: str, model: str = MODEL_ID, tolerance: float = 1e-3) -> None:
    """Raise ``ValueError`` unless every row is a finite unit vector of the model's dimension.

    NaN rows would make every query answer the first record with confidence NaN;
    zero rows would never match. Both are caught here, before they are used.
    """
    if model != MODEL_ID:
        raise ValueError(f"{where} was embedded with '{model}', but the encoder is '{MODEL_ID}'")
    if matrix.ndim != 2 or (len(matrix) and matrix.shape[1] != DIMENSION):
        raise ValueError(f"{where} has vectors of shape {matrix.shape}; expected (n, {DIMENSION})")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{where} contains NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > tolerance)
    if len(bad):
        raise ValueError(f"{where}: {len(bad)} vector(s) are not unit length (first: row {int(bad[0])})")
