"""Choosing a book move: the moves within ``variety`` centi-men of the best, one of them picked by a generator
fixed by the seed and the position (the same seed, position and variety always give the same move).  The
engine (``OwnBook``) and the browser game's levels choose with :func:`book_choice`."""
from __future__ import annotations

import hashlib
import random
import struct
from typing import Any, Callable, Optional, Sequence

from .store import BookMove, position_key


def candidates(moves: Sequence[BookMove], variety: int) -> list[BookMove]:
    """The moves whose value is at most ``variety`` below the best one (best first, the stored order)."""
    if not moves:
        return []
    best = max(m.value for m in moves)
    return [m for m in moves if m.value >= best - max(0, int(variety))]


def choose(moves: Sequence[BookMove], variety: int, seed: int, key: bytes) -> Optional[BookMove]:
    """The book move to play: with ``variety`` 0 the best (the first of equal ones); otherwise one of the
    :func:`candidates`, drawn uniformly by a generator seeded from ``seed`` and the position ``key``."""
    pool = candidates(moves, variety)
    if not pool:
        return None
    if variety <= 0 or len(pool) == 1:
        return pool[0]
    digest = hashlib.sha256(struct.pack("<Q", int(seed) & (2 ** 64 - 1)) + key).digest()
    return pool[random.Random(int.from_bytes(digest[:8], "little")).randrange(len(pool))]


def book_choice(book: Any, game: Any, variety: int, seed: Callable[[], int]) -> Optional[tuple[Any, BookMove]]:
    """The book's move in ``game``'s position as ``(legal move, book entry)``, or None: the game is over, its
    position occurred before (the history matters there, which the book does not know), or none of the book's
    moves for it is legal.  ``seed()`` is called only when a move is drawn (``variety`` above 0 and a book
    position): the engine announces a seed it draws, so it must not draw one out of the book."""
    if game.status().is_over or game.repetition_count() > 1:
        return None
    pos = game.position
    legal = {m.squares: m for m in pos.legal_moves()}
    entries = [m for m in book.probe(pos) if m.squares in legal]
    if not entries:
        return None
    choice = choose(entries, variety, seed() if variety > 0 else 0, position_key(pos))
    return None if choice is None else (legal[choice.squares], choice)
