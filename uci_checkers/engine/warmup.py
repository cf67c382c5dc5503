"""The kernel warm-up, once per process: import the rules core and the search and compile (or load from the
compile cache) their kernels, in a background thread, with a child process compiling the search kernels beside
it on a cold cache.  The rules layer never waits for it: until its kernels are loaded (:func:`rules_ready`),
``Position`` answers other threads with the pure-Python rules (``rules.slowmoves``), so a front end reads
``position`` and plays a fallback move at once, also on a first start.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Optional

from ..rules import backend


# --------------------------------------------------------------------------------------------------
# Kernel warm-up (once per process)
# --------------------------------------------------------------------------------------------------
_WARM_LOCK = threading.Lock()
_START_LOCK = threading.Lock()      # guards starting the warm-up thread (once)
_WARM_DONE = threading.Event()
_RULES_DONE = threading.Event()     # the Position layer's kernels are loaded (set before the search's)
_COMPILING = threading.Event()      # the kernels were not in the compile cache: compiling (seconds)
_WARM_ERROR: list[BaseException] = []
_WARM_THREAD: Optional[threading.Thread] = None
_WARM_LISTENERS: list[Callable[[str], None]] = []
_LISTENER_LOCK = threading.Lock()   # not _WARM_LOCK: that one is held for the whole warm-up


def add_warmup_listener(callback: Callable[[str], None]) -> None:
    """``callback(stage)`` is called with ``"compiling"`` when the kernels are not in the compile
    cache and must be compiled (seconds), and with ``"ready"`` when the warm-up ends (at once if
    it already has; also when it failed: the engine then reports the error).

    A listener added while the compilation already runs is told ``"compiling"`` at once.
    One-shot tools use it to tell their user why nothing happens yet, e.g.
    ``add_warmup_listener(lambda stage: stage == "compiling" and print("compiling ...", file=sys.stderr))``.
    """
    with _LISTENER_LOCK:
        if not _WARM_DONE.is_set():
            _WARM_LISTENERS.append(callback)
            compiling = _COMPILING.is_set()
        else:
            compiling = None
    if compiling:
        callback("compiling")
    elif compiling is None:
        callback("ready")


def _enter_stage(stage: str) -> None:
    """Record the warm-up's new stage (``compiling``: _COMPILING, ``ready``: _WARM_DONE) and tell the
    listeners; under one lock with :func:`add_warmup_listener`, so each hears every stage once."""
    with _LISTENER_LOCK:
        (_COMPILING if stage == "compiling" else _WARM_DONE).set()
        listeners = list(_WARM_LISTENERS)
        if stage == "ready":
            _WARM_LISTENERS.clear()
    for callback in listeners:
        try:
            callback(stage)
        except Exception:  # a listener's fault must not stop the warm-up
            pass


def _kernels_cached() -> bool:
    """True when the search kernels will load from the compile cache (no compilation needed)."""
    import importlib

    try:
        # imported by name: the engine reads the cache's state but compiles nothing itself, so it
        # must not count as a kernel module (those key the cache: see _jit.kernel_sources)
        jit = importlib.import_module(f"{_PACKAGE}.util.jit")
        return bool(jit.has_cached_kernels("alphabeta"))
    except (ImportError, OSError):
        return False


# The search kernels are compiled in a child process while this one compiles the evaluation and the
# rules layer: two cores instead of one on a cold start.  The child only fills the shared compile
# cache.
CHILD_COMPILE_TIMEOUT_S = 600.0
_PACKAGE = __package__.rpartition(".")[0]     # uci_checkers
_CHILD_CODE = f"from {_PACKAGE}.search.alphabeta import Searcher; Searcher(1).warm_up()"
_WARM_CHILDREN: list[subprocess.Popen] = []


def _start_search_compile_child() -> Optional[subprocess.Popen]:
    """A child process (own process group) compiling the search kernels into the compile cache."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        child = subprocess.Popen([sys.executable, "-c", _CHILD_CODE], cwd=package_root, env=env,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        return None
    _WARM_CHILDREN.append(child)
    return child


def stop_warmup_children() -> None:
    """Kill a compile child still running (its process group); for the process's exit path."""
    for child in list(_WARM_CHILDREN):
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                child.wait(1.0)
            except subprocess.TimeoutExpired:
                pass
    _WARM_CHILDREN.clear()


def _wait_for_child(child: Optional[subprocess.Popen]) -> None:
    """Let the compile child finish (it fills the cache the search import then loads from)."""
    if child is None:
        return
    try:
        child.wait(CHILD_COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    stop_warmup_children()   # whatever it did not finish is compiled here


def warm_up_kernels() -> None:
    """Import the rules core and the search and compile (or load) their kernels; idempotent, blocking.

    The rules kernels come before the search's and set :func:`rules_ready`; before that,
    ``Position`` in other threads uses the pure-Python rules, so ``position`` commands,
    legal-move lists and a fallback move never wait for this.  On a cold cache a child
    process compiles the search kernels meanwhile (see :func:`_start_search_compile_child`).
    """
    with _WARM_LOCK:
        if _WARM_DONE.is_set():
            return
        child = None
        try:
            # the pure-Python rules first (numpy, no numba: a fraction of a second), so that the
            # command thread's first position finds them imported instead of importing them itself
            # while this thread holds the GIL for numba's import
            from ..rules import position  # noqa: F401

            if not _kernels_cached():
                _enter_stage("compiling")
                child = _start_search_compile_child()
            # The evaluation first: on a cold start the child compiles the endgame-table probe and
            # then the search, which links the evaluation this process has put in the cache by then.
            from ..search import evaluate  # noqa: F401  (compiles or loads its kernel on import)
            # until this returns, Position answers with the pure-Python rules (start_kernel_warmup
            # deferred to it); perft kernels compile on the first go perft (in the worker)
            backend.load_kernels()
            _RULES_DONE.set()
            _wait_for_child(child)
            from ..search.alphabeta import Searcher

            Searcher(1).warm_up()
        except BaseException as exc:  # reported by ensure_ready / the worker, never raised here
            _WARM_ERROR.append(exc)
        finally:
            _RULES_DONE.set()
            _enter_stage("ready")


def start_kernel_warmup() -> None:
    """Start :func:`warm_up_kernels` in a daemon thread (once); from now on no rules call waits for
    the rules kernels (the pure-Python rules answer until the warm-up has loaded them)."""
    global _WARM_THREAD
    with _START_LOCK:      # not _WARM_LOCK: the warm-up holds that one until it ends
        if _WARM_THREAD is not None or _WARM_DONE.is_set():
            return
        backend.defer_to_background()
        _WARM_THREAD = threading.Thread(target=warm_up_kernels, name="uci_checkers-warmup", daemon=True)
        _WARM_THREAD.start()


def kernels_compiling() -> bool:
    """The kernels are being compiled (not loaded from the cache) and are not ready yet."""
    return _COMPILING.is_set() and not _WARM_DONE.is_set()


def rules_ready() -> bool:
    """The Position layer's kernels are loaded (before that it answers with the pure-Python rules;
    the search's kernels may still be compiling)."""
    return _RULES_DONE.is_set()


def kernels_ready() -> bool:
    return _WARM_DONE.is_set()


def wait_until_warm() -> None:
    """Block until the warm-up has ended; raise what made it fail, if anything did."""
    _WARM_DONE.wait()
    if _WARM_ERROR:
        raise _WARM_ERROR[0]


def warm_up_failed() -> bool:
    """The warm-up ended with an error (the engine reports it; the fallback move stands in)."""
    return bool(_WARM_ERROR)


