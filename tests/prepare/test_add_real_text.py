"""Adding a harvest of real text: split by thread, never twice, never into two roles."""

from __future__ import annotations

import json

from build_scripts.prepare import add_real_text


def test_a_harvest_is_split_by_thread_and_a_used_thread_or_text_is_skipped(tmp_path, monkeypatch):
    sets = {role: tmp_path / f"{role}.json" for role in add_real_text.SETS}
    used = {"query": "old text", "expected": None, "kind": "real-issue-title", "agent": "codex", "url": "u/0"}
    for role, path in sets.items():
        path.write_text(json.dumps({"about": role, "queries": [used] if role == "training" else []}))
    monkeypatch.setattr(add_real_text, "SETS", sets)
    items = [
        {
            "text": f"text {n}",
            "expected": "MCP Support",
            "agent": "codex",
            "url": f"u/{n // 2}",
            "kind": "issue-title",
        }
        for n in range(1, 200)
    ]
    items.append(
        {"text": "old text", "expected": "none", "agent": "codex", "url": "u/new", "kind": "issue-title"}
    )
    items.append(
        {
            "text": "made up",
            "expected": "Teleportation",
            "agent": "codex",
            "url": "u/x",
            "kind": "issue-title",
        }
    )
    harvest = tmp_path / "part.json"
    harvest.write_text(json.dumps({"about": "test", "items": items}))
    assert add_real_text.main([str(harvest)]) == 0
    roles = {role: json.loads(path.read_text())["queries"] for role, path in sets.items()}
    where: dict[str, set[str]] = {}
    for role, queries in roles.items():
        for q in queries:
            where.setdefault(q["url"], set()).add(role)
    assert all(len(r) == 1 for r in where.values())  # no thread feeds two roles
    assert where["u/0"] == {"training"} and len(roles["training"]) > 1  # the used thread took nothing new
    texts = [q["query"] for queries in roles.values() for q in queries]
    assert texts.count("old text") == 1 and "made up" not in texts and "text 1" not in texts
    assert all(len(queries) > 20 for queries in roles.values())  # ~40/25/35 of 99 threads
    # A rerun adds nothing: every thread is now known.
    assert add_real_text.main([str(harvest)]) == 0
    assert {role: json.loads(path.read_text())["queries"] for role, path in sets.items()} == roles
