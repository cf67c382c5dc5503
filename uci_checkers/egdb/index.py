"""Material slices and the perfect index of a slice: position -> rank -> position.

A *slice* is a material balance ``(bm, bk, wm, wk)``: the numbers of black men,
black kings, white men and white kings.  Its positions are numbered densely
(a perfect index: every number in ``0 .. size-1`` is exactly one position)::

    index = ((men_rank * n_black_king_sets + bk_rank) * n_white_king_sets + wk_rank) * 2 + stm

Squares are handled as 32-bit *square masks* (bit ``s - 1`` for square ``s``),
converted from and to the padded board layout of :mod:`uci_checkers.rules.bitboard`.

* Black men stand on squares 1-28 (never on their crowning row 29-32); their set
  is ranked in colexicographic order over those 28 squares, counted from Black's
  back row.  Colex order sorts first by the highest element, so the positions
  whose most advanced black man is on a given rank form one contiguous range of
  ``bm_rank`` (the leading-rank subdivision the solver may use).
* White men stand on squares 5-32, counted from White's back row (square 32 is
  0), minus the squares black men hold; the number of such placements depends on
  how many black men stand on 5-28, so ``men_rank = men_offsets[bm_rank] +
  wm_rank`` with a per-slice prefix-sum table (:func:`men_offsets`).
* Black kings are ranked over the squares the men leave free, white kings over
  the squares left after that ("compressed" colex ranks).

Colour symmetry: a position and its colour-reversed image (board turned half a
turn, colours and side to move swapped) have the same value, so only one slice
of each mirror pair is stored (:func:`canonical`); :func:`flip_square_mask` turns a
square mask half a turn.
"""
from __future__ import annotations

from math import comb
from typing import Iterator, NamedTuple

import numpy as np

from ..util.jit import ctz, kernel, popcount

MAX_SIDE = 8                 # pieces per side a material key can describe
KEY_BASE = MAX_SIDE + 1
N_KEYS = KEY_BASE ** 4

# BINOM[n, k] = C(n, k) for n <= 32, k <= 12
BINOM = np.array([[comb(n, k) for k in range(13)] for n in range(33)], dtype=np.int64)
_C = BINOM

MAN_SQUARES = 28
WHITE_MEN_AREA = sum(1 << (s - 1) for s in range(5, 29))   # squares 5-28: where both colours' men may stand
_LOW8 = 0xFF


class Slice(NamedTuple):
    """A material balance: black men, black kings, white men, white kings."""

    bm: int
    bk: int
    wm: int
    wk: int

    @property
    def pieces(self) -> int:
        return self.bm + self.bk + self.wm + self.wk

    @property
    def men(self) -> int:
        return self.bm + self.wm

    @property
    def key(self) -> int:
        return ((self.bm * KEY_BASE + self.bk) * KEY_BASE + self.wm) * KEY_BASE + self.wk

    @property
    def mirror(self) -> "Slice":
        return Slice(self.wm, self.wk, self.bm, self.bk)

    @property
    def name(self) -> str:
        """File-name friendly: ``2m1k-0m2k`` (black first)."""
        return f"{self.bm}m{self.bk}k-{self.wm}m{self.wk}k"

    def __str__(self) -> str:
        return self.name


@kernel
def material_key(bm, bk, wm, wk):
    """The number of a material balance (each count at most MAX_SIDE), for directories."""
    return ((bm * KEY_BASE + bk) * KEY_BASE + wm) * KEY_BASE + wk


def canonical(s: Slice) -> Slice:
    """The member of the mirror pair ``{s, s.mirror}`` that is stored (the one with the smaller key)."""
    return s if s.key <= s.mirror.key else s.mirror


def king_set_counts(s: Slice) -> tuple[int, int]:
    """(number of black-king placements, number of white-king placements) given the men."""
    free = 32 - s.bm - s.wm
    return comb(free, s.bk), comb(free - s.bk, s.wk)


def men_offsets(s: Slice) -> np.ndarray:
    """``offsets[r]`` = first men rank of black-men set ``r`` (colex); ``offsets[-1]`` = number of men placements."""
    n_sets = comb(MAN_SQUARES, s.bm)
    overlap = np.zeros(n_sets, dtype=np.int64)
    _black_men_overlaps(s.bm, overlap)
    counts = np.array([comb(MAN_SQUARES - o, s.wm) for o in range(s.bm + 1)], dtype=np.int64)[overlap]
    offsets = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def slice_size(s: Slice, offsets: np.ndarray | None = None) -> int:
    """Number of positions in the slice (both sides to move)."""
    if offsets is None:
        offsets = men_offsets(s)
    nbk, nwk = king_set_counts(s)
    return int(offsets[-1]) * nbk * nwk * 2


def slices_up_to(pieces: int) -> list[Slice]:
    """Every canonical slice with 2..``pieces`` pieces and at least one piece a side, in build order.

    Build order: fewer pieces first, then fewer men (a promotion turns a man into a
    king, a capture removes a piece: both lead into slices earlier in this order).
    """
    out = []
    for total in range(2, pieces + 1):
        found = set()
        for bm in range(total + 1):
            for bk in range(total + 1 - bm):
                for wm in range(total + 1 - bm - bk):
                    wk = total - bm - bk - wm
                    if bm + bk == 0 or wm + wk == 0 or max(bm + bk, wm + wk) > MAX_SIDE:
                        continue
                    found.add(canonical(Slice(bm, bk, wm, wk)))
        out += sorted(found, key=lambda s: (s.men, s.key))
    return out


def successors(s: Slice) -> set[Slice]:
    """The canonical slices a move from slice ``s`` may lead into, by material alone (a superset):
    a man promoting, or a capture of any number of the opponent's men and kings (a capturing man may
    promote on the way).  Solving ``s`` needs every one of them, and reading a file of ``s`` back
    needs those with fewer pieces (its capture positions are computed from them)."""
    out: set[Slice] = set()
    for black_moves in (True, False):
        m, k, om, ok = (s.bm, s.bk, s.wm, s.wk) if black_moves else (s.wm, s.wk, s.bm, s.bk)
        after = [(m - 1, k + 1, om, ok)] if m else []
        for men in range(om + 1):
            for kings in range(ok + 1):
                if men + kings:
                    after.append((m, k, om - men, ok - kings))
                    if m:
                        after.append((m - 1, k + 1, om - men, ok - kings))
        for a, b, c, d in after:
            if a + b and c + d:
                out.add(canonical(Slice(a, b, c, d) if black_moves else Slice(c, d, a, b)))
    out.discard(s)
    return out


def build_levels(slices: list[Slice]) -> Iterator[list[Slice]]:
    """Groups of slices that depend only on earlier groups (same piece and men counts): buildable in parallel."""
    group: list[Slice] = []
    for s in slices:
        if group and (group[0].pieces, group[0].men) != (s.pieces, s.men):
            yield group
            group = []
        group.append(s)
    if group:
        yield group


# =============================================================================
# Kernels
# =============================================================================
@kernel
def square_mask(bb):
    """Padded bitboard -> 32-bit square mask (bit s-1 for square s)."""
    return (bb & _LOW8) | (((bb >> 9) & _LOW8) << 8) | (((bb >> 18) & _LOW8) << 16) | (((bb >> 27) & _LOW8) << 24)


@kernel
def padded_board(sq):
    """32-bit square mask -> padded bitboard."""
    return (sq & _LOW8) | (((sq >> 8) & _LOW8) << 9) | (((sq >> 16) & _LOW8) << 18) | (((sq >> 24) & _LOW8) << 27)


@kernel
def flip_square_mask(m):
    """The square mask turned half a turn (square s -> 33 - s): a 32-bit reversal."""
    m = ((m >> 1) & 0x55555555) | ((m & 0x55555555) << 1)
    m = ((m >> 2) & 0x33333333) | ((m & 0x33333333) << 2)
    m = ((m >> 4) & 0x0F0F0F0F) | ((m & 0x0F0F0F0F) << 4)
    m = ((m >> 8) & 0x00FF00FF) | ((m & 0x00FF00FF) << 8)
    return ((m >> 16) & 0xFFFF) | ((m & 0xFFFF) << 16)


@kernel
def colex_rank(m, blocked):
    """Colex rank of the set ``m`` with every position counted among the bits not in ``blocked``."""
    r = np.int64(0)
    i = 1
    while m != 0:
        p = ctz(m)
        m &= m - 1
        below = (np.int64(1) << p) - 1
        r += _C[p - popcount(blocked & below), i]
        i += 1
    return r


@kernel
def colex_unrank(r, k, blocked):
    """The ``k``-element set of colex rank ``r`` over the bits not in ``blocked`` (inverse of colex_rank)."""
    m = np.int64(0)
    hi = 32
    for i in range(k, 0, -1):
        # the largest p with C(p, i) <= r, by bisection (C(., i) grows with p)
        lo = i - 1
        while hi - lo > 1:
            mid = (lo + hi) >> 1
            if _C[mid, i] <= r:
                lo = mid
            else:
                hi = mid
        r -= _C[lo, i]
        # the lo-th free bit (0-based): drop the lowest lo free bits
        free = ~blocked & 0xFFFFFFFF
        for _ in range(lo):
            free &= free - 1
        m |= free & -free
        hi = lo
    return m


@kernel
def _black_men_overlaps(bm, out):
    """out[r] = number of black men on squares 5-28 in the black-men set of colex rank r."""
    for r in range(out.shape[0]):
        out[r] = popcount(colex_unrank(r, bm, np.int64(0)) & WHITE_MEN_AREA)


@kernel
def rank_position(black, white, kings, stm, offsets, obase, nbk_sets, nwk_sets):
    """Index of a position (padded bitboards) in its own slice.

    ``offsets[obase:]`` is the slice's :func:`men_offsets` table (a base so that the
    probe can pass its one big table without making a view per call).
    """
    bsq = square_mask(black)
    wsq = square_mask(white)
    ksq = square_mask(kings)
    bmen = bsq & ~ksq
    wmen = wsq & ~ksq
    bm_rank = colex_rank(bmen, np.int64(0))
    wm_rank = colex_rank(flip_square_mask(wmen), flip_square_mask(bmen))
    men = bmen | wmen
    bk_rank = colex_rank(bsq & ksq, men)
    wk_rank = colex_rank(wsq & ksq, men | (bsq & ksq))
    men_rank = offsets[obase + bm_rank] + wm_rank
    return ((men_rank * nbk_sets + bk_rank) * nwk_sets + wk_rank) * 2 + stm


@kernel
def unrank_position(index, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets):
    """The position ``(black, white, kings, stm)`` (padded bitboards) of ``index`` in slice (bm, bk, wm, wk)."""
    stm = index & 1
    r = index >> 1
    wk_rank = r % nwk_sets
    r //= nwk_sets
    bk_rank = r % nbk_sets
    men_rank = r // nbk_sets
    # the black-men set: the last offset <= men_rank
    lo = 0
    hi = offsets.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if offsets[mid] <= men_rank:
            lo = mid
        else:
            hi = mid
    bmen = colex_unrank(np.int64(lo), bm, np.int64(0))
    wmen = flip_square_mask(colex_unrank(men_rank - offsets[lo], wm, flip_square_mask(bmen)))
    men = bmen | wmen
    bkings = colex_unrank(bk_rank, bk, men)
    wkings = colex_unrank(wk_rank, wk, men | bkings)
    black = padded_board(bmen | bkings)
    white = padded_board(wmen | wkings)
    kings = padded_board(bkings | wkings)
    return black, white, kings, stm


@kernel
def count_index_failures(lo, hi, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets):
    """Indices in ``lo .. hi-1`` whose position is malformed or does not rank back to the same index."""
    bad = 0
    for i in range(lo, hi):
        black, white, kings, stm = unrank_position(np.int64(i), bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
        bsq = square_mask(black)
        wsq = square_mask(white)
        ksq = square_mask(kings)
        ok = (bsq & wsq) == 0 and (ksq & ~(bsq | wsq)) == 0
        ok = ok and popcount(bsq & ~ksq) == bm and popcount(bsq & ksq) == bk
        ok = ok and popcount(wsq & ~ksq) == wm and popcount(wsq & ksq) == wk
        ok = ok and (bsq & ~ksq & 0xF0000000) == 0 and (wsq & ~ksq & 0xF) == 0   # men never on their crowning row
        ok = ok and padded_board(bsq) == black and padded_board(wsq) == white
        if not ok or rank_position(black, white, kings, stm, offsets, 0, nbk_sets, nwk_sets) != i:
            bad += 1
    return bad
