"""An agent's own words: a signal for that agent only, brought by the records, with no agent in the code."""

from __future__ import annotations

import pytest

from engine import Index, InvalidQueryError
from engine.matching.scoped import ScopedVocabulary

# The scoped word appears in no record's own text, so without its scope nothing points at the record.
RECORDS = [
    {"id": "read", "name": "read_file", "description": "Read the contents of a file from disk"},
    {"id": "write", "name": "write_file", "description": "Write text to a file on disk"},
    {
        "id": "mail",
        "name": "send_email",
        "description": "Send an email message to a recipient",
        "scoped": {"acme": ["Zorblat is what acme calls its mailer"], "other": ["Quill"]},
    },
]


def test_a_records_scoped_words_point_at_it_for_that_scope(fake_encoder):
    index = Index.from_records(RECORDS, encoder=fake_encoder)
    assert index.match("zorblat broken", agent="acme").candidates[0].id == "mail"


def test_scoped_words_do_not_help_another_scope_or_no_scope(fake_encoder):
    index = Index.from_records(RECORDS, encoder=fake_encoder)
    for agent in (None, "other", "nobody-knows-this-scope"):
        assert index.match("zorblat broken", agent=agent).candidates[0].id != "mail", agent


def test_scoped_word_pairs_count_more_than_their_words_apart():
    vocab = ScopedVocabulary([[("a", "focus chain list")], [("a", "the chain needs focus")]])
    together = vocab.scores("a", ["focus", "chain"], 2)
    assert together[0] > together[1]


def test_a_scope_that_is_not_a_string_is_a_clear_error(fake_encoder):
    index = Index.from_records(RECORDS, encoder=fake_encoder)
    with pytest.raises(InvalidQueryError, match="agent must be a string"):
        index.match("zorblat broken", agent=3)


def test_scoped_texts_must_map_a_scope_to_strings(fake_encoder):
    bad = [{**RECORDS[0], "scoped": {"acme": "Zorblat"}}]
    with pytest.raises(InvalidQueryError, match="scoped"):
        Index.from_records(bad, encoder=fake_encoder)


def test_a_scope_scores_the_same_whichever_scope_was_asked_first():
    pairs = [
        [("a", "focus chain list"), ("b", "yolo mode")],
        [("a", "the chain needs focus"), ("b", "auto approve everything")],
    ]
    first, second = ScopedVocabulary(pairs), ScopedVocabulary(pairs)
    a_then_b = [first.scores("a", ["focus", "chain"], 2), first.scores("b", ["yolo", "mode"], 2)]
    b_then_a = [second.scores("b", ["yolo", "mode"], 2), second.scores("a", ["focus", "chain"], 2)]
    assert (a_then_b[0] == b_then_a[1]).all() and (a_then_b[1] == b_then_a[0]).all()
    assert first.scopes == ["a", "b"] and first.index("c") is None
