"""Fixtures shared by the server tests: the in-memory SDK client, and HTTP servers started once per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import Client

from server.server import build_server
from tests.server.test_server_http import TOKEN, start_server


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client():
    """The server's tools through the SDK's in-memory client: no process, no transport."""
    async with Client(build_server()) as connected:
        yield connected


@pytest.fixture(scope="module")
def open_server() -> Iterator[str]:
    yield from start_server()


@pytest.fixture(scope="module")
def token_server() -> Iterator[str]:
    yield from start_server(token=TOKEN)
