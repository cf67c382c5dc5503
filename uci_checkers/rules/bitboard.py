"""Board layout, square maps, masks and Zobrist keys.  No numba here: only constants.

The padded layout
-----------------
The 32 playable squares are stored in 35 bits of an int64, one *ghost* bit after
every 8 squares, so that every diagonal step is a plain shift by 4 or 5.
The board as usually drawn (Black at the top, White at the bottom), each dark
square showing ``square(bit)``::

           a      b      c      d      e      f      g      h
      8        1(0)          2(1)          3(2)          4(3)      Black's back row
      7  5(4)          6(5)          7(6)          8(7)
      6        9(9)         10(10)        11(11)        12(12)     ghost bit 8
      5 13(13)        14(14)        15(15)        16(16)
      4       17(18)        18(19)        19(20)        20(21)     ghost bit 17
      3 21(22)        22(23)        23(24)        24(25)
      2       25(27)        26(28)        27(29)        28(30)     ghost bit 26
      1 29(31)        30(32)        31(33)        32(34)           White's back row

    square s (1-32) -> bit  n + n // 8   with n = s - 1

Adjacency in bits: from any square, ``+4`` and ``+5`` are the two diagonal
neighbours toward White's side (Black's forward), ``-4`` and ``-5`` toward
Black's side (White's forward).  A step that lands on a ghost bit (8, 17, 26) or
outside bits 0-34 leaves the board; because ghosts never hold pieces and are
not in ``SQUARES``, masking with ``SQUARES`` is the whole edge test.  A jump is
two equal steps: over ``b+4`` to ``b+8``, over ``b+5`` to ``b+10`` and so on.

Colours and sides: Black (the first mover, side 0) starts on 1-12 and crowns on
29-32; White (side 1) starts on 21-32 and crowns on 1-4.

Zobrist keys are generated from a fixed seed with splitmix64, so every process
and every compile cache agrees on them.  They are non-negative int64 values
(63 random bits) because numba must never see uint64.
"""
from __future__ import annotations

import numpy as np

BLACK = 0
WHITE = 1
SIDE_NAMES = ("black", "white")

NUM_BITS = 35
SQUARE_TO_BIT = tuple((s - 1) + (s - 1) // 8 for s in range(1, 33))
BIT_TO_SQUARE = tuple(SQUARE_TO_BIT.index(b) + 1 if b in SQUARE_TO_BIT else 0 for b in range(64))

SQUARES = 0
for _b in SQUARE_TO_BIT:
    SQUARES |= 1 << _b

# Crowning rows: Black crowns on 29-32, White on 1-4.
BLACK_CROWN = sum(1 << SQUARE_TO_BIT[s - 1] for s in range(29, 33))
WHITE_CROWN = sum(1 << SQUARE_TO_BIT[s - 1] for s in range(1, 5))

BLACK_START = sum(1 << SQUARE_TO_BIT[s - 1] for s in range(1, 13))
WHITE_START = sum(1 << SQUARE_TO_BIT[s - 1] for s in range(21, 33))

# The move word (see rules/movegen.py): from bit in bits 0-5, to bit in 6-11, the captured pieces'
# bitboard from bit 12, the promotion flag in bit 47.  Here, without numba, so that the pure-Python
# rules (slowmoves) and Move use the layout the kernels use.
FROM_MASK = 63
CAPTURE_SHIFT = 12
CAPTURE_MASK = (1 << 35) - 1
PROMOTION_FLAG = 1 << 47

# Direction d in 0..3 = shift amounts +4, +5, -4, -5.  Black men use 0-1,
# White men 2-3, kings all four.
DIRECTION_SHIFTS = (4, 5, -4, -5)


def square_bit(square: int) -> int:
    """The bitboard with just ``square`` (1-32) set."""
    return 1 << SQUARE_TO_BIT[square - 1]


def bits_to_squares(bb: int) -> list[int]:
    """Sorted square numbers set in a bitboard."""
    return [s for s in range(1, 33) if bb >> SQUARE_TO_BIT[s - 1] & 1]


def squares_to_bits(squares) -> int:
    bb = 0
    for s in squares:
        bb |= square_bit(s)
    return bb


def _splitmix64(seed: int):
    mask = (1 << 64) - 1
    state = seed & mask
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield (z ^ (z >> 31)) >> 1  # 63 bits: stays a non-negative int64


def _zobrist_tables():
    gen = _splitmix64(0x5EED_C4EC_3E25)
    piece = np.zeros((4, 64), dtype=np.int64)  # [black man, white man, black king, white king][bit]
    for kind in range(4):
        for b in range(64):
            value = next(gen)
            piece[kind, b] = value if b in SQUARE_TO_BIT else 0
    side = np.int64(next(gen))
    return piece, side


ZOBRIST_PIECE, ZOBRIST_SIDE = _zobrist_tables()
ZOBRIST_SIDE = int(ZOBRIST_SIDE)
