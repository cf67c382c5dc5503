"""Time management: what ``go`` asked for (:class:`GoParams`, clamped into ``GO_NUMBER_BOUNDS``), the soft and
hard limits of one move (:class:`TimeManager`) and the engine's recent lateness (:class:`LagTracker`).

Pure Python: importing it loads neither numpy nor numba.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Optional

# What the host's side of a local pipe needs (writing go, reading bestmove).  The engine's own
# stop-and-reply latency is measured move by move and kept back on top (LagTracker): measured 1-5 ms
# with a core free, 10-50 ms with both cores busy.
DEFAULT_MOVE_OVERHEAD_MS = 5
DEFAULT_MOVES_TO_GO = 30        # horizon assumed for sudden-death clocks (no movestogo)

# Every number of a go (protocol.md) or a Hub level is clamped into these bounds when it is parsed,
# so no later arithmetic (a deadline, a node limit in an int64 word) can overflow.
MAX_TIME_MS = 10 ** 9           # about 11.6 days: any longer clock means "no practical limit"
MAX_NODES = 10 ** 15
MAX_DEPTH = 1000
GO_NUMBER_BOUNDS: dict[str, tuple[int, int]] = {
    "wtime": (0, MAX_TIME_MS), "btime": (0, MAX_TIME_MS), "winc": (0, MAX_TIME_MS),
    "binc": (0, MAX_TIME_MS), "movetime": (0, MAX_TIME_MS), "movestogo": (1, 10_000),
    "depth": (1, MAX_DEPTH), "nodes": (1, MAX_NODES), "mate": (1, MAX_DEPTH),
}


def clamp_go_number(key: str, value: float) -> int:
    """``value`` of the go parameter ``key`` as an int inside ``GO_NUMBER_BOUNDS[key]``."""
    low, high = GO_NUMBER_BOUNDS[key]
    if value != value:  # NaN
        return low
    if value >= high:
        return high
    if value <= low:
        return low
    return int(value)


@dataclass
class GoParams:
    """What ``go`` asked for; all optional; times in ms; ``b`` = Black = the first mover."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: Optional[int] = None
    binc: Optional[int] = None
    movestogo: Optional[int] = None
    movetime: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: Optional[list[str]] = None
    start_time: Optional[float] = None   # time.monotonic() when the command arrived (default: go's call)


SUDDEN_DEATH_MAX_SHARE = 0.3    # a move of a sudden-death clock (no movestogo) never gets more of what is left
CONTROL_OPTIMUM_SHARE = 0.5     # with movestogo >= 2, a move never aims at more of what is left


def phase_factor(pieces: int) -> float:
    """How much of the per-move share of the clock a position deserves, by the pieces on the board.

    Front-loaded: the first moves out of the opening (20-24 pieces) are where games between strong
    engines are decided (losses begin a few moves after the ballot: the strength issue), and where a
    deeper search still changes the move; the fewer pieces, the more the search sees at once and the
    less time a move needs.  At 10 s + 0.1 s GuiNN spends about 1.2 s a move on plies 0-9 and plays
    its endings on the increment; with these factors the engine spent 0.9 s a move on plies 0-9 and
    0.1-0.2 s from ply 30 on (measured in the anchor matches of 2026-12-04; the earlier factors,
    0.7 for the opening and 1.3 for the middle game, spent 0.3-0.4 s a move up to ply 40, then less).
    """
    if pieces >= 20:
        return 2.4
    if pieces >= 16:
        return 1.6
    if pieces >= 10:
        return 1.0
    if pieces >= 6:
        return 0.8
    return 0.6


class TimeManager:
    """Optimum (soft) and maximum (hard) time for one move, and the decision to start another iteration.

    * ``movetime``: both limits are ``movetime - overhead``; iterations are never cut short, so
      the move comes about ``movetime`` after ``go`` arrived.
    * a clock (``wtime``/``btime`` for the side to move): ``optimum = left / movestogo + 3/4 inc``
      (``movestogo`` defaults to 30) scaled by the game phase (:func:`phase_factor`: most right after
      the opening, where games are decided, least in the endings), ``maximum = min(5 * optimum,
      80 % of what is left)`` (95 % with one move to the control; at most 30 % of it without a
      ``movestogo``; with ``movestogo`` >= 2 the optimum at most half of it), where *left* is the
      clock minus ``Move Overhead``: the hard limit never passes the clock minus the overhead.  After
      each iteration the soft target grows while the best move keeps changing and when the score
      falls (:meth:`iteration_done`).  One legal move: play at once.
    * some clock field given (``wtime``, ``btime``, ``winc``, ``binc``, ``movestogo``) but not the
      side to move's clock: that clock counts as 0, so the move comes at once, as UCI engines do
      (``missing_clock`` is set: the engine warns).
    * no time given (depth, nodes, mate, infinite): no limit.

    ``lag_ms`` is how late the engine recently answered after a hard limit at its worst (the
    peaks of :class:`LagTracker`): a clock search keeps it back, so that the move still arrives
    in time on a loaded machine.  ``typical_lag_ms`` is the usual lateness (its running mean): a
    ``movetime`` search stops that much earlier (at most half of the move's time), so that the
    reply comes about ``movetime - overhead`` after ``go``.  A late reply there costs no game,
    and keeping the peaks back gave up 10-20 % of every move on a loaded machine.

    The clock starts when ``go`` arrived (``start``), even when the kernels were still
    compiling then.  A ponder search has no limits until :meth:`ponderhit`, which restarts
    the clock at that moment.
    """

    def __init__(self, params: GoParams, turn: int, overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS,
                 legal_count: int = 2, start: Optional[float] = None, pieces: int = 24,
                 lag_ms: float = 0.0, typical_lag_ms: Optional[float] = None) -> None:
        self.start = start if start is not None else time.monotonic()
        self.overhead_ms = max(0, int(overhead_ms))
        self.lag_ms = max(0.0, float(lag_ms))
        self.typical_lag_ms = self.lag_ms if typical_lag_ms is None else max(0.0, float(typical_lag_ms))
        self.pondering = bool(params.ponder)
        self.single_move = False
        self.optimum_ms: Optional[float] = None
        self.maximum_ms: Optional[float] = None
        self.fixed_time = False
        self._instability = 0.0
        self._last_score: Optional[int] = None
        self._iteration_ends: list[float] = []
        self.missing_clock = False      # a clock was given, but not the side to move's: counted as 0
        self._inputs = "no time limit"  # what the limits were computed from (see plan)
        if params.infinite:
            self._inputs = "infinite: no time limit"
            return
        side = "black" if turn == 0 else "white"
        clock_name, inc_name = ("btime", "binc") if turn == 0 else ("wtime", "winc")
        own_time = params.btime if turn == 0 else params.wtime
        own_inc = (params.binc if turn == 0 else params.winc) or 0
        clock_given = any(v is not None for v in (params.wtime, params.btime, params.winc, params.binc,
                                                  params.movestogo))
        if params.movetime is not None:
            self.fixed_time = True
            budget = float(max(0, params.movetime - self.overhead_ms))
            # the engine's usual stop-and-reply latency is kept back too (at most half the move)
            self.optimum_ms = self.maximum_ms = budget - min(self.typical_lag_ms, 0.5 * budget)
            self._inputs = f"movetime {params.movetime} ms, Move Overhead {self.overhead_ms} ms"
        elif own_time is not None or clock_given:
            if own_time is None:        # the host gave the other side's clock only: UCI engines move at once
                own_time = 0
                self.missing_clock = True
            left = max(0.0, float(own_time - self.overhead_ms))
            mtg = max(1, params.movestogo) if params.movestogo else DEFAULT_MOVES_TO_GO
            optimum = (left / mtg + 0.75 * max(0, own_inc)) * phase_factor(pieces)
            if params.movestogo and mtg > 1:
                # a phase factor above 1 must not spend a control's last few moves on one of them (without
                # movestogo the hard limit, SUDDEN_DEATH_MAX_SHARE, already bounds the optimum below this)
                optimum = min(optimum, CONTROL_OPTIMUM_SHARE * left)
            share = 0.95 if mtg == 1 else (0.8 if params.movestogo else SUDDEN_DEATH_MAX_SHARE)
            cap = min(left * share, max(0.0, left - self.lag_ms))
            maximum = min(cap, optimum * 5.0)
            self.optimum_ms = min(optimum, maximum)
            self.maximum_ms = maximum
            clock = f"{clock_name} not given: 0 ms" if self.missing_clock else f"{clock_name} {own_time} ms"
            self._inputs = (f"{side} to move, {clock}, {inc_name} {own_inc} ms, moves to go {mtg}"
                            f"{'' if params.movestogo else ' (assumed)'}, Move Overhead {self.overhead_ms} ms, "
                            f"phase factor {phase_factor(pieces)} ({pieces} pieces)")
            if legal_count == 1:
                self.single_move = True
                self.optimum_ms = 0.0
                self.maximum_ms = min(maximum, 100.0)
                self._inputs += ", one legal move"

    @staticmethod
    def _proven_result(depth: int, score: int) -> bool:
        try:
            from ..search.alphabeta import MATE, MATE_BOUND
        except ImportError:  # pragma: no cover
            return False
        return abs(score) > MATE_BOUND and depth >= MATE - abs(score) + 2

    # --- queries -----------------------------------------------------------------------------
    @property
    def limited(self) -> bool:
        return self.maximum_ms is not None

    def plan(self) -> str:
        """The time plan in words (for ``debug on``): its inputs, then the limits computed from them."""
        if self.maximum_ms is None:
            return f"time plan: {self._inputs}"
        when = " (from ponderhit)" if self.pondering else ""
        kept = self.typical_lag_ms if self.fixed_time else self.lag_ms
        return (f"time plan: {self._inputs}: optimum {self.optimum_ms:.0f} ms maximum {self.maximum_ms:.0f} ms"
                f"{when} (lag kept back {kept:.0f} ms)")

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.start) * 1000)

    def deadline(self) -> Optional[float]:
        """The monotonic time of the hard limit, or None (no limit yet / none at all)."""
        if self.pondering or self.maximum_ms is None:
            return None
        return self.start + self.maximum_ms / 1000.0

    def ponderhit(self, now: Optional[float] = None) -> None:
        """The opponent played the expected move: the clock of this move starts now."""
        self.start = now if now is not None else time.monotonic()
        self.pondering = False
        self._iteration_ends = []

    def iteration_done(self, depth: int, best_changed: bool, score: int) -> bool:
        """Called by the search after each iteration; True = do not start another one."""
        now = (time.monotonic() - self.start) * 1000.0
        self._iteration_ends.append(now)
        score_drop = self._last_score is not None and score < self._last_score - 30
        self._last_score = score
        self._instability = self._instability * 0.5 + (1.0 if best_changed and depth > 1 else 0.0)
        if self.pondering or self.optimum_ms is None:
            return False
        if self.single_move:
            return True
        if self.fixed_time:
            return False  # movetime: search the time asked for; the deadline stops it
        if self._proven_result(depth, score):
            return True   # a forced win or loss is proven: more time changes nothing
        factor = (1.0 + 0.8 * self._instability) * (1.3 if score_drop else 1.0)
        target = min(self.optimum_ms * factor, self.maximum_ms)
        if now >= target:
            return True
        ends = self._iteration_ends
        last = ends[-1] - (ends[-2] if len(ends) > 1 else 0.0)
        before = (ends[-2] - ends[-3]) if len(ends) > 2 else (ends[-2] if len(ends) > 1 else 0.0)
        ratio = min(4.0, max(1.5, last / before)) if before > 0.5 else 2.0
        predicted = last * ratio
        # the next iteration could not finish before the hard limit, or would overshoot the target
        if now + predicted > self.maximum_ms:
            return True
        return now > 0.5 * target and now + predicted > 1.5 * target


class LagTracker:
    """How late, recently, the engine's moves came after their hard time limit.

    On an idle machine a stopped search answers within a few milliseconds; on a loaded one
    the search thread may wait for a core for tens or hundreds of milliseconds.  Two figures:

    * ``lag_ms``, a peak follower (the new value if larger, else a slow decay), remembers such
      delays for the next moves, so that a clock search keeps them back instead of losing on time;
    * ``typical_ms``, a running mean, is the usual delay, which a ``movetime`` search keeps back
      (a spike there only makes one reply late; keeping the peaks back made every reply early).
    """

    DECAY = 0.97         # per timed move: a spike is remembered at half its size 23 moves later
    MEAN_WEIGHT = 0.2    # weight of the newest delay in the running mean
    CAP_MS = 1000.0

    def __init__(self) -> None:
        self.lag_ms = 0.0
        self.typical_ms = 0.0
        self._lock = threading.Lock()

    def record(self, late_ms: float) -> None:
        late = min(self.CAP_MS, max(0.0, late_ms))
        with self._lock:
            self.lag_ms = max(late, self.lag_ms * self.DECAY)
            self.typical_ms += self.MEAN_WEIGHT * (late - self.typical_ms)


# --------------------------------------------------------------------------------------------------
# The facade
