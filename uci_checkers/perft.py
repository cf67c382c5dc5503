"""Perft: count the leaf nodes of the legal-move tree (the move generator's test and benchmark).

Command line (``uci-checkers perft``)::

    uci-checkers perft [--fen FEN] --depth N [--divide] [--repeat K]

prints the leaf count, the wall time and leaves per second; ``--repeat K`` runs
K times and adds the median; ``--divide`` prints one ``<move>: <count>`` line
per legal move (full landing path), a blank line, then the totals.

>>> perft(Position.start(), 4)
1469
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from typing import Optional, Sequence, TextIO

from . import movegen as mg
from .notation import NotationError
from .position import Move, Position


def perft(position: Position, depth: int) -> int:
    """Leaves at ``depth`` plies; every capture landing path counts as its own move."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    moves, paths = mg.new_move_buffers(depth + 2)
    return int(mg.perft_kernel(position.black, position.white, position.kings, position.turn,
                               depth, moves, paths))


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


def _line(label: str, leaves: int, seconds: float) -> str:
    return f"{label}: {leaves} leaves in {seconds:.3f} s ({_rate(leaves, seconds)})"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="uci-checkers perft",
        description="Count the leaves of the legal-move tree (every capture landing path is its own move).")
    p.add_argument("--fen", default=None, help="start position as PDN FEN (default: the initial position)")
    p.add_argument("--depth", type=int, required=True, help="plies to search (>= 0)")
    p.add_argument("--divide", action="store_true", help="print the count below each legal move")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="run K times and report each run and the median (default 1)")
    return p


def main(argv: Optional[Sequence[str]] = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """``uci-checkers perft``: returns the exit code (0 ok, 2 bad arguments or FEN)."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    parser = _parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse has printed the help, or usage and the error on ``err``
        return 0 if exc.code is None else (exc.code if isinstance(exc.code, int) else 2)
    if args.depth < 0:
        print("uci-checkers perft: --depth must be >= 0", file=err)
        return 2
    if args.repeat < 1:
        print("uci-checkers perft: --repeat must be >= 1", file=err)
        return 2
    if args.divide and args.depth < 1:
        print("uci-checkers perft: --divide needs --depth >= 1", file=err)
        return 2
    try:
        position = Position.from_fen(args.fen) if args.fen is not None else Position.start()
    except NotationError as exc:
        print(f"uci-checkers perft: invalid FEN: {exc}", file=err)
        return 2

    times: list[float] = []
    leaves = 0
    for run in range(1, args.repeat + 1):
        t0 = time.perf_counter()
        if args.divide:
            rows = divide(position, args.depth)
            leaves = sum(n for _, n in rows)
        else:
            leaves = perft(position, args.depth)
        elapsed = time.perf_counter() - t0
        times.append(elapsed)
        if args.divide and run == 1:
            for move, n in rows:
                print(f"{move}: {n}", file=out)
            print("", file=out)
            print(f"moves: {len(rows)}", file=out)
        label = f"perft {args.depth}" if args.repeat == 1 else f"perft {args.depth} run {run}"
        print(_line(label, leaves, elapsed), file=out, flush=True)
    if args.repeat > 1:
        print(_line(f"perft {args.depth} median of {args.repeat}", leaves, statistics.median(times)), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
