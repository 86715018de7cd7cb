"""Nothing leaves the machine: no dependency keeps a telemetry store, whatever loads the encoder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.test_server_stdio import INIT, call_line

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORT_", "XDG_", "AGENT_CAPABILITIES_"))}
    env.update(HOME=str(home), AGENT_CAPABILITIES_NO_LOG="1", PYTHONPATH=str(ROOT))
    return env


def _library(home: Path) -> None:
    code = "import engine; m = engine.match('undo what the agent changed'); assert m.method == 'semantic', m"
    subprocess.run([sys.executable, "-c", code], env=_env(home), check=True, timeout=300, cwd=ROOT)


def _cli(home: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "engine", "match", "undo what the agent changed"],
        env=_env(home),
        check=True,
        timeout=300,
        cwd=ROOT,
        capture_output=True,
    )


def _server(home: Path) -> None:
    lines = [
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call_line(2, "lookup_capability", {"agent": "claude-code", "capability": "chekpoints"}),
    ]
    # stdin closes after the call, and the server answers it before it exits: the encoder is loaded by then.
    proc = subprocess.run(
        [sys.executable, "-m", "server"],
        env=_env(home),
        cwd=ROOT,
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert 2 in {json.loads(line).get("id") for line in proc.stdout.splitlines()}, proc.stderr


@pytest.mark.parametrize("entry_point", [_library, _cli, _server], ids=["library", "cli", "server"])
def test_loading_the_encoder_leaves_no_telemetry_store_in_the_home_directory(tmp_path, entry_point):
    entry_point(tmp_path)
    assert (tmp_path / ".cache" / "agent-capabilities").exists(), "the run did not get as far as the encoder"
    assert not (tmp_path / ".cache" / "Microsoft").exists(), sorted(
        str(p.relative_to(tmp_path)) for p in (tmp_path / ".cache").rglob("*")
    )
