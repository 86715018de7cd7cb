"""Pasted product identifiers (commands, flags, keys, file names) point at the records that use them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Index
from engine.matching import identifiers
from engine.matching.identifiers import MAX_PER_TEXT, IdentifierTable, identifiers_in


def test_identifiers_are_found_in_the_shapes_people_paste_them():
    text = (
        "[BUG] `/compact` hangs; --resume ignored, GEMINI_SANDBOX set, .claude/settings.json and autoApprove"
    )
    found = identifiers_in(text)
    for expected in ("/compact", "--resume", "gemini_sandbox", ".claude/settings.json", "autoapprove"):
        assert expected in found


def test_plain_prose_has_no_identifiers():
    assert identifiers_in("the agent keeps asking me before it edits files, e.g. every time") == []


def test_a_long_paste_costs_a_bounded_amount_of_work():
    assert len(identifiers_in(" ".join(f"--flag-{i}" for i in range(10_000)))) == MAX_PER_TEXT


def test_a_shared_identifier_is_split_among_the_records_that_name_it():
    table = IdentifierTable([["/compact", "settings.json"], ["settings.json"], []])
    assert np.allclose(table.scores("`/compact` broke my settings.json", 3), [1.0, 0.5, 0.0])
    assert np.allclose(table.scores("nothing pasted here", 3), [0.0, 0.0, 0.0])


def test_a_pasted_identifier_decides_between_records_that_read_alike(fake_encoder):
    records = [
        {
            "id": "a",
            "name": "Compress history",
            "description": "shrink a long chat",
            "identifiers": ["/compact"],
        },
        {"id": "b", "name": "Compress files", "description": "shrink a long chat", "identifiers": ["/zip"]},
    ]
    index = Index.from_records(records, encoder=fake_encoder)
    assert index.match("shrink a long chat with /compact").name == "Compress history"
    assert index.match("shrink a long chat with /zip").name == "Compress files"


def test_a_dotfile_without_an_extension_is_an_identifier_even_at_a_sentence_end():
    assert identifiers_in("Gemini CLI doesn't honor .geminiignore.") == [".geminiignore"]
    assert identifiers_in("rules in .clinerules are skipped") == [".clinerules"]


def test_a_retyped_tool_name_counts_but_a_plain_word_that_is_also_a_key_does_not():
    table = IdentifierTable([["webfetch"], ["memory"]])
    assert np.allclose(table.scores("Webfetch keeps adding a period", 2, {"memory"}), [1.0, 0.0])
    assert np.allclose(table.scores("webfetch hangs", 2, {"memory"}), [1.0, 0.0])
    # "memory" is a key of the second record, but the encoder knows it as a word.
    assert np.allclose(table.scores("my memory is full", 2, {"memory"}), [0.0, 0.0])


def test_retyped_words_never_take_a_text_past_the_per_text_bound():
    shaped = [f"--flag-{i}" for i in range(MAX_PER_TEXT)]
    table = IdentifierTable([[*shaped, "webfetch"]])
    assert len(table.hits(" ".join([*shaped, "webfetch"]))) == MAX_PER_TEXT


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZq_/.-@#~`:*é \t\n0A")), max_size=60))
def test_searching_token_by_token_finds_the_spans_the_whole_text_search_finds(text):
    assert identifiers.shaped_spans(text) == [m.group(0) for m in identifiers._SHAPES.finditer(text)]
