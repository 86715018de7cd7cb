"""A transient failure to load the encoder (out of file descriptors) is retried, not final.

The audit flooded a starting server with 1,100 idle connections: the warm-up
failed with EMFILE, and every answer for the rest of the process was lexical.
"""

from __future__ import annotations

import errno
import logging
import os
import resource

import pytest

from engine import Encoder, EncoderUnavailableError, Index
from engine.matching import encoder as encoder_module
from engine.matching import index as index_module
from tests.conftest import FakeEncoder
from tests.matching.test_pipeline import RECORDS


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class ShortOfDescriptors(FakeEncoder):
    """Fails to load ``failures`` times as ``Encoder.load`` does when out of descriptors, then loads."""

    def __init__(self, failures: int, *, transient: bool = True) -> None:
        self.failures = failures
        self.transient = transient
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        if self.loads <= self.failures:
            raise EncoderUnavailableError(
                "cannot load the ONNX encoder: [Errno 24] Too many open files", transient=self.transient
            )


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(index_module, "time", clock, raising=False)
    return clock


def test_a_transient_failure_is_tried_again_after_a_pause_and_semantic_matching_comes_back(clock, caplog):
    encoder = ShortOfDescriptors(failures=1)
    index = Index.from_records(RECORDS, encoder=encoder)
    with caplog.at_level(logging.WARNING, logger="engine"):
        assert index.warm() is False
        lexical = index.match("send an email")
        assert lexical.method == "lexical" and lexical.calibrated is False
        assert index.warm() is False and encoder.loads == 1  # not before the pause is over
        assert index.retry_in() == pytest.approx(1.0)
        clock.now += 1.0
        assert index.warm() is True and encoder.loads == 2
    assert index.match("send an email").method != "lexical"
    assert index.retry_in() is None
    messages = [r.getMessage() for r in caplog.records if r.name == "engine"]
    assert len(messages) == 2, messages
    assert "semantic matching is paused" in messages[0] and "on again" in messages[1]


def test_the_pause_doubles_while_the_shortage_lasts(clock):
    encoder = ShortOfDescriptors(failures=3)
    index = Index.from_records(RECORDS, encoder=encoder)
    waits = []
    while not index.warm():
        waits.append(index.retry_in())
        clock.now += waits[-1]
    assert waits == [1.0, 2.0, 4.0] and encoder.loads == 4


def test_broken_files_are_final_and_not_tried_again(clock):
    encoder = ShortOfDescriptors(failures=1, transient=False)
    index = Index.from_records(RECORDS, encoder=encoder)
    assert index.warm() is False and index.retry_in() is None
    clock.now += 3600
    assert index.warm() is False and encoder.loads == 1


def test_onnxruntime_and_tokenizers_shortages_are_read_from_their_text():
    from engine.matching.encoder import is_transient

    assert is_transient(RuntimeError("Too many open files (os error 24)"))
    assert is_transient(OSError(errno.ENFILE, os.strerror(errno.ENFILE)))
    assert not is_transient(RuntimeError("protobuf parsing failed"))
    assert not is_transient(OSError(errno.ENOENT, "No such file or directory"))


def test_the_real_encoder_out_of_file_descriptors_fails_transiently_then_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENT_CAPABILITIES_CACHE", str(tmp_path))  # no remembered hashes: files are opened
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held: list[int] = []
    encoder = Encoder()
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 1024), hard))
    try:
        with pytest.raises(OSError):
            while True:
                held.append(os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(EncoderUnavailableError) as caught:
            encoder.load()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert caught.value.transient, caught.value
    encoder.load()  # descriptors are free again: the same encoder loads
    assert encoder.encode(["undo the agent's edits"]).shape[0] == 1


def test_the_hash_of_an_unreadable_file_is_an_encoder_error_not_an_oserror(monkeypatch):
    def no_descriptors(path):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))

    monkeypatch.setattr(encoder_module, "file_sha256", no_descriptors)
    with pytest.raises(EncoderUnavailableError) as caught:
        Encoder().load()
    assert caught.value.transient
