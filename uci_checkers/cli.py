"""Command line: ``uci-checkers`` with no argument runs the engine on stdin/stdout;
subcommands run the tools.  Each subcommand lives in its own module, imported
only when used, as ``main(argv) -> int``.

Interrupts: for the tools, SIGTERM is turned into ``KeyboardInterrupt`` as Ctrl-C
is, before the subcommand does any work (:func:`uci_checkers.interrupts.handle_interrupts`);
a tool catches it where it can keep its finished work, and whatever still escapes
ends here as one line and exit 130, never a traceback.
"""
from __future__ import annotations

import importlib
import sys
from typing import Optional

from .util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from .util.interrupts import exit_now, handle_interrupts, interrupted
# The protocol loops handle their own input and signals; the others are tools.
_PROTOCOL_SUBCOMMANDS = ("engine", "hub", "cbengine")

SUBCOMMANDS = {
    # name: (module, one-line help)
    "engine": ("uci_checkers.protocols.uci", "run the engine protocol loop on stdin/stdout (the default)"),
    "hub": ("uci_checkers.protocols.hub", "run the engine speaking the Hub protocol (Scan, pydraughts)"),
    "perft": ("uci_checkers.rules.perft", "count move-tree leaves: perft [--fen FEN] --depth N [--divide]"),
    "bench": ("uci_checkers.tools.bench", "fixed-depth search benchmark: total nodes and nodes/s"),
    "match": ("uci_checkers.arena", "engine-vs-engine matches and tournaments"),
    "analyse": ("uci_checkers.tools.analyse", "annotate the games of a PDN file with engine evaluations"),
    "egdb": ("uci_checkers.tools.egdb_command", "endgame databases: egdb build --pieces N [--dir D], verify, info, probe"),
    "cbengine": ("uci_checkers.protocols.cbengine",
                 "serve a CheckerBoard engine library (Cake, KingsRow, GuiNN ...) as a protocol.md engine: cbengine LIB"),
    "book": ("uci_checkers.tools.book_command", "opening books: book build [--positions N], info [FILE], probe FEN"),
    "go": ("uci_checkers.protocols.oneshot", "search one position and print the best move: go --fen FEN --movetime MS"),
    "checkerboard": ("uci_checkers.tools.checkerboard", "build/install the CheckerBoard bridge DLL (bridge/checkerboard)"),
    "gui": ("uci_checkers.gui.server", "play or analyse in a browser: gui [--port P] [--no-browser] [--engine cmd=...]"),
    "selfplay": ("uci_checkers.learn.selfplay", "play fast self-play games into shards of labelled positions"),
    "relabel": ("uci_checkers.learn.relabel", "search recorded positions again with the endgame databases: new labels"),
    "rescore": ("uci_checkers.learn.rescore", "recorded shards with every search score made again by a newer evaluation"),
    "train": ("uci_checkers.learn.train", "fit the evaluation weights to self-play shards"),
    "train-net": ("uci_checkers.learn.train_net", "fit the network evaluation to self-play shards (needs PyTorch)"),
    "tune": ("uci_checkers.learn.tune", "fit the search's pruning and reduction constants by SPSA at fixed nodes"),
    "validate": ("uci_checkers.learn.validate", "score the evaluation on held-out games (and a puzzle file, if you have one)"),
}

# Subcommands that play or search with the package's evaluation: checked before they start.
NEEDS_WEIGHTS = frozenset({"engine", "hub", "bench", "go", "analyse", "selfplay", "relabel", "rescore", "validate", "book",
                           "tune"})


def usage() -> str:
    lines = ["usage: uci-checkers [SUBCOMMAND] [ARGS...]", "",
             "With no subcommand the engine reads protocol commands on stdin (see protocol.md).", "",
             "subcommands:"]
    width = max(len(name) for name in SUBCOMMANDS)
    lines += [f"  {name:<{width}}  {text}" for name, (_, text) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["engine"]
    name = args[0]
    if name in ("-h", "--help", "help"):
        print(usage())
        return EXIT_OK
    if name in ("-V", "--version"):
        from . import __version__
        print(f"uci_checkers {__version__}")
        return EXIT_OK
    if name not in SUBCOMMANDS:
        print(f"uci-checkers: unknown subcommand {name!r}\n\n{usage()}", file=sys.stderr)
        return EXIT_USAGE
    from .search.weights import WeightsError, check_file, default_path
    try:
        if name in NEEDS_WEIGHTS:
            check_file(default_path())     # an engine without its evaluation must not start at all
        if name in _PROTOCOL_SUBCOMMANDS:
            return int(_load(name).main(args[1:]) or EXIT_OK)
        with handle_interrupts():
            try:
                code = int(_load(name).main(args[1:]) or EXIT_OK)
            except Exception:
                # an interrupt that landed inside numba's compiler is swallowed there (see util.interrupts),
                # and numba then fails with an error of its own: that failure is the interrupt
                if interrupted():
                    raise KeyboardInterrupt from None
                raise
    except WeightsError as exc:
        print(f"uci-checkers: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"uci-checkers {name}: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except ModuleNotFoundError as exc:
        if exc.name != SUBCOMMANDS[name][0]:
            raise
        print(f"uci-checkers: {name} is not available in this version", file=sys.stderr)
        return EXIT_USAGE
    if code == EXIT_INTERRUPTED and argv is None:
        exit_now(code)                 # the program's own entry: see exit_now
    return code


def _load(name: str):
    return importlib.import_module(SUBCOMMANDS[name][0])


if __name__ == "__main__":
    sys.exit(main())
