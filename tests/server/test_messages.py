"""``server.messages``: the id of a message too long or deep to parse is found, and only the top-level one."""

from __future__ import annotations

import json

import pytest

from server.messages import MAX_LINE, top_level_id, triage

DEEP = '{"a":' * 1000 + "1" + "}" * 1000  # past json's recursion limit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"jsonrpc": "2.0", "id": 7, "method": "ping"}', 7),
        ('{"method": "ping", "params": ' + DEEP + ', "id": "late"}', "late"),
        ('{"params": {"id": 99, "x": "}"}, "id": -3}', -3),  # a nested id and a brace in a string
        ('{"x": "a \\" \\"id\\": 5 {", "id" : "k\\u00e9y"}', "kéy"),  # escaped quotes, spaces, escapes
        ('{"method": "id", "params": {}}', None),  # "id" as a value, not a key
        ('{"params": {"id": 99}}', None),  # only a nested id
        ('{"id": 1.5}', None),
        ('{"id": true}', None),
        ('{"id": {"a": 1}}', None),
        ("[1, 2]", None),
        ('{"id": 123456789012345678901234567890}', 123456789012345678901234567890),
    ],
)
def test_the_top_level_id_is_found_without_parsing(text, expected):
    assert top_level_id(text) == expected


def test_the_scan_stops_at_its_limit():
    assert top_level_id('{"x": [' + "1," * 100 + '1], "id": 5}', limit=50) is None


def reply(line: str, **options) -> dict:
    passed, error, _ = triage(line, **options)
    assert passed is None and error is not None
    return json.loads(error)


def test_a_message_over_the_size_limit_is_refused_with_its_id():
    line = json.dumps({"jsonrpc": "2.0", "method": "ping", "params": {"x": "y" * MAX_LINE}, "id": 11})
    answer = reply(line)
    assert answer["id"] == 11 and answer["error"]["code"] == -32600 and "over" in answer["error"]["message"]


def test_a_message_nested_past_the_parser_is_refused_with_its_id():
    answer = reply('{"jsonrpc": "2.0", "id": 12, "method": "ping", "params": ' + DEEP + "}")
    assert answer["id"] == 12 and answer["error"]["code"] == -32600
    assert "nested deeper" in answer["error"]["message"]


def test_a_byte_order_mark_before_the_json_is_dropped_and_the_message_passes():
    passed, error, request_id = triage('\ufeff{"jsonrpc": "2.0", "id": 14, "method": "ping"}')
    assert error is None and request_id == 14 and not passed.startswith("\ufeff")


def test_a_batch_names_what_carries_one_message():
    answer = reply('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', unit="request")
    assert answer["error"]["code"] == -32600
    assert answer["error"]["message"].endswith("batches are not supported; send one message per request")
