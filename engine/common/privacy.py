"""Keep third-party libraries from reporting home: nothing this package runs may leave the machine.

onnxruntime 1.32 ships Microsoft's 1DS telemetry. Unless ``ORT_DISABLE_TELEMETRY`` is set before
the library loads, every process that opens a session keeps an event queue (a device id, the CPU,
the Python path) under ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` and resolves Microsoft's
collector host. ``onnxruntime.disable_telemetry_events()`` and ``DO_NOT_TRACK`` stop neither
(audit 2026-11-28, D1), so the variable is set when ``engine`` is imported, before any import of
onnxruntime, for the library, the CLI and the server alike.
"""

from __future__ import annotations

import os

# Variables that switch off a dependency's telemetry; each is read when that dependency loads.
OPT_OUTS = {"ORT_DISABLE_TELEMETRY": "1"}


def disable_telemetry() -> None:
    """Set every opt-out, overriding a value that would turn telemetry back on.

    A process that imported onnxruntime before ``engine`` has already started its telemetry;
    that is the host program's choice and cannot be undone from here.
    """
    os.environ.update(OPT_OUTS)
