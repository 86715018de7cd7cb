"""One thread runs all inference: every ONNX encode and the numpy scoring after it, one call at a time.

A server answers many queries at once. When each ran in its own worker thread, every one of them drove
the 2-thread ONNX session and 2-thread OpenBLAS, and on a 2-core machine three thread pools fought:
32 HTTP clients got a tenth of one client's throughput (issue 22). Here concurrent callers queue, first
come first served, to one thread. While it runs a call, BLAS is held to one thread; onnxruntime's second
thread helps only when a core is free (``contended``; see ``Encoder._session``) and never spins after a
run, so it cannot starve the scoring that follows.

Queries are not batched together: the shipped int8 encoder scales activations per batch, so a text's
vector would depend on what it was batched with (by up to 0.0085 in a dimension, measured).
``tests/matching/test_inference.py`` checks that queued encodes equal one-at-a-time encodes bit for bit.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import TypeVar

log = logging.getLogger("engine")

T = TypeVar("T")


class _Job:
    """One call waiting for the inference thread, and what it returned or raised."""

    __slots__ = ("func", "args", "done", "ran", "result", "error")

    def __init__(self, func: Callable, args: tuple) -> None:
        self.func = func
        self.args = args
        self.done = threading.Event()
        self.ran = False
        self.result = None
        self.error: BaseException | None = None

    def run(self) -> None:
        self.ran = True
        try:
            self.result = self.func(*self.args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller, who re-raises it
            self.error = exc


class InferenceThread:
    """A single worker thread with a FIFO queue; ``run(func, *args)`` waits for ``func``'s result there.

    Started on first use (again after a fork, which leaves the child without it).
    """

    def __init__(self, name: str = "engine-inference") -> None:
        self.name = name
        self._queue: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._start_lock = threading.Lock()
        self._blas = None  # threadpoolctl's controller of the BLAS libraries, found on first use
        self._load_read_at = float("-inf")
        self._loaded = False

    def contended(self) -> bool:
        """True when the cores are busy: calls are queued behind this one, or the machine is loaded.

        The machine counts as loaded when its 1-minute load average is at least 1.5 runnable threads
        per core (read at most once a second). This process alone, spinning two threads through
        back-to-back runs, stays below that on two cores.
        """
        if not self._queue.empty():
            return True
        now = time.monotonic()
        if now - self._load_read_at >= 1.0:
            self._load_read_at = now
            try:
                self._loaded = os.getloadavg()[0] >= 1.5 * (os.cpu_count() or 1)
            except (AttributeError, OSError):  # no load average (Windows): assume free cores
                self._loaded = False
        return self._loaded

    def on_thread(self) -> bool:
        """True when the caller is the inference thread itself."""
        return self._thread is not None and threading.current_thread() is self._thread

    def run(self, func: Callable[..., T], *args) -> T:
        """``func(*args)`` on the inference thread, after the calls queued before it; its result or error.

        A call made from the inference thread itself runs at once (nested calls cannot deadlock).
        """
        if self.on_thread():
            return func(*args)
        job = _Job(func, args)
        self._ensure_started()
        self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def _ensure_started(self) -> None:
        if self._thread is not None and self._pid == os.getpid() and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
                if self._pid != os.getpid():
                    self._queue = queue.SimpleQueue()  # jobs queued in the parent are not ours to run
                thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                thread.start()
                self._thread, self._pid = thread, os.getpid()

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            try:
                with self._one_blas_thread():
                    job.run()
            except Exception:  # noqa: BLE001 - sizing BLAS failed; the call itself ran or runs now
                log.debug("could not size BLAS around an inference call", exc_info=True)
                if not job.ran:
                    job.run()
            finally:
                job.done.set()  # BLAS has its threads back before the caller goes on

    def _one_blas_thread(self):
        """A context holding BLAS (OpenBLAS, MKL, ...) to one thread, then giving back what it had.

        The limit is process-wide while it lasts: numpy in other threads of a host application also
        runs single-threaded BLAS meanwhile. threadpoolctl lets one thread at a time size a shared
        BLAS pool; if another thread of the host holds it, BLAS keeps its own size here.
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


INFERENCE = InferenceThread()


def run_inference(func: Callable[..., T], *args) -> T:
    """``func(*args)`` on the process's inference thread (see the module docstring)."""
    return INFERENCE.run(func, *args)
