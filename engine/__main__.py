"""``python -m engine``: the command line."""

from .cli import main

raise SystemExit(main())
