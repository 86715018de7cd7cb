"""Add harvested real text to the three real sets, split by thread (``add_real_text.py PART.json ...``).

A harvest file holds ``{"about": ..., "items": [{"text", "expected", "agent", "url", "kind"}]}``
with ``expected`` a capability name or ``"none"``, labelled blind from the
capability names and summaries. Each item goes to training, calibration or
held-out by its thread URL alone (sha256 of the URL, read as a number in
[0, 100): below 40 training, below 65 calibration, else held-out), so every
thread feeds one part and a rerun puts each item where it put it before. A
thread already in any real set is skipped (the first harvest was split by an
earlier rule, so its threads stay where they are), and so is an exact text
already present.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETS = {
    "training": ROOT / "queries" / "training" / "real-training.json",
    "calibration": ROOT / "queries" / "calibration" / "real-calibration.json",
    "held-out": ROOT / "queries" / "held-out" / "real-held-out.json",
}


def part_of(url: str) -> str:
    share = int(hashlib.sha256(url.encode("utf-8")).hexdigest()[:8], 16) / 2**32 * 100
    return "training" if share < 40 else "calibration" if share < 65 else "held-out"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("harvests", nargs="+", type=Path)
    args = parser.parse_args(argv)
    canon = json.loads((ROOT / "engine" / "data" / "capabilities.json").read_text())
    capabilities = {c["name"] for c in canon["capabilities"]}
    docs = {role: json.loads(path.read_text()) for role, path in SETS.items()}
    threads = {q["url"]: role for role, doc in docs.items() for q in doc["queries"]}
    texts = {q["query"] for doc in docs.values() for q in doc["queries"]}
    added = dict.fromkeys(SETS, 0)
    for harvest in args.harvests:
        fresh_threads: dict[str, str] = {}
        for item in json.loads(harvest.read_text())["items"]:
            url, text = item["url"], item["text"].strip()
            if (url in threads and url not in fresh_threads) or text in texts:
                continue
            expected = None if item["expected"] == "none" else item["expected"]
            if expected is not None and expected not in capabilities:
                print(f"{harvest.name}: unknown capability {expected!r} ({url}); skipped", file=sys.stderr)
                continue
            role = part_of(url)
            threads[url] = fresh_threads[url] = role
            texts.add(text)
            kind = "real-" + item["kind"]
            docs[role]["queries"].append(
                {"query": text, "expected": expected, "kind": kind, "agent": item["agent"], "url": url}
            )
            added[role] += 1
    for role, path in SETS.items():
        path.write_text(json.dumps(docs[role], indent=1, ensure_ascii=False) + "\n")
    print("added " + ", ".join(f"{role} {n}" for role, n in added.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
