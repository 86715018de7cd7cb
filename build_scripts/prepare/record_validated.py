"""Validate every catalog data file in full and list the digests that passed (``validated.json``).

The engine skips JSON Schema validation for a file whose bytes, with its
schema's bytes, match a digest in ``engine/data/validated.json``; that saves
about half a second of every cold start. Run this after editing any data or
schema file (``tests/catalog/test_validated.py`` fails until you do). It writes
nothing when a file has a problem, so the list only names files that passed.
``--check`` reports whether the list is current without writing it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.catalog import schema  # noqa: E402
from engine.catalog.model import DATA_DIR, load_catalog  # noqa: E402
from engine.catalog.uncovered import load_uncovered  # noqa: E402
from engine.errors import CatalogError  # noqa: E402


def digests(data_dir: Path) -> list[str]:
    """Load the catalog with every file validated in full; the digests of the files that passed."""
    schema.trust_recorded = False
    schema.passed_in_full.clear()
    try:
        load_catalog(data_dir)
        load_uncovered.__wrapped__(data_dir)
    finally:
        schema.trust_recorded = True
    return sorted(schema.passed_in_full)


def render(found: list[str]) -> str:
    doc = {
        "about": "sha256 of (schema bytes, NUL, data file bytes) for files that passed JSON Schema "
        "validation in full; written by build_scripts/prepare/record_validated.py",
        "sha256": found,
    }
    return json.dumps(doc, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA_DIR, help="catalog data folder")
    parser.add_argument("--check", action="store_true", help="report whether the list is current")
    args = parser.parse_args(argv)
    try:
        found = digests(args.data)
    except CatalogError as exc:
        print(f"record_validated: not written: {exc}", file=sys.stderr)
        return 1
    target = args.data / schema.VALIDATED_FILE
    text = render(found)
    current = target.is_file() and target.read_text(encoding="utf-8") == text
    if args.check:
        print(f"{target}: {'current' if current else 'stale; run build_scripts/prepare/record_validated.py'}")
        return 0 if current else 1
    if not current:
        target.write_text(text, encoding="utf-8")
    print(f"{target}: {len(found)} files listed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
