"""Read-only tool calls take turns, in the order they arrive.

The SDK runs each synchronous tool in a thread of its own, so 32 clients' lookups used to share the two
cores through the GIL at once: every call stretched, and a heavy one (a comparison across every agent)
stretched most, which made the slowest 1% wait about 3x what a fair queue gives at that rate
(``build_scripts/measure/bench_load.py``). Taking turns first come, first served bounds that tail without
losing throughput: the work is CPU-bound, so running calls side by side never made it faster. Writes
(``request_capability``) stay out of the queue, so a slow or unreachable gap log never holds up an answer.
"""

from __future__ import annotations

import threading
from collections import deque


class Turns:
    """A lock that hands itself to its waiters in arrival order (``threading.Lock`` promises no order)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._waiting: deque[threading.Event] = deque()
        self._busy = False

    def __enter__(self) -> Turns:
        with self._guard:
            if not self._busy:
                self._busy = True
                return self
            turn = threading.Event()
            self._waiting.append(turn)
        turn.wait()  # the caller before us handed the turn over: _busy stayed True for us
        return self

    def __exit__(self, *exc) -> None:
        with self._guard:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._busy = False

    @property
    def waiting(self) -> int:
        with self._guard:
            return len(self._waiting)


READING = Turns()
