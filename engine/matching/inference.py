"""One inference path: every ONNX encode and the numpy scoring after it run one call at a time.

A server answers many queries at once. When each ran in its own worker thread, every one of them drove
the 2-thread ONNX session and 2-thread OpenBLAS, and on a 2-core machine three thread pools fought:
32 HTTP clients got a tenth of one client's throughput (issue 22). Here concurrent callers queue, first
come first served, for one turn. While a caller holds it, its call runs in the caller's own thread and BLAS
is held to one thread; onnxruntime's second thread helps only when a core is free (``contended``; see
``Encoder._session``) and never spins after a run, so it cannot starve the scoring that follows.

When nothing else is running, a call runs in the caller's own thread: handing every call to a worker
thread and back cost two thread wake-ups, and with them ``engine.match`` took 1.26-1.31x as long on an
idle machine (``build_scripts/measure/bench_match.py``, docs/performance.md). Calls that arrive while
one runs queue to a worker thread, which drains them back to back: passing the turn from caller to
caller instead woke a thread per call and made 50 pipelined stdio lookups 1.2x slower.

Queries are not batched together: the shipped int8 encoder scales activations per batch, so a text's
vector would depend on what it was batched with (by up to 0.0085 in a dimension, measured).
``tests/matching/test_inference.py`` checks that queued encodes equal one-at-a-time encodes bit for bit.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from contextlib import nullcontext
from typing import TypeVar

log = logging.getLogger("engine")

T = TypeVar("T")

_ALL: weakref.WeakSet[InferenceQueue] = weakref.WeakSet()


class _Job:
    """One queued call, and what it returned or raised."""

    __slots__ = ("func", "args", "done", "result", "error")

    def __init__(self, func: Callable, args: tuple) -> None:
        self.func = func
        self.args = args
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None


class InferenceQueue:
    """Calls run one at a time, first come first served; ``run(func, *args)`` waits for ``func``'s result.

    When no call is running, the caller runs its own call at once, in its own thread. A call that
    arrives while another runs joins a queue, which one worker thread then drains back to back, so a
    backlog costs no thread wake-up per call. A call made while the caller's own call is running
    (``encode`` inside a ranking) runs at once, so nested calls cannot deadlock.
    """

    def __init__(self) -> None:
        self._reset()
        self._blas = None  # threadpoolctl's controller of the BLAS libraries, found on first use
        self._load_read_at = float("-inf")
        self._loaded = False
        _ALL.add(self)

    def _reset(self) -> None:
        """Nothing runs, nothing waits, no worker (also in a forked child, whose other threads are gone)."""
        self._mutex = threading.Lock()
        self._queue: deque[_Job] = deque()
        self._busy = False  # a caller or the worker is running a call
        self._owner: int | None = None  # the thread running it
        self._drain = threading.Semaphore(0)  # released once to hand a backlog to the worker
        self._worker: threading.Thread | None = None

    def waiting(self) -> int:
        """How many calls wait behind the running one."""
        return len(self._queue)

    def contended(self) -> bool:
        """True when the cores are busy: calls wait behind this one, or the machine is loaded.

        The machine counts as loaded when its 1-minute load average is at least 1.5 runnable threads
        per core (read at most once a second). This process alone, spinning two threads through
        back-to-back runs, stays below that on two cores.
        """
        if self._queue:
            return True
        now = time.monotonic()
        if now - self._load_read_at >= 1.0:
            self._load_read_at = now
            try:
                self._loaded = os.getloadavg()[0] >= 1.5 * (os.cpu_count() or 1)
            except (AttributeError, OSError):  # no load average (Windows): assume free cores
                self._loaded = False
        return self._loaded

    def holds_turn(self) -> bool:
        """True when the calling thread is the one running a call now."""
        return self._owner == threading.get_ident()

    def run(self, func: Callable[..., T], *args) -> T:
        """``func(*args)`` after the calls queued before it; its result or error."""
        if self.holds_turn():
            return func(*args)
        with self._mutex:
            mine = not self._busy
            if mine:
                self._busy = True
            else:
                job = _Job(func, args)
                self._queue.append(job)
                self._ensure_worker()
        if mine:
            self._owner = threading.get_ident()
            try:
                return self._call(func, args)
            finally:
                self._owner = None
                self._pass_on()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def _pass_on(self) -> None:
        """After a caller's own call: hand the backlog to the worker, or mark the queue idle."""
        with self._mutex:
            if self._queue:
                self._drain.release()  # still busy: the worker owns the turn now
            else:
                self._busy = False

    def _ensure_worker(self) -> None:
        """Start the worker thread (under ``_mutex``), once per process."""
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._serve, name="engine-inference", daemon=True)
            self._worker.start()

    def _serve(self) -> None:
        while True:
            self._drain.acquire()
            while True:
                with self._mutex:
                    if not self._queue:
                        self._busy = False
                        break
                    job = self._queue.popleft()
                self._owner = threading.get_ident()
                try:
                    job.result = self._call(job.func, job.args)
                except BaseException as exc:  # noqa: BLE001 - handed back to the caller, who re-raises it
                    job.error = exc
                finally:
                    self._owner = None
                    job.done.set()

    def _call(self, func: Callable[..., T], args: tuple) -> T:
        """``func(*args)`` with BLAS held to one thread; BLAS has its threads back before this returns."""
        try:
            limit = self._one_blas_thread()
            limit.__enter__()
        except Exception:  # noqa: BLE001 - sizing BLAS failed; the call itself still runs
            log.debug("could not size BLAS around an inference call", exc_info=True)
            return func(*args)
        try:
            return func(*args)
        finally:
            try:
                limit.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - the call's own result or error matters more
                log.debug("could not give BLAS its threads back", exc_info=True)

    def _one_blas_thread(self):
        """A context holding BLAS (OpenBLAS, MKL, ...) to one thread, then giving back what it had.

        The limit is process-wide while it lasts: numpy in other threads of a host application also
        runs single-threaded BLAS meanwhile. threadpoolctl lets one thread at a time size a shared
        BLAS pool, and gives up control when the context ends, so the next caller's thread can size it
        in turn; if another thread of the host holds it, BLAS keeps its own size here.
        """
        if self._blas is None:
            try:
                from threadpoolctl import ThreadpoolController

                controller = ThreadpoolController().select(user_api="blas")
                self._blas = controller if controller.lib_controllers else False
            except Exception:  # noqa: BLE001 - without threadpoolctl, BLAS keeps its own thread count
                log.debug("threadpoolctl unavailable; BLAS threads are not limited", exc_info=True)
                self._blas = False
        return self._blas.limit(limits=1) if self._blas else nullcontext()


def _after_fork_in_child() -> None:
    for queue in list(_ALL):
        queue._reset()  # noqa: SLF001 - the module's own fork hook


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

INFERENCE = InferenceQueue()


def run_inference(func: Callable[..., T], *args) -> T:
    """``func(*args)`` in its turn on the process's inference queue (see the module docstring)."""
    return INFERENCE.run(func, *args)
