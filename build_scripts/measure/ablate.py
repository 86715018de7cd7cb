"""What each part of the matcher earns: take one out, refit the confidence map, measure on selection.

    python build_scripts/measure/ablate.py                    # every variant
    python build_scripts/measure/ablate.py --variants shipped,"no learned head" --json /tmp/ablate.json

Each variant changes one part of the shipped matcher: the learned head, sentence segments, the
typo step, the identifier signal, the agent's own vocabulary, the lexical coverage in the fused
score, or one feature of the confidence model (``judge.FEATURES``). For each, the confidence map
and the answer threshold are refitted on the calibration sets exactly as
``build_scripts/prepare/fit_confidence.py`` fits them (the head and the domain probe stay the
shipped ones), so a part is judged by what the matcher scores without it once the rest has
adapted, not by a confidence model fitted with it. Figures: the selection sets pooled (written
text, never fitted on) and the real calibration set (real issue text; its ranking is not fitted
on, but the confidence map is, so its ECE is in-sample). Held-out sets are never read.

Needs only the runtime dependencies; each distinct text is embedded once per run.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from build_scripts import querysets  # noqa: E402
from build_scripts.measure.evaluate import metrics, run_queries  # noqa: E402
from build_scripts.prepare.encoding_cache import EncodingCache  # noqa: E402
from build_scripts.prepare.fit_confidence import (  # noqa: E402
    CALIBRATION_SETS,
    fit_calibration,
    with_answer_threshold,
)
from build_scripts.prepare.progress import Progress  # noqa: E402
from engine.catalog.lookup import JUDGE_FILE, VECTOR_FILE, capability_records  # noqa: E402
from engine.catalog.model import get_catalog  # noqa: E402
from engine.common.paths import vectors_dir  # noqa: E402
from engine.matching.encoder import Encoder  # noqa: E402
from engine.matching.index import Index  # noqa: E402
from engine.matching.judge import FEATURES, load_judge  # noqa: E402
from engine.matching.scoring import Tuning  # noqa: E402

# name -> (Tuning changes, confidence features left out, keep the learned head, pass the agent)
VARIANTS: dict[str, tuple[dict, tuple[str, ...], bool, bool]] = {
    "shipped": ({}, (), True, True),
    "no agent vocabulary": ({"scoped_weight": 0.0}, ("scoped",), True, False),
    "no learned head": ({}, ("headLead",), False, True),
    "no sentence segments": ({"segment_words": 10**6}, (), True, True),
    "no typo step": ({"correct_typos": False}, (), True, True),
    "no identifier signal": ({"identifier_weight": 0.0}, ("named",), True, True),
    "no lexical coverage in the score": ({"lexical_weight": 0.0}, (), True, True),
    **{f"no feature {name}": ({}, (name,), True, True) for name in FEATURES},
}
SHOWN = ("top1", "top3", "falseAbst", "abstain", "ece", "eceAll", "wrongAt95")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"comma-separated, from: {', '.join(VARIANTS)}"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    wanted = [v for v in args.variants.split(",") if v]
    unknown = [v for v in wanted if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; valid: {', '.join(VARIANTS)}")

    progress = Progress()
    encoder = EncodingCache(Encoder(), progress)
    catalog = get_catalog()
    records = capability_records(catalog)
    shipped = load_judge(vectors_dir() / JUDGE_FILE)
    if shipped is None:
        parser.error("no usable confidence model; fit one with build_scripts/prepare/fit_confidence.py")
    calibration = [
        {**q, "origin": querysets.get(name).origin}
        for name in CALIBRATION_SETS
        for q in querysets.read_for_fit(name)["queries"]
    ]
    measured = {
        "selection (written)": [q for s in querysets.by_role("selection") for q in querysets.queries(s.name)],
        "calibration (real)": [
            q
            for s in querysets.by_role("calibration")
            if s.origin == "real"
            for q in querysets.queries(s.name)
        ],
    }

    out: dict[str, dict] = {}
    for name in wanted:
        changes, drop, head, agents = VARIANTS[name]
        progress.say(f"variant {name!r}")
        index = Index.from_records(
            records,
            vectors=vectors_dir() / VECTOR_FILE,
            encoder=encoder,
            out_of_scope=catalog.out_of_scope,
            tuning=replace(Tuning(), **changes),
        )
        neutral = shipped if head else replace(shipped, head=None)
        judge, _ = fit_calibration(index, neutral, calibration, progress, drop=drop, agents=agents)
        judge = replace(judge, alias_confidence=shipped.alias_confidence)
        judge, _, _ = with_answer_threshold(index, judge, calibration, progress, agents=agents)
        out[name] = {"answerAt": judge.answer_at}
        for group, queries in measured.items():
            m = metrics(run_queries(index, queries, agents=agents))
            out[name][group] = {key: m[key] for key in SHOWN}

    w = sys.stdout.write
    for group in measured:
        w(f"\n{group}\n")
        w(f"{'variant':34} {'answerAt':>8} " + " ".join(f"{k:>9}" for k in SHOWN) + "\n")
        for name, figures in out.items():
            m = figures[group]
            w(
                f"{name:34} {figures['answerAt']:8.2f} "
                + " ".join(f"{m[k]:9d}" if isinstance(m[k], int) else f"{m[k]:9.3f}" for k in SHOWN)
                + "\n"
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
