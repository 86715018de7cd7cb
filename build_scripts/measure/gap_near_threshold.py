"""How near a miss's nearest capability is, for misses that have an answer and for ones that should have none.

    python build_scripts/measure/gap_near_threshold.py

Reads the selection and calibration sets (never the held-out ones). For every question the engine
answers with a miss (no match, or confidence below 0.5), it takes the nearest candidate's confidence
and prints, per threshold, the share of misses on answerable questions at or above it (a wording
problem the gap report should call "near") against the share of misses on should-match-nothing
questions at or above it (new needs it would wrongly call "near"). Chose
``engine.gaps.report.NEAR_CONFIDENCE``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from build_scripts import querysets  # noqa: E402
from engine.gaps.requests import is_miss  # noqa: E402

THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def nearest_of_misses(roles: tuple[str, ...]) -> tuple[list[float], list[float]]:
    """Nearest-candidate confidences of the misses: (answerable questions, should-match-nothing ones)."""
    answerable, nothing = [], []
    for queryset in querysets.by_role(*roles):
        for item in querysets.queries(queryset.name):
            result = engine.match(item["query"], k=1)
            if is_miss(result):
                top = result.candidates[0].confidence if result.candidates else 0.0
                (answerable if item.get("expected") else nothing).append(top)
    return answerable, nothing


def main() -> int:
    """Print the shares per threshold."""
    answerable, nothing = nearest_of_misses(("selection", "calibration"))
    print(f"misses: {len(answerable)} on answerable questions, {len(nothing)} on should-match-nothing ones")
    for t in THRESHOLDS:
        a = sum(c >= t for c in answerable)
        n = sum(c >= t for c in nothing)
        print(
            f"  nearest >= {t:.2f}: answerable {a}/{len(answerable)} ({a / len(answerable):.1%}), "
            f"should-match-nothing {n}/{len(nothing)} ({n / len(nothing):.1%})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
