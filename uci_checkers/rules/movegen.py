"""Legal move generation, make, Zobrist update and move counting: numba kernels over int64 bitboards.

A position is four ints: ``black``, ``white``, ``kings`` (bitboards in the padded
layout of :mod:`uci_checkers.rules.bitboard`) and ``stm`` (side to move, 0 Black, 1 White).

Move encoding
-------------
A move is two int64 words kept in parallel buffers:

``move`` (everything ``make_move`` needs)::

    bits  0-5   from bit index
    bits  6-11  to bit index            (equal to from when a king's capture loop ends where it began)
    bits 12-46  captured pieces, as a bitboard shifted left by 12
    bit  47     promotion (a man reaches the far row; also ends a capture chain)

``path`` (only needed to print the move): the landing bit indices, 6 bits each,
first landing in bits 0-5.  A quiet move has one landing; a capture has one per
captured piece (at most 9 in English checkers: a king's landings lie on one
quarter of the board and its victims on 9 interior squares).

Two captures taking the same pieces from the same start to the same end by
different routes have equal ``move`` words and different ``path`` words: they are
different moves (perft counts both) that lead to the same position.

Buffers: generators write moves at ``moves[start:start+n]`` (and the paths at
``paths[start:...]``) and return ``n``; callers size each slot ``MAX_MOVES``.

Counting
--------
``count_moves`` (perft's bulk count at the last ply) uses ``_count_side``:
popcounts for quiet moves, a bit-parallel count of men's single jumps, and a
recursive walk only for chains that go on.  It is called with a literal side
(``0``/``1``): numba compiles one version per literal, so each colour's code has
no side-to-move branches.  The perft kernels themselves live in
:mod:`uci_checkers.rules.perft`.
"""
from __future__ import annotations

import numpy as np

from ..util.jit import ctz, kernel, popcount
from .bitboard import BLACK_CROWN, CAPTURE_MASK, PROMOTION_FLAG, SQUARES, WHITE_CROWN, ZOBRIST_PIECE, ZOBRIST_SIDE

MAX_MOVES = 512          # per generation slot; generous because king capture loops multiply paths
MAX_PLY = 128            # perft/search stack depth

_SQ = SQUARES
_BCROWN = BLACK_CROWN
_WCROWN = WHITE_CROWN
_ZP = ZOBRIST_PIECE
_ZS = ZOBRIST_SIDE


@kernel
def move_from(mv):
    return mv & 63


@kernel
def move_to(mv):
    return (mv >> 6) & 63


@kernel
def move_captured(mv):
    return (mv >> 12) & CAPTURE_MASK


@kernel
def capture_movers(us_men, us_kings, them, empty, stm):
    """Bitboard of our pieces that have at least one jump."""
    if stm == 0:
        fwd = us_men | us_kings
        back = us_kings
    else:
        fwd = us_kings
        back = us_men | us_kings
    j = (fwd & (them >> 4) & (empty >> 8)) | (fwd & (them >> 5) & (empty >> 10))
    j |= (back & (them << 4) & (empty << 8)) | (back & (them << 5) & (empty << 10))
    return j & _SQ


@kernel(inline="always")
def may_jump(is_king, stm, d):
    """Whether a piece may jump in direction ``d`` (see :func:`jump_step`).

    0-1 go toward higher bits (Black's forward), 2-3 toward lower bits (White's
    forward); a king uses all four.  Callers loop ``for d in range(4)``: constant
    bounds let LLVM unroll the loop and fold each ``jump_step`` (a ``range(lo, hi)``
    per piece kind measured about 5% slower in the search bench).
    """
    if d < 2:
        return not (is_king == 0 and stm == 1)
    return not (is_king == 0 and stm == 0)


@kernel(inline="always")
def jump_step(at, d):
    """``(over, land)``: the jumped square and the landing square of a jump from the single-bit ``at`` in direction ``d``."""
    if d == 0:
        return at << 4, at << 8
    if d == 1:
        return at << 5, at << 10
    if d == 2:
        return at >> 4, at >> 8
    return at >> 5, at >> 10


@kernel
def _count_chains(at, victims, empty, crown, is_king, stm):
    """Number of maximal capture chains continuing from the single-bit square ``at``.

    ``victims`` are the enemy pieces not yet jumped in this chain (a piece cannot be
    jumped twice); jumped pieces stay on the board until the move ends, so
    ``empty`` never changes during a chain.
    """
    n = np.int64(0)
    for d in range(4):
        if not may_jump(is_king, stm, d):
            continue
        over, land = jump_step(at, d)
        if (over & victims) == 0 or (land & empty) == 0:
            continue
        if is_king == 0 and (land & crown) != 0:
            n += 1  # crowning ends the move
        else:
            n += _count_chains(land, victims ^ over, empty, crown, is_king, stm)
    return n if n > 0 else 1


@kernel
def _gen_chains(frm, at, them, captured, empty, crown, is_king, stm, path, njumps, n, moves, paths, start):
    """Write every maximal capture chain continuing from ``at`` (see _count_chains); return the new count."""
    extended = False
    for d in range(4):
        if not may_jump(is_king, stm, d):
            continue
        over, land = jump_step(at, d)
        if (over & them & ~captured) == 0 or (land & empty) == 0:
            continue
        extended = True
        li = ctz(land)
        new_path = path | (li << (6 * njumps))
        if is_king == 0 and (land & crown) != 0:
            # Crowning ends the move, even if the new king could jump on.
            if start + n < moves.shape[0]:
                moves[start + n] = frm | (li << 6) | ((captured | over) << 12) | PROMOTION_FLAG
                paths[start + n] = new_path
                n += 1
        else:
            n = _gen_chains(frm, land, them, captured | over, empty, crown, is_king, stm, new_path,
                            njumps + 1, n, moves, paths, start)
    if not extended and start + n < moves.shape[0]:
        moves[start + n] = frm | (ctz(at) << 6) | (captured << 12)
        paths[start + n] = path
        n += 1
    return n


@kernel
def _capture_setup(black, white, kings, stm):
    if stm == 0:
        return black, white, _BCROWN
    return white, black, _WCROWN


@kernel
def gen_captures(black, white, kings, stm, moves, paths, start):
    """Write every capture (each landing path its own move) at ``moves[start:]``; return the count."""
    us, them, crown = _capture_setup(black, white, kings, stm)
    empty = _SQ & ~(black | white)
    jumpers = capture_movers(us & ~kings, us & kings, them, empty, stm)
    # an int64 from the start: with a literal 0 numba compiles a second overload of the recursive
    # _gen_chains that calls the first by a name only this process knows; a cache holding it without
    # this caller (a first compile cut short) then aborts every later process that loads it
    n = np.int64(0)
    while jumpers != 0:
        b = ctz(jumpers)
        jumpers &= jumpers - 1
        bit = np.int64(1) << b
        is_king = 1 if (kings & bit) != 0 else 0
        # The mover's own square is empty once it leaves: a king may pass over or end on it.
        n = _gen_chains(b, bit, them, np.int64(0), empty | bit, crown, is_king, stm, np.int64(0),
                        np.int64(0), n, moves, paths, start)
    return n


@kernel
def count_captures(black, white, kings, stm):
    """Number of capture moves (each landing path counted), without writing them."""
    us, them, crown = _capture_setup(black, white, kings, stm)
    empty = _SQ & ~(black | white)
    jumpers = capture_movers(us & ~kings, us & kings, them, empty, stm)
    n = np.int64(0)
    while jumpers != 0:
        bit = jumpers & -jumpers
        jumpers ^= bit
        is_king = 1 if (kings & bit) != 0 else 0
        n += _count_chains(bit, them, empty | bit, crown, is_king, stm)
    return n


@kernel(inline="always")
def step_movers(us, kings, stm):
    """``(fwd, back)``: the pieces that may step toward higher bits (directions 0-1) and toward lower bits (2-3)."""
    if stm == 0:
        return us, us & kings
    return us & kings, us


@kernel(inline="always")
def step_targets(fwd, back, empty, d):
    """Empty squares reached by one step in direction ``d`` (0: +4, 1: +5, 2: -4, 3: -5)."""
    if d == 0:
        return (fwd << 4) & empty
    if d == 1:
        return (fwd << 5) & empty
    if d == 2:
        return (back >> 4) & empty
    return (back >> 5) & empty


@kernel(inline="always")
def step_origin(target, d):
    """The square (bitboard) a step in direction ``d`` came from to reach ``target``."""
    if d == 0:
        return target >> 4
    if d == 1:
        return target >> 5
    if d == 2:
        return target << 4
    return target << 5


@kernel(inline="always")
def write_quiet_words(black, white, kings, stm, words, start):
    """Write the move word of every non-capturing move at ``words[start:]``; return the count.

    Shared by :func:`gen_quiet` (which adds the landing paths) and the search (which
    needs no paths).  Inlined so that passing the buffer costs no reference counting.
    """
    empty = _SQ & ~(black | white)
    us = black if stm == 0 else white
    crown = _BCROWN if stm == 0 else _WCROWN
    fwd, back = step_movers(us, kings, stm)
    n = 0
    for d in range(4):
        targets = step_targets(fwd, back, empty, d)
        while targets != 0:
            tb = targets & -targets
            targets ^= tb
            fb = step_origin(tb, d)
            mv = ctz(fb) | (ctz(tb) << 6)
            if (kings & fb) == 0 and (crown & tb) != 0:
                mv |= PROMOTION_FLAG
            if start + n < words.shape[0]:
                words[start + n] = mv
                n += 1
    return n


@kernel
def gen_quiet(black, white, kings, stm, moves, paths, start):
    """Write every non-capturing move at ``moves[start:]``; return the count."""
    n = write_quiet_words(black, white, kings, stm, moves, start)
    for i in range(start, start + n):
        paths[i] = (moves[i] >> 6) & 63   # one landing: the destination
    return n


@kernel
def gen_moves(black, white, kings, stm, moves, paths, start):
    """All legal moves: the captures if there is any, else the quiet moves."""
    if has_capture(black, white, kings, stm):
        return gen_captures(black, white, kings, stm, moves, paths, start)
    return gen_quiet(black, white, kings, stm, moves, paths, start)


@kernel
def has_capture(black, white, kings, stm):
    if stm == 0:
        us = black
        them = white
    else:
        us = white
        them = black
    empty = _SQ & ~(black | white)
    return capture_movers(us & ~kings, us & kings, them, empty, stm) != 0


@kernel
def count_quiet(black, white, kings, stm):
    empty = _SQ & ~(black | white)
    if stm == 0:
        fwd = black
        back = black & kings
    else:
        fwd = white & kings
        back = white
    return (popcount((fwd << 4) & empty) + popcount((fwd << 5) & empty)
            + popcount((back >> 4) & empty) + popcount((back >> 5) & empty))


@kernel
def make_move(black, white, kings, stm, mv):
    """The position after ``mv`` (side to move not flipped here): returns (black, white, kings)."""
    f = np.int64(1) << (mv & 63)
    t = np.int64(1) << ((mv >> 6) & 63)
    cap = (mv >> 12) & CAPTURE_MASK
    if (kings & f) != 0:
        kings = (kings & ~f) | t
    elif (mv & PROMOTION_FLAG) != 0:
        kings |= t
    kings &= ~cap
    if stm == 0:
        black = (black & ~f) | t
        white &= ~cap
    else:
        white = (white & ~f) | t
        black &= ~cap
    return black, white, kings


@kernel
def hash_position(black, white, kings, stm):
    """Zobrist key of a position, from scratch."""
    h = np.int64(0)
    x = black | white
    while x != 0:
        b = ctz(x)
        x &= x - 1
        kind = (0 if (black >> b) & 1 else 1) + (2 if (kings >> b) & 1 else 0)
        h ^= _ZP[kind, b]
    if stm == 1:
        h ^= _ZS
    return h


@kernel
def hash_delta(black, white, kings, stm, mv):
    """What to XOR into the Zobrist key of a position to play ``mv`` (side flip included)."""
    f = mv & 63
    t = (mv >> 6) & 63
    was_king = (kings >> f) & 1
    kind = stm + 2 * was_king
    new_kind = kind
    if was_king == 0 and (mv & PROMOTION_FLAG) != 0:
        new_kind = stm + 2
    d = _ZP[kind, f] ^ _ZP[new_kind, t] ^ _ZS
    cap = (mv >> 12) & CAPTURE_MASK
    other = 1 - stm
    while cap != 0:
        b = ctz(cap)
        cap &= cap - 1
        d ^= _ZP[other + 2 * ((kings >> b) & 1), b]
    return d


@kernel
def count_moves(black, white, kings, stm):
    """Number of legal moves: quiet moves counted by popcount, capture chains walked without writing."""
    if stm == 0:
        return _count_side(black, white, kings, 0)
    return _count_side(white, black, kings, 1)


# The three counters below (perft's bulk count) write each direction out instead of
# looping over jump_dirs/jump_step: they are specialised per piece kind and colour so
# the recursion carries no is_king/stm/crown arguments and no direction branches.
@kernel
def _count_king_chains(at, victims, empty):
    """_count_chains for a king: four directions, no crowning (no colour needed)."""
    n = np.int64(0)
    over = at << 4
    if (over & victims) != 0 and ((at << 8) & empty) != 0:
        n += _count_king_chains(at << 8, victims ^ over, empty)
    over = at << 5
    if (over & victims) != 0 and ((at << 10) & empty) != 0:
        n += _count_king_chains(at << 10, victims ^ over, empty)
    over = at >> 4
    if (over & victims) != 0 and ((at >> 8) & empty) != 0:
        n += _count_king_chains(at >> 8, victims ^ over, empty)
    over = at >> 5
    if (over & victims) != 0 and ((at >> 10) & empty) != 0:
        n += _count_king_chains(at >> 10, victims ^ over, empty)
    return n if n > 0 else 1


@kernel
def _count_black_man_chains(at, victims, empty):
    """_count_chains for a Black man: jumps toward 29-32, where crowning ends the chain."""
    n = np.int64(0)
    over = at << 4
    land = at << 8
    if (over & victims) != 0 and (land & empty) != 0:
        n += 1 if (land & _BCROWN) != 0 else _count_black_man_chains(land, victims ^ over, empty)
    over = at << 5
    land = at << 10
    if (over & victims) != 0 and (land & empty) != 0:
        n += 1 if (land & _BCROWN) != 0 else _count_black_man_chains(land, victims ^ over, empty)
    return n if n > 0 else 1


@kernel
def _count_white_man_chains(at, victims, empty):
    """_count_chains for a White man: jumps toward 1-4, where crowning ends the chain."""
    n = np.int64(0)
    over = at >> 4
    land = at >> 8
    if (over & victims) != 0 and (land & empty) != 0:
        n += 1 if (land & _WCROWN) != 0 else _count_white_man_chains(land, victims ^ over, empty)
    over = at >> 5
    land = at >> 10
    if (over & victims) != 0 and (land & empty) != 0:
        n += 1 if (land & _WCROWN) != 0 else _count_white_man_chains(land, victims ^ over, empty)
    return n if n > 0 else 1


@kernel
def _jumpers(us, them, kings, empty, stm):
    """Our pieces with a jump; ``stm`` is a literal at every call site, so LLVM drops the other colour's code."""
    kg = us & kings
    if stm == 0:
        j = (us & (them >> 4) & (empty >> 8)) | (us & (them >> 5) & (empty >> 10))
        j |= (kg & (them << 4) & (empty << 8)) | (kg & (them << 5) & (empty << 10))
    else:
        j = (us & (them << 4) & (empty << 8)) | (us & (them << 5) & (empty << 10))
        j |= (kg & (them >> 4) & (empty >> 8)) | (kg & (them >> 5) & (empty >> 10))
    return j


@kernel
def _count_side(us, them, kings, stm):
    """count_moves with the mover's pieces first; meant to be called with a literal ``stm``."""
    empty = _SQ & ~(us | them)
    j = _jumpers(us, them, kings, empty, stm)
    if j == 0:
        kg = us & kings
        if stm == 0:
            fwd = us
            back = kg
        else:
            fwd = kg
            back = us
        return (popcount((fwd << 4) & empty) + popcount((fwd << 5) & empty)
                + popcount((back >> 4) & empty) + popcount((back >> 5) & empty))
    # Men first, bit-parallel per direction: a jump whose landing square allows no
    # further jump (or crowns) is one move; only the rest need the recursive walk.
    # For a man the start and jumped squares lie behind it, so the original
    # ``them`` and ``empty`` decide its continuation exactly.
    men = us & ~kings
    n = np.int64(0)
    if stm == 0:
        again = ((them >> 4) & (empty >> 8)) | ((them >> 5) & (empty >> 10))
        l4 = (men & (them >> 4) & (empty >> 8)) << 8
        l5 = (men & (them >> 5) & (empty >> 10)) << 10
        c4 = l4 & again & ~_BCROWN
        c5 = l5 & again & ~_BCROWN
        n += popcount(l4 ^ c4) + popcount(l5 ^ c5)
        while c4 != 0:
            bit = c4 & -c4
            c4 ^= bit
            n += _count_black_man_chains(bit, them ^ (bit >> 4), empty)
        while c5 != 0:
            bit = c5 & -c5
            c5 ^= bit
            n += _count_black_man_chains(bit, them ^ (bit >> 5), empty)
    else:
        again = ((them << 4) & (empty << 8)) | ((them << 5) & (empty << 10))
        l4 = (men & (them << 4) & (empty << 8)) >> 8
        l5 = (men & (them << 5) & (empty << 10)) >> 10
        c4 = l4 & again & ~_WCROWN
        c5 = l5 & again & ~_WCROWN
        n += popcount(l4 ^ c4) + popcount(l5 ^ c5)
        while c4 != 0:
            bit = c4 & -c4
            c4 ^= bit
            n += _count_white_man_chains(bit, them ^ (bit << 4), empty)
        while c5 != 0:
            bit = c5 & -c5
            c5 ^= bit
            n += _count_white_man_chains(bit, them ^ (bit << 5), empty)
    kj = j & kings
    while kj != 0:
        bit = kj & -kj
        kj ^= bit
        n += _count_king_chains(bit, them, empty | bit)
    return n


def new_move_buffers(plies: int = MAX_PLY) -> tuple[np.ndarray, np.ndarray]:
    """Preallocated (moves, paths) buffers with ``plies`` generation slots."""
    return (np.zeros(plies * MAX_MOVES, dtype=np.int64), np.zeros(plies * MAX_MOVES, dtype=np.int64))
