"""Every figure in the README and docs comes from a command: a hand edit or a stale measurement fails here."""

from __future__ import annotations

import json
import math

from build_scripts import querysets
from build_scripts.measure import evaluate, figures
from engine.catalog.lookup import JUDGE_FILE, VECTOR_FILE, capability_records
from engine.catalog.model import get_catalog
from engine.common.paths import vectors_dir
from engine.matching.index import Index
from engine.matching.judge import load_judge


def test_every_figures_block_matches_what_its_command_saved():
    assert figures.stale_blocks() == []


def test_the_readme_shows_the_quality_speed_and_agent_tables():
    text = (figures.ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("agents", "quality-summary", "targets", "speed", "catalog-counts"):
        assert f"<!-- figures:{name} -->" in text, name
    assert len(text.splitlines()) <= 300


def test_a_hand_edited_figure_is_caught():
    page = (figures.ROOT / "README.md").read_text(encoding="utf-8")
    # A table block: the edit below must land inside the block, whatever block comes first.
    block = next(m for m in figures.BLOCK.finditer(page) if "|" in m.group(3))
    edited = page.replace(block.group(3), block.group(3).replace("|", "| 9", 1), 1)
    assert edited != page
    assert figures.rewrite(edited) == figures.rewrite(page) != edited


def test_the_saved_evaluation_is_what_the_shipped_model_measures_today():
    # Re-measure the smallest held-out set; a refit, a data change or a matcher change without
    # `figures.py --evaluate` leaves the saved figures behind and fails here.
    saved = json.loads((figures.FIGURES / "evaluate.json").read_text(encoding="utf-8"))
    held = [s for s in querysets.by_role("held-out") if s.name in saved["sets"]]
    smallest = min(held, key=lambda s: s.size)
    catalog = get_catalog()
    index = Index.from_records(
        capability_records(catalog),
        vectors=vectors_dir() / VECTOR_FILE,
        out_of_scope=catalog.out_of_scope,
        judge=load_judge(vectors_dir() / JUDGE_FILE),
    )
    now = evaluate.metrics(evaluate.run_queries(index, querysets.queries(smallest.name)))
    then = saved["sets"][smallest.name][saved["shipped"]]
    for key in ("top1", "top3", "abstain", "falseAbst", "ece", "wrongAt95"):
        assert (math.isnan(now[key]) and math.isnan(then[key])) or abs(now[key] - then[key]) < 1e-9, key


def test_the_speed_block_leads_with_ratios_and_states_the_load_of_its_absolute_times():
    latency = {
        "load": [3.8, 4.1],
        "rows": [["semantic (engine.match)", 5.8, 9.2]],
        "facts": [
            ["semantic p50 vs sentence-transformers encode + cosine", "6.1x faster"],
            ["cold start", "1.00 s"],
        ],
    }
    startup = {"load": [0.4, 0.6], "firstCall": {"ours": 0.9, "floor": 0.75}}
    text = figures.speed(latency, startup)
    lines = text.splitlines()
    ratio_row = next(i for i, line in enumerate(lines) if "6.1x faster" in line)
    absolute_row = next(i for i, line in enumerate(lines) if "5.80 ms" in line)
    assert ratio_row < absolute_row
    assert "1.20x" in text
    assert "1-min load 3.8 → 4.1" in text and "1-min load 0.4 → 0.6" in text
