"""The search: the Python driver (iterative deepening, reporting) over numba kernels.

PLACEHOLDER: a plain material-only alpha-beta so that the engine facade and the
protocol loop can be built and tested.  The search issue replaces the kernels
and the driver; the public API below (``SearchLimits``, ``SearchInfo``,
``SearchResult``, ``TimeControl``, ``Searcher``) is the contract the engine
facade relies on and should only grow.

Threading contract: ``Searcher.search`` runs in the engine's worker thread.
Kernels are ``nogil`` and poll ``stop_flag[0]`` (an int64 numpy array shared
with the engine): any thread may set it to 1 to stop the search, which then
returns its best move so far within a few milliseconds.  The search never
prints: it reports through the ``on_info`` callback.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from . import movegen as mg
from ._jit import borrow, kernel, popcount
from .position import Game, Move, Position

MATE = 30000            # score of a side to move that has already lost is -MATE
MATE_BOUND = MATE - 1000  # |score| above this is a forced win/loss, in plies from MATE
INF = 32000


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


@dataclass
class SearchResult:
    best: Optional[Move]                 # None when the side to move has no legal move
    ponder: Optional[Move]
    score: int
    depth: int
    nodes: int
    infos: list[SearchInfo] = field(default_factory=list)


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
        return -((MATE + score) // 2)
    return None


@kernel
def _material(black, white, kings, stm):
    b = popcount(black & ~kings) * 100 + popcount(black & kings) * 130
    w = popcount(white & ~kings) * 100 + popcount(white & kings) * 130
    return b - w if stm == 0 else w - b


@kernel("int64(int64, int64, int64, int64, int64, int64, int64, int64, int64[:], int64[:], int64[:])")
def _alphabeta(black, white, kings, stm, depth, alpha, beta, ply, moves, paths, ctl):
    # ctl[0] stop flag, ctl[1] node counter, ctl[2] node limit (0 = none)
    ctl[1] += 1
    if (ctl[1] & 1023) == 0 and ctl[2] > 0 and ctl[1] >= ctl[2]:
        ctl[0] = 1
    if ctl[0] != 0:
        return 0
    start = ply * mg.MAX_MOVES
    n = mg.gen_moves(black, white, kings, stm, moves, paths, start)
    if n == 0:
        return -MATE + ply
    if depth <= 0 and not mg.has_capture(black, white, kings, stm):
        return _material(black, white, kings, stm)
    best = -INF
    for i in range(n):
        b2, w2, k2 = mg.make_move(black, white, kings, stm, moves[start + i])
        s = -_alphabeta(b2, w2, k2, 1 - stm, depth - 1, -beta, -alpha, ply + 1, moves, paths, ctl)
        if ctl[0] != 0:
            return 0
        if s > best:
            best = s
            if s > alpha:
                alpha = s
                if alpha >= beta:
                    break
    return best


@kernel("int64(int64, int64, int64, int64, int64, int64[:], int64[:], int64[:], int64[:], int64)")
def _root(black, white, kings, stm, depth, root_moves, moves, paths, ctl, nroot):
    """Search each root move; store its score in ``root_moves`` layout [word, score] pairs."""
    alpha = -INF
    for i in range(nroot):
        mv = root_moves[2 * i]
        b2, w2, k2 = mg.make_move(black, white, kings, stm, mv)
        s = -_alphabeta(b2, w2, k2, 1 - stm, depth - 1, -INF, -alpha + 1, 1, borrow(moves), borrow(paths), ctl)
        if ctl[0] != 0:
            return i
        root_moves[2 * i + 1] = s
        if s > alpha:
            alpha = s
    return nroot


class Searcher:
    """Owns the search tables and buffers; one search at a time."""

    def __init__(self, hash_mb: int = 16) -> None:
        self.hash_mb = hash_mb
        self.moves, self.paths = mg.new_move_buffers()
        self.ctl = np.zeros(4, dtype=np.int64)

    def set_hash(self, mb: int) -> None:
        self.hash_mb = mb

    def clear(self) -> None:
        """Forget everything learnt (``ucinewgame`` / ``Clear Hash``)."""

    def warm_up(self) -> None:
        """Compile (or load from cache) every kernel the search uses."""
        self.search(Game(), SearchLimits(depth=2), lambda info: None, np.zeros(1, dtype=np.int64))

    def search(self, game: Game, limits: SearchLimits, on_info: Callable[[SearchInfo], None],
               stop_flag: np.ndarray, time_control: Optional[TimeControl] = None) -> SearchResult:
        pos = game.position
        legal = pos.legal_moves()
        if limits.searchmoves:
            allowed = {m.squares for m in limits.searchmoves}
            legal = [m for m in legal if m.squares in allowed] or legal
        if not legal:
            return SearchResult(None, None, -MATE, 0, 0)
        t0 = time.perf_counter()
        self.ctl[:] = 0
        self.ctl[2] = limits.nodes or 0
        ctl = self.ctl
        best, score, depth_done = legal[0], 0, 0
        infos: list[SearchInfo] = []
        max_depth = limits.depth or 64
        order = list(legal)
        for depth in range(1, max_depth + 1):
            root = np.zeros(2 * len(order), dtype=np.int64)
            for i, m in enumerate(order):
                root[2 * i] = m.word
            ctl[0] = stop_flag[0]
            done = _root(pos.black, pos.white, pos.kings, pos.turn, depth, root, self.moves, self.paths, ctl, len(order))
            if done < len(order) or stop_flag[0]:
                break
            scores = [int(root[2 * i + 1]) for i in range(len(order))]
            ranked = sorted(range(len(order)), key=lambda i: -scores[i])
            new_best = order[ranked[0]]
            changed = new_best is not best
            best, score, depth_done = new_best, scores[ranked[0]], depth
            order = [order[i] for i in ranked]
            elapsed = max(1, int((time.perf_counter() - t0) * 1000))
            info = SearchInfo(depth, depth, 1, score, mate_in_moves(score), None, int(ctl[1]), elapsed,
                              int(ctl[1]) * 1000 // elapsed, 0, [best])
            infos.append(info)
            on_info(info)
            if time_control is not None and time_control.iteration_done(depth, changed, score):
                break
            if limits.mate is not None and info.mate is not None and 0 < info.mate <= limits.mate:
                break
            if len(legal) == 1 and not limits.infinite and limits.depth is None:
                break
        return SearchResult(best, None, score, depth_done, int(ctl[1]), infos)
