"""Where games run: local worker threads (the default) or tasks on a Ray cluster.

A backend takes the list of jobs still to play and a callback; it calls the
callback once per finished game, in the arena's main thread (so the PDN file,
the statistics and the progress line have a single writer).  The callback
returns ``False`` to stop handing out new games (an SPRT decision); games
already running finish and are still reported.

*Local*: ``concurrency`` threads, each with its own :class:`EnginePool` (its own
engine processes, reused from game to game and restarted after a failure).

*Ray*: every game is an independent remote task that starts its two engines,
plays, closes them and returns the :class:`GameRecord`; at most ``concurrency``
tasks are in flight and ``ray.wait`` streams them back as they finish, each
result object is consumed exactly once.  When the backend connects to Ray
itself it ships this package to the workers (``runtime_env`` ``py_modules``,
see :func:`ray_runtime_env`) so the default engine and the referee run the same
code as the driver; other engines' commands must exist on the worker machines.
"""
from __future__ import annotations

import queue
import threading
from typing import Callable, Optional

from ..util.interrupts import raise_if_interrupted
from ..util.raycluster import RayConnectError, connect_ray
from .game import EnginePool, GameJob, GameRecord, Settings, play_game

OnResult = Callable[[GameRecord], bool]


class BackendError(RuntimeError):
    """The backend cannot run (e.g. Ray is not installed or the cluster is unreachable)."""


class LocalBackend:
    """Games in ``concurrency`` threads on this machine."""

    def __init__(self, settings: Settings, concurrency: int = 1,
                 log: Optional[Callable[[str], None]] = None) -> None:
        self.settings = settings
        self.concurrency = max(1, concurrency)
        self.log = log

    def run(self, jobs: list[GameJob], on_result: OnResult) -> None:
        todo: "queue.Queue[Optional[GameJob]]" = queue.Queue()
        for job in jobs:
            todo.put(job)
        done: "queue.Queue[tuple[str, object]]" = queue.Queue()
        no_more = threading.Event()       # stop handing out games (SPRT decided)
        abort = threading.Event()         # interrupted: abandon games in progress
        pools: list[EnginePool] = []
        started: set[str] = set()         # engines that got through a start in any worker

        def worker() -> None:
            pool = EnginePool(self.settings, self.log, started)
            pools.append(pool)
            try:
                while not no_more.is_set() and not abort.is_set():
                    try:
                        job = todo.get_nowait()
                    except queue.Empty:
                        break
                    try:
                        record = play_game(job, pool, abort)
                    except Exception as exc:          # a bug must not hang the match
                        done.put(("error", exc))
                        break
                    if record is not None and not abort.is_set():
                        done.put(("game", record))
            finally:
                pool.close()
                done.put(("exit", None))

        threads = [threading.Thread(target=worker, name=f"arena-worker-{i}", daemon=True)
                   for i in range(min(self.concurrency, max(1, len(jobs))))]
        for t in threads:
            t.start()
        running = len(threads)
        error: Optional[BaseException] = None
        try:
            while running:
                try:
                    kind, item = done.get(timeout=0.2)
                except queue.Empty:
                    raise_if_interrupted()
                    continue
                if kind == "exit":
                    running -= 1
                elif kind == "error":
                    # A bug or an engine that cannot be configured: no game can be trusted
                    # to finish, so the others are abandoned too (they are not written).
                    error = error or item  # type: ignore[assignment]
                    no_more.set()
                    abort.set()
                elif kind == "game":
                    if not on_result(item):  # type: ignore[arg-type]
                        no_more.set()
        except BaseException:
            abort.set()
            no_more.set()
            for pool in list(pools):
                for eng in list(pool.engines.values()):
                    eng.kill()
            raise
        finally:
            for t in threads:
                t.join(timeout=5.0)
        if error is not None:
            raise error


def _ray_play(job: GameJob, settings: Settings) -> GameRecord:
    """The remote task: one game with its own two engine processes."""
    pool = EnginePool(settings)
    try:
        record = play_game(job, pool)
        assert record is not None
        return record
    finally:
        pool.close()


class RayBackend:
    """Each game a Ray task; results stream back with ``ray.wait``."""

    def __init__(self, settings: Settings, concurrency: Optional[int] = None,
                 address: Optional[str] = None, ship_package: bool = True,
                 log: Optional[Callable[[str], None]] = None) -> None:
        try:
            import ray  # noqa: F401
        except ImportError as exc:
            raise BackendError("the ray backend needs Ray: pip install 'uci_checkers[cluster]' "
                               f"({exc})") from exc
        self.settings = settings
        self.concurrency = concurrency
        self.address = address
        self.ship_package = ship_package
        self.log = log


    def run(self, jobs: list[GameJob], on_result: OnResult) -> None:
        import ray
        try:
            started_here = connect_ray(self.address, self.ship_package)
        except RayConnectError as exc:
            raise BackendError(str(exc)) from exc
        in_flight: dict = {}
        try:
            remote = ray.remote(num_cpus=1, max_retries=0)(_ray_play)
            limit = self.concurrency or max(1, int(ray.cluster_resources().get("CPU", 1)))
            pending = list(reversed(jobs))
            accepting = True
            while in_flight or (accepting and pending):
                while accepting and pending and len(in_flight) < limit:
                    job = pending.pop()
                    in_flight[remote.remote(job, self.settings)] = job
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
                raise_if_interrupted()
                for ref in ready:
                    job = in_flight.pop(ref)
                    record = ray.get(ref)      # an exception here is a bug: let it surface
                    if not on_result(record):
                        accepting = False
        except BaseException:
            for ref in list(in_flight):
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass
            raise
        finally:
            if started_here:
                ray.shutdown()


def make_backend(name: str, settings: Settings, concurrency: Optional[int],
                 address: Optional[str] = None, log: Optional[Callable[[str], None]] = None):
    """``concurrency`` None: one game at a time locally, one per CPU of the Ray cluster."""
    if name == "local":
        return LocalBackend(settings, concurrency or 1, log)
    if name == "ray":
        return RayBackend(settings, concurrency, address, log=log)
    raise BackendError(f"unknown backend {name!r}: use local or ray")


__all__ = ["LocalBackend", "RayBackend", "BackendError", "make_backend", "OnResult"]
