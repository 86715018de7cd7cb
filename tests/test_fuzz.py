"""Standing fuzz test: any input to the public functions yields an answer or an ``EngineError``, nothing else.

Bounded for CI (the "ci" profile); run longer locally with
``HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import EngineError, Index, answers

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile(
    "long", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Any code point, lone surrogates and control characters included.
ANY_CHAR = st.characters(blacklist_categories=())
TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=60),
    st.text(ANY_CHAR, min_size=900, max_size=1100),
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789"), min_size=200, max_size=1000),
    st.sampled_from(["mcp", "claude", "copilot", "hooks", "\ud800abc", "agnet mode", " ", ""]),
)
NOT_TEXT = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=True),
    st.booleans(),
    st.binary(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
ARG = st.one_of(TEXT, NOT_TEXT)


def answer_or_engine_error(call) -> None:
    try:
        result = call()
    except EngineError:
        return
    payload = result.to_dict() if hasattr(result, "to_dict") else result
    json.dumps(payload, allow_nan=False)  # serialisable, and never NaN or Infinity


@given(ARG)
def test_match_and_resolve_agent(text):
    answer_or_engine_error(lambda: engine.match(text))
    answer_or_engine_error(lambda: {"agent": engine.resolve_agent(text)})


@given(ARG, ARG)
def test_the_four_answers(first, second):
    answer_or_engine_error(lambda: answers.lookup(first, second))
    answer_or_engine_error(lambda: answers.compare(first, second))
    answer_or_engine_error(lambda: answers.list_capabilities(first, second))
    answer_or_engine_error(lambda: answers.get_sources(first, second))


RECORD = st.fixed_dictionaries(
    {"id": ARG, "name": ARG},
    optional={"description": ARG, "aliases": st.one_of(NOT_TEXT, st.lists(TEXT, max_size=3))},
)


# engine.Record objects are plain dataclasses: any field can hold anything.
RECORD_OBJECT = st.builds(
    engine.Record,
    ARG,
    ARG,
    ARG,
    st.one_of(NOT_TEXT, st.lists(ARG, max_size=3)),
    st.one_of(NOT_TEXT, st.lists(ARG, max_size=3)),
    st.one_of(NOT_TEXT, st.lists(ARG, max_size=3)),
)


@settings(max_examples=25)
@given(st.one_of(NOT_TEXT, st.lists(st.one_of(RECORD, RECORD_OBJECT), max_size=4)), ARG)
def test_index_from_records_and_match(records, query):
    def build_and_match():
        index = Index.from_records(records, semantic=False)
        return index.match(query)

    answer_or_engine_error(build_and_match)


def test_a_semantic_index_over_hostile_records_answers():
    index = Index.from_records(
        [
            {"id": "\ud800", "name": "\x00\x1f" + "w" * 1500, "description": "\udfff" * 50},
            {"id": "b", "name": "read_file", "aliases": ["open a file"]},
        ]
    )
    assert index.match("read the file contents").name == "read_file"
