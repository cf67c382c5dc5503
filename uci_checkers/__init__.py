"""uci_checkers: an English checkers engine with a UCI-style text protocol.

Layers, each depending only on those above it:

* ``bitboard``  board layout, masks, Zobrist keys (constants)
* ``_jit``      the numba policy: decorator, compile cache, bit intrinsics
* ``movegen``   kernels: move generation, make, hashing, perft
* ``notation``  PDN FEN and move text, and the errors they raise
* ``position``  ``Move``, ``Position``, ``Game``: the rules at Python level
"""
__version__ = "0.1.0"

from .notation import (AmbiguousMoveError, IllegalMoveError, InvalidFenError, InvalidMoveError,
                       NotationError)
from .position import Game, GameStatus, Move, Position

__all__ = ["__version__", "Position", "Move", "Game", "GameStatus", "NotationError",
           "InvalidFenError", "InvalidMoveError", "IllegalMoveError", "AmbiguousMoveError"]
