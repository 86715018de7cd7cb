"""HTTP servers shared by the server tests: each test module that asks gets its own, started once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.server.test_server_http import TOKEN, start_server


@pytest.fixture(scope="module")
def open_server() -> Iterator[str]:
    yield from start_server()


@pytest.fixture(scope="module")
def token_server() -> Iterator[str]:
    yield from start_server(token=TOKEN)
