"""The floors for start-up: a one-tool stdio server on the same ``mcp`` SDK, spawned the same way.

    python floor_server.py            # the tool returns its text: the SDK's own time
    python floor_server.py --encode   # the tool first embeds its text with the shipped ONNX encoder

``bench_server.py`` times both beside ours in one run, so the ratios hold whatever the machine's load. The
second is the least any server pays that answers a worded question with this encoder: numpy, onnxruntime and
tokenizers imported, the model opened, one sentence embedded.
"""

import sys

from mcp.server import MCPServer

ENCODE = "--encode" in sys.argv[1:]
server = MCPServer("floor")


@server.tool()
def echo(text: str) -> str:
    """Return the text: the least a tool can do, so the time is the SDK's own (and the encoder's)."""
    if ENCODE:
        from engine.matching.encoder import Encoder

        Encoder().encode([text])
    return text


if __name__ == "__main__":
    server.run()
