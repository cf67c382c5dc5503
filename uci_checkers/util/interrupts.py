"""Interrupts in the tools: Ctrl-C and SIGTERM become ``KeyboardInterrupt``, and are recorded.

:func:`handle_interrupts` (entered by ``uci-checkers`` for every tool, before any
work) makes SIGINT and SIGTERM raise ``KeyboardInterrupt`` in the main thread and
records them: numba's compiler calls back into Python through ctypes, which
swallows an exception raised there, so a signal that lands in a compile would
be lost.  The tools' wait loops call :func:`raise_if_interrupted` to see it
anyway, and a second signal after a lost one ends the process at once.

Kept apart from :mod:`uci_checkers.cli` (the subcommand table, edited often)
because perft, a kernel module, polls it: whatever a kernel module imports keys
the compile cache.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .exitcodes import EXIT_INTERRUPTED

__all__ = ["handle_interrupts", "interrupted", "interrupt_event", "raise_if_interrupted", "exit_now"]

_INTERRUPTED = threading.Event()
_DEPTH = [0]


def interrupted() -> bool:
    """Whether Ctrl-C or SIGTERM came while :func:`handle_interrupts` was active."""
    return _INTERRUPTED.is_set()


def interrupt_event() -> threading.Event:
    """The event set by an interrupt (for code that waits on an ``abort`` event)."""
    return _INTERRUPTED


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt came (for wait loops: see :func:`handle_interrupts`)."""
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt


@contextmanager
def handle_interrupts() -> Iterator[None]:
    """Within the block, SIGINT (Ctrl-C) and SIGTERM raise ``KeyboardInterrupt`` in the main thread.

    Each signal is also recorded (:func:`interrupted`): a ``KeyboardInterrupt`` raised while
    the main thread runs inside a ctypes callback (numba's compiler does that) is swallowed,
    so the tools' wait loops call :func:`raise_if_interrupted` as well.  A second signal after
    one that was lost ends the process at once with status 130.
    Does nothing outside the main thread (signal handlers can only be set there).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_interrupt(signum: int, frame: object) -> None:
        if _INTERRUPTED.is_set():
            print("interrupted again: exiting at once", file=sys.stderr)
            exit_now(EXIT_INTERRUPTED)
        _INTERRUPTED.set()
        raise KeyboardInterrupt

    try:
        previous = {sig: signal.signal(sig, raise_interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    except (ValueError, OSError):
        yield
        return
    previous_hook = sys.unraisablehook

    def quiet_lost_interrupt(info: Any) -> None:
        # The interrupt raised inside a ctypes callback: recorded above, not a traceback to show.
        if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
            return
        previous_hook(info)

    sys.unraisablehook = quiet_lost_interrupt
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if _DEPTH[0] == 0:                    # nested blocks (cli -> a tool) share one record
            _INTERRUPTED.clear()


def exit_now(code: int) -> None:
    """End the process at once after an interrupt (the program's own entry point only).

    The tool has kept its finished work (files are written atomically and fsynced) and
    stopped its engines; a background thread still compiling kernels (numba inside LLVM)
    would otherwise hold the interpreter's shutdown for many seconds.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
