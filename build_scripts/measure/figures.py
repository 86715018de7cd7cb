"""The figures in README.md and docs/*.md, written from the commands that measure them, and checked for drift.

    python build_scripts/measure/figures.py --evaluate   # run evaluate.py, save docs/figures/evaluate.json
    python build_scripts/measure/figures.py --latency    # run bench_latency.py, save latency.json
    python build_scripts/measure/figures.py --startup    # run bench_server.py, save startup.json
    python build_scripts/measure/figures.py              # rewrite the marked blocks from the saved figures
    python build_scripts/measure/figures.py --check      # exit 1 when a block differs from its figures

A block is the text between ``<!-- figures:NAME -->`` and ``<!-- /figures:NAME -->``.
Its content is rendered from the saved JSON of the command that measured it
(``docs/figures/*.json``) or from the catalog itself, never typed by hand, so a
figure cannot change without the command that made it. ``tests/prepare/test_figures.py``
runs ``--check`` and re-measures one held-out set to catch a stale JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FIGURES = ROOT / "docs" / "figures"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- figures:([\w-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.S)


def _num(value: float, digits: int = 3) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return "" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def agents_table() -> str:
    """Every covered agent with the evidence its facts rest on and the docs snapshot's date."""
    from engine import get_catalog

    catalog = get_catalog()
    rows = ["| agent | id | evidence | docs snapshot | available of capabilities |", "|---|---|---|---|---|"]
    for agent in catalog.agents.values():
        snap = agent.docs_snapshot
        where = f"`{snap['repo']}`" if "repo" in snap else snap["site"]
        have = sum(r["available"] for r in agent.records.values())
        rows.append(
            f"| {agent.display_name} | `{agent.id}` | {agent.evidence_kind} ({where}) | {snap['date']} "
            f"| {have} of {len(agent.records)} |"
        )
    return "\n".join(rows) + "\n"


def catalog_counts() -> str:
    from engine import get_catalog
    from engine.catalog.uncovered import load_uncovered

    catalog = get_catalog()
    records = sum(len(a.records) for a in catalog.agents.values())
    sources = sum(len(r["sources"]) for a in catalog.agents.values() for r in a.records.values())
    uncovered = len({a.id for a in load_uncovered().values()})
    return (
        f"{len(catalog.agents)} agents, {len(catalog.capabilities)} capabilities, {records} records, "
        f"{sources} cited sources, {len(catalog.aliases)} aliases; "
        f"{uncovered} agents known but not covered.\n"
    )


def _quality_row(label: str, m: dict) -> str:
    return (
        f"| {label} | {m['queries']} | {_num(m['top1'])} | {_num(m['top3'])} | {_num(m['abstain'])} "
        f"| {_pct(m['falseAbst'])} | {_num(m['ece'])} | {m['wrongAt95']} |"
    )


QUALITY_HEADER = [
    "| set | queries | top-1 | top-3 | abstention | answerable, no answer | ECE | wrong at ≥ 0.95 |",
    "|---|---|---|---|---|---|---|---|",
]


def quality_summary(doc: dict) -> str:
    """Pooled figures per role and origin: the held-out rows are the ones to read."""
    order = ["held-out (real)", "held-out (written)", "selection (written)", "calibration (real)"]
    order += ["calibration (written)", "training (real)", "training (written)", "own (written)"]
    rows = list(QUALITY_HEADER)
    for group in order:
        if group in doc["groups"]:
            m = doc["groups"][group]
            rows.append(_quality_row(f"{group}, {len(m['sets'])} set(s)", m))
    return "\n".join(rows) + "\n"


def quality_full(doc: dict) -> str:
    """One row per labelled set, for the shipped variant."""
    from build_scripts import querysets

    shipped = doc["shipped"]
    rows = list(QUALITY_HEADER)
    for s in querysets.by_role(*querysets.LABELLED_ROLES):
        if s.name in doc["sets"]:
            rows.append(_quality_row(f"{s.name} ({s.role}, {s.origin})", doc["sets"][s.name][shipped]))
    return "\n".join(rows) + "\n"


def targets(doc: dict) -> str:
    from build_scripts.measure import evaluate

    shipped = doc["shipped"]
    held = [n for n, per in doc["sets"].items() if per[shipped].get("role") == "held-out"]
    lines = []
    met = [n for n in held if not evaluate.missed_targets(doc["sets"][n][shipped])]
    lines.append(f"- Issue 9 targets: {len(met)} of {len(held)} held-out sets meet every one.")
    for n in held:
        missed = evaluate.missed_targets(doc["sets"][n][shipped])
        if missed:
            lines.append(f"  - {n} misses {', '.join(missed)}.")
    real = doc["groups"].get("held-out (real)")
    if real:
        missed = evaluate.missed_targets(real, evaluate.REAL_TARGETS)
        said = "all met" if not missed else "missed: " + ", ".join(missed)
        lines.append(f"- Issue 20 targets on the real held-out text: {said}.")
    return "\n".join(lines) + "\n"


def peer(doc: dict) -> str:
    m = doc["peer"][doc["shipped"]]
    return (
        "| | R@1 | R@5 | MRR | nDCG@10 |\n|---|---|---|---|---|\n"
        f"| mcpproxy BM25 (its published figures) | | | 0.568 | 0.609 |\n"
        f"| this engine, no aliases, no confidence model | {_num(m['R@1'])} | {_num(m['R@5'])} "
        f"| {_num(m['MRR'])} | {_num(m['nDCG@10'])} |\n"
    )


def _load(doc: dict) -> str:
    if "load" not in doc:
        return "load not recorded"
    start, end = doc["load"]
    return f"1-min load {start:.1f} → {end:.1f}"


def speed(latency: dict, startup: dict | None) -> str:
    """Ratios measured in one run first (they hold on a busy machine), then absolute times with their load."""
    rows = ["| measure | figure | how |", "|---|---|---|"]
    for label, value in latency.get("facts", []):
        if value.endswith("x faster"):
            rows.append(f"| {label} | {value} | same queries, same run ({_load(latency)}) |")
    if startup:
        ours, floor = startup["firstCall"]["ours"], startup["firstCall"]["floor"]
        rows.append(
            f"| stdio spawn → first tool answer, against a one-tool SDK server | {ours / floor:.2f}x "
            f"| alternating runs ({_load(startup)}) |"
        )
        if "encoderFloor" in startup["firstCall"]:
            rows.append(
                f"| the same, against that server embedding its argument with the encoder "
                f"| {ours / startup['firstCall']['encoderFloor']:.2f}x | same runs |"
            )
    rows += ["", f"Absolute times, {_load(latency)} on 2 cores:", "", "| path | p50 | p95 |", "|---|---|---|"]
    for label, p50, p95 in latency["rows"]:
        rows.append(f"| {label} | {p50:.2f} ms | {p95:.2f} ms |")
    for label, value in latency.get("facts", []):
        if not value.endswith("x faster"):
            rows.append(f"| {label} | {value} | |")
    if startup:
        rows.append(
            f"| stdio spawn → first tool answer (SDK floor) | {startup['firstCall']['ours']:.2f} s "
            f"({startup['firstCall']['floor']:.2f} s) | {_load(startup)} |"
        )
    return "\n".join(rows) + "\n"


def render(name: str) -> str:
    """The content of block ``name``."""
    if name == "agents":
        return agents_table()
    if name == "catalog-counts":
        return catalog_counts()
    if name in {"quality-summary", "quality-full", "targets", "peer"}:
        doc = json.loads((FIGURES / "evaluate.json").read_text(encoding="utf-8"))
        return {
            "quality-summary": quality_summary,
            "quality-full": quality_full,
            "targets": targets,
            "peer": peer,
        }[name](doc)
    if name == "speed":
        startup = FIGURES / "startup.json"
        return speed(
            json.loads((FIGURES / "latency.json").read_text(encoding="utf-8")),
            json.loads(startup.read_text(encoding="utf-8")) if startup.exists() else None,
        )
    raise SystemExit(
        f"unknown figures block '{name}'; known: agents, catalog-counts, quality-*, targets, peer, speed"
    )


def rewrite(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group(2)) + m.group(4), text)


def stale_blocks() -> list[str]:
    """'file: block' for every block whose text differs from what its figures render."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            if m.group(3) != render(m.group(2)):
                out.append(f"{page.relative_to(ROOT)}: {m.group(2)}")
    return out


def run_evaluate() -> None:
    """evaluate.py on every labelled set, shipped variant only; the JSON keeps figures, not the misses."""
    from build_scripts import querysets

    raw = FIGURES / "evaluate.raw.json"
    subprocess.run(
        [sys.executable, str(ROOT / "build_scripts/measure/evaluate.py"), "--no-v1", "--json", str(raw)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    doc = json.loads(raw.read_text())
    raw.unlink()
    shipped = next(iter(next(iter(doc["sets"].values()))))
    keep = ("queries", "answerable", "top1", "top3", "mrr", "short", "long", "abstain", "falseAbst", "ece")
    slim = {
        "shipped": shipped,
        "sets": {
            name: {
                shipped: {
                    **{k: per[shipped][k] for k in (*keep, "wrongAt95", "eceAll", "wrongAt95Per500")},
                    "role": querysets.get(name).role,
                }
            }
            for name, per in doc["sets"].items()
        },
        "groups": {
            g: {**{k: m[k] for k in (*keep, "wrongAt95", "eceAll", "wrongAt95Per500")}, "sets": m["sets"]}
            for g, m in doc["groups"].items()
        },
        "peer": {shipped: doc["peer"][shipped]},
    }
    (FIGURES / "evaluate.json").write_text(json.dumps(slim, indent=1, default=float) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluate", action="store_true", help="re-run evaluate.py first (a few minutes)")
    parser.add_argument("--latency", action="store_true", help="re-run bench_latency.py first")
    parser.add_argument("--startup", action="store_true", help="re-run bench_server.py first")
    parser.add_argument("--check", action="store_true", help="only report blocks that differ; exit 1 if any")
    args = parser.parse_args(argv)
    FIGURES.mkdir(parents=True, exist_ok=True)
    if args.evaluate:
        run_evaluate()
    if args.latency:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "build_scripts/measure/bench_latency.py"),
                "--json",
                str(FIGURES / "latency.json"),
            ],
            check=True,
        )
    if args.startup:
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "build_scripts/measure/bench_server.py"),
                "--json",
                str(FIGURES / "startup.json"),
            ],
            check=True,
        )
    if args.check:
        stale = stale_blocks()
        for line in stale:
            print(f"stale figures: {line} (run python build_scripts/measure/figures.py)")
        return 1 if stale else 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"updated {page.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
