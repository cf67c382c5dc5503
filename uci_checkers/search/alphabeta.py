"""The search: numba alpha-beta kernels and the Python driver (iterative deepening, reporting).

Kernels
-------
``_ab`` is a negamax alpha-beta with principal-variation search over the rules
of :mod:`uci_checkers.rules.movegen`, its depth counted in fractions of a ply
(``ONE_PLY`` = 4, as in Cake's search, so that an extension or a reduction may be
less than a ply; the driver speaks whole plies, :func:`search_child` converts):

* a position whose side to move has a capture is never a leaf: at depth <= 0
  the search goes on through the (forced) captures, so the evaluation only
  ever sees quiet positions; a node whose side to move has neither a capture
  nor a step is lost at once, before any static score is read (a shut-in
  side may be ahead on material);
* a position with a single legal move is searched without spending depth
  (single-reply extension; capture chains are mostly single replies);
* shots at quiet leaves (the idea of Cake's quiescence search): a quiet leaf
  (no capture for either side) whose static score lies just below alpha
  (``QsShotMargin``) tries the moves that give the opponent a capture, through
  the captures that follow, and otherwise stands on its static score: a shot
  (give a man, take more back) is what a static score cannot see (``QsShot``;
  measured: see docs/measurements.md);
* transposition table (:mod:`uci_checkers.search.tt`) with mate scores stored
  relative to the node;
* internal iterative deepening: a principal-variation node that has no table
  move (and no capture) searches itself two plies shallower first, so that it
  has one (measured: see docs/measurements.md);
* move ordering: table move, captures (most pieces, kings first), killers,
  promotions, history.  The history counter of a quiet move (per side, from and
  to square) rises when it is the best move of a node (a cut-off or a PV node's
  best) and falls when it was searched before the best one and failed, by
  ``8 * depth * (depth - 1)`` (capped), each change scaled down as the counter nears
  +-HIST_MAX (GuiNN's update; measured: see docs/measurements.md);
* late-move reductions of quiet moves, re-searched at full depth when they
  beat alpha;
* verified pruning at non-PV nodes: a quiet move after which the static score
  is far above beta (and the opponent has no capture) is first searched four
  plies shallower with a null window at beta + margin; when that search holds,
  it is the cut-off (the move-level verification GuiNN's search uses; measured
  against the search without it, 312 games each: +27.9 +- 25.0 Elo at 20,000
  nodes a move, +44.8 +- 21.4 at 0.1 s a move);
* truncation at non-PV nodes (the idea of Cake's search, in whole plies): a
  quiet position whose static score lies far outside the window is searched
  one ply shallower for every ``TruncUnit`` centi-men of distance (at most
  ``TruncMaxSteps``); the plies cut along the path are remembered per ply and given
  back where a position comes within ``TruncNear`` of the window again, so a line
  that returns to the window is searched to its full depth;
* reverse futility and truncation judge a quiet non-PV node by its static score,
  or by its table score where that bounds the position better (an exact score, a
  lower bound above the static score, an upper bound below it): a search result
  knows more than the evaluation (measured: see docs/measurements.md);
* a cache of static scores per thread (``_static``: 65,536 one-word entries in
  the workspace, keyed by the whole Zobrist key): about 30% of the static scores
  a search asks for were asked before (iterations, re-searches, the verified-pruning
  test and then the child itself); it changes the time, never a result;
* draws: a repetition of any earlier position since the last irreversible move
  (game history and search path) and the no-progress limit; a side with no
  legal move loses at its distance from the root (``MATE - ply``).

All kernel state lives in two int64 arrays, the workspace ``ws`` (move stack,
killers, history, repetition keys, triangular PV, truncated plies, counters, the static-score cache) and the table
``tt``; the engine's ``stop_flag`` is polled every 1024 nodes.  The driver calls
``_ab`` for each root child (ply 1) and ``_ab`` passes ``borrow()`` views to its
children, so the recursion pays no reference counting.  There is no separate
entry kernel: it would link, optimise and compile a second copy of the whole
search (seconds of a cold start).

Driver
------
``Searcher.search`` runs iterative deepening in Python: one kernel call per
root move and iteration, so it can report a ``SearchInfo`` on each new best
move and each completed depth, honour ``searchmoves`` and MultiPV, use
aspiration windows and ask the engine's time manager after each iteration.
Nothing depends on the clock except time-controlled stops, so fixed-depth and
fixed-node searches are reproducible (same node counts twice, and after
``clear()``).

Threading contract: ``Searcher.search`` runs in the engine's worker thread.
Kernels are ``nogil`` and poll ``stop_flag[0]`` (an int64 numpy array shared
with the engine): any thread may set it to 1 to stop the search, which then
returns its best move so far within a few milliseconds.  The search never
prints: it reports through the ``on_info`` callback.
"""
from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from ..rules import movegen as mg
from . import tt as ttm
from ..util.jit import borrow, ctz, kernel, popcount, prefetch
from ..rules.bitboard import BLACK_CROWN, SQUARES, WHITE_CROWN
from ..egdb.probe import NOT_FOUND_SCORE as EGDB_NO_SCORE
from ..egdb.probe import empty_table as egdb_empty_table
from ..egdb.probe import fork_table as egdb_fork_table
from ..egdb.probe import root_choice as egdb_root_choice
from ..egdb.probe import search_score as egdb_score
from . import nnue
from . import params as sp
from .evaluate import evaluate
from ..rules.position import Game, Move, Position
from .weights import KIND_NETWORK, EvalWeights, check_usable, default_weights

MATE = 30000            # score of a side to move that has already lost is -MATE
MATE_BOUND = MATE - 1000  # |score| above this is a forced win/loss, in plies from MATE
MAX_CONTEMPT = 100        # |Contempt| at most one man (engine.options repeats it)
INF = 32000

MAX_PLY = 128
MAXM = 256              # moves per generation slot in the search (a position never has more)
MOVE_MASK = (1 << 48) - 1
MAX_THREADS = 64
# a lazy-SMP helper's last completed iteration: (depth, best root child, score, PV words)
HelperIteration = tuple[int, int, int, list[int]]
HIST_KEYS = 1024        # game-history keys kept for repetition checks (only since the last irreversible move)

# --- workspace layout (int64 offsets) ---------------------------------------
W_MOVES = 0
W_KILL = W_MOVES + MAX_PLY * MAXM
W_HIST = W_KILL + 2 * MAX_PLY
W_KEYS = W_HIST + 2 * 64 * 64
W_PV = W_KEYS + HIST_KEYS + MAX_PLY + 8
W_PVLEN = W_PV + MAX_PLY * MAX_PLY
W_TRUNC = W_PVLEN + MAX_PLY   # per ply: the plies the path down to this node has cut by truncation (see _ab)
W_CTL = W_TRUNC + MAX_PLY
W_PARAMS = W_CTL + 16     # the tunable constants (uci_checkers.search.params), copied in at each search
PARAM_WORDS = 32
assert sp.N_PARAMS <= PARAM_WORDS, "the tunables outgrew their workspace region"
W_NNPOS = W_PARAMS + PARAM_WORDS   # the network's per-ply positions (uci_checkers.search.nnue owns this region)
W_ECACHE = W_NNPOS + nnue.POS_REGION   # the static-score cache (see _static)
ECACHE_SIZE = 1 << 16     # entries (one word each: 512 KiB per thread, within a core's L2 cache)
WS_SIZE = W_ECACHE + ECACHE_SIZE
# control words
C_NODES = W_CTL + 0
C_NODELIM = W_CTL + 1     # stop when nodes reach this (a huge number when unlimited)
C_STOP = W_CTL + 2        # set by the kernel when it stops (flag or node limit)
C_SELDEPTH = W_CTL + 3
C_GEN = W_CTL + 4         # table generation (one per search)
C_NOPROG = W_CTL + 5      # no-progress limit in plies (0 = off)
C_ROOTIDX = W_CTL + 6     # index in the key stack of the root position
C_MAXEXT = W_CTL + 7      # ply beyond which forced-move extensions stop
C_TBHITS = W_CTL + 8      # endgame database probes that ended a node
C_CONTEMPT = W_CTL + 9    # centi-men any draw (repetition, no progress, database) costs the root's side

# Depths inside the kernel are in fractions of a ply (after Cake's search), so that extensions and
# reductions may be smaller than a ply; the tunable depths of uci_checkers.search.params are in these units.
ONE_PLY = 4

PVS_FULL = 0            # the stages of one move's principal-variation search in _ab
PVS_REDUCED = 1
PVS_VERIFY = 2          # a shallower search that may prove a move good enough to cut off (below)
HIST_MAX = 16384        # history counters stay within +-HIST_MAX (below the killers' ordering scores)
# pruning margins, reductions and depth thresholds: run-time words (uci_checkers.search.params)
_P = W_PARAMS
_P_RFP_DEPTH = _P + sp.P_RFP_DEPTH
_P_RFP_MARGIN = _P + sp.P_RFP_MARGIN
_P_LMR_MIN_I = _P + sp.P_LMR_MIN_I
_P_LMR_R1 = _P + sp.P_LMR_R1
_P_LMR_I2 = _P + sp.P_LMR_I2
_P_LMR_D2 = _P + sp.P_LMR_D2
_P_LMR_R2 = _P + sp.P_LMR_R2
_P_VERIFY_MIN_DEPTH = _P + sp.P_VERIFY_MIN_DEPTH
_P_VERIFY_MARGIN = _P + sp.P_VERIFY_MARGIN
_P_VERIFY_REDUCTION = _P + sp.P_VERIFY_REDUCTION
_P_TRUNC_MIN_DEPTH = _P + sp.P_TRUNC_MIN_DEPTH
_P_TRUNC_UNIT = _P + sp.P_TRUNC_UNIT
_P_TRUNC_STEP = _P + sp.P_TRUNC_STEP
_P_TRUNC_MAX = _P + sp.P_TRUNC_MAX
_P_TRUNC_NEAR = _P + sp.P_TRUNC_NEAR
_P_IID_DEPTH = _P + sp.P_IID_DEPTH
_P_IID_REDUCTION = _P + sp.P_IID_REDUCTION
_P_QS_THREAT = _P + sp.P_QS_THREAT
_P_HIST_BONUS_CAP = _P + sp.P_HIST_BONUS_CAP
_P_QS_SHOT = _P + sp.P_QS_SHOT
_P_QS_SHOT_MARGIN = _P + sp.P_QS_SHOT_MARGIN

_SQ = SQUARES
_BCROWN = BLACK_CROWN
_WCROWN = WHITE_CROWN
_PROMO = mg.PROMOTION_FLAG
_CAPMASK = mg.CAPTURE_MASK


# =============================================================================
# Move generation without landing paths (the search never prints a move)
# =============================================================================
@kernel("int64(int64, int64, int64, int64, int64, int64, int64, int64, int64, int64[:], int64)")
def _chains(frm, at, them, captured, empty, crown, is_king, stm, n, ws, start):
    extended = False
    for d in range(4):
        if not mg.may_jump(is_king, stm, d):
            continue
        over, land = mg.jump_step(at, d)
        if (over & them & ~captured) == 0 or (land & empty) == 0:
            continue
        extended = True
        if is_king == 0 and (land & crown) != 0:
            if n < MAXM:
                ws[start + n] = frm | (ctz(land) << 6) | ((captured | over) << 12) | _PROMO
                n += 1
        else:
            n = _chains(frm, land, them, captured | over, empty, crown, is_king, stm, n, ws, start)
    if not extended:
        mv = frm | (ctz(at) << 6) | (captured << 12)
        if is_king != 0:
            # a king loop taken either way gives the same move word: search it once
            for j in range(n):
                if ws[start + j] == mv:
                    return n
        if n < MAXM:
            ws[start + n] = mv
            n += 1
    return n


@kernel
def _gen(black, white, kings, stm, capt, ws, start):
    """All legal moves (captures if ``capt``) written at ``ws[start:]``; returns the count."""
    empty = _SQ & ~(black | white)
    if stm == 0:
        us = black
        them = white
        crown = _BCROWN
    else:
        us = white
        them = black
        crown = _WCROWN
    n = 0
    if capt:
        jumpers = mg.capture_movers(us & ~kings, us & kings, them, empty, stm)
        while jumpers != 0:
            b = ctz(jumpers)
            jumpers &= jumpers - 1
            bit = np.int64(1) << b
            is_king = 1 if (kings & bit) != 0 else 0
            n = _chains(b, bit, them, np.int64(0), empty | bit, crown, is_king, stm, n, ws, start)
        return n
    return mg.write_quiet_words(black, white, kings, stm, ws, start)


@kernel
def _has_move(black, white, kings, stm):
    return mg.count_quiet(black, white, kings, stm) > 0 or mg.has_capture(black, white, kings, stm)


# =============================================================================
# The alpha-beta kernel
# =============================================================================
# _ab's bookkeeping lives in the small kernels below (LLVM inlines them again).  Kept out of
# _ab's own body on purpose: numba types a self-recursive kernel several times over (once per
# pass that meets the recursive call), so every line moved out of it is typed once instead.
@kernel
def _repeats(ws, key, ply, qp):
    """Record ``key`` at ``ply``; True when the node is a draw by repetition: the same position (same
    side to move) occurred since the last irreversible move (``qp`` plies ago) inside this search
    (the root or after it: the side that repeated can repeat again), or twice before the root
    (this is its third occurrence, the rules' draw).  A position seen once before the root is not
    a draw: the opponent may step aside, as a strong engine converting a won ending does."""
    kidx = ws[C_ROOTIDX] + ply
    ws[W_KEYS + kidx] = key
    if qp >= 4:
        lim = qp if qp < kidx else kidx
        i = 4
        earlier = False
        while i <= lim:
            if ws[W_KEYS + kidx - i] == key:
                if i <= ply or earlier:     # i <= ply: the earlier one is the root or after it
                    return True
                earlier = True
            i += 2
    return False


@kernel
def _draw_score(ws, ply):
    """A draw's score for the side to move at ``ply``: minus the contempt where the root's side is to
    move (even plies), plus it where the opponent is; 0 when Contempt is 0."""
    c = ws[C_CONTEMPT]
    return -c if (ply & 1) == 0 else c


@kernel
def _score_from_table(score, ply):
    """A stored score made relative to this node (mates are stored as distances from the node)."""
    if score > MATE_BOUND:
        return score - ply
    if score < -MATE_BOUND:
        return score + ply
    return score


@kernel
def _score_to_table(score, ply):
    """The inverse of :func:`_score_from_table`."""
    if score > MATE_BOUND:
        return score + ply
    if score < -MATE_BOUND:
        return score - ply
    return score


@kernel
def _history_slot(hbase, mv):
    """The workspace word of a quiet move's history counter (``hbase``: the side to move's table, by from
    and to square)."""
    return hbase + (mv & 63) * 64 + ((mv >> 6) & 63)


@kernel
def _score_moves(ws, start, n, tmove, capt, kings, k1, k2, hbase):
    """Pack an ordering score above the 48 move bits of each move word: table move, killers,
    captures by material taken, promotions, then the history counters."""
    for i in range(n):
        mv = ws[start + i]
        if mv == tmove:
            sc = 32000
        elif capt:
            cap = (mv >> 12) & _CAPMASK
            sc = 20000 + 200 * popcount(cap) + 100 * popcount(cap & kings)
            if (mv & _PROMO) != 0:
                sc += 50
        elif mv == k1:
            sc = 30000
        elif mv == k2:
            sc = 29000
        elif (mv & _PROMO) != 0:
            sc = 28000
        else:
            sc = ws[_history_slot(hbase, mv)]    # within +-HIST_MAX (see _adjust_history)
        ws[start + i] = mv | (sc << 48)


@kernel
def _pick_move(ws, start, i, n):
    """Selection-sort step: bring the highest packed word of ``i..n-1`` to ``i``; return its move."""
    bi = i
    bv = ws[start + i]
    for j in range(i + 1, n):
        v = ws[start + j]
        if v > bv:
            bv = v
            bi = j
    if bi != i:
        ws[start + bi] = ws[start + i]
        ws[start + i] = bv
    return bv & MOVE_MASK


@kernel
def _update_pv(ws, ply, mv):
    """The principal variation at ``ply``: ``mv`` followed by the child's."""
    row = W_PV + ply * MAX_PLY
    nrow = W_PV + (ply + 1) * MAX_PLY
    ws[row + ply] = mv
    end = ws[W_PVLEN + ply + 1]
    for j in range(ply + 1, end):
        ws[row + j] = ws[nrow + j]
    ws[W_PVLEN + ply] = end if end > ply + 1 else ply + 1


@kernel
def _adjust_history(ws, slot, delta):
    """Move a history counter by ``delta``, the less the nearer it already is to +-HIST_MAX in that
    direction (the counters stay within +-HIST_MAX and old verdicts fade as new ones come)."""
    h = ws[slot]
    ws[slot] = h + delta - (h * abs(delta)) // HIST_MAX


@kernel
def _reward_quiet_best(ws, ply, mv, k1, hbase, depth, start, i):
    """A quiet move was the best at a node (a beta cut-off, or the best of a principal-variation node):
    make it the first killer, raise its history and lower the history of the quiet moves searched before
    it (``ws[start:start + i]``, which all failed low)."""
    if mv != k1:
        ws[W_KILL + 2 * ply + 1] = k1
        ws[W_KILL + 2 * ply] = mv
    if depth > 1:
        bonus = depth * (depth - 1)
        cap = ws[_P_HIST_BONUS_CAP]
        bonus = 8 * (bonus if bonus < cap else cap)
        _adjust_history(ws, _history_slot(hbase, mv), bonus)
        if depth > 2:
            for j in range(i):
                _adjust_history(ws, _history_slot(hbase, ws[start + j] & MOVE_MASK), 1 - bonus)


_ECACHE_CHECK = ~np.int64(0xFFFF)    # an entry keeps the key's bits 16-63; its slot is the bits 0-15


@kernel
def _static(black, white, kings, stm, key, ply, ws, ev, nn):
    """The static score of the node at ``ply`` (Zobrist ``key``): the network when there is one (``nn``,
    the thread's weights and accumulators, not empty), else the pattern tables ``ev``.

    The thread's cache of static scores answers first: the same positions are evaluated again and again
    (each iteration of the deepening, every re-search, the verified-pruning test and then the child
    itself).  An entry is the key's upper 48 bits and the score + 32768; its slot is the key's lower 16
    bits, so the whole key is checked.  The score depends on the position alone, so the cache changes
    no search result, only the time (a false hit needs two positions with one 64-bit key).
    """
    slot = W_ECACHE + (key & (ECACHE_SIZE - 1))
    entry = ws[slot]
    if entry != 0 and (entry & _ECACHE_CHECK) == (key & _ECACHE_CHECK):
        return (entry & 0xFFFF) - 32768
    if nn.shape[0] != 0:
        score = nnue.evaluate_at(ws, W_NNPOS, ply, stm, nn)
    else:
        score = evaluate(black, white, kings, stm, ev)
    if -32768 <= score <= 32767:
        ws[slot] = (key & _ECACHE_CHECK) | (score + 32768)
    return score


@kernel("int64(int64, int64, int64, int64, int64, int64, int64, int64, int64, int64, int64[:], int64[:], int64[:], "
        "int64[:], int64[:], float32[::1])")
def _ab(black, white, kings, stm, key, depth, alpha, beta, ply, qp, ws, tt, eg, stop, ev, nn):
    nodes = ws[C_NODES] + 1
    ws[C_NODES] = nodes
    if (nodes & 1023) == 0 and stop[0] != 0:
        ws[C_STOP] = 1
    if nodes >= ws[C_NODELIM]:
        ws[C_STOP] = 1
    if ws[C_STOP] != 0:
        return 0
    ws[W_PVLEN + ply] = ply
    if ply > ws[C_SELDEPTH]:
        ws[C_SELDEPTH] = ply
    if nn.shape[0] != 0:
        nnue.note_position(ws, W_NNPOS, ply, black, white, kings)

    if _repeats(ws, key, ply, qp):
        return _draw_score(ws, ply)
    nprog = ws[C_NOPROG]
    if nprog > 0 and qp >= nprog:
        if _has_move(black, white, kings, stm):
            return _draw_score(ws, ply)
        return -MATE + ply
    # --- endgame databases (uci_checkers.egdb): an exact score ends the search here
    if eg[1] != 0 and popcount(black | white) <= eg[1]:
        tbscore = egdb_score(eg, black, white, kings, stm, ply, qp, nprog, MATE)
        if tbscore != EGDB_NO_SCORE:
            ws[C_TBHITS] += 1
            return tbscore if tbscore != 0 else _draw_score(ws, ply)

    # mate-distance pruning
    if alpha < -MATE + ply:
        alpha = -MATE + ply
    if beta > MATE - ply - 1:
        beta = MATE - ply - 1
    if alpha >= beta:
        return alpha

    capt = mg.has_capture(black, white, kings, stm)
    if not capt and mg.count_quiet(black, white, kings, stm) == 0:
        # no capture and no step: the side to move has lost, before a static score (a leaf's, reverse
        # futility's, truncation's) can call a shut-in side that is ahead on material good
        return -MATE + ply
    threat = False
    shot = False         # a quiet leaf that tries only its sacrifices, standing on its static score
    stand = -INF
    if depth <= 0 and not capt:
        if depth > -ws[_P_QS_THREAT] and mg.has_capture(black, white, kings, 1 - stm):
            # the opponent threatens a capture: the static score would miss it, look one move further
            threat = True
        else:
            stand = _static(black, white, kings, stm, key, ply, ws, ev, nn)
            # a side just below alpha may have a shot (give a man, take more back): the static score cannot
            # see it, so its sacrifices are searched through the captures that follow
            if depth <= -ws[_P_QS_SHOT] or stand > alpha or stand <= alpha - ws[_P_QS_SHOT_MARGIN]:
                return stand
            shot = True
    if ply >= MAX_PLY - 2:
        return _static(black, white, kings, stm, key, ply, ws, ev, nn)

    pv_node = beta - alpha > 1
    quiet_window = (not pv_node and not capt and not threat and not shot and beta < MATE_BOUND
                    and beta > -MATE_BOUND)
    se = 0
    if quiet_window:
        # read by reverse futility (depth <= RfpDepth) and truncation (depth >= TruncMinDepth): the two
        # ranges cover every depth that reaches here (depth <= 0 returned above unless threatened)
        se = _static(black, white, kings, stm, key, ply, ws, ev, nn)
    # the table after the static score: the parent's prefetch of this bucket has the evaluation's time to land
    found, tmove, tscore, tdepth, tbound = ttm.probe(tt, key)
    if found != 0:
        tscore = _score_from_table(tscore, ply)
    # a table score that bounds the position better than the static score replaces it there
    if quiet_window and found != 0 and -MATE_BOUND < tscore < MATE_BOUND:
        if (tbound == ttm.BOUND_EXACT or (tbound == ttm.BOUND_LOWER and tscore > se)
                or (tbound == ttm.BOUND_UPPER and tscore < se)):
            se = tscore
    # reverse futility: a quiet position far above beta at low depth is a cut-off
    if quiet_window and depth <= ws[_P_RFP_DEPTH]:
        if se - ws[_P_RFP_MARGIN] * depth // ONE_PLY >= beta:
            return se
    # truncation (after Cake's): a quiet position whose static score is far from the window is searched
    # shallower, the more the farther; the plies cut along the path are kept, and given back where a
    # position of the path comes near the window again
    cut = ws[W_TRUNC + ply - 1]          # _ab runs at ply >= 1; the root's word (ply 0) stays 0
    tmax = ws[_P_TRUNC_MAX]
    if tmax > 0 and quiet_window and depth >= ws[_P_TRUNC_MIN_DEPTH]:
        dist = se - beta if se >= beta else alpha - se
        if dist <= ws[_P_TRUNC_NEAR]:
            depth += cut
            cut = 0
        else:
            t = dist // ws[_P_TRUNC_UNIT]
            if t > tmax:
                t = tmax
            t *= ws[_P_TRUNC_STEP]
            depth -= t
            cut += t
    ws[W_TRUNC + ply] = cut
    if found != 0:
        if not pv_node and tdepth >= depth:
            if tbound == ttm.BOUND_EXACT:
                return tscore
            if tbound == ttm.BOUND_LOWER and tscore >= beta:
                return tscore
            if tbound == ttm.BOUND_UPPER and tscore <= alpha:
                return tscore
    iid = ws[_P_IID_DEPTH]
    if iid > 0 and pv_node and tmove == 0 and not capt and depth >= iid:
        # internal iterative deepening: a principal-variation node without a table move first searches
        # itself shallower, for a first move to try (Cake's search does the same)
        _ab(black, white, kings, stm, key, depth - ws[_P_IID_REDUCTION], alpha, beta, ply, qp,
            borrow(ws), borrow(tt), borrow(eg), borrow(stop), borrow(ev), borrow(nn))
        if ws[C_STOP] != 0:
            return 0
        tmove = ttm.probe(tt, key)[1]

    start = W_MOVES + ply * MAXM
    n = _gen(black, white, kings, stm, capt, ws, start)     # n > 0: a side without a move returned above

    # single reply: do not spend depth on a forced move (bounded by ply)
    if threat or shot:
        new_depth = depth - ONE_PLY
    elif n == 1 and ply < ws[C_MAXEXT]:
        new_depth = depth
    else:
        new_depth = depth - ONE_PLY

    k1 = ws[W_KILL + 2 * ply]
    k2 = ws[W_KILL + 2 * ply + 1]
    hbase = W_HIST + stm * 4096
    if n > 1:
        _score_moves(ws, start, n, tmove, capt, kings, k1, k2, hbase)

    best = stand         # -INF, but a shot node may stay quiet: then it is worth its static score
    best_move = np.int64(0)
    best_i = 0
    orig_alpha = alpha
    other = 1 - stm
    vmargin = ws[_P_VERIFY_MARGIN]
    for i in range(n):
        mv = _pick_move(ws, start, i, n) if n > 1 else ws[start]
        b2, w2, k2b = mg.make_move(black, white, kings, stm, mv)
        if shot and not mg.has_capture(b2, w2, k2b, 1 - stm):
            continue             # not a sacrifice
        key2 = key ^ mg.hash_delta(black, white, kings, stm, mv)
        # the child probes the table only after its static score: start the load of its bucket now, and of
        # its static-score cache slot (a leaf reads it first thing; half a MiB per thread is beyond L1)
        prefetch(tt, ttm.bucket_of(tt, key2))
        prefetch(ws, W_ECACHE + (key2 & (ECACHE_SIZE - 1)))
        # irreversible: a capture or a man move resets the no-progress counter
        if capt or ((kings >> (mv & 63)) & 1) == 0:
            qp2 = 0
        else:
            qp2 = qp + 1
        # principal variation search: the first move with the full window; the others with a null
        # window (reduced by LMR), searched again at full depth and then with the full window when
        # they beat alpha.  One recursive call site on purpose: numba re-types the whole kernel
        # for every self-call it finds, so each extra site costs about a second of cold compile.
        r = 0
        vd = 0
        if (vmargin > 0 and not pv_node and not capt and new_depth >= ws[_P_VERIFY_MIN_DEPTH]
                and beta < MATE_BOUND and beta > -MATE_BOUND):
            # verified pruning: a move after which the static score is far above beta is searched
            # shallower first with a window at beta + margin; if that holds, it is the cut-off
            if nn.shape[0] != 0:
                nnue.note_position(ws, W_NNPOS, ply + 1, b2, w2, k2b)
            if (not mg.has_capture(b2, w2, k2b, other)
                    and -_static(b2, w2, k2b, other, key2, ply + 1, ws, ev, nn) >= beta + vmargin):
                vd = new_depth - ws[_P_VERIFY_REDUCTION]
                if vd < ONE_PLY:
                    vd = ONE_PLY
        if vd > 0:
            stage = PVS_VERIFY
        elif i == 0:
            stage = PVS_FULL
        else:
            stage = PVS_REDUCED
            if (not capt and new_depth >= 2 * ONE_PLY and i >= ws[_P_LMR_MIN_I] and (mv & _PROMO) == 0
                    and mv != k1 and mv != k2):
                r = ws[_P_LMR_R1]
                if i >= ws[_P_LMR_I2] and new_depth >= ws[_P_LMR_D2]:
                    r = ws[_P_LMR_R2]
        while True:
            # r is 0 whenever the stage is PVS_FULL; borrow(): the child pays no reference counting
            if stage == PVS_VERIFY:
                d = vd
                lo = -beta - vmargin - 1
                hi = -beta - vmargin
            else:
                d = new_depth - r
                lo = -beta if stage == PVS_FULL else -alpha - 1
                hi = -alpha
            s = -_ab(b2, w2, k2b, other, key2, d, lo, hi, ply + 1, qp2,
                     borrow(ws), borrow(tt), borrow(eg), borrow(stop), borrow(ev), borrow(nn))
            if stage == PVS_FULL or ws[C_STOP] != 0:
                break
            if stage == PVS_VERIFY:
                if s > beta + vmargin:
                    break        # proven far above beta by the shallower search: the cut-off
                stage = PVS_FULL if i == 0 else PVS_REDUCED    # unreduced: it looked good statically
                continue
            if r > 0 and s > alpha:
                r = 0            # the reduced search failed high: the same null window at full depth
            elif s > alpha and s < beta:
                stage = PVS_FULL
            else:
                break
        if ws[C_STOP] != 0:
            return 0
        if s > best:
            best = s
            best_move = mv
            if s > alpha:
                alpha = s
                if pv_node:
                    _update_pv(ws, ply, mv)
                if alpha >= beta:
                    if not capt:
                        _reward_quiet_best(ws, ply, mv, k1, hbase, depth // ONE_PLY, start, i)
                    break
                best_i = i

    if best >= beta:
        bound = ttm.BOUND_LOWER
    elif best > orig_alpha:
        bound = ttm.BOUND_EXACT
        if not capt:
            _reward_quiet_best(ws, ply, best_move, k1, hbase, depth // ONE_PLY, start, best_i)
    else:
        bound = ttm.BOUND_UPPER
        best_move = tmove if found != 0 else np.int64(0)
    ttm.store(tt, key, best_move, _score_to_table(best, ply), depth, bound, ws[C_GEN])
    return best


def search_child(black: int, white: int, kings: int, stm: int, key: int, depth: int, alpha: int, beta: int,
                 qp: int, ws: np.ndarray, tt: np.ndarray, eg: np.ndarray, stop: np.ndarray, ev: np.ndarray,
                 nn: np.ndarray) -> int:
    """Score (from the mover's view, negated by the caller) of a root child at ply 1, searched ``depth``
    whole plies deep."""
    return _ab(black, white, kings, stm, key, depth * ONE_PLY, alpha, beta, 1, qp, ws, tt, eg, stop, ev, nn)


@kernel
def _age_history(ws):
    for i in range(W_HIST, W_HIST + 2 * 4096):
        ws[i] >>= 3
    for i in range(W_KILL, W_KILL + 2 * MAX_PLY):
        ws[i] = 0


# =============================================================================
# Python API
# =============================================================================
@dataclass
class SearchLimits:
    """What bounds one search.  Time is not here: the engine's ``TimeControl`` owns it."""

    depth: Optional[int] = None          # maximum iteration depth (plies)
    nodes: Optional[int] = None          # stop after about this many nodes
    mate: Optional[int] = None           # stop once a win in this many moves is proven
    searchmoves: Optional[list[Move]] = None  # restrict the root to these moves
    multipv: int = 1
    skill: int = 20                      # 0 = uniformly random legal move ... 20 = full strength
    seed: int = 0                        # makes skill-level choices reproducible
    infinite: bool = False               # do not stop by itself (depth cap aside)
    no_progress_plies: Optional[int] = None  # no-progress draw limit (0 = off); None: the game's own
    contempt: int = 0                    # centi-men a draw costs the side to move at the root (< 0: it gains)


@dataclass
class SearchInfo:
    """One report: a completed iteration (or a new best move) for one PV line."""

    depth: int
    seldepth: int
    multipv: int
    score: int                           # centi-men from the side to move's view (unless mate)
    mate: Optional[int]                  # moves to mate, negative when losing; None if not a mate score
    bound: Optional[str]                 # None, "lowerbound" or "upperbound"
    nodes: int
    time_ms: int
    nps: int
    hashfull: int                        # permille
    pv: list[Move] = field(default_factory=list)
    tbhits: int = 0                      # endgame database probes that ended a node (root moves included)


@dataclass
class SearchResult:
    best: Optional[Move]                 # None when the side to move has no legal move
    ponder: Optional[Move]
    score: int
    depth: int
    nodes: int
    infos: list[SearchInfo] = field(default_factory=list)
    seldepth: int = 0
    time_ms: int = 0
    pv: list[Move] = field(default_factory=list)


class TimeControl(Protocol):
    """The engine's time manager as the search sees it (see ``engine.TimeManager``)."""

    def elapsed_ms(self) -> int: ...

    def iteration_done(self, depth: int, best_changed: bool, score: int) -> bool:
        """Called after each completed iteration; True means: do not start another."""
        ...


def mate_in_moves(score: int) -> Optional[int]:
    """UCI ``mate n``: full moves to the end, negative when the side to move loses."""
    if score > MATE_BOUND:
        return (MATE - score + 1) // 2
    if score < -MATE_BOUND:
        return -((MATE - (-score)) // 2)
    return None


# Skill levels 1..19: depth cap and score noise (centi-men, standard deviation).
_SKILL_DEPTH = (0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 7, 8, 9, 10, 11, 12, 14, 16)
_SKILL_NOISE = (0, 120, 100, 90, 80, 70, 60, 52, 45, 38, 32, 26, 21, 17, 13, 10, 7, 5, 3, 2)


def _child_pv(ws: np.ndarray) -> list[int]:
    """The principal variation the last full-window search of a root child left (the triangular PV's row of
    ply 1), as move words."""
    end = int(ws[W_PVLEN + 1])
    return [int(x) for x in ws[W_PV + MAX_PLY + 1:W_PV + MAX_PLY + end]]


def _pv_moves(pos: Position, words: list[int]) -> list[Move]:
    """Turn kernel move words into ``Move`` objects (stops at the first word that is not legal)."""
    out: list[Move] = []
    for w in words:
        match = None
        for m in pos.legal_moves():
            if m.word == w:
                match = m
                break
        if match is None:
            break
        out.append(match)
        pos = pos.play(match)
    return out


class Searcher:
    """Owns the search tables and buffers; one search at a time."""

    def __init__(self, hash_mb: int = 16, weights: Optional[EvalWeights] = None) -> None:
        """``weights``: the evaluation weights (default: the package's; WeightsError if unusable)."""
        self.threads = 1
        self._helper_ws: list[np.ndarray] = []
        self.ws = np.zeros(WS_SIZE, dtype=np.int64)
        self.params = sp.pack()          # the tunable constants, copied into every workspace at each search
        self.set_weights(weights if weights is not None else default_weights())
        self.hash_mb = hash_mb
        self.tt = ttm.new_table(hash_mb)
        self._tt_unused = True           # not searched with since allocated: prefault() may write to it
        self._tt_mapped = False          # every page touched (prefault): clear() may zero in place
        self.gen = 0
        self.egdb = egdb_empty_table()   # endgame databases (uci_checkers.egdb.probe table)
        self._helper_egdb: list[np.ndarray] = []

    def set_weights(self, weights: EvalWeights) -> None:
        """Evaluate with ``weights`` from the next search on (WeightsError, and no change, if they were made
        for another evaluation)."""
        check_usable(weights)
        self.weights = weights
        if weights.kind == KIND_NETWORK:
            self.ev = np.zeros(1, dtype=np.int64)
            self.nn = nnue.thread_array(weights.table)
        else:
            self.ev = np.array(weights.table, dtype=np.int64)   # a private, writable copy for the kernels
            self.nn = nnue.no_network()
        self._helper_nn = [self.nn.copy() for _ in range(self.threads - 1)]   # own accumulators each
        for ws in [self.ws] + self._helper_ws:
            ws[W_ECACHE:W_ECACHE + ECACHE_SIZE] = 0     # the cached static scores were the old weights'

    def set_params(self, values: Optional[dict[str, int]] = None) -> None:
        """Search with these tunable constants from the next search on (names of
        :data:`uci_checkers.search.params.TUNABLES`; missing ones and None: the defaults).  Raises
        ``SearchParamsError``, and changes nothing, for an unknown name or a value out of bounds."""
        self.params = sp.pack(values)

    def set_egdb(self, table: Optional[np.ndarray]) -> None:
        """Probe this endgame database table from now on (None: none).  A table caches decoded blocks in
        itself, so each helper thread gets its own fork of it."""
        self.egdb = egdb_empty_table() if table is None else table
        self._helper_egdb = [egdb_fork_table(self.egdb) for _ in self._helper_ws]

    def egdb_tables(self) -> list[np.ndarray]:
        """The tables the search threads probe (the main one first)."""
        return [self.egdb] + self._helper_egdb

    def set_threads(self, n: int) -> None:
        """Search threads (lazy SMP: helpers share the transposition table, each probes its own fork of the
        endgame table).  1, the default, is fully deterministic."""
        self.threads = max(1, min(MAX_THREADS, int(n)))
        self._helper_ws = [np.zeros(WS_SIZE, dtype=np.int64) for _ in range(self.threads - 1)]
        self._helper_egdb = [egdb_fork_table(self.egdb) for _ in self._helper_ws]
        self._helper_nn = [self.nn.copy() for _ in range(self.threads - 1)]   # own accumulators each

    def set_hash(self, mb: int) -> None:
        """Resize the transposition table (its content is lost)."""
        self.hash_mb = mb
        self.tt = ttm.new_table(mb)
        self._tt_unused = True
        self._tt_mapped = False          # every page touched (prefault): clear() may zero in place

    def clear(self) -> None:
        """Forget everything learnt (``ucinewgame`` / ``Clear Hash``).

        A table already mapped by :meth:`prefault` is zeroed in place (memory speed: tens of
        ms per GiB); a partly mapped one is replaced by a new lazily mapped table (instant),
        because zeroing it would pay a page fault per untouched page (seconds per GiB).
        """
        if self._tt_mapped:
            self.tt.fill(0)
        else:
            self.tt = ttm.new_table(self.hash_mb)
        self._tt_unused = True
        self.ws = np.zeros(WS_SIZE, dtype=np.int64)
        self._helper_ws = [np.zeros(WS_SIZE, dtype=np.int64) for _ in self._helper_ws]
        self.gen = 0

    def prefault(self) -> None:
        """Map a new table into memory now (idle time) rather than during the next search."""
        if self._tt_unused and not self._tt_mapped:
            ttm.prefault(self.tt)
            self._tt_mapped = True

    def warm_up(self) -> None:
        """Compile (or load from cache) every kernel the search uses."""
        self.search(Game(), SearchLimits(depth=3), lambda info: None, np.zeros(1, dtype=np.int64))
        self.clear()

    def hashfull(self) -> int:
        return int(ttm.hashfull(self.tt, self.gen))

    # ------------------------------------------------------------------
    def search(self, game: Game, limits: SearchLimits, on_info: Optional[Callable[[SearchInfo], None]],
               stop_flag: np.ndarray, time_control: Optional[TimeControl] = None,
               on_currmove: Optional[Callable[[Move, int], None]] = None) -> SearchResult:
        """Search ``game.position`` within ``limits``; report through ``on_info``; return the best move.

        ``on_info=None``: no reports at all (the result's ``infos`` stay empty).

        ``on_currmove(move, number)`` (optional) is called at most a few times a
        second, after the first second, with the root move being searched.
        """
        t0 = time.perf_counter()
        pos = game.position
        legal = pos.legal_moves()
        if limits.searchmoves:
            allowed = {m.squares for m in limits.searchmoves}
            legal = [m for m in legal if m.squares in allowed] or legal
        if not legal:
            return SearchResult(None, None, -MATE, 0, 0)
        skill = max(0, min(20, int(limits.skill)))
        if skill == 0:
            rng = self._rng(limits, pos)
            pick = legal[int(rng.integers(len(legal)))]
            return SearchResult(pick, None, 0, 0, 0)

        ws, tt, ev, eg, nn = self.ws, self.tt, self.ev, self.egdb, self.nn
        self._tt_unused = False
        self.gen = (self.gen + 1) & 63
        _age_history(ws)
        ws[C_NODES] = 0
        ws[C_STOP] = 0
        ws[C_SELDEPTH] = 0
        ws[C_TBHITS] = 0
        ws[C_GEN] = self.gen
        ws[C_NODELIM] = 1 << 62
        ws[W_PARAMS:W_PARAMS + sp.N_PARAMS] = self.params
        nprog = game.no_progress_plies if limits.no_progress_plies is None else limits.no_progress_plies
        ws[C_NOPROG] = max(0, int(nprog))
        ws[C_CONTEMPT] = max(-MAX_CONTEMPT, min(MAX_CONTEMPT, int(limits.contempt)))
        # repetition keys: the game's positions since the last irreversible move, root last
        qp_root = game.quiet_plies
        keys = game.history_keys()[-(min(qp_root, HIST_KEYS - 1) + 1):]
        ws[W_KEYS:W_KEYS + len(keys)] = keys
        ws[C_ROOTIDX] = len(keys) - 1
        root_key = pos.zobrist()

        max_depth = min(limits.depth or (MAX_PLY - 8), MAX_PLY - 8)
        if skill < 20:
            max_depth = min(max_depth, _SKILL_DEPTH[skill])
        multipv = max(1, min(int(limits.multipv or 1), len(legal)))
        if skill < 20:
            multipv = len(legal)          # weakened play chooses among all scored root moves

        # root children, precomputed once
        children = []
        for m in legal:
            b, w, k = mg.make_move(pos.black, pos.white, pos.kings, pos.turn, m.word)
            irreversible = m.is_capture or not ((pos.kings >> (m.word & 63)) & 1)
            children.append((m, int(b), int(w), int(k),
                             root_key ^ int(mg.hash_delta(pos.black, pos.white, pos.kings, pos.turn, m.word)),
                             0 if irreversible else qp_root + 1))
        order = list(range(len(legal)))
        scores = {i: -INF for i in order}
        pvs: dict[int, list[int]] = {i: [legal[i].word] for i in order}
        stm = 1 - pos.turn
        infos: list[SearchInfo] = []
        best_i, best_score, depth_done = order[0], 0, 0
        best_pv: list[int] = [legal[best_i].word]
        prev_scores: list[int] = []
        last_currmove = [t0]

        def elapsed_ms() -> int:
            return max(0, int((time.perf_counter() - t0) * 1000))

        nostop = np.zeros(1, dtype=np.int64)
        growth = int(self.params[sp.P_ASP_GROWTH])
        node_limit = int(limits.nodes) if limits.nodes else (1 << 62)
        flag = nostop   # depth 1 always completes (a few hundred nodes): the stop then has a real move

        def stopped() -> bool:
            return bool(ws[C_STOP] or flag[0])

        helpers: list[threading.Thread] = []
        helper_done: list[Optional[HelperIteration]] = [None] * (self.threads - 1)
        helper_ws = self._helper_ws if (self.threads > 1 and skill == 20 and max_depth > 1) else []

        def total_nodes() -> int:
            return int(ws[C_NODES]) + sum(int(h[C_NODES]) for h in helper_ws)

        def total_tbhits() -> int:
            return int(ws[C_TBHITS]) + sum(int(h[C_TBHITS]) for h in helper_ws)

        def report(depth: int, k: int, idx: int, score: int, pv_words: list[int], bound: Optional[str]) -> None:
            if on_info is None:
                return      # nobody listens (self-play): skip turning PV words into moves
            ms = elapsed_ms()
            nodes = total_nodes()
            info = SearchInfo(depth, max(depth, int(ws[C_SELDEPTH]) + 1), k, int(score), mate_in_moves(score),
                              bound, nodes, ms, nodes * 1000 // max(1, ms), self.hashfull(),
                              _pv_moves(pos, pv_words) or [legal[idx]], total_tbhits())
            infos.append(info)
            on_info(info)

        def search_move(idx: int, depth: int, alpha: int, beta: int, number: int, full_first: bool) -> int:
            m, b, w, k, key, qp = children[idx]
            if on_currmove is not None:
                now = time.perf_counter()
                if now - t0 >= 1.0 and now - last_currmove[0] >= 0.25:
                    last_currmove[0] = now
                    on_currmove(m, number)
            if full_first:
                s = -int(search_child(b, w, k, stm, key, depth - 1, -beta, -alpha, qp, ws, tt, eg, flag, ev, nn))
            else:
                s = -int(search_child(b, w, k, stm, key, depth - 1, -alpha - 1, -alpha, qp, ws, tt, eg, flag, ev, nn))
                if alpha < s < beta and not stopped():
                    s = -int(search_child(b, w, k, stm, key, depth - 1, -beta, -alpha, qp, ws, tt, eg, flag, ev, nn))
            return s

        # endgame databases at the root: every move known -> play the best one at once
        if self.egdb[1] != 0 and skill == 20 and multipv == 1:
            known = egdb_root_choice(eg, [c[1:4] + (c[5],) for c in children], stm, int(ws[C_NOPROG]), MATE)
            if known is not None:
                best_i, best_score = known
                ws[C_TBHITS] = len(children)
                report(1, 1, best_i, best_score, [legal[best_i].word], None)
                return SearchResult(legal[best_i], None, int(best_score), 1, 0, infos, 1, elapsed_ms(),
                                    [legal[best_i]])

        for t, hws in enumerate(helper_ws, 1):
            hws[:] = 0
            hws[W_KEYS:W_KEYS + len(keys)] = keys
            for c in (C_GEN, C_NOPROG, C_ROOTIDX, C_CONTEMPT):
                hws[c] = ws[c]
            hws[W_PARAMS:W_PARAMS + sp.N_PARAMS] = self.params
            hws[C_NODELIM] = 1 << 62
            thread = threading.Thread(target=self._helper, name=f"search-helper-{t}", daemon=True,
                                      args=(t, hws, stop_flag, children, stm, max_depth, helper_done))
            helpers.append(thread)
            thread.start()
        try:
            for depth in range(1, max_depth + 1):
                if depth == 2:
                    flag = stop_flag
                    ws[C_NODELIM] = node_limit
                    if stop_flag[0] or ws[C_NODES] >= node_limit:
                        break
                ws[C_MAXEXT] = min(MAX_PLY - 4, 2 * depth + 8)
                done_lines: list[int] = []
                aborted = False
                changed = False
                for k in range(1, multipv + 1):
                    cand = [i for i in order if i not in done_lines]
                    if not cand:
                        break
                    # aspiration window around the previous score of this line
                    prev = prev_scores[k - 1] if len(prev_scores) >= k else None
                    if prev is not None and abs(prev) < MATE_BOUND and depth >= 4 and k == 1:
                        delta = int(self.params[sp.P_ASP_WINDOW])
                        alpha0, beta0 = prev - delta, prev + delta
                    else:
                        delta = INF
                        alpha0, beta0 = -INF, INF
                    while True:
                        alpha, beta = alpha0, beta0
                        line_best = None
                        line_pv: list[int] = []
                        for number, idx in enumerate(cand, 1):
                            s = search_move(idx, depth, alpha, beta, number, number == 1)
                            if stopped():
                                aborted = True
                                break
                            if number == 1 or s > alpha:
                                scores[idx] = s
                            if s > alpha or line_best is None:
                                line_best = idx
                                line_pv = [legal[idx].word] + _child_pv(ws)
                                pvs[idx] = line_pv
                                if s > alpha:
                                    alpha = s
                                if k == 1 and multipv == 1 and number > 1 and s < beta and depth > 1:
                                    # a new best move mid-iteration: report it (and make it the fallback)
                                    best_i, best_score, best_pv = idx, s, line_pv
                                    changed = True
                                    report(depth, k, idx, s, line_pv, None)
                                if alpha >= beta:
                                    break
                        if aborted:
                            break
                        sc = scores[line_best]
                        if sc <= alpha0 and alpha0 > -INF:
                            delta *= growth
                            alpha0 = max(-INF, sc - delta)
                            if k == 1:
                                report(depth, k, line_best, sc, pvs[line_best], "upperbound")
                            continue
                        if sc >= beta0 and beta0 < INF:
                            delta *= growth
                            beta0 = min(INF, sc + delta)
                            if k == 1:
                                best_i, best_score, best_pv = line_best, sc, pvs[line_best]
                                report(depth, k, line_best, sc, pvs[line_best], "lowerbound")
                            continue
                        break
                    if aborted:
                        # a line the stop cut short keeps the last completed result
                        break
                    done_lines.append(line_best)
                    # move the line's best to the front so the next iteration searches it first
                    if k == 1:
                        if line_best != best_i:
                            changed = True
                        best_i, best_score, best_pv = line_best, scores[line_best], pvs[line_best]
                if aborted and not done_lines:
                    break
                # lines in score order (a later line may come out better than an earlier one)
                done_lines.sort(key=lambda i: -scores[i])
                if done_lines and done_lines[0] != best_i:
                    changed = True
                    best_i, best_score, best_pv = done_lines[0], scores[done_lines[0]], pvs[done_lines[0]]
                # reorder: finished lines first (in line order), the rest by score of this iteration
                rest = [i for i in order if i not in done_lines]
                rest.sort(key=lambda i: -scores[i])
                order = done_lines + rest
                prev_scores = [scores[i] for i in done_lines]
                if aborted:
                    break
                depth_done = depth
                for k, idx in enumerate(done_lines, 1):
                    report(depth, k, idx, scores[idx], pvs[idx], None)
                if limits.mate is not None and limits.mate > 0:
                    mn = mate_in_moves(best_score)
                    if mn is not None and 0 < mn <= limits.mate:
                        break
                if abs(best_score) > MATE_BOUND and depth >= MATE - abs(best_score) + 2 and multipv == 1 \
                        and limits.infinite is False and time_control is None and limits.depth is None:
                    break
                if time_control is not None and time_control.iteration_done(depth, changed, best_score):
                    break
                if len(legal) == 1 and time_control is not None and not limits.infinite:
                    break
                if stopped():
                    break
        finally:
            for hws in helper_ws:
                hws[C_STOP] = 1       # the kernel checks this word at every node
            for thread in helpers:
                thread.join()

        # a helper that completed a deeper iteration than the main thread knows the better move
        deeper = [r for r in helper_done if r is not None and r[0] > depth_done]
        if deeper and multipv == 1 and skill == 20:
            depth_done, best_i, best_score, best_pv = max(deeper, key=lambda r: r[0])
            report(depth_done, 1, best_i, best_score, best_pv, None)

        if skill < 20 and depth_done > 0:
            best_i, best_score = self._weaken(limits, pos, legal, scores, skill)
            best_pv = pvs.get(best_i, [legal[best_i].word])
        pv_moves = _pv_moves(pos, best_pv) or [legal[best_i]]
        ponder = pv_moves[1] if len(pv_moves) > 1 else None
        return SearchResult(legal[best_i], ponder, int(best_score), depth_done, total_nodes(), infos,
                            int(ws[C_SELDEPTH]) + 1, elapsed_ms(), pv_moves)

    # ------------------------------------------------------------------
    def _helper(self, t: int, hws: np.ndarray, hstop: np.ndarray, children: list, stm: int,
                max_depth: int, finished: list[Optional[HelperIteration]]) -> None:
        """A lazy-SMP helper: its own iterative deepening over the root moves, sharing the table.

        Helpers start at different depths and root orders so that they fill the
        table with work the main thread can use.  After each iteration a helper leaves
        ``(depth, best child, score, PV words)`` in ``finished[t - 1]``: when the search
        ends, a helper that completed a deeper iteration than the main thread gives the move.
        They poll the caller's stop flag ``hstop`` themselves, so that a stop frees every
        core at once (the main thread, once done, ends them through ``hws[C_STOP]``).
        """
        tt, ev, eg, nn = self.tt, self.ev, self._helper_egdb[t - 1], self._helper_nn[t - 1]
        order = list(range(len(children)))
        shift = t % len(order)
        order = order[shift:] + order[:shift]
        for depth in range(1 + (t & 1), max_depth + 1):
            hws[C_MAXEXT] = min(MAX_PLY - 4, 2 * depth + 8)
            alpha = -INF
            best = order[0]
            best_pv: list[int] = []
            for n, idx in enumerate(order):
                m, b, w, k, key, qp = children[idx]
                if n == 0:
                    s = -int(search_child(b, w, k, stm, key, depth - 1, -INF, INF, qp, hws, tt, eg, hstop, ev, nn))
                else:
                    s = -int(search_child(b, w, k, stm, key, depth - 1, -alpha - 1, -alpha, qp, hws, tt, eg, hstop, ev, nn))
                    if s > alpha and not (hstop[0] or hws[C_STOP]):
                        s = -int(search_child(b, w, k, stm, key, depth - 1, -INF, -alpha, qp, hws, tt, eg, hstop, ev, nn))
                if hstop[0] or hws[C_STOP]:
                    return
                if s > alpha:
                    alpha, best = s, idx
                    best_pv = [m.word] + _child_pv(hws)
            finished[t - 1] = (depth, best, alpha, best_pv)
            order.remove(best)
            order.insert(0, best)

    @staticmethod
    def _rng(limits: SearchLimits, pos: Position) -> np.random.Generator:
        """A generator fixed by the seed, the position and the limits (so replies are reproducible)."""
        text = f"{limits.depth}|{limits.nodes}|{limits.multipv}|{limits.skill}".encode()
        mix = [int(limits.seed) & 0xFFFFFFFF, (int(limits.seed) >> 32) & 0xFFFFFFFF,
               pos.zobrist() & 0xFFFFFFFF, (pos.zobrist() >> 32) & 0xFFFFFFFF, zlib.crc32(text)]
        return np.random.default_rng(mix)

    def _weaken(self, limits: SearchLimits, pos: Position, legal: list[Move], scores: dict[int, int],
                skill: int) -> tuple[int, int]:
        """Skill 1-19: pick the best root move after adding seeded noise to every score."""
        rng = self._rng(limits, pos)
        sigma = _SKILL_NOISE[skill]
        best_i, best_v = 0, None
        for i in range(len(legal)):
            s = scores.get(i, -INF)
            if s <= -INF:
                continue
            v = s + (0 if abs(s) > MATE_BOUND else float(rng.normal(0.0, sigma)))
            if best_v is None or v > best_v:
                best_i, best_v = i, v
        return best_i, int(scores.get(best_i, 0))
