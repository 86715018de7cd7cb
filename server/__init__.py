"""agent-capabilities MCP server: ``python -m server`` or ``agent-capabilities-mcp``."""

from __future__ import annotations

import argparse
import logging
import os
import sys

TOKEN_ENV = "AGENT_CAPABILITIES_TOKEN"


def main(argv: list[str] | None = None) -> int:
    """Serve stdio (default) or streamable HTTP. Logs go to stderr; stdout is the protocol's."""
    parser = argparse.ArgumentParser(
        prog="agent-capabilities-mcp",
        description="MCP server answering what coding agents can do, with setup notes and sources.",
    )
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="extra Host header value to accept over HTTP (DNS-rebinding protection is on)",
    )
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")

    from .server import build_server, http_app

    server = build_server()
    if args.transport == "stdio":
        server.run("stdio")
        return 0

    import uvicorn

    token = os.environ.get(TOKEN_ENV) or None
    if args.host not in ("127.0.0.1", "localhost", "::1") and not token:
        logging.getLogger("server").warning(
            "serving on %s without %s set: anyone who can reach this port can call the tools",
            args.host,
            TOKEN_ENV,
        )
    app = http_app(server, host=args.host, port=args.port, token=token, allowed_hosts=args.allow_host)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower())
    return 0
