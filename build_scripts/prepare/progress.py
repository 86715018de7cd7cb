"""Progress lines on stderr for a build step that runs for minutes, so nobody has to guess if it hangs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


class Progress:
    """Lines on stderr that say which stage the fit is in and how far it got.

    ``say`` always prints; ``step`` prints a count at most every ``every``
    seconds, so a long loop shows it is moving without flooding the terminal.
    """

    def __init__(self, every: float = 10.0, stream=None, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.started = self.last = clock()

    def say(self, message: str) -> None:
        self.last = self.clock()
        print(f"[{self.last - self.started:5.0f} s] {message}", file=self.stream, flush=True)

    def step(self, stage: str, done: int, total: int | None = None) -> None:
        if self.clock() - self.last >= self.every:
            self.say(f"{stage}: {done}" + (f"/{total}" if total is not None else ""))
