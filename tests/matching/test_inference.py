"""One inference path: ONNX runs one at a time, concurrent callers queued, vectors exactly as alone."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from threadpoolctl import OpenBLASController, ThreadpoolController

import engine
from engine.matching import inference
from engine.matching.index import default_encoder
from engine.matching.inference import InferenceQueue

TEXTS = [
    "spawn a subagent for research",
    "how do I undo what the agent just changed",
    "plan first, no edits",
    "add an mcp server to gemini cli",
    "let it keep going without asking me",
    "custm instrucions",
    "search the internet for the latest version",
    "run it in a sandbox",
]


def at_once(func, items: list) -> list:
    """``func(item)`` for every item, each in its own thread, all released together; results in order."""
    barrier = threading.Barrier(len(items))
    results: list = [None] * len(items)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = func(items[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(items))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_encodes_equal_one_at_a_time_encodes_bit_for_bit():
    encoder = default_encoder()
    alone = [encoder.encode([text]) for text in TEXTS]
    for _ in range(3):
        together = at_once(lambda text: encoder.encode([text]), TEXTS)
        assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))


def test_concurrent_matches_equal_sequential_matches():
    alone = [engine.match(text) for text in TEXTS]
    together = at_once(engine.match, TEXTS)
    assert together == alone  # names, confidences, candidates and scores


def test_no_two_onnx_runs_overlap_when_callers_come_at_once(monkeypatch):
    encoder = default_encoder()
    encoder.load()
    running, most = [0], [0]
    count = threading.Lock()

    def watched(run):
        def wrapper(*args):
            with count:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                threading.Event().wait(0.005)  # long enough for an unqueued caller to overlap
                return run(*args)
            finally:
                with count:
                    running[0] -= 1

        return wrapper

    # Watch every session the encoder opens during the test, whatever the load makes it pick: on a busy
    # machine it opens a 1-thread session, on an idle one a 2-thread one, and both must take turns.
    open_session = encoder._open_session

    def open_watched(threads):
        session = open_session(threads)
        monkeypatch.setattr(session, "run", watched(session.run))
        return session

    monkeypatch.setattr(encoder, "_sessions", {})
    monkeypatch.setattr(encoder, "_open_session", open_watched)
    at_once(lambda text: encoder.encode([text]), TEXTS)
    assert most[0] == 1


def test_one_and_two_thread_runs_give_the_same_vectors(monkeypatch):
    encoder = engine.Encoder(threads=2)
    monkeypatch.setattr(inference.INFERENCE, "contended", lambda: False)
    two = encoder.encode(TEXTS)
    monkeypatch.setattr(inference.INFERENCE, "contended", lambda: True)
    one = encoder.encode(TEXTS)
    assert sorted(encoder._sessions) == [1, 2]
    assert np.array_equal(one, two)


def test_queued_calls_wait_their_turn_and_each_caller_gets_its_own_result(monkeypatch):
    monkeypatch.setattr(inference.os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle machine
    worker = InferenceQueue()
    inside = threading.Event()
    release = threading.Event()
    order: list[str] = []

    def first() -> str:
        inside.set()
        release.wait(10)
        order.append("first")
        return "first"

    results: dict[str, str] = {}
    blocker = threading.Thread(target=lambda: results.update(a=worker.run(first)))
    blocker.start()
    assert inside.wait(10)
    assert worker.contended() is False  # nothing queued behind the running call yet

    def second() -> int:
        order.append("second")
        return 2

    waiter = threading.Thread(target=lambda: results.update(b=worker.run(second)))
    waiter.start()
    for _ in range(1000):
        if worker.waiting():
            break
        threading.Event().wait(0.01)
    assert worker.contended() is True
    release.set()
    blocker.join(10)
    waiter.join(10)
    assert order == ["first", "second"]
    assert results == {"a": "first", "b": 2}


def test_an_error_reaches_the_caller_and_the_thread_keeps_serving():
    worker = InferenceQueue()

    def broken() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        worker.run(broken)
    assert worker.run(lambda: 42) == 42


def test_a_call_made_inside_a_running_call_runs_at_once_in_the_same_thread():
    worker = InferenceQueue()
    here = threading.current_thread().name
    assert worker.run(lambda: worker.run(lambda: threading.current_thread().name)) == here
    assert worker.run(lambda: 7) == 7  # and the turn was given back


def test_blas_uses_one_thread_while_the_inference_thread_works_and_gets_its_threads_back():
    blas = ThreadpoolController().select(user_api="blas").lib_controllers
    assert blas, "numpy's BLAS is not visible to threadpoolctl"
    before = [lib.get_num_threads() for lib in blas]
    for lib in blas:
        lib.set_num_threads(3)  # more than one, on any machine
    OpenBLASController.clear_controlling_thread(force=True)  # the main thread must not keep control
    try:
        worker = InferenceQueue()
        during = worker.run(lambda: [lib.get_num_threads() for lib in blas])
        after = [lib.get_num_threads() for lib in blas]
    finally:
        for lib, threads in zip(blas, before, strict=True):
            lib.set_num_threads(threads)
        OpenBLASController.clear_controlling_thread(force=True)
    assert set(during) == {1}
    assert set(after) == {3}


def test_a_loaded_machine_counts_as_busy(monkeypatch):
    worker = InferenceQueue()
    monkeypatch.setattr(inference.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(inference.os, "getloadavg", lambda: (3.5, 0.0, 0.0))
    assert worker.contended() is True
    worker = InferenceQueue()
    monkeypatch.setattr(inference.os, "getloadavg", lambda: (1.2, 0.0, 0.0))
    assert worker.contended() is False


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_its_own_turn_even_if_a_parent_thread_held_it():
    worker = InferenceQueue()
    inside, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=lambda: worker.run(lambda: (inside.set(), release.wait(10))))
    holder.start()
    assert inside.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the holding thread does not exist here
            os._exit(0 if worker.run(lambda: 5) == 5 else 1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.01)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child waited for a turn held by a thread it does not have")
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        holder.join(10)
