"""``uci-checkers egdb``: build, verify, info, probe and bench of the endgame databases (the command line
over :mod:`uci_checkers.egdb`).

Exit status (the tools' convention, :mod:`uci_checkers.util.commandline`): 0 done; 1 ``verify`` found bad
slices, or a build failed; 2 a usage or input error (a bad flag, a directory that does not exist or holds no
databases, a bad FEN, ``--backend ray`` without Ray, a directory that cannot be written); 130 interrupted
(finished slices are kept).
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..util.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser, os_error_text
from ..egdb.build import DEFAULT_DISTANCE_PIECES, MAX_BUILD_PIECES, EgdbBuildError, _slice_line, build, \
    build_plan, verify_directory
from ..egdb.plan import describe as describe_plan
from ..egdb.probe import cache_counters, describe, probe_position
from ..egdb.store import EgdbFileError, default_directory, load_directory, read_info


def _parser() -> ToolParser:
    p = ToolParser(prog="uci-checkers egdb", description="endgame databases: build, verify, inspect")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build (or resume building) every slice with up to N pieces")
    b.add_argument("--pieces", type=int, required=True, help=f"largest piece count (2..{MAX_BUILD_PIECES})")
    b.add_argument("--dir", type=Path, default=None, help=f"database directory (default {default_directory()})")
    b.add_argument("--jobs", type=int, default=1, help="local worker processes for independent slices")
    b.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (--jobs), or Ray tasks (pip install '.[cluster]')")
    b.add_argument("--address", default=None, help="Ray cluster address (default: start a local instance)")
    b.add_argument("--distance-pieces", type=int, default=DEFAULT_DISTANCE_PIECES,
                   help="keep distances to the end up to this many pieces (and wherever a side has no man); "
                        "larger slices where both sides have men keep win/loss/draw only "
                        f"(default {DEFAULT_DISTANCE_PIECES})")
    b.add_argument("--dry-run", action="store_true",
                   help="print the plan (order, memory per task, estimated positions, time and size) and stop")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    v = sub.add_parser("verify", help="re-check the stored slices (checksums and every value)")
    v.add_argument("--pieces", type=int, required=True)
    v.add_argument("--dir", type=Path, default=None)
    i = sub.add_parser("info", help="list the stored slices: positions, results, longest win, size, build time")
    i.add_argument("--dir", type=Path, default=None)
    bn = sub.add_parser("bench", help="search cost with and without the databases (the bench positions)")
    bn.add_argument("--dir", type=Path, default=None)
    bn.add_argument("--pieces", type=int, default=MAX_BUILD_PIECES)
    bn.add_argument("--depth", type=int, default=13)
    bn.add_argument("--runs", type=int, default=3)
    bn.add_argument("--endgames", action="store_true", help="only the bench's endgame positions")
    q = sub.add_parser("probe", help="the stored verdict of one position")
    q.add_argument("--fen", required=True)
    q.add_argument("--dir", type=Path, default=None)
    q.add_argument("--pieces", type=int, default=MAX_BUILD_PIECES)
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_or_status(argv)
    if isinstance(args, int):          # --help, or a usage error already reported
        return args
    directory = args.dir if args.dir is not None else default_directory()
    if args.command != "build" and not Path(directory).is_dir():
        print(f"egdb: {directory}: no such directory (build one with: uci-checkers egdb build --pieces N)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "build":
            if not 2 <= args.pieces <= MAX_BUILD_PIECES:
                print(f"egdb: --pieces must be 2..{MAX_BUILD_PIECES}", file=sys.stderr)
                return EXIT_USAGE
            if args.dry_run:
                plan = build_plan(directory, args.pieces, max(1, args.jobs), args.distance_pieces)
                print("\n".join(describe_plan(plan)))
                return EXIT_OK
            if args.backend == "ray" and importlib.util.find_spec("ray") is None:
                print("egdb: --backend ray needs Ray (pip install 'uci_checkers[cluster]')", file=sys.stderr)
                return EXIT_USAGE
            build(directory, args.pieces, max(1, args.jobs), quiet=args.quiet, distance_pieces=args.distance_pieces,
                  backend=args.backend, address=args.address)
            return EXIT_OK
        if args.command == "verify":
            return EXIT_FAILED if verify_directory(directory, args.pieces) else EXIT_OK
        if args.command == "info":
            return _info(directory)
        if args.command == "probe":
            return _probe(directory, args.fen, args.pieces)
        if args.command == "bench":
            return _bench(directory, args.pieces, args.depth, args.runs, args.endgames)
    except KeyboardInterrupt:
        print("\negdb: interrupted; finished slices are kept (run the same command to resume)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (EgdbBuildError, EgdbFileError) as exc:
        print(f"egdb: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:              # a directory that cannot be made or written: one line, not [Errno n]
        print(f"egdb: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE


def _bench(directory: Path, pieces: int, depth: int, runs: int, endgames_only: bool) -> int:
    """The bench positions searched to ``depth`` without and with the databases: nodes, time, nodes/s, tbhits."""
    import statistics

    from . import bench as benchmod
    from ..rules.position import Game, Position
    from ..search.alphabeta import Searcher, SearchLimits

    t0 = time.perf_counter()
    db = load_directory(directory, pieces)
    opened = time.perf_counter() - t0
    for problem in db.problems:
        print(f"egdb: {problem}", file=sys.stderr)
    if not db.pieces:
        print(f"egdb: no databases in {directory}", file=sys.stderr)
        return EXIT_USAGE
    searcher = Searcher(benchmod.BENCH_HASH_MB)
    searcher.warm_up()
    stop = np.zeros(1, dtype=np.int64)
    print(f"bench depth {depth}, databases up to {db.pieces} pieces from {directory} ({len(db.slices)} files, "
          f"{db.file_bytes:,} bytes, opened in {1000 * opened:.1f} ms); median of {runs} run(s)")
    sets = [("all bench positions", benchmod.POSITIONS), ("bench endgames", benchmod.ENDGAMES)]
    for label, fens in sets[1:] if endgames_only else sets:
        for table, name in ((None, "without"), (db.table, "with")):
            searcher.set_egdb(table)
            times = []
            nodes = tbhits = 0
            for _ in range(max(1, runs)):
                nodes = tbhits = 0
                elapsed = 0.0
                for fen in fens:
                    searcher.clear()
                    t0 = time.perf_counter()
                    infos: list = []
                    result = searcher.search(Game(Position.from_fen(fen)), SearchLimits(depth=depth), infos.append,
                                             stop)
                    elapsed += time.perf_counter() - t0
                    nodes += result.nodes
                    tbhits += infos[-1].tbhits if infos else 0
                times.append(elapsed)
            seconds = statistics.median(times)
            print(f"{label:<20} {name:<8} nodes {nodes:>11,}  time {seconds:7.2f} s  nodes/s {nodes / seconds:>11,.0f}"
                  f"  tbhits {tbhits:>9,}")
    hits, decoded, computed = cache_counters(db.table)
    print(f"block cache: {hits:,} hits, {decoded:,} blocks decoded "
          f"({100 * decoded / max(1, hits + decoded):.2f}% of block reads), {computed:,} capture positions computed")
    return EXIT_OK


def _info(directory: Path) -> int:
    files = sorted(Path(directory).glob("*.egdb")) if Path(directory).is_dir() else []
    if not files:
        print(f"egdb: no slice files in {directory}", file=sys.stderr)
        return EXIT_USAGE
    infos = []
    for path in files:
        try:
            infos.append(read_info(path))
        except EgdbFileError as exc:
            print(f"BAD  {exc}")
    infos.sort(key=lambda x: (x.slice.pieces, x.slice.men, x.slice.key))
    for x in infos:
        print(_slice_line(x.slice, x.positions, x.max_distance, (x.wins, x.losses, x.draws), x.seconds, x.file_bytes,
                          "", x.distances, x.cpu_seconds or None))
    by_pieces: dict[int, list] = {}
    for x in infos:
        by_pieces.setdefault(x.slice.pieces, []).append(x)
    for n, xs in sorted(by_pieces.items()):
        pos = sum(x.positions for x in xs)
        size = sum(x.file_bytes for x in xs)
        timed = [x for x in xs if x.cpu_seconds]
        cpu = (f", CPU {sum(x.cpu_seconds for x in timed):.1f} s for {sum(x.positions for x in timed):,} positions "
               f"({1e9 * sum(x.cpu_seconds for x in timed) / sum(x.positions for x in timed):.0f} ns each)" if timed else "")
        print(f"{n} pieces: {len(xs)} slices, {pos:,} positions, {size:,} bytes ({8 * size / pos:.3f} bits/position),"
              f" built in {sum(x.seconds for x in xs):.1f} s{cpu}")
    return EXIT_OK


def _probe(directory: Path, fen: str, pieces: int) -> int:
    from ..rules.position import Position

    try:
        pos = Position.from_fen(fen)
    except ValueError as exc:
        print(f"egdb: bad FEN: {exc}", file=sys.stderr)
        return EXIT_USAGE
    db = load_directory(directory, pieces)
    for problem in db.problems:
        print(f"egdb: {problem}", file=sys.stderr)
    code = probe_position(db.table, pos.black, pos.white, pos.kings, pos.turn)
    print(f"{pos.fen()}: {describe(code)}")
    return EXIT_OK
