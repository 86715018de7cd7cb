"""Read-only tool calls take turns in arrival order; writes to the gap log never wait behind them."""

from __future__ import annotations

import threading
import time

from server import server as server_module
from server.turns import Turns


def _wait_until(condition, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the threads"
        time.sleep(0.001)


def test_waiters_get_their_turn_in_the_order_they_arrived():
    turns, order = Turns(), []

    def take(name: int) -> None:
        with turns:
            order.append(name)

    with turns:
        threads = []
        for name in range(12):
            thread = threading.Thread(target=take, args=(name,))
            thread.start()
            threads.append(thread)
            _wait_until(lambda n=name: turns.waiting == n + 1)  # queued before the next one starts
    for thread in threads:
        thread.join(timeout=30)
    assert order == list(range(12))


def test_read_only_answers_never_run_side_by_side():
    running, most, count = [0], [0], threading.Lock()

    def slow_answer(*_args) -> dict:
        with count:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.01)  # long enough for an unqueued caller to overlap
        with count:
            running[0] -= 1
        return {"ok": True}

    threads = [threading.Thread(target=server_module._structured, args=(slow_answer,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert most[0] == 1


def test_a_gap_log_write_does_not_wait_for_a_read_only_answer():
    inside, release = threading.Event(), threading.Event()

    def held_answer(*_args) -> dict:
        inside.set()
        release.wait(30)
        return {"ok": True}

    reader = threading.Thread(target=server_module._structured, args=(held_answer,))
    reader.start()
    try:
        assert inside.wait(30)
        # request_capability answers through _call: it must finish while the read-only turn is held.
        assert server_module._call(lambda: {"recorded": False}) == '{"recorded":false}'
    finally:
        release.set()
        reader.join(timeout=30)
