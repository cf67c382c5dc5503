"""uci_checkers: an English checkers engine with a UCI-style text protocol.

Layers, each depending only on those above it:

* ``bitboard``  board layout, masks, Zobrist keys (constants)
* ``_jit``      the numba policy: decorator, compile cache, bit intrinsics
* ``movegen``   kernels: move generation, make, hashing, perft
* ``notation``  PDN FEN and move text, and the errors they raise
* ``position``  ``Move``, ``Position``, ``Game``: the rules at Python level

The names below are imported lazily (PEP 562): ``import uci_checkers`` must not
import numba or load kernels, so that the engine process (``python -m
uci_checkers``) can answer ``uci`` at once and compile in the background.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Position": "position", "Move": "position", "Game": "position", "GameStatus": "position",
    "NotationError": "notation", "InvalidFenError": "notation", "InvalidMoveError": "notation",
    "IllegalMoveError": "notation", "AmbiguousMoveError": "notation",
}

__all__ = ["__version__", "Position", "Move", "Game", "GameStatus", "NotationError",
           "InvalidFenError", "InvalidMoveError", "IllegalMoveError", "AmbiguousMoveError"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'uci_checkers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
