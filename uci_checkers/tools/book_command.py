"""``uci-checkers book``: build, info and probe of opening books (the command line over :mod:`uci_checkers.book`).

``book build`` grows a book from the start position and the three-move ballots by drop-out
expansion (:mod:`uci_checkers.book.build`), resumable; ``book info [FILE]`` describes a book
(its provenance and how far it reaches from the ballots); ``book probe FEN`` lists the moves
a book holds for one position.

Exit status (the tools' convention, :mod:`uci_checkers.util.commandline`): 0 done; 2 a usage or input error
(a bad flag or value, a book or state file that is missing, corrupt or of another format, a state built with
other settings, a bad FEN or move, ``--backend ray`` without Ray, an output that cannot be written); 130
interrupted (the finished rounds are saved).
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from dataclasses import fields
from pathlib import Path
from typing import Optional

from ..arena.openings import ballots
from ..book.build import DEFAULT_DEPTH, BookBuildError, BuildSettings, build
from ..book.store import Book, BookError, default_path, load_book
from ..rules.notation import NotationError
from ..rules.position import Game, Position
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser, check_output_path, os_error_text

ROOTS = ("all", "start", "ballots")
DEFAULT_TARGET = 2000


def _parser() -> ToolParser:
    p = ToolParser(prog="uci-checkers book", description="opening books: build, inspect, probe")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="grow a book by drop-out expansion (resumable: run it again to go on)",
                       description="Grow an opening book from the start position and the 156 three-move ballots "
                                   "by drop-out expansion, every position searched by this engine. The state is "
                                   "saved every --checkpoint positions and on Ctrl-C; the same command resumes, "
                                   "a larger --positions grows the book further.")
    b.add_argument("--out", type=Path, default=Path("opening.book"), help="the book file (default opening.book)")
    b.add_argument("--state", type=Path, default=None, help="the build state (default OUT.state)")
    b.add_argument("--positions", type=int, default=DEFAULT_TARGET,
                   help=f"grow until the book holds this many positions (default {DEFAULT_TARGET})")
    b.add_argument("--roots", choices=ROOTS, default="all",
                   help="start position and ballots (all, the default), the start position only, or the ballots")
    g = b.add_argument_group("the settings (recorded in the state; a resume takes them from there)")
    g.add_argument("--depth", type=int, default=None, help=f"plies per search (default {DEFAULT_DEPTH})")
    g.add_argument("--nodes", type=int, default=None, help="nodes per search (instead of --depth)")
    g.add_argument("--movetime", type=int, default=None,
                   help="milliseconds per search (instead of --depth; then the book is not reproducible)")
    g.add_argument("--multipv", type=int, default=None, help="moves valued by each search (default 2)")
    g.add_argument("--dropout", type=int, default=None,
                   help="drop-out expansion's omega: priority in centi-men per ply (default 15)")
    g.add_argument("--reply-weight", type=int, default=None,
                   help="percent of the opponent's move errors counted in a player's priority (default 50)")
    g.add_argument("--batch", type=int, default=None, help="moves expanded per round (default 4)")
    g.add_argument("--hash", type=int, default=None, help="MB of transposition table per search (default 64)")
    b.add_argument("--jobs", type=int, default=1, help="local search processes")
    b.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (--jobs), or Ray tasks (pip install '.[cluster]')")
    b.add_argument("--address", default=None, help="Ray cluster address (default: start a local instance)")
    b.add_argument("--checkpoint", type=int, default=25, help="save the state every N new positions (default 25)")
    b.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    i = sub.add_parser("info", help="describe a book: size, provenance, reach from the ballots")
    i.add_argument("file", nargs="?", type=Path, default=None, help="the book (default: the packaged one)")
    q = sub.add_parser("probe", help="the book's moves for one position")
    q.add_argument("fen", help="the position (FEN), or 'startpos'")
    q.add_argument("--moves", default="", help="moves played from it first, e.g. \"11-15 23-19\"")
    q.add_argument("--book", type=Path, default=None, help="the book (default: the packaged one)")
    return p


_SETTING_FLAGS = {"depth": "depth", "nodes": "nodes", "movetime_ms": "movetime", "multipv": "multipv",
                  "dropout": "dropout", "reply_weight": "reply_weight", "batch": "batch", "hash_mb": "hash"}


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_or_status(argv)
    if isinstance(args, int):          # --help, or a usage error already reported
        return args
    try:
        if args.command == "build":
            return _build(args)
        if args.command == "info":
            return _info(args.file if args.file is not None else default_path())
        if args.command == "probe":
            return _probe(args.fen, args.moves, args.book if args.book is not None else default_path())
    except KeyboardInterrupt:
        print("\nuci-checkers book: interrupted; the finished rounds are saved (run the same command to resume)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    except (BookError, BookBuildError) as exc:     # a missing, corrupt or other-format book or state
        print(f"uci-checkers book {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:                          # a file that cannot be read or written: one line
        print(f"uci-checkers book {args.command}: {os_error_text(exc)}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_USAGE


def root_positions(which: str) -> list[tuple[str, Position]]:
    """The build's roots: the start position and/or every three-move ballot (after its three moves)."""
    out: list[tuple[str, Position]] = []
    if which in ("all", "start"):
        out.append(("start", Position.start()))
    if which in ("all", "ballots"):
        out += [(op.label, op.game(0).position) for op in ballots()]
    return out


def _usage_error(command: str, message: str) -> int:
    print(f"uci-checkers book {command}: {message}", file=sys.stderr)
    return EXIT_USAGE


def _build(args: argparse.Namespace) -> int:
    given = {name: getattr(args, flag) for name, flag in _SETTING_FLAGS.items() if getattr(args, flag) is not None}
    if given.keys() & {"nodes", "movetime_ms"} and "depth" not in given:
        given["depth"] = None          # a node or time limit instead of the default depth
    defaults = {f.name: f.default for f in fields(BuildSettings)}
    settings = BuildSettings(**{**defaults, **given})
    state_path = args.state if args.state is not None else args.out.with_name(args.out.name + ".state")
    for value, flag in ((args.positions, "--positions"), (args.jobs, "--jobs"), (args.checkpoint, "--checkpoint")):
        if value < 1:
            return _usage_error("build", f"{flag} must be >= 1, not {value}")
    if args.backend == "ray" and importlib.util.find_spec("ray") is None:
        return _usage_error("build", "--backend ray needs Ray (pip install 'uci_checkers[cluster]')")
    try:
        check_output_path(str(args.out), "--out")
        check_output_path(str(state_path), "--state")
        build(args.out, state_path, root_positions(args.roots), settings, args.positions, jobs=args.jobs,
              backend=args.backend, address=args.address, checkpoint=args.checkpoint, quiet=args.quiet,
              explicit=given.keys())
    except (ValueError, BookBuildError) as exc:
        return _usage_error("build", str(exc))
    return EXIT_OK


def book_line(book: Book, game: Game, limit: int = 200) -> int:
    """How many plies the book's best moves (both sides) go on from ``game``'s position before it is left."""
    plies = 0
    while plies < limit:
        pos = game.position
        moves = book.probe(pos)
        legal = {m.squares: m for m in pos.legal_moves()}
        move = next((legal[m.squares] for m in moves if m.squares in legal), None)
        if move is None:
            break
        game.push(move)
        plies += 1
    return plies


def _info(path: Path) -> int:
    book = load_book(path)
    header = book.header
    prov = header.get("provenance", {})
    size = path.stat().st_size
    print(f"{path}: opening book format {header.get('format')}, {len(book):,} positions, {book.moves:,} moves, "
          f"{size:,} bytes, sha256 {book.checksum[:16]}")
    settings = prov.get("settings")
    if settings:
        print("built by: " + ", ".join(f"{k} {v}" for k, v in settings.items() if v is not None))
    if prov:
        print(f"build: {prov.get('roots')} roots, {prov.get('searches')} searches in {prov.get('rounds')} rounds")
    for engine in prov.get("engines", []):
        print(f"engine: search signature {engine.get('signature')}, weights {engine.get('weights')}, "
              f"from round {engine.get('from_round')}")
    start = book_line(book, Game())
    reach = [book_line(book, op.game(0)) for op in ballots()]
    in_book = sum(1 for r in reach if r)
    print(f"best line from the start position: {start} plies")
    print(f"best lines from the {len(reach)} ballots (after their 3 moves): mean {statistics.mean(reach):.1f} plies, "
          f"median {statistics.median(reach):.0f}, max {max(reach)}; {in_book} ballots in the book")
    return EXIT_OK


def _probe(fen: str, moves: str, path: Path) -> int:
    try:
        start = Position.start() if fen.strip().lower() == "startpos" else Position.from_fen(fen)
        game = Game.from_moves(start, moves.split())
    except NotationError as exc:
        return _usage_error("probe", str(exc))
    book = load_book(path)
    pos = game.position
    found = book.probe(pos)
    legal = {m.squares: m for m in pos.legal_moves()}
    if not found:
        print(f"{pos.fen()}: not in the book")
        return EXIT_OK
    print(f"{pos.fen()}: {len(found)} book move(s), values in centi-men for {pos.side_name}")
    for m in found:
        move = legal.get(m.squares)
        text = move.text() if move is not None else m.text() + " (not legal here: a damaged book?)"
        print(f"  {text:<12} {m.value:+6d}  depth {m.depth}")
    return EXIT_OK
