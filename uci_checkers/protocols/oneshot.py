"""``uci-checkers go``: search one position and print the best move and its line, for shell scripts.

::

    $ uci-checkers go --fen "B:W18,24,27,28,K10,K15:B12,16,20,K22,K25,K29" --movetime 1000
    15x24x31... (the best move, alone on the first line)
    pv 15x24x31 ...
    score cp 35 depth 12 seldepth 20 nodes 123456 time 998

The first line is the move alone (``(none)`` when the side to move has no legal
move: it has lost), so ``uci-checkers go --fen "$FEN" --depth 8 | head -n 1``
gives a move.  ``--moves "11-15 23-19"`` plays moves from the FEN first (the
engine then knows the history for repetitions); ``--multipv K`` prints K lines
``pv<k> ...`` / ``score<k> ...``; ``--json`` prints one JSON object instead;
``--verbose`` shows the engine's progress on stderr.  It always searches: the
opening book is off unless ``--option OwnBook=true`` (then a book position is
answered from the book under ``--movetime``, with ``nodes 0``; ``--depth`` and
``--nodes`` always search, protocol.md section 4a).  The search runs in this
process through the engine facade (no subprocess); while the kernels compile (a
first run) a line on stderr says so.  Exit status (the tools' convention,
:mod:`uci_checkers.util.commandline`): 0; 1 when the search did not hand in a
move; 2 for bad arguments (an unreadable FEN, an illegal move, a refused option,
an unusable ``--weights`` file), 130 when interrupted (Ctrl-C or SIGTERM stop the
search; nothing is printed on stdout).
"""
from __future__ import annotations

import json
import sys
import threading
from typing import Any, Optional

from ..util.commandline import COMPILING_NOTICE, ToolParser, announce_if_slow, parse_option_args
from ..util.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.interrupts import interrupt_event, raise_if_interrupted

__all__ = ["main", "search_position"]

MAX_DEPTH = 200
MAX_MOVETIME_MS = 3_600_000
MAX_MULTIPV = 64


def search_position(fen: Optional[str] = None, moves: Optional[list[str]] = None, movetime: Optional[int] = None,
                    depth: Optional[int] = None, multipv: int = 1, options: Optional[dict[str, str]] = None,
                    on_info: Any = None, timeout: Optional[float] = None) -> tuple[Any, dict[int, Any], Any]:
    """Search a position in-process: ``(result, {multipv: last SearchInfo}, game)``.

    ``movetime`` in ms; with neither ``movetime`` nor ``depth`` one second is used.
    Raises ``NotationError`` subclasses for a bad FEN or an illegal move.
    """
    from ..engine.facade import Engine
    from ..engine.timeman import GoParams
    from ..rules.position import Position

    start = Position.from_fen(fen) if fen else Position.start()
    engine = Engine()
    try:
        engine.start_warmup()
        engine.set_option("OwnBook", "false")   # a tool that prints the search's line and score searches
        for name, value in (options or {}).items():
            engine.set_option(name, value)
        if multipv > 1:
            engine.set_option("MultiPV", str(multipv))
        engine.set_position(start, list(moves or []))
        if movetime is None and depth is None:
            movetime = 1000
        if not announce_if_slow(lambda: engine.ensure_ready(abort=interrupt_event()),
                                f"uci-checkers go: {COMPILING_NOTICE}"):
            raise KeyboardInterrupt           # the wait was cut short by an interrupt
        infos: dict[int, Any] = {}
        done = threading.Event()
        box: list[Any] = []

        def info_cb(info: Any) -> None:
            infos[getattr(info, "multipv", 1)] = info
            if on_info is not None:
                on_info(info)

        def done_cb(result: Any) -> None:
            box.append(result)
            done.set()

        engine.go(GoParams(movetime=movetime, depth=depth), info_cb, done_cb)
        if not _wait(done, timeout):
            engine.stop()
            done.wait(5.0)
        return (box[0] if box else None), infos, engine.game
    finally:
        engine.quit()             # also on Ctrl-C: the search is stopped before the interrupt goes on


def _wait(event: threading.Event, timeout: Optional[float]) -> bool:
    """``event.wait(timeout)`` in short slices, so that Ctrl-C is taken at once."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    while not event.wait(0.1):
        raise_if_interrupted()
        if deadline is not None and time.monotonic() >= deadline:
            return False
    return True


def _score_words(info: Any) -> list[str]:
    if info.mate is not None:
        return ["mate", str(info.mate)]
    return ["cp", str(int(info.score))]


def main(argv: Optional[list[str]] = None) -> int:
    p = ToolParser(prog="uci-checkers go", description="Search one position; print the best move "
                   "(first line), its line and score.")
    p.add_argument("--fen", default=None, help="position (PDN FEN); default: the start position")
    p.add_argument("--moves", default="", help='moves played from the FEN first, e.g. "11-15 23-19"')
    lim = p.add_mutually_exclusive_group()
    lim.add_argument("--movetime", type=int, metavar="MS", help="search time in ms (default 1000)")
    lim.add_argument("--depth", type=int, metavar="N", help="search depth in plies")
    p.add_argument("--multipv", type=int, default=1, metavar="K", help="report the K best lines")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="engine option, repeatable")
    p.add_argument("--weights", metavar="FILE", default=None,
                   help="evaluation weights file (the EvalFile option; default: the shipped one)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true", help="engine progress on stderr")
    args = p.parse_args(argv)
    if (args.movetime is not None and not 1 <= args.movetime <= MAX_MOVETIME_MS) \
            or (args.depth is not None and not 1 <= args.depth <= MAX_DEPTH) or not 1 <= args.multipv <= MAX_MULTIPV:
        print(f"uci-checkers go: --movetime must be 1-{MAX_MOVETIME_MS}, --depth 1-{MAX_DEPTH}, "
              f"--multipv 1-{MAX_MULTIPV}", file=sys.stderr)
        return EXIT_USAGE
    try:
        options = parse_option_args(args.option)
    except ValueError as exc:
        print(f"uci-checkers go: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.weights is not None:
        options["EvalFile"] = args.weights

    def verbose(info: Any) -> None:
        from .uci import format_info

        print(format_info(info), file=sys.stderr, flush=True)

    try:
        result, infos, game = search_position(args.fen, args.moves.split(), args.movetime, args.depth,
                                              args.multipv, options, verbose if args.verbose else None)
    except ValueError as exc:     # NotationError, OptionError
        print(f"uci-checkers go: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("uci-checkers go: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if result is None:
        print("uci-checkers go: the search did not finish", file=sys.stderr)
        return EXIT_FAILED
    best = result.best
    status = game.status()
    if args.json:
        lines = []
        for k in sorted(infos):
            info = infos[k]
            lines.append({"multipv": k, "depth": info.depth, "seldepth": info.seldepth,
                          "score_cp": None if info.mate is not None else int(info.score), "mate": info.mate,
                          "nodes": info.nodes, "time_ms": info.time_ms, "pv": [m.text() for m in info.pv]})
        print(json.dumps({"fen": game.position.fen(), "bestmove": best.text() if best else None,
                          "ponder": result.ponder.text() if result.ponder else None,
                          "status": status.value, "lines": lines}))
        return EXIT_OK
    print(best.text() if best is not None else "(none)")
    if best is None:
        print(f"result {status.value}")
        return EXIT_OK
    for k in sorted(infos):
        info = infos[k]
        suffix = "" if args.multipv == 1 else str(k)
        print(f"pv{suffix} " + " ".join(m.text() for m in info.pv))
        print(f"score{suffix} " + " ".join(_score_words(info) + [
            "depth", str(info.depth), "seldepth", str(info.seldepth), "nodes", str(info.nodes),
            "time", str(info.time_ms)]))
    return EXIT_OK
