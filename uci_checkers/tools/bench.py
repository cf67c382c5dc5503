"""``uci-checkers bench [depth]``: a fixed-depth search over a fixed list of positions.

Every position is searched from a cleared table (fixed ``Hash``) to the same
depth, so the node total is a fingerprint of the search's behaviour (as in
Stockfish): ``tests/test_bench.py`` pins it, and a change that alters the
search updates it on purpose.  Nodes per second are the speed figure.

The bench runs in a worker thread: Ctrl-C or SIGTERM stops the current search
through its stop flag, the positions finished so far stay printed, the totals
are theirs (marked partial), and the exit status is 130.  A cold compile is announced on stderr.

The positions are constants here, all of the game or the project's own: ACF
three-move ballots (from ``data/ballots3.tsv``, some with a capture pending),
eleven-man starts the package made (``data/elevenman.txt``, see
:mod:`uci_checkers.learn.elevenman`), and middlegames and endgames from the
engine's own self-play games (``training-data/gen3/shard-00000.npz``).
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Optional

import numpy as np

from ..engine.options import MAX_HASH_MB
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK
from ..util.commandline import ToolParser

DEFAULT_DEPTH = 15
BENCH_HASH_MB = 16

# ACF ballots: the position after the three moves (White to move).
OPENINGS = (
    "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",        # 9-13 21-17 5-9
    "W:W18,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",        # 9-13 23-18 5-9
    "W:W20,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,11,12,13,14",        # 9-13 24-20 10-14
    "W:W19,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,12,14,16",        # 9-14 24-19 11-16
    "W:W20,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,12,14,15",         # 10-14 24-20 11-15
    "W:W17,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,8,9,10,11,12,15",        # 10-15 22-17 7-10
    "W:W18,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,11,15,16",         # 10-15 23-18 12-16
    "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,12,13,15",        # 11-15 21-17 9-13
    "W:W17,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,12,13,16",        # 11-16 22-17 9-13
    "W:W18,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,12,14,16",         # 11-16 23-18 10-14
    "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,14,16",        # 12-16 21-17 9-14
    "W:W19,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,20",         # 12-16 24-19 16-20
)
# Ballots that leave White a capture to make.
CAPTURE_OPENINGS = (
    "W:W21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,12,22",           # 9-13 22-17 13x22
    "W:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,11,12,13,15",        # 9-13 23-19 10-15
    "W:W18,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,11,12,14,15",        # 9-14 22-18 10-15
    "W:W17,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,11,12,18",         # 10-14 22-17 14-18
    "W:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,12,14,15",         # 10-14 23-19 11-15
    "W:W20,21,22,23,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,15,16",         # 11-15 24-20 12-16
)
# Eleven-man starts (Black to move): starts 0, 68, 136, 205, 273 and 341 (every sixth of 410) of
# data/elevenman.txt as the search before verified pruning made it (commit 8f5f0ae); the deck has been made
# again since, and the bench keeps these positions (today's deck, made again after the history update of
# 2026-12-03, has three of the six: its starts 131, 196 and 337 of 400).  Then middlegames of the engine's
# own self-play: in training-data/gen3/shard-00000.npz, game by game, the first recorded position (legal moves, no capture pending) of each game that fills a
# slot: 16 men and no king (4), and the endgames below.
MIDDLEGAMES = (
    "B:W19,22,23,24,25,26,28,29,30,31,32:B2,3,4,5,6,7,8,11,12,13,14",
    "B:W17,19,22,23,25,26,27,29,30,31,32:B1,2,4,5,6,7,8,10,12,13,16",
    "B:W18,21,22,23,24,27,28,29,30,31,32:B1,2,3,4,7,8,9,10,11,12,14",
    "B:W20,21,22,23,24,26,27,29,30,31,32:B1,2,4,5,6,7,8,10,11,12,13",
    "B:W17,18,21,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,10,11,20",
    "B:W18,20,21,22,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,12,13,16",
    "B:W14,17,18,19,23,27,31,32:B2,3,5,7,9,11,12,20",
    "W:W13,17,21,22,26,27,30,31:B3,5,6,10,11,14,15,20",
    "B:W12,15,21,26,27,29,31,32:B2,3,6,7,8,13,14,19",
    "B:W13,14,18,23,24,27,29,31:B1,3,5,7,11,12,16,20",
)
# Endgames of the same self-play games (same rule), with a king: 4 pieces (2), 5 (3), 6 (2), 8 (2), 10 (1).
ENDGAMES = (
    "B:W6,K25,31:BK32",
    "B:WK2,11:BK4,18",
    "B:W5,K20,K22,28:BK30",
    "B:WK12,K14:BK19,K22,K23",
    "W:W6,K17,30:B21,27",
    "B:WK10,K13,K14,K19,K23:BK21",
    "W:WK7,K11,20:B12,K17,K31",
    "B:W13,K18,21,31:B9,24,K25,27",
    "W:WK4,7,15,29:B1,5,12,K16",
    "W:WK4,5,12,32:B3,7,10,K17,K18,26",
)
POSITIONS = OPENINGS + CAPTURE_OPENINGS + MIDDLEGAMES + ENDGAMES



def run_bench(depth: int = DEFAULT_DEPTH, hash_mb: int = BENCH_HASH_MB,
              on_position: Optional[Callable[[int, str, int, float], None]] = None,
              stop: Optional[np.ndarray] = None,
              on_ready: Optional[Callable[[], None]] = None, weights: Any = None) -> tuple[int, float]:
    """Search every bench position to ``depth`` from a cleared table; return (total nodes, seconds).

    ``on_position(index, fen, nodes, seconds)`` is called after each position, ``on_ready()``
    once the kernels are compiled.  Setting ``stop[0] = 1`` (an int64 array of one) ends
    the search in progress; that position is not counted and no further one is started.
    ``weights``: an :class:`~uci_checkers.search.weights.EvalWeights` (default: the shipped ones).
    """
    from ..rules.position import Game, Position
    from ..search.alphabeta import Searcher, SearchLimits

    searcher = Searcher(hash_mb, weights)
    searcher.warm_up()
    if on_ready is not None:
        on_ready()
    stop = np.zeros(1, dtype=np.int64) if stop is None else stop
    total_nodes = 0
    total_time = 0.0
    for i, fen in enumerate(POSITIONS, 1):
        if stop[0]:
            break
        searcher.clear()
        game = Game(Position.from_fen(fen))
        t0 = time.perf_counter()
        result = searcher.search(game, SearchLimits(depth=depth), lambda info: None, stop)
        dt = time.perf_counter() - t0
        if stop[0]:
            break                       # cut short: not a bench figure
        total_nodes += result.nodes
        total_time += dt
        if on_position is not None:
            on_position(i, fen, result.nodes, dt)
    return total_nodes, total_time


def main(argv: Optional[list[str]] = None) -> int:
    parser = ToolParser(prog="uci-checkers bench",
                        description="fixed-depth search benchmark (node total = search fingerprint)")
    parser.add_argument("depth", nargs="?", type=int, default=DEFAULT_DEPTH,
                        help=f"search depth in plies (default {DEFAULT_DEPTH})")
    parser.add_argument("--hash", type=int, default=BENCH_HASH_MB, help="table size in MiB (default 16)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the totals")
    parser.add_argument("--weights", metavar="FILE", default=None,
                        help="evaluation weights file (default: the shipped one; other weights give other node "
                             "totals)")
    args = parser.parse_args(argv)
    if args.depth < 1 or args.depth > 64:
        parser.error("depth must be between 1 and 64")
    if not 1 <= args.hash <= MAX_HASH_MB:
        parser.error(f"--hash must be between 1 and {MAX_HASH_MB}")
    weights = None
    if args.weights is not None:
        from ..search.weights import WeightsError, read_weights

        try:
            weights = read_weights(args.weights)     # checked before the kernels compile
        except WeightsError as exc:
            parser.error(f"--weights: {exc}")
    from ..util.commandline import COMPILING_NOTICE
    from ..util.interrupts import raise_if_interrupted

    # The totals are summed here, from the positions reported as finished, so an interrupted bench
    # still reports what it did (its worker may not hand back a result in time).
    done = {"positions": 0, "nodes": 0, "seconds": 0.0}

    def show(i: int, fen: str, nodes: int, seconds: float) -> None:
        done["positions"] = i
        done["nodes"] += nodes
        done["seconds"] += seconds
        if not args.quiet:
            nps = int(nodes / seconds) if seconds > 0 else 0
            print(f"position {i:2d}/{len(POSITIONS)}  nodes {nodes:>10d}  time {seconds * 1000:8.0f} ms  "
                  f"nps {nps:>9d}  {fen}", flush=True)

    stop = np.zeros(1, dtype=np.int64)
    ready = threading.Event()
    finished = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            run_bench(args.depth, args.hash, show, stop, ready.set, weights)
        except BaseException as exc:          # handed to the main thread
            errors.append(exc)
        finally:
            finished.set()

    worker = threading.Thread(target=work, name="bench", daemon=True)
    notice = threading.Timer(1.0, lambda: ready.is_set() or print(f"bench: {COMPILING_NOTICE}", file=sys.stderr,
                                                                  flush=True))
    notice.daemon = True
    worker.start()
    notice.start()
    interrupted = False
    try:
        # An event, not Thread.join: a join cut short by KeyboardInterrupt can leave the thread
        # looking finished to the next join (CPython 3.11), which then returns at once.
        while not finished.wait(0.1):         # short waits: Ctrl-C is taken at once
            raise_if_interrupted()
    except KeyboardInterrupt:
        interrupted = True
        stop[0] = 1
        finished.wait(5.0)
    finally:
        notice.cancel()
    if errors and not interrupted:
        raise errors[0]
    nodes, seconds = done["nodes"], done["seconds"]
    partial = " (partial)" if interrupted else ""
    print("===========================")
    if interrupted:
        print(f"Interrupted     : after {done['positions']} of {len(POSITIONS)} positions "
              "(partial totals, not a bench figure)")
    print(f"Total time (ms) : {int(seconds * 1000)}{partial}")
    print(f"Nodes searched  : {nodes}{partial}")
    print(f"Nodes/second    : {int(nodes / seconds) if seconds > 0 else 0}{partial}")
    if weights is not None:
        print(f"Evaluation      : {weights.describe()}")
    if interrupted:
        print("bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
