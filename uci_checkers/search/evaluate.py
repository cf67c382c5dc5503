"""Static evaluation: a learned, pattern-based score in centi-men (about 100 a man).

The evaluation is a sum of table weights over *features* of the position seen by
the side to move, interpolated between an opening and an endgame weight set by
the number of pieces on the board (Scan's design, fitted to our own games by
:mod:`uci_checkers.learn`).  The weights are data (:mod:`uci_checkers.search.weights`),
passed to the kernels as an int64 array ``ev``; nothing here is hand-set.

The oriented view
-----------------
Every feature is read from the side to move's point of view ("own" and "opp"),
on the board turned so that the own men move toward higher rows: with Black to
move squares are used as they are, with White to move square ``s`` is read as
``33 - s``.  The same position seen by the other colour (colours swapped, the
board turned round, the other side to move) therefore gives exactly the same
features and score: the evaluation is colour-symmetric by construction, and it
can learn what the move is worth (tempo) because it is not forced to be
antisymmetric.

Features (``NF`` of them; each has an opening and an endgame weight)
--------------------------------------------------------------------
``pattern``   9 windows of 4x4 board squares (8 playable squares each), at rows
              0, 2, 4 and columns 0, 2, 4 of the oriented board, overlapping;
              each window's state (empty / own piece / opp piece, a king counting
              as its side's piece: 3^8 = 6561 states) indexes one weight.
              Formations, the back rank, holes, tempo and where the kings stand
              among the men are learnt here.
``material``  the men difference and the king difference (each clipped to -6..6):
              one weight per pair, so trading down and king value are learnt;
              and the counts themselves (own men 0-12, own kings 0-6, opp men,
              opp kings: 13 x 7 x 13 x 7 weights), so that endings whose result
              depends on the absolute material (one king against two, three men
              against two kings) are learnt too; the difference table carries the
              rarely seen count combinations.
``king``      own king on each oriented square, opp king on each square (64).
``mobility``  own and opp plain-move counts (0..15+, one weight each).
``runaway``   men 1-4 rows from crowning whose whole forward cone is empty, by rows
              still to go (own, opp): counted, not just flagged.
``tempo``     a constant for the side to move.

Score: ``(sum_open * n + sum_end * (24 - n)) // (24 * UNIT)`` with ``n`` the
number of pieces (at most 24); weights are stored in ``1/UNIT`` centi-men,
interleaved: ``ev[2 f]`` (opening) beside ``ev[2 f + 1]`` (endgame), so that one
feature costs one cache line (the table is larger than the L1 and L2 caches).

``feature_list`` writes the active features of a position (index, count) for the
trainer; ``evaluate`` sums the same features directly (the tests check both
against a pure-Python reference).
"""
from __future__ import annotations

import numpy as np

from ..rules.bitboard import SQUARE_TO_BIT, SQUARES
from ..util.jit import ctz, kernel, popcount
from .layouts import PATTERN_LAYOUT

UNIT = 16                      # weights are in 1/16 centi-men
PHASE_PIECES = 24              # piece count of the pure opening weight set

# --- feature layout ----------------------------------------------------------
N_WINDOWS = 9
WINDOW_STATES = 6561           # 3^8
F_PATTERN = 0
F_MATERIAL = F_PATTERN + N_WINDOWS * WINDOW_STATES
MAT_CLIP = 6
MAT_SIDE = 2 * MAT_CLIP + 1
F_COUNTS = F_MATERIAL + MAT_SIDE * MAT_SIDE
MEN_COUNTS = 13                # 0..12 men of a side
KING_COUNTS = 7                # 0..6 kings of a side (more are counted as 6)
F_KING_OWN = F_COUNTS + MEN_COUNTS * KING_COUNTS * MEN_COUNTS * KING_COUNTS
F_KING_OPP = F_KING_OWN + 32
F_MOB_OWN = F_KING_OPP + 32
F_MOB_OPP = F_MOB_OWN + 16
F_RUN_OWN = F_MOB_OPP + 16
F_RUN_OPP = F_RUN_OWN + 4
F_TEMPO = F_RUN_OPP + 4
NF = F_TEMPO + 1
FEATURE_LAYOUT = PATTERN_LAYOUT
MAX_ACTIVE = 64                # active features of one position never exceed this

BLOCKS = (("pattern", F_PATTERN, F_MATERIAL), ("material", F_MATERIAL, F_KING_OWN),
          ("king", F_KING_OWN, F_MOB_OWN), ("mobility", F_MOB_OWN, F_RUN_OWN),
          ("runaway", F_RUN_OWN, F_TEMPO), ("tempo", F_TEMPO, NF))
TERM_NAMES = tuple(name for name, _, _ in BLOCKS)

# --- tables --------------------------------------------------------------------
# ROW_BIT[r]: bit of the first square of board row r (4 squares a row, consecutive bits).
ROW_BIT = np.array([SQUARE_TO_BIT[4 * r] for r in range(8)], dtype=np.int64)
# REV4[x]: a row's 4-bit nibble read from the other side of the board.
REV4 = np.array([int(f"{x:04b}"[::-1], 2) for x in range(16)], dtype=np.int64)


def _pair_codes() -> np.ndarray:
    """PAIR[stm, own4 * 16 + opp4, j]: base-3 code (0 empty, 1 own, 2 opp) of oriented squares j, j+1
    of a row whose own/opp men are the nibbles own4/opp4 as stored (for stm 1 the row is read
    backwards, so the table does the turning round)."""
    t = np.zeros((2, 256, 3), dtype=np.int64)
    for stm in range(2):
        for own in range(16):
            for opp in range(16):
                a, b = (own, opp) if stm == 0 else (REV4[own], REV4[opp])
                for j in range(3):
                    code = 0
                    for k, q in enumerate((j, j + 1)):
                        s = 1 if (a >> q) & 1 else (2 if (b >> q) & 1 else 0)
                        code += s * 3 ** k
                    t[stm, own * 16 + opp, j] = code
    return t


PAIR = _pair_codes()




def _oriented_square() -> np.ndarray:
    """OSQ[stm, bit]: the oriented square (0-31) of a bit for the side to move."""
    t = np.zeros((2, 64), dtype=np.int64)
    for o in range(32):
        t[0, SQUARE_TO_BIT[o]] = o
        t[1, SQUARE_TO_BIT[31 - o]] = o
    return t


OSQ = _oriented_square()


def _cones() -> np.ndarray:
    """CONE[side, bit]: every square a man of ``side`` on ``bit`` could ever step on."""
    def rc(s):
        r = (s - 1) // 4
        c = (s - 1) % 4
        return r, (2 * c + 1 if r % 2 == 0 else 2 * c)
    cone = np.zeros((2, 64), dtype=np.int64)
    for s in range(1, 33):
        r, c = rc(s)
        for t in range(1, 33):
            r2, c2 = rc(t)
            if r2 > r and abs(c2 - c) <= r2 - r:
                cone[0, SQUARE_TO_BIT[s - 1]] |= 1 << SQUARE_TO_BIT[t - 1]
            if r2 < r and abs(c2 - c) <= r - r2:
                cone[1, SQUARE_TO_BIT[s - 1]] |= 1 << SQUARE_TO_BIT[t - 1]
    return cone


CONE = _cones()
# RUN_ROWS[side]: men of ``side`` that are counted as runaways when their cone is empty: 1-4 rows to go
# (further back the cone is big and nearly never empty, and the loop would cost every evaluation)
RUN_ROWS = np.array([sum(1 << SQUARE_TO_BIT[s - 1] for s in range(13, 29)),
                     sum(1 << SQUARE_TO_BIT[s - 1] for s in range(5, 21))], dtype=np.int64)
_ALL = SQUARES


# --- kernels ---------------------------------------------------------------------
@kernel
def _sides(black, white, kings, stm):
    """(own, opp) pieces of the side to move and of the other side."""
    if stm == 0:
        return black, white
    return white, black


@kernel
def _row_pair(own, opp, r, stm):
    """Oriented row ``r`` as the PAIR row index ``own4 * 16 + opp4`` (nibbles as stored)."""
    shift = ROW_BIT[r] if stm == 0 else ROW_BIT[7 - r]
    return ((own >> shift) & 15) * 16 + ((opp >> shift) & 15)


@kernel
def _band(own, opp, stm, r0):
    """States (0..6560) of the three windows on oriented rows r0..r0+3 (columns 0, 2, 4)."""
    x0 = _row_pair(own, opp, r0, stm)
    x1 = _row_pair(own, opp, r0 + 1, stm)
    x2 = _row_pair(own, opp, r0 + 2, stm)
    x3 = _row_pair(own, opp, r0 + 3, stm)
    i0 = PAIR[stm, x0, 0] + 9 * PAIR[stm, x1, 0] + 81 * PAIR[stm, x2, 0] + 729 * PAIR[stm, x3, 0]
    i1 = PAIR[stm, x0, 1] + 9 * PAIR[stm, x1, 1] + 81 * PAIR[stm, x2, 1] + 729 * PAIR[stm, x3, 1]
    i2 = PAIR[stm, x0, 2] + 9 * PAIR[stm, x1, 2] + 81 * PAIR[stm, x2, 2] + 729 * PAIR[stm, x3, 2]
    return i0, i1, i2


@kernel
def _mobility(own, opp, kings, stm):
    """Plain (non-capturing) moves of ``own`` (pieces of side ``stm``) as a count of steps."""
    empty = _ALL & ~(own | opp)
    k = own & kings
    if stm == 0:
        return popcount((own << 4) & empty) + popcount((own << 5) & empty) \
            + popcount((k >> 4) & empty) + popcount((k >> 5) & empty)
    return popcount((own >> 4) & empty) + popcount((own >> 5) & empty) \
        + popcount((k << 4) & empty) + popcount((k << 5) & empty)


@kernel
def _runaway_rows(men, occ, side, r_out):
    """Count men of ``side`` with an empty forward cone into r_out[rows to go - 1]."""
    x = men & RUN_ROWS[side]
    while x != 0:
        bit = ctz(x)
        x &= x - 1
        if (CONE[side, bit] & occ) == 0:
            row = (bit - bit // 9) // 4
            r_out[(7 - row if side == 0 else row) - 1] += 1


@kernel
def _material_features(own_men, own_kings, opp_men, opp_kings):
    """The two material features, from one count of each kind of piece: (difference, counts).

    The counts are clipped, although a legal position has at most 12 pieces a side: the kernels
    read ``ev`` unchecked, so no board handed in from outside may index past its block."""
    om = popcount(own_men)
    ok = popcount(own_kings)
    xm = popcount(opp_men)
    xk = popcount(opp_kings)
    dm = max(-MAT_CLIP, min(MAT_CLIP, om - xm))
    dk = max(-MAT_CLIP, min(MAT_CLIP, ok - xk))
    difference = F_MATERIAL + (dm + MAT_CLIP) * MAT_SIDE + (dk + MAT_CLIP)
    counts = F_COUNTS + ((min(MEN_COUNTS - 1, om) * KING_COUNTS + min(KING_COUNTS - 1, ok)) * MEN_COUNTS
                         + min(MEN_COUNTS - 1, xm)) * KING_COUNTS + min(KING_COUNTS - 1, xk)
    return difference, counts


@kernel
def _king_squares(kings_of_side, base, stm, idx, cnt, m):
    """Append one feature per king (``base`` + its oriented square) at ``m``; return the new count."""
    x = kings_of_side
    while x != 0:
        idx[m] = base + OSQ[stm, ctz(x)]
        cnt[m] = 1
        m += 1
        x &= x - 1
    return m


@kernel
def feature_list(black, white, kings, stm, idx, cnt):
    """Write the active features (index, count) of a position into ``idx``/``cnt``; return how many.

    Window ``w`` (band ``w // 3`` of rows ``2 * (w // 3)``.., columns ``2 * (w % 3)``..)
    is feature ``F_PATTERN + w * WINDOW_STATES + state``; the phase comes from
    :func:`phase_pieces`.
    """
    own, opp = _sides(black, white, kings, stm)
    own_men = own & ~kings
    opp_men = opp & ~kings
    m = 0
    for band in range(3):
        i0, i1, i2 = _band(own, opp, stm, 2 * band)
        idx[m] = F_PATTERN + (3 * band) * WINDOW_STATES + i0
        idx[m + 1] = F_PATTERN + (3 * band + 1) * WINDOW_STATES + i1
        idx[m + 2] = F_PATTERN + (3 * band + 2) * WINDOW_STATES + i2
        cnt[m] = cnt[m + 1] = cnt[m + 2] = 1
        m += 3
    idx[m], idx[m + 1] = _material_features(own_men, own & kings, opp_men, opp & kings)
    cnt[m] = cnt[m + 1] = 1
    m += 2
    m = _king_squares(own & kings, F_KING_OWN, stm, idx, cnt, m)
    m = _king_squares(opp & kings, F_KING_OPP, stm, idx, cnt, m)
    idx[m] = F_MOB_OWN + min(15, _mobility(own, opp, kings, stm))
    cnt[m] = 1
    m += 1
    idx[m] = F_MOB_OPP + min(15, _mobility(opp, own, kings, 1 - stm))
    cnt[m] = 1
    m += 1
    occ = black | white
    runs = np.zeros(8, dtype=np.int64)
    _runaway_rows(own_men, occ, stm, runs[:4])
    _runaway_rows(opp_men, occ, 1 - stm, runs[4:])
    for d in range(4):
        if runs[d] != 0:
            idx[m] = F_RUN_OWN + d
            cnt[m] = runs[d]
            m += 1
        if runs[4 + d] != 0:
            idx[m] = F_RUN_OPP + d
            cnt[m] = runs[4 + d]
            m += 1
    idx[m] = F_TEMPO
    cnt[m] = 1
    m += 1
    return m


@kernel
def phase_pieces(black, white):
    """The piece count that sets the opening/endgame mix (at most PHASE_PIECES)."""
    return min(PHASE_PIECES, popcount(black | white))


@kernel
def _runaway_sum(men, occ, side, ev, base):
    """Sum of opening and endgame runaway weights for the men of ``side`` (two values)."""
    so = 0
    se = 0
    x = men & RUN_ROWS[side]
    while x != 0:
        bit = ctz(x)
        x &= x - 1
        if (CONE[side, bit] & occ) == 0:
            row = (bit - bit // 9) // 4
            f = 2 * (base + (7 - row if side == 0 else row) - 1)
            so += ev[f]
            se += ev[f + 1]
    return so, se


# An explicit signature compiles this kernel when the module is imported.  On a cold start the
# engine imports this module first while a child process compiles the search (see
# engine.warm_up_kernels): the two share the work through the compile cache.
@kernel("int64(int64, int64, int64, int64, int64[:])")
def evaluate(black, white, kings, stm, ev):
    """The static score (centi-men) from the side to move's view, with weights ``ev`` (2*NF int64)."""
    own, opp = _sides(black, white, kings, stm)
    own_men = own & ~kings
    opp_men = opp & ~kings
    so = 0
    se = 0
    for band in range(3):
        i0, i1, i2 = _band(own, opp, stm, 2 * band)
        f = 2 * (F_PATTERN + (3 * band) * WINDOW_STATES + i0)
        g = 2 * (F_PATTERN + (3 * band + 1) * WINDOW_STATES + i1)
        h = 2 * (F_PATTERN + (3 * band + 2) * WINDOW_STATES + i2)
        so += ev[f] + ev[g] + ev[h]
        se += ev[f + 1] + ev[g + 1] + ev[h + 1]
    f, g = _material_features(own_men, own & kings, opp_men, opp & kings)
    f *= 2
    g *= 2
    so += ev[f] + ev[g]
    se += ev[f + 1] + ev[g + 1]
    x = own & kings
    while x != 0:
        f = 2 * (F_KING_OWN + OSQ[stm, ctz(x)])
        so += ev[f]
        se += ev[f + 1]
        x &= x - 1
    x = opp & kings
    while x != 0:
        f = 2 * (F_KING_OPP + OSQ[stm, ctz(x)])
        so += ev[f]
        se += ev[f + 1]
        x &= x - 1
    f = 2 * (F_MOB_OWN + min(15, _mobility(own, opp, kings, stm)))
    g = 2 * (F_MOB_OPP + min(15, _mobility(opp, own, kings, 1 - stm)))
    so += ev[f] + ev[g] + ev[2 * F_TEMPO]
    se += ev[f + 1] + ev[g + 1] + ev[2 * F_TEMPO + 1]
    occ = black | white
    a1, b1 = _runaway_sum(own_men, occ, stm, ev, F_RUN_OWN)
    a2, b2 = _runaway_sum(opp_men, occ, 1 - stm, ev, F_RUN_OPP)
    so += a1 + a2
    se += b1 + b2
    n = min(PHASE_PIECES, popcount(occ))
    return (so * n + se * (PHASE_PIECES - n)) // (PHASE_PIECES * UNIT)


def evaluation_terms(position, ev: np.ndarray) -> dict[str, int]:
    """The static evaluation of ``position`` broken into feature blocks.

    Keys: every name of ``TERM_NAMES`` (Black's view, centi-men, rounded; they sum
    to ``total``), ``total`` (Black's view) and ``total_stm`` (the side to move's
    view, exactly what the search sees) with the weight table ``ev``.
    """
    idx = np.zeros(MAX_ACTIVE, dtype=np.int64)
    cnt = np.zeros(MAX_ACTIVE, dtype=np.int64)
    m = int(feature_list(position.black, position.white, position.kings, position.turn, idx, cnt))
    n = int(phase_pieces(position.black, position.white))
    sign = 1 if position.turn == 0 else -1
    raw = {name: 0 for name in TERM_NAMES}
    for f, k in zip(idx[:m], cnt[:m]):
        for name, lo, hi in BLOCKS:
            if lo <= f < hi:
                raw[name] += int(k) * (int(ev[2 * f]) * n + int(ev[2 * f + 1]) * (PHASE_PIECES - n))
    total_stm = int(evaluate(position.black, position.white, position.kings, position.turn, ev))
    out = {name: sign * v // (PHASE_PIECES * UNIT) for name, v in raw.items()}
    # the rounded terms carry the exact total: put the rounding remainder on the patterns
    out["pattern"] += sign * total_stm - sum(out.values())
    out["total"] = sign * total_stm
    out["total_stm"] = total_stm
    return out


@kernel
def feature_matrix(black, white, kings, stm, idx, cnt, pieces):
    """``feature_list`` for many positions: row i of ``idx``/``cnt`` (width MAX_ACTIVE, unused
    slots count 0 on the tempo feature) and ``pieces[i]`` (the phase piece count)."""
    for i in range(black.shape[0]):
        m = feature_list(black[i], white[i], kings[i], stm[i], idx[i], cnt[i])
        for j in range(m, idx.shape[1]):
            idx[i, j] = F_TEMPO
            cnt[i, j] = 0
        pieces[i] = phase_pieces(black[i], white[i])
