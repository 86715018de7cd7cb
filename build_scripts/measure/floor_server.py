"""The floor for start-up: a one-tool stdio server on the same ``mcp`` SDK, spawned the same way.

``bench_server.py`` times it beside ours in one run, so the ratio holds whatever the machine's load.
"""

from mcp.server import MCPServer

server = MCPServer("floor")


@server.tool()
def echo(text: str) -> str:
    """Return the text: the least a tool can do, so the time is the SDK's own."""
    return text


if __name__ == "__main__":
    server.run()
