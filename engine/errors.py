"""The engine's exceptions: one base class, one subclass per kind of mistake.

Every message says what was wrong and what is valid, so the CLI and the MCP
server can show it to a person (or a model) as is.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class for every error the engine raises on purpose."""


class InvalidQueryError(EngineError, ValueError):
    """A query or argument that cannot be matched (empty, too long, not text)."""


class UnknownAgentError(EngineError, LookupError):
    """An agent name that resolves to none of the catalog's agents."""

    def __init__(
        self, text: str, valid: list[str], closest: str | None, *, ambiguous: list[str] | None = None
    ) -> None:
        self.text = text
        self.valid = valid
        self.closest = closest
        self.ambiguous = ambiguous or []
        if self.ambiguous:
            message = f"Agent '{text}' could mean {' or '.join(self.ambiguous)}; pass one of those ids."
        else:
            hint = f" Did you mean '{closest}'?" if closest else ""
            message = f"Unknown agent '{text}'. Valid agents: {', '.join(valid)}.{hint}"
        super().__init__(message)


class UnknownCategoryError(EngineError, LookupError):
    """A category name that is not one of the catalog's categories."""

    def __init__(self, text: str, valid: list[str], closest: str | None) -> None:
        self.text = text
        self.valid = valid
        self.closest = closest
        hint = f" Did you mean '{closest}'?" if closest else ""
        super().__init__(f"Unknown category '{text}'. Valid categories: {', '.join(valid)}.{hint}")


class CatalogError(EngineError):
    """Broken data: a catalog file that is missing, unreadable or invalid."""


class RateLimitError(EngineError):
    """Too many capability requests recorded in a short time by this process."""


class GapLogError(EngineError):
    """The gap log's database exists but cannot be read (corrupt, locked, or a newer schema)."""
