"""Where the precomputed vectors and the runtime encoder live, in a checkout or an install.

A source checkout keeps them in the top-level ``vectors/`` folder; a wheel
carries the same folder as ``engine/_vectors``. ``AGENT_CAPABILITIES_VECTORS``
points elsewhere (used by tests to simulate missing or corrupt files).
"""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent.parent  # the engine package


def vectors_dir() -> Path:
    """The directory holding ``capability-vectors.json`` and ``encoder/``."""
    override = os.environ.get("AGENT_CAPABILITIES_VECTORS")
    if override:
        return Path(override)
    installed = _HERE / "_vectors"
    if installed.is_dir():
        return installed
    return _HERE.parent / "vectors"
