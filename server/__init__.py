"""agent-capabilities MCP server: ``python -m server`` or ``agent-capabilities-mcp``."""

from __future__ import annotations

import argparse
import logging
import os
import sys

TOKEN_ENV = "AGENT_CAPABILITIES_TOKEN"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line instead of the whole usage text."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def option_names(self) -> list[str]:
        return sorted(self._option_string_actions)  # noqa: SLF001 - argparse offers no public list


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a port number; use 1-65535") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a valid port; use 1-65535")
    return value


TRANSPORTS = (
    "stdio",
    "streamable-http",
    "http",
)  # "http" is what Claude Code, Gemini CLI and Copilot CLI call it

ENVIRONMENT = """\
environment:
  AGENT_CAPABILITIES_TOKEN         over HTTP, require 'Authorization: Bearer <token>' on every request
  AGENT_CAPABILITIES_HTTP_TIMEOUT  seconds to receive a request head or body over HTTP (default 10)
  AGENT_CAPABILITIES_DB            the gap log file (default: gaps.sqlite3 in your user data folder)
  AGENT_CAPABILITIES_NO_LOG        1 records nothing, the same as --no-log
  AGENT_CAPABILITIES_VECTORS       a folder with another encoder and vector store (default: the installed one)
  AGENT_CAPABILITIES_CACHE         where file hashes are cached (default: your user cache folder)"""


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The server's options; ``--transport http`` is read as streamable-http."""
    from engine import package_version

    parser = _Parser(
        prog="agent-capabilities-mcp",
        description="MCP server answering what coding agents can do, with setup notes and sources.",
        epilog=(
            "examples:\n"
            "  agent-capabilities-mcp                                  # stdio, for a host that starts it\n"
            "  agent-capabilities-mcp --transport http --port 8000     # http://127.0.0.1:8000/mcp\n"
            "  AGENT_CAPABILITIES_TOKEN=secret agent-capabilities-mcp --transport http\n\n"
            f"{ENVIRONMENT}"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default="stdio",
        help="stdio (default), or streamable-http to serve http://HOST:PORT/mcp; http is the same",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="HTTP port (default 8000)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="another host name to accept in the Host and Origin headers over HTTP (repeatable)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="what to log on stderr (default WARNING)",
    )
    parser.add_argument(
        "--no-log",
        action="store_true",
        help="record nothing: no capability requests, no silent misses (same as AGENT_CAPABILITIES_NO_LOG=1)",
    )
    args, extras = parser.parse_known_args(argv)
    if extras:
        from engine.cli_args import unknown_option

        first = next((a for a in extras if a.startswith("-")), None)
        parser.error(
            unknown_option(first, parser.option_names()) if first else f"unexpected argument '{extras[0]}'"
        )
    if args.transport == "http":
        args.transport = "streamable-http"
    return args


def main(argv: list[str] | None = None) -> int:
    """Serve stdio (default) or streamable HTTP. Logs go to stderr; stdout is the protocol's."""
    args = parse_arguments(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")

    from engine import get_catalog
    from engine.errors import EngineError

    try:
        get_catalog()  # broken data: one clear line now, not a traceback after the handshake started
    except EngineError as exc:
        sys.stderr.write(f"agent-capabilities-mcp: cannot start: {exc}\n")
        return 1

    from engine.gaps.log import GapLog

    from .server import build_server

    server = build_server(GapLog(enabled=False) if args.no_log else None)
    if args.transport == "stdio":
        import anyio

        from .stdio import serve_stdio

        try:
            anyio.run(serve_stdio, server)
        except KeyboardInterrupt:
            pass
        _exit_now(0)
    return _serve_http(server, args)


def _exit_now(code: int) -> None:
    """Leave without interpreter teardown, once every answer is written and every gap-log write committed.

    onnxruntime's thread pool, created by the warm-up thread, can abort the
    process ("terminate called without an active exception") when it is
    destroyed during finalisation, for example when stdin closes while the
    encoder is still loading. Exiting here skips that teardown.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve_http(server, args) -> int:
    import uvicorn

    from .http import KEEP_ALIVE_TIMEOUT, BoundedH11Protocol, QuietShutdown, http_app, is_loopback

    token = os.environ.get(TOKEN_ENV) or None
    app = http_app(server, host=args.host, port=args.port, token=token, allowed_hosts=args.allow_host)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    if is_loopback(args.host):
        access = "loopback clients only"
    elif token:
        names = ", ".join(args.allow_host) or "none yet (add with --allow-host)"
        access = f"remote clients need the bearer token and an allowed Host: {names}"
    else:
        access = f"remote clients are refused until {TOKEN_ENV} is set; loopback clients only"
    sys.stderr.write(f"serving http://{shown}:{args.port}/mcp ({access})\n")
    sys.stderr.flush()
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        http=BoundedH11Protocol,
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        timeout_graceful_shutdown=2,
    )
    logging.getLogger("uvicorn.error").addFilter(QuietShutdown())
    code = 0
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass
    except (OSError, SystemExit) as exc:
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) and exc.code else 1
        sys.stderr.write(f"agent-capabilities-mcp: cannot serve on {args.host}:{args.port}: {exc}\n")
    _exit_now(code)
