"""agent-capabilities MCP server: ``python -m server`` or ``agent-capabilities-mcp``."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import NoReturn

TOKEN_ENV = "AGENT_CAPABILITIES_TOKEN"
MIN_TOKEN_CHARS = 16
ENVIRONMENT = """\
environment variables:
  AGENT_CAPABILITIES_TOKEN         bearer token every HTTP client must send; required with a --host
                                   that is not loopback; at least 16 characters
  AGENT_CAPABILITIES_DB            the gap log: a SQLite file (default: the user data directory), or
                                   postgresql://USER:PASSWORD@HOST:PORT/DB, one log shared by replicas
                                   (needs: pip install 'agent-capabilities[postgres]')
  AGENT_CAPABILITIES_NO_LOG        1: record nothing (same as --no-log)
  AGENT_CAPABILITIES_HTTP_TIMEOUT  seconds a request head or body may take to arrive (default 10)
  AGENT_CAPABILITIES_CACHE         directory for the model-file hash cache (default: the user cache directory)
  AGENT_CAPABILITIES_VECTORS       directory of the encoder and vectors (default: the installed ones)
"""


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


def _allowed_host(text: str) -> str:
    from .http import parse_allowed_host

    try:
        parse_allowed_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


TRANSPORTS = (
    "stdio",
    "streamable-http",
    "http",
)  # "http" is what Claude Code, Gemini CLI and Copilot CLI call it


def main(argv: list[str] | None = None) -> int:
    """Serve stdio (default) or streamable HTTP. Logs go to stderr; stdout is the protocol's."""
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while still starting: nothing to save yet, and no traceback
        return 130


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
            "  AGENT_CAPABILITIES_TOKEN=$(openssl rand -hex 32) agent-capabilities-mcp --transport http\n\n"
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
        type=_allowed_host,
        metavar="HOST[:PORT]",
        help="another host to accept in the Host and Origin headers over HTTP (repeatable); "
        "without a port it is accepted on the server's port and on 80/443 (behind a proxy)",
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


def _main(argv: list[str] | None) -> int:
    args = parse_arguments(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    token_problem = _token_problem(os.environ.get(TOKEN_ENV))
    if args.transport != "stdio" and token_problem:
        sys.stderr.write(f"agent-capabilities-mcp: refusing to start: {token_problem}\n")
        return 2
    if args.transport != "stdio" and not os.environ.get(TOKEN_ENV):
        from .http import is_loopback

        if not is_loopback(args.host):
            # Off loopback every client is remote, and remote clients need the token: without one the
            # server could only refuse them all. Say so now, not in a 403 to each client.
            sys.stderr.write(
                f"agent-capabilities-mcp: refusing to serve on {args.host} without a token: set {TOKEN_ENV} "
                "(clients then send 'Authorization: Bearer <token>'), or serve on 127.0.0.1\n"
            )
            return 2

    from engine import get_catalog
    from engine.errors import EngineError, GapLogError

    try:
        get_catalog()  # broken data: one clear line now, not a traceback after the handshake started
    except EngineError as exc:
        sys.stderr.write(f"agent-capabilities-mcp: cannot start: {exc}\n")
        return 1

    from engine.gaps.log import GapLog

    from .server import build_server

    try:
        gap_log = GapLog(enabled=False) if args.no_log else GapLog()
    except GapLogError as exc:  # a postgresql:// URL without psycopg: one line, not a traceback
        sys.stderr.write(f"agent-capabilities-mcp: cannot start: {exc}\n")
        return 1
    server = build_server(gap_log)
    if args.transport == "stdio":
        import anyio

        from .stdio import serve_stdio

        try:
            anyio.run(serve_stdio, server, lambda signum: _finish(gap_log, 0))
        except KeyboardInterrupt:
            pass
        _finish(gap_log, 0)
    return _serve_http(server, args, gap_log)


def _token_problem(token: str | None) -> str | None:
    """Why the token cannot be used, or None (also when there is none: loopback needs none).

    A blank token locks every client out without saying why, and a short one
    can be guessed; both are set by mistake, so they stop the start with one line.
    """
    if token is None:
        return None
    if not token.strip():
        return (
            f"{TOKEN_ENV} is set but blank; unset it, or set a random value such as $(openssl rand -hex 32)"
        )
    if len(token.strip()) < MIN_TOKEN_CHARS:
        return (
            f"{TOKEN_ENV} is {len(token.strip())} characters long; use at least {MIN_TOKEN_CHARS}, "
            "such as $(openssl rand -hex 32)"
        )
    return None


def _finish(gap_log, code: int) -> NoReturn:
    """End the process on every exit path: the gap log's rows folded into its file, then ``_exit_now``.

    Without the close, rows stay in ``gaps.sqlite3-wal`` after exit and a copy
    of the database file alone has none of them.
    """
    try:
        gap_log.close()
    except Exception as exc:  # noqa: BLE001 - the rows are safe in the WAL; exiting matters more
        logging.getLogger("server").warning("gap log not closed cleanly: %s", exc)
    _exit_now(code)


def _exit_now(code: int) -> NoReturn:
    """Leave without interpreter teardown, once every answer is written and every gap-log write committed.

    onnxruntime's thread pool, created by the warm-up thread, can abort the
    process ("terminate called without an active exception") when it is
    destroyed during finalisation, for example when stdin closes while the
    encoder is still loading. Exiting here skips that teardown.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _serve_http(server, args, gap_log) -> int:
    import uvicorn

    from .http import (
        KEEP_ALIVE_TIMEOUT,
        AnnouncingServer,
        BoundedH11Protocol,
        QuietShutdown,
        bind_error,
        http_app,
        is_loopback,
        listen,
    )

    token = (os.environ.get(TOKEN_ENV) or "").strip() or None  # clients' values are compared stripped too
    app = http_app(server, host=args.host, port=args.port, token=token, allowed_hosts=args.allow_host)
    try:
        sockets = listen(args.host, args.port)  # a port in use is one line, before anything says "serving"
    except OSError as exc:
        sys.stderr.write(f"agent-capabilities-mcp: {bind_error(exc, args.host, args.port)}\n")
        _finish(gap_log, 1)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    if is_loopback(args.host):
        access = "loopback clients only" + (f"; they need the bearer token ({TOKEN_ENV})" if token else "")
    else:  # _main refused to get here without a token
        names = ", ".join(args.allow_host) or "none yet (add with --allow-host)"
        access = f"remote clients need the bearer token and an allowed Host: {names}"

    def announce() -> None:
        sys.stderr.write(f"serving http://{shown}:{args.port}/mcp ({access})\n")
        sys.stderr.flush()

    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        http=BoundedH11Protocol,
        loop="server.http:BoundedAcceptLoop",
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT,
        timeout_graceful_shutdown=2,
    )
    logging.getLogger("uvicorn.error").addFilter(QuietShutdown())
    # uvicorn re-raises the signal that stopped it once it has shut down; SIGTERM's default
    # action would then kill the process before the gap log is closed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    code = 0
    try:
        AnnouncingServer(config, announce).run(sockets=sockets)
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:  # uvicorn's own start-up failure; it has logged why
        code = exc.code if isinstance(exc.code, int) and exc.code else 1
        sys.stderr.write(f"agent-capabilities-mcp: cannot serve on {shown}:{args.port}; see above\n")
    finally:
        for sock in sockets:
            sock.close()
    _finish(gap_log, code)
    return code
