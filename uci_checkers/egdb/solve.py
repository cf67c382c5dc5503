"""Solving one slice by retrograde analysis, and verifying a solved slice: numba kernels.

A slice is solved once every slice its captures and promotions lead into is in the
probe table ``eg`` (:func:`uci_checkers.egdb.index.slices_up_to` gives that order).
Inside a slice the only moves are quiet, non-promoting ones, and they can be
taken back ("un-moves"), so the slice is solved backwards in rounds of increasing
distance ``D`` (plies to the end of the game):

1. :func:`init_range` visits every position once with the forward move generator.
   Moves that leave the slice (captures, promotions) are looked up in ``eg``; moves
   inside the slice are only counted (``remaining``).  A position with a losing
   successor outside is scheduled to be a win at ``D = that distance + 1``; one
   whose moves all leave the slice into wins for the opponent is scheduled to be
   a loss at ``1 + the longest of them`` (no legal move at all: a loss at 0).
2. :func:`propagate` settles the positions of distance ``D`` (those scheduled at
   ``D`` and those reached in round ``D - 1``) and walks their predecessors: a
   predecessor of a loss is a win at ``D + 1`` (the first time is the shortest);
   a predecessor of a win loses one ``remaining`` move, and once none is left and
   no move leads to a draw or a loss it is a loss at ``max(D + 1, longest
   outside win + 1)``.  Rounds go on until nothing is left to settle.
3. What was never settled is a draw.

A predecessor must have had no capture (else the quiet move was not legal).
Every position is settled at most once, so the work is one forward generation
plus one backward generation per position, whatever the longest distance.

:func:`verify_range` then checks every value against its successors with the
forward generator only (independent of the un-move code): a win at D has a
successor lost at D - 1 and none lost sooner, a loss at D has only successors won
at D - 1 or sooner, a draw has a drawn successor and no lost one.

Work arrays are int16/int32 (one entry per position of the slice, millions of
them): int64 would multiply the memory of a 6-piece build by four.
"""
from __future__ import annotations

import numpy as np

from ..rules import movegen as mg
from ..util.jit import kernel
from ..rules.bitboard import SQUARES
from .index import rank_position, unrank_position
from .probe import NOT_FOUND, WLD_LOSS, fold_child, probe

MAX_DISTANCE = 251           # codes are D + 1 in one byte below WLD_LOSS; a longer distance is an error
NO_WIN = 32767
UNSOLVED = -1

# stats words filled by the kernels
ST_ERROR = 0                 # 1: a successor slice is missing from eg; 2: distance overflow
ST_ERROR_INDEX = 1
ST_MAX_SCHED = 2             # largest scheduled distance
ST_MISMATCH = 3              # verify: number of inconsistent values
ST_FIRST_BAD = 4             # verify: first inconsistent index (-1 if none)
STATS_WORDS = 8

_SQ = SQUARES


@kernel
def outside_code(eg, black, white, kings, stm):
    """Code of a position outside the slice: a side with no piece has lost (0 plies); else the table's code."""
    if (black if stm == 0 else white) == 0:
        return np.int64(1)
    code = probe(eg, black, white, kings, stm)
    if code >= WLD_LOSS:
        # a slice stored without distances: lost / won "at once" (exact results, made-up distances;
        # only slices stored without distances themselves depend on these)
        return np.int64(1) if code == WLD_LOSS else np.int64(2)
    return code


@kernel
def position_and_moves(i, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, moves, paths):
    """The position of index ``i`` and its legal moves (written to ``moves``): ``(black, white, kings, stm,
    capture, count)``; captures are compulsory, so ``capture`` says which kind the moves are."""
    black, white, kings, stm = unrank_position(np.int64(i), bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
    capt = mg.has_capture(black, white, kings, stm)
    if capt:
        n = mg.gen_captures(black, white, kings, stm, moves, paths, 0)
    else:
        n = mg.write_quiet_words(black, white, kings, stm, moves, 0)
    return black, white, kings, stm, capt, n


@kernel
def init_range(lo, hi, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, eg,
               remaining, win_at, loss_floor, has_draw, sched_head, sched_next, stats):
    """Step 1 for indices ``lo .. hi-1`` (see the module docstring)."""
    moves = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    paths = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    for i in range(lo, hi):
        black, white, kings, stm, capt, n = position_and_moves(i, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets,
                                                               moves, paths)
        inside = 0
        win = NO_WIN
        floor = 0
        draw = 0
        for j in range(n):
            mv = moves[j]
            if not capt and (mv & mg.PROMOTION_FLAG) == 0:
                inside += 1
                continue
            b2, w2, k2 = mg.make_move(black, white, kings, stm, mv)
            code = outside_code(eg, b2, w2, k2, 1 - stm)
            if code == NOT_FOUND:
                stats[ST_ERROR] = 1
                stats[ST_ERROR_INDEX] = i
                return
            win, floor, draw = fold_child(code, win, floor, draw)
        remaining[i] = inside
        win_at[i] = win
        loss_floor[i] = floor
        has_draw[i] = draw
        at = -1
        if win != NO_WIN:
            at = win
        elif inside == 0 and draw == 0:
            at = floor
        if at >= 0:
            if at > MAX_DISTANCE:
                stats[ST_ERROR] = 2
                stats[ST_ERROR_INDEX] = i
                return
            sched_next[i] = sched_head[at]
            sched_head[at] = i
            if at > stats[ST_MAX_SCHED]:
                stats[ST_MAX_SCHED] = at


@kernel
def _settle_predecessors(p, d, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, dist, remaining, win_at,
                         loss_floor, has_draw, sched_head, sched_next, queue, tail, stats):
    """Walk the predecessors of position ``p`` (settled at distance ``d``); returns the new queue tail."""
    black, white, kings, stm = unrank_position(p, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets)
    mover = 1 - stm
    us = black if mover == 0 else white
    empty = _SQ & ~(black | white)
    pieces = us
    while pieces != 0:
        t = pieces & -pieces
        pieces ^= t
        is_king = (kings & t) != 0
        for dr in range(4):
            # the square the piece came from: a black man came from below (t >> 4, t >> 5), a white man from above
            if dr == 0:
                f = t >> 4
                ok = is_king or mover == 0
            elif dr == 1:
                f = t >> 5
                ok = is_king or mover == 0
            elif dr == 2:
                f = t << 4
                ok = is_king or mover == 1
            else:
                f = t << 5
                ok = is_king or mover == 1
            if not ok or (f & empty) == 0:
                continue
            if mover == 0:
                b2 = black ^ f ^ t
                w2 = white
            else:
                b2 = black
                w2 = white ^ f ^ t
            k2 = (kings ^ f ^ t) if is_king else kings
            if mg.has_capture(b2, w2, k2, mover):
                continue   # the quiet move would not have been legal
            q = rank_position(b2, w2, k2, mover, offsets, 0, nbk_sets, nwk_sets)
            if dist[q] != UNSOLVED:
                continue
            if (d & 1) == 0:
                dist[q] = d + 1
                queue[tail] = q
                tail += 1
            else:
                remaining[q] -= 1
                if remaining[q] == 0 and win_at[q] == NO_WIN and has_draw[q] == 0:
                    at = loss_floor[q]
                    if at <= d + 1:
                        dist[q] = d + 1
                        queue[tail] = q
                        tail += 1
                    else:
                        sched_next[q] = sched_head[at]
                        sched_head[at] = q
                        if at > stats[ST_MAX_SCHED]:
                            stats[ST_MAX_SCHED] = at
    return tail


@kernel
def propagate(bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, dist, remaining, win_at, loss_floor, has_draw,
              sched_head, sched_next, queue, stats):
    """Steps 2 and 3: settle every position in rounds of increasing distance; returns the largest distance."""
    head = 0
    tail = 0
    d = 0
    last = -1
    while True:
        j = sched_head[d]
        while j != -1:
            if dist[j] == UNSOLVED:
                dist[j] = d
                queue[tail] = j
                tail += 1
            j = sched_next[j]
        while head < tail and dist[queue[head]] == d:
            p = np.int64(queue[head])
            head += 1
            last = d
            tail = _settle_predecessors(p, d, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, dist, remaining, win_at,
                                        loss_floor, has_draw, sched_head, sched_next, queue, tail, stats)
        if head == tail and d >= stats[ST_MAX_SCHED]:
            break
        d += 1
        if d > MAX_DISTANCE:
            stats[ST_ERROR] = 2
            break
    return last


@kernel
def codes_from_distances(dist, codes):
    """One-byte codes: 0 for a draw (never settled), D + 1 otherwise."""
    for i in range(dist.shape[0]):
        codes[i] = 0 if dist[i] == UNSOLVED else dist[i] + 1


@kernel
def verify_range(lo, hi, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets, eg, codes, classes_only, stats):
    """Check codes ``lo .. hi-1`` against their successors (forward moves only); count mismatches in stats.

    ``classes_only``: compare only win/loss/draw (a slice stored without distances).
    """
    moves = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    paths = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    for i in range(lo, hi):
        black, white, kings, stm, capt, n = position_and_moves(i, bm, bk, wm, wk, offsets, nbk_sets, nwk_sets,
                                                               moves, paths)
        win = NO_WIN
        floor = 0
        draw = 0
        for j in range(n):
            mv = moves[j]
            b2, w2, k2 = mg.make_move(black, white, kings, stm, mv)
            if not capt and (mv & mg.PROMOTION_FLAG) == 0:
                code = np.int64(codes[rank_position(b2, w2, k2, 1 - stm, offsets, 0, nbk_sets, nwk_sets)])
            else:
                code = outside_code(eg, b2, w2, k2, 1 - stm)
            if code == NOT_FOUND:
                stats[ST_ERROR] = 1
                stats[ST_ERROR_INDEX] = i
                return
            win, floor, draw = fold_child(code, win, floor, draw)
        if win != NO_WIN:
            expect = win + 1
        elif draw:
            expect = 0
        else:
            expect = floor + 1
        got = np.int64(codes[i])
        if classes_only and got != 0 and expect != 0:
            got &= 1
            expect &= 1
        if got != expect:
            if stats[ST_MISMATCH] == 0:
                stats[ST_FIRST_BAD] = i
            stats[ST_MISMATCH] += 1


@kernel
def count_results(codes, out):
    """out[0..2] = wins, losses, draws (side to move's view)."""
    for i in range(codes.shape[0]):
        c = np.int64(codes[i])
        if c == 0:
            out[2] += 1
        elif (c & 1) == 0:
            out[0] += 1
        else:
            out[1] += 1


