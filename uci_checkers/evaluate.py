"""Static evaluation: numba kernels over the padded bitboards, in centi-men (a man is 100).

``evaluate(black, white, kings, stm)`` is what the search calls at its leaves
(score from the side to move's view).  ``evaluation_terms(position)`` breaks
the same score into its named terms for the ``eval`` command; both come from
one kernel (``eval_terms``) so they can never disagree.

Terms (each computed from Black's view, White's mirror subtracted):

``material``    men 100, kings 130
``trade``       when ahead, a bonus growing as pieces come off (trading down wins)
``back_rank``   men on the own back row while the opponent still has men to crown
                (the 1-3 "bridge" for Black, 30-32 for White, is worth extra)
``centre``      men and kings on the central squares
``advance``     men advancing: worth little with a full board, much in the endgame
``mobility``    difference of plain (non-capturing) moves
``runaway``     a man whose whole forward cone is empty cannot be stopped by men:
                a king in as many moves as it has rows to go
``kings``       king placement: centre good, edges poor, the single corner bad
``endgame``     kings-only knowledge: the side ahead drives a lone king out of the
                double corner and brings its kings close
``scale``       drawish scaling: level material with few pieces and the
                one-king-each draw pull the whole score toward zero

Layout facts used (see :mod:`uci_checkers.bitboard`): square ``s`` sits on row
``(s-1)//4`` counted from Black's back row; Black moves toward higher rows.
"""
from __future__ import annotations

import numpy as np

from ._jit import ctz, kernel, popcount
from .bitboard import SQUARE_TO_BIT, SQUARES

MAN = 100
KING = 130

TERM_NAMES = ("material", "trade", "back_rank", "centre", "advance", "mobility", "runaway",
              "kings", "endgame", "scale")


def _sq_mask(squares) -> int:
    m = 0
    for s in squares:
        m |= 1 << SQUARE_TO_BIT[s - 1]
    return m


def _row_col(s: int) -> tuple[int, int]:
    r = (s - 1) // 4
    c = (s - 1) % 4
    return r, (2 * c + 1 if r % 2 == 0 else 2 * c)


def _mirror(s: int) -> int:
    """The square a 180-degree rotation maps ``s`` to (Black's view <-> White's view)."""
    return 33 - s


def _planes(table: dict[int, int], nplanes: int = 6) -> np.ndarray:
    """Bit planes of a non-negative square table: value(s) = sum_j 2^j [s in plane j]."""
    out = np.zeros(nplanes, dtype=np.int64)
    for s, v in table.items():
        assert 0 <= v < (1 << nplanes)
        for j in range(nplanes):
            if (v >> j) & 1:
                out[j] |= 1 << SQUARE_TO_BIT[s - 1]
    return out


def _table_black(values_by_row: list[int]) -> dict[int, int]:
    return {s: values_by_row[(s - 1) // 4] for s in range(1, 33)}


# --- square tables (Black's view; White uses the mirror) ---------------------
# Advancement of men by row (Black's rows 0..7); row 7 is never a man's square.
_ADV_ROWS = [0, 1, 2, 4, 6, 9, 13, 0]
ADV_B = _planes(_table_black(_ADV_ROWS))
ADV_W = _planes({_mirror(s): v for s, v in _table_black(_ADV_ROWS).items()})

# King placement: centre best, edges poor, single corners (4, 29) worst.
_KING_TAB = {}
for _s in range(1, 33):
    _r, _c = _row_col(_s)
    _edge = min(_r, 7 - _r, _c, 7 - _c)
    _KING_TAB[_s] = 4 + 4 * min(_edge, 2)
_KING_TAB[4] = 0
_KING_TAB[29] = 0
KING_PL = _planes(_KING_TAB)

CENTRE4 = _sq_mask([14, 15, 18, 19])
CENTRE8 = _sq_mask([10, 11, 22, 23])
BLACK_BACK = _sq_mask([1, 2, 3, 4])
WHITE_BACK = _sq_mask([29, 30, 31, 32])
BLACK_BRIDGE = _sq_mask([1, 3])
WHITE_BRIDGE = _sq_mask([30, 32])
DOUBLE_CORNERS = _sq_mask([1, 5, 28, 32])
NEAR_DOUBLE = _sq_mask([6, 9, 24, 27])
BLACK_RUN_ROWS = _sq_mask(range(13, 29))   # rows 3-6: cones small enough to matter
WHITE_RUN_ROWS = _sq_mask(range(5, 21))


def _cones() -> np.ndarray:
    """CONE[side, bit]: every square a man of ``side`` on ``bit`` could ever step on."""
    cone = np.zeros((2, 64), dtype=np.int64)
    for s in range(1, 33):
        r, c = _row_col(s)
        for t in range(1, 33):
            r2, c2 = _row_col(t)
            if r2 > r and abs(c2 - c) <= r2 - r:
                cone[0, SQUARE_TO_BIT[s - 1]] |= 1 << SQUARE_TO_BIT[t - 1]
            if r2 < r and abs(c2 - c) <= r - r2:
                cone[1, SQUARE_TO_BIT[s - 1]] |= 1 << SQUARE_TO_BIT[t - 1]
    return cone


CONE = _cones()


def _distance_table() -> np.ndarray:
    """DIST[a, b]: king moves between bits a and b (Chebyshev distance on the 8x8 board)."""
    d = np.zeros((64, 64), dtype=np.int64)
    for s in range(1, 33):
        r, c = _row_col(s)
        for t in range(1, 33):
            r2, c2 = _row_col(t)
            d[SQUARE_TO_BIT[s - 1], SQUARE_TO_BIT[t - 1]] = max(abs(r - r2), abs(c - c2))
    return d


DIST = _distance_table()
_ALL = SQUARES


@kernel
def _sdiv(a, b):
    """a / b rounded toward zero (so that the colour-mirrored position scores exactly the opposite)."""
    return a // b if a >= 0 else -((-a) // b)


@kernel
def _table(bb, planes):
    v = 0
    for j in range(planes.shape[0]):
        v += popcount(bb & planes[j]) << j
    return v


@kernel
def _runaways(men, occ, side, rows):
    """Bonus for men whose whole forward cone is empty (nothing can block or take them but kings)."""
    v = 0
    x = men & rows
    while x != 0:
        bit = ctz(x)
        x &= x - 1
        if (CONE[side, bit] & occ) == 0:
            # rows to go: Black on bit -> row = (bit - bit//9) // 4
            row = (bit - bit // 9) // 4
            dist = 7 - row if side == 0 else row
            v += 40 - 4 * dist
    return v


@kernel
def _lone_king_drive(strong_kings, weak_king_bit):
    """Strong side (kings only) against a lone king: corner it away from the double corner."""
    wk = ctz(weak_king_bit)
    v = 0
    x = strong_kings
    while x != 0:
        v -= 3 * DIST[ctz(x), wk]
        x &= x - 1
    if (weak_king_bit & DOUBLE_CORNERS) != 0:
        v -= 20
    elif (weak_king_bit & NEAR_DOUBLE) != 0:
        v -= 8
    # a lone king on the edge is easier to trap
    v -= _table(weak_king_bit, KING_PL) * 2
    return v + 40


@kernel
def eval_terms(black, white, kings):
    """All terms from Black's view, as a tuple in the order of ``TERM_NAMES``."""
    occ = black | white
    empty = _ALL & ~occ
    bm = black & ~kings
    wm = white & ~kings
    bk = black & kings
    wk = white & kings
    nbm = popcount(bm)
    nwm = popcount(wm)
    nbk = popcount(bk)
    nwk = popcount(wk)
    nb = nbm + nbk
    nw = nwm + nwk
    n = nb + nw

    mat_b = nbm * MAN + nbk * KING
    mat_w = nwm * MAN + nwk * KING
    material = mat_b - mat_w

    trade = 0
    if nb != nw:
        # ahead by a piece: worth more the fewer pieces are left (up to +50% of the lead)
        lead = material
        trade = _sdiv(lead * (24 - n), 40)

    # back rank: matters while the opponent has men left to crown
    back = 0
    if nwm > 0:
        back += popcount(bm & BLACK_BACK) * 6
        if (bm & BLACK_BRIDGE) == BLACK_BRIDGE:
            back += 10
        back = back * (nwm + 4) // 16
    if nbm > 0:
        wb = popcount(wm & WHITE_BACK) * 6
        if (wm & WHITE_BRIDGE) == WHITE_BRIDGE:
            wb += 10
        back -= wb * (nbm + 4) // 16

    centre = (popcount(bm & CENTRE4) - popcount(wm & CENTRE4)) * 5 \
        + (popcount(bm & CENTRE8) - popcount(wm & CENTRE8)) * 2

    # advancement: weight grows as the board empties
    phase = 24 - n                      # 0 at the start, ~20 in endgames
    adv = _sdiv((_table(bm, ADV_B) - _table(wm, ADV_W)) * (phase + 4), 12)

    # plain-move mobility
    bmob = popcount((black << 4) & empty) + popcount((black << 5) & empty) \
        + popcount((bk >> 4) & empty) + popcount((bk >> 5) & empty)
    wmob = popcount((white >> 4) & empty) + popcount((white >> 5) & empty) \
        + popcount((wk << 4) & empty) + popcount((wk << 5) & empty)
    mobility = (bmob - wmob) * 2
    if bmob == 0 and nb > 0:
        mobility -= 15
    if wmob == 0 and nw > 0:
        mobility += 15

    run = 0
    rb = _runaways(bm, occ, 0, BLACK_RUN_ROWS)
    rw = _runaways(wm, occ, 1, WHITE_RUN_ROWS)
    run = (rb if nwk == 0 else rb // 2) - (rw if nbk == 0 else rw // 2)

    kpos = _table(bk, KING_PL) - _table(wk, KING_PL)

    endgame = 0
    if nbm == 0 and nwm == 0:
        if nw == 1 and nb >= 2:
            endgame = _lone_king_drive(bk, wk)
        elif nb == 1 and nw >= 2:
            endgame = -_lone_king_drive(wk, bk)

    total = material + trade + back + centre + adv + mobility + run + kpos + endgame
    scaled = total
    if nbm == 0 and nwm == 0 and nb == 1 and nw == 1:
        scaled = 0                      # one king each: a draw
    elif nb == nw and n <= 8:
        scaled = _sdiv(total * (n + 4), 16)  # level and few pieces: drawish
    elif nbm + nwm == 0 and abs(nb - nw) == 1 and min(nb, nw) >= 3:
        scaled = _sdiv(total * 3, 4)        # e.g. 4 kings vs 3: a long technical win
    return (material, trade, back, centre, adv, mobility, run, kpos, endgame, scaled - total)


@kernel
def evaluate_black(black, white, kings):
    """The static score from Black's view."""
    t = eval_terms(black, white, kings)
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7] + t[8] + t[9]


@kernel
def evaluate(black, white, kings, stm):
    """The static score (centi-men) from the side to move's view."""
    v = evaluate_black(black, white, kings)
    return v if stm == 0 else -v


def evaluation_terms(position) -> dict[str, int]:
    """The static evaluation of ``position`` broken into named terms.

    Keys: every name of ``TERM_NAMES`` (Black's view; they sum to ``total``),
    plus ``total`` (Black's view) and ``total_stm`` (the side to move's view).
    """
    terms = eval_terms(position.black, position.white, position.kings)
    out = {name: int(v) for name, v in zip(TERM_NAMES, terms)}
    total = sum(out.values())
    out["total"] = total
    out["total_stm"] = total if position.turn == 0 else -total
    return out
