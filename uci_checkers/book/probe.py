"""Choosing a book move: the moves within ``variety`` centi-men of the best, one of them picked by a generator
fixed by the seed and the position (the same seed, position and variety always give the same move)."""
from __future__ import annotations

import hashlib
import random
import struct
from typing import Optional, Sequence

from .store import BookMove


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
