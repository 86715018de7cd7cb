"""Build hook: the wheel carries ``vectors/`` as ``engine/_vectors``; an editable install copies nothing.

hatchling applies ``[tool.hatch.build.targets.wheel.force-include]`` to editable
wheels too (they add the forced files next to the ``.pth`` file), so a static
mapping made ``pip install -e .`` copy the encoder's weights into
``site-packages/engine/_vectors``, where nothing reads it: an editable install
imports ``engine`` from the checkout, and ``engine/common/paths.py`` then finds
the checkout's ``vectors/``. Adding the mapping here, for standard wheels only,
keeps the wheel identical and the editable install small.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

VECTORS = {"vectors": "engine/_vectors"}


class VectorsInWheelOnly(BuildHookInterface):
    """Map ``vectors/`` into the package for a standard wheel, never for an editable one."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"].update(VECTORS)
