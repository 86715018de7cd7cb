"""Run the MCP server: ``python -m server``."""

from . import main

raise SystemExit(main())
