"""uci_checkers: an English checkers engine with a UCI-style text protocol.

Layers, each a folder, imports pointing down only (ARCHITECTURE.md):
``util`` < ``rules`` < ``egdb`` < ``search`` < ``engine`` < ``protocols`` < tools
(``client``, ``arena``, ``gui``, ``learn``, ``tools``, ``cli``).  The public names
below come from ``rules``.

The names below are imported lazily (PEP 562): ``import uci_checkers`` must not
import numba or load kernels, so that the engine process (``python -m
uci_checkers``) can answer ``uci`` at once and compile in the background.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Position": "rules.position", "Move": "rules.position", "Game": "rules.position", "GameStatus": "rules.position",
    "NotationError": "rules.notation", "InvalidFenError": "rules.notation", "InvalidMoveError": "rules.notation",
    "IllegalMoveError": "rules.notation", "AmbiguousMoveError": "rules.notation",
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
