"""Seed a temporary gap log with a realistic mix of requests and misses, print the report, check it.

    python build_scripts/prepare/seed_gaps_demo.py               # temporary database, removed afterwards
    python build_scripts/prepare/seed_gaps_demo.py --db gaps.sqlite3 --json

About 200 events over three weeks: eight needs phrased several ways by
several agents (three of them catalog capabilities that some agents lack),
plus one-off needs as background noise. Requests go through
``engine.gaps.requests.request_capability`` (real classification); silent misses are
written with ``GapLog.record_miss`` and the matcher's real nearest names,
as the server would after a lookup that found nothing. Exits 1 unless the
report's top gaps are the seeded needs (see ``check`` for exactly what is
required).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.catalog.lookup import match  # noqa: E402
from engine.gaps.log import GapLog, normalize  # noqa: E402
from engine.gaps.report import format_report, gap_report  # noqa: E402
from engine.gaps.requests import request_capability  # noqa: E402

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAYS = 21
# The seeded needs and the background noise are data, not code: seed_gaps_demo.json beside this script.
_DATA = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
AGENTS = _DATA["agents"]
# need, phrasings, agents asking, requests, misses, expected classification (None: not checked)
NEEDS = [
    (
        n["need"],
        n["phrasings"],
        n["agents"],
        n["requests"],
        n["misses"],
        tuple(n["expected"]) if n["expected"] else None,
    )
    for n in _DATA["needs"]
]
# One-off needs: each asked once or missed once or twice, never enough to outrank a seeded need.
NOISE = _DATA["noise"]
TOOLS = ["lookup_capability", "compare_capability", "get_sources"]


class _Clock:
    """A settable clock, so events spread over three weeks instead of one second."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def _miss(log: GapLog, rng: random.Random, phrasing: str, agent: str | None) -> None:
    tool = rng.choice(TOOLS) if agent else "compare_capability"
    nearest = [{"name": c.name, "matchConfidence": c.confidence} for c in match(phrasing, k=3).candidates]
    log.record_miss(phrasing, tool=tool, agent=agent, nearest=nearest)


def seed(log: GapLog, clock: _Clock, rng: random.Random) -> int:
    """Write every seeded event in time order; returns the number of events."""
    events = []
    for need, phrasings, agents, requests, misses, _ in NEEDS:
        for kind, n in (("request", requests), ("miss", misses)):
            for _ in range(n):
                events.append((need, kind, rng.choice(phrasings), rng.choice(agents)))
    for phrasing in NOISE:
        kind = rng.choice(["request", "miss"])
        for _ in range(1 if kind == "request" else rng.choice([1, 2])):
            events.append(("noise", kind, phrasing, rng.choice([*AGENTS, None])))
    times = sorted(rng.uniform(START, START + DAYS * 86400) for _ in events)
    rng.shuffle(events)
    for when, (_, kind, phrasing, agent) in zip(times, events, strict=True):
        clock.now = when
        if kind == "request":
            context = "the user asked for this while working" if rng.random() < 0.3 else None
            request_capability(log, phrasing, agent, context)
        else:
            _miss(log, rng, phrasing, agent if rng.random() < 0.7 else None)
    return len(events)


def check(report: dict) -> tuple[list[str], list[str]]:
    """Problems with the top gaps (empty when they are the seeded needs) and misplaced phrasings.

    The top ``len(NEEDS)`` gaps must each stand for a seeded need (by their
    representative phrasing), the heaviest need must rank first, every
    seeded need must be among the top ``len(NEEDS) + 2`` (a need may split in
    two), gaps of needs that some agents lack must say so, and at least 80%
    of the phrasings shown in the top gaps must belong to the gap's need.
    MiniLM merges some look-alikes ("ghost text suggestions" with "speech to
    text for prompts"); those are listed, not failed, up to that bound.
    """
    owner = {normalize(p): need for need, phrasings, *_ in NEEDS for p in phrasings}
    expected = {n[0]: n for n in NEEDS}
    heaviest = max(NEEDS, key=lambda n: 3 * n[3] + n[4])[0]
    problems, misplaced = [], []
    gaps = report["gaps"][: len(NEEDS) + 2]
    needs = [owner.get(normalize(g["representative"]), "noise") for g in gaps]
    for gap, need in zip(gaps[: len(NEEDS)], needs, strict=False):
        if need == "noise":
            problems.append(f"gap {gap['rank']} ({gap['representative']!r}) is not a seeded need")
    if needs and needs[0] != heaviest:
        problems.append(f"gap 1 is {needs[0]!r}, expected the heaviest need {heaviest!r}")
    for name in sorted(set(expected) - set(needs)):
        problems.append(f"seeded need {name!r} is not among the top {len(gaps)} gaps")
    shown = right = 0
    for gap, need in zip(gaps, needs, strict=True):
        for phrasing in [gap["representative"], *gap["examples"]]:
            shown += 1
            if owner.get(normalize(phrasing), "noise") == need:
                right += 1
            else:
                misplaced.append(f"gap {gap['rank']} ({need}) also holds {phrasing!r}")
        kind = expected[need][5] if need in expected else None
        got = gap["classification"]
        if kind is not None and (got["kind"] != kind[0] or (kind[1] and got.get("capability") != kind[1])):
            problems.append(f"gap {gap['rank']} ({need}) is classified {got['label']!r}, expected {kind}")
    if shown and right / shown < 0.8:
        problems.append(f"only {right} of {shown} phrasings shown in the top gaps belong to their gap")
    return problems, misplaced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="keep the database here (default: a temporary file)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--seed", type=int, default=10, help="random seed (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "gaps.sqlite3"
        if path.exists():
            parser.error(f"{path} exists; the demo only writes to a new database")
        clock = _Clock()
        with GapLog(path, enabled=True, clock=clock, rate_limit=None) as log:
            events = seed(log, clock, random.Random(args.seed))
            report = gap_report(log, top=len(NEEDS) + 4)
        print(json.dumps(report, indent=2) if args.json else format_report(report))
        problems, misplaced = check(report)
    where = path if args.db else "a temporary database (removed)"
    print(f"\nseeded {events} events ({len(NEEDS)} needs + {len(NOISE)} one-off needs) into {where}")
    for line in misplaced:
        print(f"grouping slip: {line}")
    for problem in problems:
        print(f"FAIL: {problem}")
    if not problems:
        print(f"OK: the top {len(NEEDS)} gaps are the seeded needs")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
