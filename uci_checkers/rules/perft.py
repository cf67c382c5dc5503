"""Perft: count the leaf nodes of the legal-move tree (the move generator's test and benchmark).

The kernel counts in bulk: two plies above the leaves ``_perft2_side`` makes
each quiet move and each man's single jump in registers and counts the replies
with ``movegen._count_side`` (popcounts and a bit-parallel count of single
jumps), compiled once per colour.

Command line (``uci-checkers perft``)::

    uci-checkers perft [--fen FEN] --depth N [--divide] [--repeat K]

prints the leaf count, the wall time, leaves per second and the CPU time of the
counting thread; ``--repeat K`` runs K times and adds the medians; ``--divide``
prints one ``<move>: <count>`` line per legal move (full landing path), a blank
line, then the totals.  The count runs root move by root move in a worker thread:
after two seconds each finished root move is reported on stderr (and every ten
seconds that the count goes on), and Ctrl-C (or
SIGTERM) stops it with exit status 130.  ``--depth`` is at most 20.

>>> perft(Position.start(), 4)
1469
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import threading
import time
from typing import Optional, Sequence, TextIO

import numpy as np

from . import movegen as mg
from ..util.jit import borrow, ctz, kernel
from .movegen import _BCROWN, _SQ, _WCROWN, CAPTURE_MASK, MAX_MOVES, PROMOTION_FLAG, _count_side, _gen_chains, _jumpers, count_moves, gen_captures, step_movers, step_origin, step_targets
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.interrupts import raise_if_interrupted
from .notation import NotationError
from .position import Move, Position

# --- kernels -------------------------------------------------------------------
# Kept out of movegen so that processes that never run perft (the engine) neither
# compile nor load them.


@kernel(inline="always")
def _kings_after_step(kings, f, t, crown):
    """The kings after a quiet step from bit ``f`` to bit ``t``: a king moves, a man reaching ``crown`` is crowned."""
    if (kings & f) != 0:
        return kings ^ (f | t)
    if (t & crown) != 0:
        return kings | t
    return kings


@kernel
def _perft2_side(us, them, kings, stm, moves, paths, ply):
    """Leaves two plies below (mover's pieces first); ``stm`` a literal at each call site.

    Quiet moves and men's single jumps are made in registers (no buffer traffic);
    chains that go on and king captures go through the move buffer.  Each child's
    replies are counted in bulk by ``_count_side``.
    """
    empty = _SQ & ~(us | them)
    j = _jumpers(us, them, kings, empty, stm)
    total = np.int64(0)
    if j == 0:
        fwd, back = step_movers(us, kings, stm)
        crown = _BCROWN if stm == 0 else _WCROWN
        for d in range(4):
            targets = step_targets(fwd, back, empty, d)
            while targets != 0:
                t = targets & -targets
                targets ^= t
                f = step_origin(t, d)
                nus = us ^ (f | t)
                nk = _kings_after_step(kings, f, t, crown)
                if stm == 0:  # literal arguments: numba compiles one specialised _count_side per colour
                    total += _count_side(them, nus, nk, 1)
                else:
                    total += _count_side(them, nus, nk, 0)
        return total
    start = ply * MAX_MOVES
    side = np.int64(stm)  # not a literal: the one compiled _gen_chains serves both colours
    # Men's jumps bit-parallel per direction: a jump whose landing allows no further
    # jump (or crowns) is made in registers; a chain that goes on is enumerated
    # from its first landing into the buffer, as are all king captures.  (For a
    # man the start and jumped squares lie behind it: the original ``them`` and
    # ``empty`` decide its continuation.)
    men = us & ~kings
    n = 0
    if stm == 0:
        crown = _BCROWN
        again = ((them >> 4) & (empty >> 8)) | ((them >> 5) & (empty >> 10))
    else:
        crown = _WCROWN
        again = ((them << 4) & (empty << 8)) | ((them << 5) & (empty << 10))
    for d in range(2):
        if stm == 0:
            if d == 0:
                lands = (men & (them >> 4) & (empty >> 8)) << 8
            else:
                lands = (men & (them >> 5) & (empty >> 10)) << 10
        else:
            if d == 0:
                lands = (men & (them << 4) & (empty << 8)) >> 8
            else:
                lands = (men & (them << 5) & (empty << 10)) >> 10
        while lands != 0:
            t = lands & -lands
            lands ^= t
            if stm == 0:
                if d == 0:
                    f = t >> 8
                    v = t >> 4
                else:
                    f = t >> 10
                    v = t >> 5
            else:
                if d == 0:
                    f = t << 8
                    v = t << 4
                else:
                    f = t << 10
                    v = t << 5
            if (t & crown) == 0 and (t & again) != 0:
                n = _gen_chains(ctz(f), t, them, v, empty, crown, np.int64(0), side, ctz(t), np.int64(1),
                                n, moves, paths, start)
                continue
            nk = kings & ~v
            if (t & crown) != 0:
                nk |= t
            if stm == 0:
                total += _count_side(them & ~v, us ^ (f | t), nk, 1)
            else:
                total += _count_side(them & ~v, us ^ (f | t), nk, 0)
    kj = j & kings
    while kj != 0:
        bit = kj & -kj
        kj ^= bit
        n = _gen_chains(ctz(bit), bit, them, np.int64(0), empty | bit, crown, np.int64(1), side, np.int64(0),
                        np.int64(0), n, moves, paths, start)
    for i in range(n):
        mv = moves[start + i]
        f = np.int64(1) << (mv & 63)
        t = np.int64(1) << ((mv >> 6) & 63)
        cap = (mv >> 12) & CAPTURE_MASK
        nus = (us & ~f) | t
        nthem = them & ~cap
        if (kings & f) != 0:
            nk = (kings & ~f) | t
        elif (mv & PROMOTION_FLAG) != 0:
            nk = kings | t
        else:
            nk = kings
        nk &= ~cap
        if stm == 0:
            total += _count_side(nthem, nus, nk, 1)
        else:
            total += _count_side(nthem, nus, nk, 0)
    return total


@kernel("int64(int64, int64, int64, int64, int64, int64[:], int64[:], int64)")
def _perft_rec(us, them, kings, stm, depth, moves, paths, ply):
    """Leaves ``depth >= 2`` plies below (mover's pieces first)."""
    if depth == 2:
        if stm == 0:
            return _perft2_side(us, them, kings, 0, moves, paths, ply)
        return _perft2_side(us, them, kings, 1, moves, paths, ply)
    empty = _SQ & ~(us | them)
    if stm == 0:
        j = _jumpers(us, them, kings, empty, 0)
    else:
        j = _jumpers(us, them, kings, empty, 1)
    total = np.int64(0)
    if j == 0:
        # Quiet moves made in registers, as in _perft2_side.
        fwd, back = step_movers(us, kings, stm)
        crown = _BCROWN if stm == 0 else _WCROWN
        for d in range(4):
            targets = step_targets(fwd, back, empty, d)
            while targets != 0:
                t = targets & -targets
                targets ^= t
                f = step_origin(t, d)
                nk = _kings_after_step(kings, f, t, crown)
                total += _perft_rec(them, us ^ (f | t), nk, 1 - stm, depth - 1, moves, paths, ply + 1)
        return total
    start = ply * MAX_MOVES
    if stm == 0:
        n = gen_captures(us, them, kings, stm, moves, paths, start)
    else:
        n = gen_captures(them, us, kings, stm, moves, paths, start)
    for i in range(n):
        mv = moves[start + i]
        f = np.int64(1) << (mv & 63)
        t = np.int64(1) << ((mv >> 6) & 63)
        cap = (mv >> 12) & CAPTURE_MASK
        if (kings & f) != 0:
            nk = (kings & ~f) | t
        elif (mv & PROMOTION_FLAG) != 0:
            nk = kings | t
        else:
            nk = kings
        total += _perft_rec(them & ~cap, (us & ~f) | t, nk & ~cap, 1 - stm, depth - 1, moves, paths, ply + 1)
    return total


@kernel("int64(int64, int64, int64, int64, int64, int64[:], int64[:], int64)")
def _perft(black, white, kings, stm, depth, moves, paths, ply):
    """Leaf count for ``depth >= 1`` (kept for callers of the previous layout)."""
    if depth == 1:
        return count_moves(black, white, kings, stm)
    if stm == 0:
        return _perft_rec(black, white, kings, 0, depth, moves, paths, ply)
    return _perft_rec(white, black, kings, 1, depth, moves, paths, ply)


@kernel("int64(int64, int64, int64, int64, int64, int64[:], int64[:])")
def perft_kernel(black, white, kings, stm, depth, moves, paths):
    """Leaf count at ``depth`` plies (depth 0 counts the position itself)."""
    if depth <= 0:
        return 1
    return _perft(black, white, kings, stm, depth, borrow(moves), borrow(paths), 0)


# --- Python API ----------------------------------------------------------------


def perft(position: Position, depth: int) -> int:
    """Leaves at ``depth`` plies; every capture landing path counts as its own move."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    moves, paths = mg.new_move_buffers(depth + 2)
    return int(perft_kernel(position.black, position.white, position.kings, position.turn, depth, moves, paths))


def divide(position: Position, depth: int) -> list[tuple[Move, int]]:
    """Per legal move, the leaves below it at ``depth`` plies (``depth >= 1``)."""
    if depth < 1:
        raise ValueError("divide needs depth >= 1")
    return [(m, perft(position.play(m), depth - 1)) for m in position.legal_moves()]


# --- command line -------------------------------------------------------------

def _rate(leaves: int, seconds: float) -> str:
    if seconds <= 0:
        return "n/a leaves/s"
    return f"{leaves / seconds:,.0f} leaves/s"


def _line(label: str, leaves: int, seconds: float, cpu: float) -> str:
    # CPU time of this thread too: on a shared machine wall time also measures the neighbours.
    return f"{label}: {leaves} leaves in {seconds:.3f} s ({_rate(leaves, seconds)}, cpu {cpu:.3f} s)"


MAX_CLI_DEPTH = 20        # perft 20 from the start is ~10^14 leaves: days; deeper is never what was meant
PROGRESS_AFTER_S = 2.0     # a count that has run this long reports each finished root move on stderr
HEARTBEAT_S = 10.0         # ... and says it is still counting at least this often


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uci-checkers perft",
        description="Count the leaves of the legal-move tree (every capture landing path is its own move). "
                    "A long count reports its progress on stderr; Ctrl-C stops it (exit 130).")
    p.add_argument("--fen", default=None, help="start position as PDN FEN (default: the initial position)")
    p.add_argument("--depth", type=int, required=True, help=f"plies to search (0-{MAX_CLI_DEPTH})")
    p.add_argument("--divide", action="store_true", help="print the count below each legal move")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="run K times and report each run and the median (default 1)")
    return p


class _Counter:
    """One perft run in a worker thread (the kernels release the GIL), root move by root move,
    so the main thread stays free to take Ctrl-C and to report progress."""

    def __init__(self, position: Position, depth: int, err: TextIO) -> None:
        self.position = position
        self.depth = depth
        self.err = err
        self.rows: list[tuple[Move, int]] = []
        self.leaves = 0
        self.cpu = 0.0
        self.error: Optional[BaseException] = None
        self.done = threading.Event()

    def _work(self) -> None:
        c0 = time.thread_time()
        try:
            if self.depth == 0:
                self.leaves = 1
            else:
                for move in self.position.legal_moves():
                    n = perft(self.position.play(move), self.depth - 1)
                    self.rows.append((move, n))
                    self.leaves += n
        except BaseException as exc:      # handed to the main thread, which reports it
            self.error = exc
        finally:
            self.cpu = time.thread_time() - c0
            self.done.set()

    def run(self) -> float:
        """Count; return the wall time.  ``KeyboardInterrupt`` comes through (the worker is a daemon)."""
        t0 = time.perf_counter()
        threading.Thread(target=self._work, name="perft", daemon=True).start()
        total = len(self.position.legal_moves()) if self.depth > 0 else 1
        shown, last = 0, 0.0
        while not self.done.wait(0.2):
            raise_if_interrupted()
            elapsed = time.perf_counter() - t0
            # A line for each finished root move, and a heartbeat while a long one runs.
            if elapsed >= PROGRESS_AFTER_S and (len(self.rows) > shown or elapsed - last >= HEARTBEAT_S):
                shown, last = len(self.rows), elapsed
                print(f"perft {self.depth}: {shown}/{total} root moves, {self.leaves} leaves so far, "
                      f"{elapsed:.0f} s", file=self.err, flush=True)
        if self.error is not None:
            raise self.error
        return time.perf_counter() - t0


def main(argv: Optional[Sequence[str]] = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``uci-checkers perft``: returns the exit code (0 ok, 2 bad arguments or FEN, 130 interrupted)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    parser = _parser()
    complaint = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(complaint):
            args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse has printed the help on ``out``, or usage and the error
        # one line, as every tool reports a usage error (util.commandline.ToolParser, which this kernel
        # module does not import: whatever it imports keys the compile cache)
        lines = complaint.getvalue().strip().splitlines()
        if lines:
            print(lines[-1].replace(": error: ", ": ", 1) + " (--help for usage)", file=err)
        return EXIT_OK if exc.code is None else (exc.code if isinstance(exc.code, int) else EXIT_USAGE)
    if not 0 <= args.depth <= MAX_CLI_DEPTH:
        print(f"uci-checkers perft: --depth must be between 0 and {MAX_CLI_DEPTH} "
              f"(perft {MAX_CLI_DEPTH} from the start already takes days)", file=err)
        return EXIT_USAGE
    if args.repeat < 1:
        print("uci-checkers perft: --repeat must be >= 1", file=err)
        return EXIT_USAGE
    if args.divide and args.depth < 1:
        print("uci-checkers perft: --divide needs --depth >= 1", file=err)
        return EXIT_USAGE
    try:
        position = Position.from_fen(args.fen) if args.fen is not None else Position.start()
    except NotationError as exc:
        print(f"uci-checkers perft: invalid FEN: {exc}", file=err)
        return EXIT_USAGE

    times: list[float] = []
    cpus: list[float] = []
    leaves = 0
    try:
        for run in range(1, args.repeat + 1):
            counter = _Counter(position, args.depth, err)
            elapsed = counter.run()
            leaves = counter.leaves
            times.append(elapsed)
            cpus.append(counter.cpu)
            if args.divide and run == 1:
                for move, n in counter.rows:
                    print(f"{move}: {n}", file=out)
                print("", file=out)
                print(f"moves: {len(counter.rows)}", file=out)
            label = f"perft {args.depth}" if args.repeat == 1 else f"perft {args.depth} run {run}"
            print(_line(label, leaves, elapsed, counter.cpu), file=out, flush=True)
    except KeyboardInterrupt:
        print(f"uci-checkers perft: interrupted after {len(times)} of {args.repeat} run(s)", file=err, flush=True)
        return EXIT_INTERRUPTED
    if args.repeat > 1:
        print(_line(f"perft {args.depth} median of {args.repeat}", leaves, statistics.median(times),
                    statistics.median(cpus)), file=out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
