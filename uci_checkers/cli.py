"""Command line: ``uci-checkers`` with no argument runs the engine on stdin/stdout;
subcommands run the tools.  Each subcommand lives in its own module, imported
only when used, as ``main(argv) -> int``."""
from __future__ import annotations

import importlib
import sys
from typing import Optional

SUBCOMMANDS = {
    # name: (module, one-line help)
    "engine": ("uci_checkers.protocol", "run the engine protocol loop on stdin/stdout (the default)"),
    "hub": ("uci_checkers.hub", "run the engine speaking the Hub protocol (Scan, pydraughts)"),
    "perft": ("uci_checkers.perft", "count move-tree leaves: perft [--fen FEN] --depth N [--divide]"),
    "bench": ("uci_checkers.bench", "fixed-depth search benchmark: total nodes and nodes/s"),
    "match": ("uci_checkers.arena", "engine-vs-engine matches and tournaments"),
    "analyse": ("uci_checkers.analyse", "annotate the games of a PDN file with engine evaluations"),
    "egdb": ("uci_checkers.egdb.build", "endgame databases: egdb build --pieces N [--dir D], verify, info, probe"),
    "go": ("uci_checkers.oneshot", "search one position and print the best move: go --fen FEN --movetime MS"),
}


def parse_option_args(items: list[str]) -> dict[str, str]:
    """``--option NAME=VALUE`` arguments of the tool subcommands as a dict; ValueError names a bad one."""
    options = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--option needs NAME=VALUE, not {item!r}")
        name, value = item.split("=", 1)
        options[name.strip()] = value.strip()
    return options


def usage() -> str:
    lines = ["usage: uci-checkers [SUBCOMMAND] [ARGS...]", "",
             "With no subcommand the engine reads protocol commands on stdin (see protocol.md).", "",
             "subcommands:"]
    lines += [f"  {name:<9} {text}" for name, (_, text) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        args = ["engine"]
    name = args[0]
    if name in ("-h", "--help", "help"):
        print(usage())
        return 0
    if name in ("-V", "--version"):
        from . import __version__
        print(f"uci_checkers {__version__}")
        return 0
    if name not in SUBCOMMANDS:
        print(f"uci-checkers: unknown subcommand {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(SUBCOMMANDS[name][0])
    except ModuleNotFoundError as exc:
        if exc.name == SUBCOMMANDS[name][0]:
            print(f"uci-checkers: {name} is not available in this version", file=sys.stderr)
            return 2
        raise
    return int(module.main(args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
