"""Which rules answer ``Position``: the numba kernels of :mod:`~uci_checkers.rules.movegen` once they are
loaded, the pure-Python rules of :mod:`~uci_checkers.rules.slowmoves` until then when a background thread
is loading them.

Only the standard library is imported here, so that a front end can announce its background load
(:func:`defer_to_background`) before it answers ``uci``, without paying for numpy.  Without such an
announcement the first rules call loads the kernels in its own thread (compiling them on a first
start: seconds), which is what one-shot tools want.
"""
from __future__ import annotations

import threading
from types import ModuleType
from typing import Optional

__all__ = ["defer_to_background", "load_kernels", "loaded", "current"]

_KERNELS: Optional[ModuleType] = None       # rules.movegen, once its kernels are compiled or loaded
_LOAD_LOCK = threading.Lock()               # held by the thread loading them
_DEFERRED = threading.Event()               # a background thread loads them: callers never wait for it


def defer_to_background() -> None:
    """A background thread will call :func:`load_kernels`: until it has finished, every rules call
    (in any thread) uses the pure-Python rules instead of loading the kernels itself."""
    _DEFERRED.set()


def load_kernels() -> ModuleType:
    """Import movegen and compile (or load from the cache) the kernels ``Position`` calls, and
    return the module; idempotent, blocking.  Raises what the import or the compilation raised
    (a later call tries again; meanwhile a deferred process keeps the pure-Python rules)."""
    if _KERNELS is not None:
        return _KERNELS
    with _LOAD_LOCK:
        return _load_locked()


def _load_locked() -> ModuleType:
    global _KERNELS
    if _KERNELS is None:
        import numpy as np

        from . import movegen as mg
        from .bitboard import BLACK, BLACK_START, WHITE_START

        b, w, k = BLACK_START, WHITE_START, 0
        moves, paths = np.zeros(mg.MAX_MOVES, dtype=np.int64), np.zeros(mg.MAX_MOVES, dtype=np.int64)
        mg.gen_moves(b, w, k, BLACK, moves, paths, 0)
        mg.make_move(b, w, k, BLACK, int(moves[0]))
        mg.count_moves(b, w, k, BLACK)
        mg.has_capture(b, w, k, BLACK)
        mg.hash_position(b, w, k, BLACK)
        _KERNELS = mg
    return _KERNELS


def loaded() -> bool:
    """The kernels are loaded: ``Position`` no longer uses the pure-Python rules."""
    return _KERNELS is not None


def current() -> Optional[ModuleType]:
    """movegen, or None: use the pure-Python rules (the kernels are being loaded in the background,
    or by another thread right now).  With neither, the kernels are loaded here first."""
    if _KERNELS is not None:
        return _KERNELS
    if _DEFERRED.is_set() or not _LOAD_LOCK.acquire(blocking=False):
        return None
    try:
        return _load_locked()
    finally:
        _LOAD_LOCK.release()
