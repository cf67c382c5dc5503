"""Independent work items run in a pool of spawned processes, with the package's interrupt rules.

Each item is one call ``fn(*args, parent_pid)``: the worker checks that its parent still lives (a killed
tool leaves no worker running on alone) and ignores SIGINT itself, so Ctrl-C reaches only the parent,
which keeps every finished item (the callback has seen it), terminates the workers and re-raises.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Optional

from .interrupts import raise_if_interrupted

WORKER_EXIT_S = 5.0      # how long a terminated worker may take to end before it is killed


class WorkerPool:
    """``jobs`` spawned worker processes kept for several rounds of items (``with WorkerPool(2) as pool:
    pool.run(...)`` as often as needed): a worker keeps what it compiled and loaded between rounds."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))

    def run(self, fn: Callable[..., Any], items: Iterable[tuple], on_result: Callable[[Any], None],
            in_flight: int = 0) -> None:
        """Call ``fn(*item, os.getpid())`` for every item, at most ``in_flight`` (default ``jobs``) submitted
        at once, and ``on_result`` with each return value as it comes; returns when all are done."""
        queue = list(items)
        limit = in_flight or self.jobs
        futures: set = set()
        while queue or futures:
            while queue and len(futures) < limit:
                futures.add(self._pool.submit(fn, *queue.pop(0), os.getpid()))
            finished, futures = wait(futures, timeout=1.0, return_when=FIRST_COMPLETED)
            raise_if_interrupted()
            for fut in finished:
                on_result(fut.result())

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._pool.shutdown(wait=True)
            return
        # an interrupt or a failed item: finished items are kept, the running ones abandoned
        workers = list(getattr(self._pool, "_processes", {}).values())
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.join(WORKER_EXIT_S)
            if proc.is_alive():
                proc.kill()
                proc.join(WORKER_EXIT_S)
        # with every worker gone the pool's manager thread ends at once; waiting for it drops the last
        # references to the pool's queues, whose semaphores are then released (a fast exit after an
        # interrupt skips that, and multiprocessing's resource tracker would warn of "leaked semaphores")
        self._pool.shutdown(wait=True, cancel_futures=True)


def run_in_processes(fn: Callable[..., Any], items: Iterable[tuple], jobs: int, on_result: Callable[[Any], None],
                     in_flight: int = 0) -> None:
    """Call ``fn(*item, os.getpid())`` for every item in ``jobs`` spawned processes, at most ``in_flight``
    (default ``jobs``) submitted at once, and ``on_result`` with each return value as it comes."""
    with WorkerPool(jobs) as pool:
        pool.run(fn, items, on_result, in_flight)


class ParentGone(RuntimeError):
    """The process that handed out a work item has died: its worker stops instead of working on alone."""


def enter_worker(parent: Optional[int]) -> None:
    """Called by a work item as it starts: in a pool worker (``parent`` given) Ctrl-C is the parent's to
    decide on, so the worker ignores SIGINT; in-process (None) nothing changes."""
    if parent is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def check_parent(parent: Optional[int], what: str) -> None:
    """Raise ParentGone when ``parent`` (a pool worker's parent pid; None in-process) has died."""
    if parent is not None and os.getppid() != parent:
        raise ParentGone(f"{what} worker {os.getpid()}: parent {parent} is gone")
