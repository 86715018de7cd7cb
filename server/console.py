"""The ``agent-capabilities`` console script: the command line, and ``agent-capabilities mcp`` for the server.

MCP Registry clients start a PyPI package as ``uvx <package> <arguments>``, which
runs the script named like the package, so ``agent-capabilities`` itself must be
able to start the server: ``agent-capabilities mcp [options]`` is
``agent-capabilities-mcp [options]``. Everything else goes to ``engine.cli``; the
server (and the MCP SDK) is imported only for ``mcp``, so commands stay as fast.
"""

from __future__ import annotations

import sys

SERVE = "mcp"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``agent-capabilities`` console script."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == [SERVE]:
        from . import main as serve

        return serve(args[1:])
    from engine.cli import main as cli

    return cli(args)
