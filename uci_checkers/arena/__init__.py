"""``uci-checkers match``: engine-vs-engine matches, round robins and gauntlets.

Any engine that speaks protocol.md can play.  The arena keeps the clocks,
referees every move with the rules core, writes each game as PDN the moment it
ends, and reports honest statistics (Elo with a 95% interval, LOS, draw ratio,
pentanomial results over opening pairs, optional SPRT).

Examples::

    # the package's own engine against itself, 2 games per ballot, 10 s + 0.1 s
    uci-checkers match --tc 10+0.1 --pdn-out games.pdn

    # a new version against an old checkout, SPRT, four games at a time
    uci-checkers match \\
        --engine name=new \\
        --engine name=old cmd="/path/to/old/venv/bin/python -m uci_checkers" dir=/path/to/old \\
        --each option.Hash=64 --tc 10+0.1 --concurrency 4 \\
        --sprt elo0=0 elo1=5 alpha=0.05 beta=0.05 --pdn-out new-old.pdn --json new-old.json

    # round robin at fixed depth over a FEN book, on a Ray cluster
    uci-checkers match --tournament roundrobin --engine name=a ... --engine name=b ... \\
        --engine name=c ... --depth 6 --openings book.fen --backend ray --address auto

Engines (``--engine KEY=VALUE ...``, repeat per engine; ``--each`` applies to all):

    name=NAME          display name (unique; default "uci_checkers", "engine2", ...)
    cmd="CMD ARGS"     command line (shell-style quoting); default: this package's
                       engine, ``python -m uci_checkers`` with the arena's Python
    dir=PATH           working directory
    option.NAME=VALUE  ``setoption name NAME value VALUE`` after ``uciok``
    tc=B+I movetime=MS depth=N nodes=N   this engine's limits (override the global
                       ``--tc``/``--movetime``/``--depth``/``--nodes``; ``tc=none`` etc. clears)

Fewer than two ``--engine``: the package's own engine fills the missing sides.

Openings: ``ballots3`` (default: the 156 ACF three-move ballots of the
tournament deck, shipped as package data), ``elevenman`` (the package's 479
eleven-man starts: more distinct games for matches at fixed nodes, which repeat
exactly), a ``.pdn`` file (each game's FEN and moves) or a text file with one
FEN (optionally ``FEN moves m1 m2``) or one move sequence from the start per
line.  Each opening is played twice with colours reversed (an opening pair); the
book is shuffled with ``--seed`` (default 1) unless ``--book-order``.  ``--games``
is per engine pair (default: two per opening).

Termination reasons (PDN ``Termination``): ``no legal moves``, ``threefold
repetition``, ``no progress``, ``ply cap``, ``time forfeit``, ``illegal move``
(malformed, illegal, ambiguous, or ``bestmove (none)`` with legal moves),
``engine crash``, ``engine timeout`` (no ``uciok``/``readyok``/``bestmove``) and,
with ``--adjudicate-draws``, ``adjudicated draw``.
A crashed or hung engine is restarted for its next game.  An engine whose very
first start fails (it exits, or never answers ``uci``/``isready``: a typo in its
command, a program that does not speak the protocol) stops the match at once
with exit status 2 and the engine's last stderr lines; on Ray every game starts
its own engines, so there any failed start does.

Before the first game everything given is checked: numbers, the engine commands
(they must exist), the output files (their directories must be writable) and,
for ``--plot``, matplotlib.  An engine that has no option of a name given with
``option.NAME=`` or refuses its value (``info string error ...`` before
``readyok``) stops the match at its first start.  ``--resume`` refuses a file whose
games were played with other limits.  The arena warns on stderr when an engine's
``Move Overhead`` takes most or all of a fixed ``--movetime``.

Exit status (the tools' convention, :mod:`uci_checkers.util.commandline`): 0 when
the match ran; 2 for bad arguments, an engine that cannot start, fails its first
start or refuses its options, or a backend that cannot start (e.g. Ray missing or
its cluster unreachable); 130 when interrupted (SIGINT/SIGTERM; continue with
``--resume``).  Each error is one line on stderr (a failed start adds the
engine's last stderr lines).
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import TYPE_CHECKING, Optional, Sequence

from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from .engine import EngineConfig, EngineConfigError, Limits, Timeouts, parse_tc

if TYPE_CHECKING:
    from .game import DrawAdjudication

__all__ = ["main", "build_parser", "engines_from_args", "draw_adjudication"]

_LIMIT_KEYS = ("tc", "movetime", "depth", "nodes")


def build_parser() -> argparse.ArgumentParser:
    doc = __doc__ or ""
    p = ToolParser(
        prog="uci-checkers match", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Engine-vs-engine matches and tournaments for protocol.md engines.",
        epilog=doc[doc.index("Examples::"):])
    g = p.add_argument_group("engines")
    g.add_argument("--engine", action="append", nargs="+", default=[], metavar="KEY=VALUE",
                   help="one engine: name=, cmd=, dir=, option.NAME=, tc=, movetime=, depth=, nodes=")
    g.add_argument("--each", nargs="+", default=[], metavar="KEY=VALUE",
                   help="settings applied to every engine (an engine's own keys win)")
    g.add_argument("--tournament", choices=("match", "roundrobin", "gauntlet"), default=None,
                   help="match (2 engines, the default), roundrobin, or gauntlet (first engine vs the rest)")
    t = p.add_argument_group("limits (per move; combine freely)")
    t.add_argument("--tc", metavar="BASE+INC", help="clock per side in seconds, e.g. 60+0.6")
    t.add_argument("--movetime", type=int, metavar="MS", help="fixed time per move")
    t.add_argument("--depth", type=int, metavar="N", help="fixed search depth")
    t.add_argument("--nodes", type=int, metavar="N", help="fixed node count")
    t.add_argument("--margin", type=int, default=200, metavar="MS",
                   help="time a clock or movetime may be overrun before a time forfeit (default 200)")
    o = p.add_argument_group("games")
    o.add_argument("--games", type=int, metavar="N",
                   help="games per engine pair (default: 2 per opening)")
    o.add_argument("--openings", default="ballots3", metavar="BOOK",
                   help="ballots3 (default), elevenman (the package's 479 eleven-man starts), "
                        "FILE.pdn, or a FEN / move-list file")
    o.add_argument("--seed", type=int, default=1, help="seed of the opening order (default 1)")
    o.add_argument("--book-order", action="store_true", help="play the openings in book order")
    o.add_argument("--concurrency", type=int, default=None, metavar="N",
                   help="games at once (default: 1 locally, one per CPU of a Ray cluster)")
    o.add_argument("--max-plies", type=int, default=400, metavar="N",
                   help="adjudicate a draw after N plies (safety net; default 400)")
    o.add_argument("--adjudicate-draws", nargs="*", metavar="K=V",
                   help="call a game drawn once, after at least `after` plies, both engines scored each of the "
                        "last `plies` moves within `score` centi-men of 0: after=40 plies=8 score=10 (defaults; "
                        "off unless given)")
    o.add_argument("--no-progress-plies", type=int, default=80, metavar="N",
                   help="no-progress draw after N plies without capture or man move (0 off; default 80); "
                        "sent to engines that have a NoProgressPlies option")
    o.add_argument("--timeout-uci", type=float, default=30.0, metavar="S",
                   help="seconds to wait for uciok (default 30)")
    o.add_argument("--timeout-ready", type=float, default=120.0, metavar="S",
                   help="seconds to wait for readyok (default 120: a first run may compile)")
    o.add_argument("--timeout-move", type=float, default=300.0, metavar="S",
                   help="seconds to wait for bestmove when no clock bounds the search (default 300)")
    r = p.add_argument_group("results")
    r.add_argument("--pdn-out", "--pgn-out", dest="pdn_out", metavar="FILE",
                   help="append each finished game to FILE")
    r.add_argument("--resume", action="store_true", help="continue the match recorded in --pdn-out")
    r.add_argument("--overwrite", action="store_true", help="start --pdn-out afresh if it exists")
    r.add_argument("--no-comments", action="store_true", help="no {score/depth time} move comments")
    r.add_argument("--event", default="uci_checkers arena", help="PDN Event tag")
    r.add_argument("--json", metavar="FILE", help="write a JSON summary")
    r.add_argument("--sprt", nargs="*", metavar="K=V",
                   help="stop when decided: elo0=0 elo1=5 alpha=0.05 beta=0.05 (defaults)")
    r.add_argument("--plot", metavar="FILE.png", help="plot Elo (and LLR) over games (needs matplotlib)")
    r.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="progress lines on stderr (default: only when stderr is a terminal)")
    r.add_argument("--no-progress", dest="progress", action="store_false")
    r.add_argument("--debug", action="store_true", help="log every protocol line on stderr")
    b = p.add_argument_group("backend")
    b.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (default) or tasks on a Ray cluster")
    b.add_argument("--address", help="Ray cluster address (default: start a local Ray instance; 'auto')")
    return p


def _parse_kv(tokens: Sequence[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for tok in tokens:
        key, sep, value = tok.partition("=")
        if not sep or not key:
            raise EngineConfigError(f"{where}: expected KEY=VALUE, got {tok!r}")
        if not (key in ("name", "cmd", "dir") or key in _LIMIT_KEYS or key.startswith("option.")):
            raise EngineConfigError(f"{where}: unknown key {key!r} (name, cmd, dir, option.NAME, "
                                    "tc, movetime, depth, nodes)")
        out[key] = value
    return out


# Upper bounds (checked at parse time, so no huge number reaches an engine or a timer).
_MAX_LIMIT = {"movetime": 1_000_000_000, "depth": 1000, "nodes": 10 ** 15}


def _int(value: str, key: str) -> int:
    text = value.strip()
    if len(text) > 20 or not text.isascii():
        raise EngineConfigError(f"{key}={value[:30]!r}: not a whole number in range")
    try:
        n = int(text)
    except ValueError:
        raise EngineConfigError(f"{key}={value!r}: not a whole number") from None
    if n <= 0:
        raise EngineConfigError(f"{key}={value!r}: must be positive")
    top = _MAX_LIMIT[key.lstrip("-")]
    if n > top:
        raise EngineConfigError(f"{key}={value!r}: at most {top}")
    return n


def _apply_limits(limits: Limits, kv: dict[str, str]) -> None:
    for key in _LIMIT_KEYS:
        if key not in kv:
            continue
        value = kv[key]
        clear = value.lower() in ("none", "off", "")
        if key == "tc":
            limits.tc_base_ms, limits.tc_inc_ms = (None, 0) if clear else parse_tc(value)
        elif key == "movetime":
            limits.movetime_ms = None if clear else _int(value, key)
        elif key == "depth":
            limits.depth = None if clear else _int(value, key)
        elif key == "nodes":
            limits.nodes = None if clear else _int(value, key)


_ADJUDICATION_RANGES = {"after": (0, 100_000), "plies": (1, 100_000), "score": (0, 10_000)}


def draw_adjudication(words: Sequence[str]) -> DrawAdjudication:
    """``--adjudicate-draws`` from ``["after=40", "plies=8", "score=10"]`` (any subset; the rest default)."""
    from .game import DrawAdjudication

    values: dict[str, int] = {}
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or key not in _ADJUDICATION_RANGES:
            raise EngineConfigError(f"--adjudicate-draws: bad setting {w[:40]!r}: expected after=, plies=, score=")
        lo, hi = _ADJUDICATION_RANGES[key]
        text = value.strip()
        # the length first: int() refuses (with a ValueError) strings of more than 4,300 digits
        if not (text.isascii() and text.isdigit() and len(text) <= len(str(hi)) and lo <= int(text) <= hi):
            raise EngineConfigError(f"--adjudicate-draws: {key}={value[:20]!r}: "
                                    f"must be a whole number from {lo} to {hi}")
        values[key] = int(text)
    return DrawAdjudication(**values)


def engines_from_args(args: argparse.Namespace) -> list[EngineConfig]:
    """Engine configs from ``--engine``/``--each`` and the global limits."""
    base = Limits()
    if args.tc:
        base.tc_base_ms, base.tc_inc_ms = parse_tc(args.tc)
    if args.movetime is not None:
        base.movetime_ms = _int(str(args.movetime), "--movetime")
    if args.depth is not None:
        base.depth = _int(str(args.depth), "--depth")
    if args.nodes is not None:
        base.nodes = _int(str(args.nodes), "--nodes")
    each = _parse_kv(args.each, "--each")
    specs = [_parse_kv(tokens, f"--engine #{i + 1}") for i, tokens in enumerate(args.engine)]
    while len(specs) < 2:
        specs.append({})
    configs: list[EngineConfig] = []
    used: set[str] = set()
    for i, own in enumerate(specs):
        kv = {**each, **own}
        limits = Limits(base.tc_base_ms, base.tc_inc_ms, base.movetime_ms, base.depth, base.nodes)
        _apply_limits(limits, kv)
        if limits.tc_base_ms is None and limits.movetime_ms is None and limits.depth is None \
                and limits.nodes is None:
            raise EngineConfigError(f"engine #{i + 1} has no limit: give --tc, --movetime, --depth "
                                    "or --nodes (or tc=/movetime=/depth=/nodes= on the engine)")
        command = shlex.split(kv["cmd"]) if kv.get("cmd") else None
        name = kv.get("name") or ("uci_checkers" if command is None else f"engine{i + 1}")
        if name in used:
            if "name" in own:
                raise EngineConfigError(f"two engines are called {name!r}: names must be unique")
            n = 2
            while f"{name}#{n}" in used:
                n += 1
            name = f"{name}#{n}"
        used.add(name)
        options = {k[len("option."):]: v for k, v in kv.items() if k.startswith("option.")}
        configs.append(EngineConfig(name, command, kv.get("dir"), options, limits))
    return configs


MAX_TIMEOUT_S = 1_000_000.0      # ~11 days: any longer wait is a typo, and the OS refuses much longer ones
MAX_MARGIN_MS = 3_600_000


def _check_numbers(args: argparse.Namespace) -> None:
    """Refuse numbers that cannot mean anything (checked before any work)."""
    for flag, value in (("--timeout-uci", args.timeout_uci), ("--timeout-ready", args.timeout_ready),
                        ("--timeout-move", args.timeout_move)):
        if not (0 < value <= MAX_TIMEOUT_S):          # also refuses nan
            raise EngineConfigError(f"{flag} {value:g}: must be more than 0 and at most {MAX_TIMEOUT_S:g} s")
    if not 0 <= args.margin <= MAX_MARGIN_MS:
        raise EngineConfigError(f"--margin {args.margin}: must be between 0 and {MAX_MARGIN_MS} ms")
    if args.concurrency is not None and not 1 <= args.concurrency <= 1024:
        raise EngineConfigError("--concurrency must be between 1 and 1024")
    if args.max_plies < 1 or args.max_plies > 100_000:
        raise EngineConfigError("--max-plies must be between 1 and 100000")
    if not 0 <= args.no_progress_plies <= 100_000:
        raise EngineConfigError("--no-progress-plies must be between 0 and 100000")


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output file writable, and matplotlib present for --plot, before a game is played."""
    from ..util.commandline import check_output_path

    for path, what in ((args.pdn_out, "--pdn-out"), (args.json, "--json"), (args.plot, "--plot")):
        if path is not None:
            try:
                check_output_path(path, what)
            except ValueError as exc:
                raise EngineConfigError(str(exc)) from None
    if args.plot is not None:
        from .plot import plot_available

        why = plot_available()
        if why:
            raise EngineConfigError(f"--plot: {why}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``uci-checkers match``; returns the exit status."""
    from ..util.interrupts import handle_interrupts

    # The handlers come first: an interrupt while the resume file is read and rewritten,
    # or while engines start, must end as cleanly as one during the games.
    with handle_interrupts():
        try:
            return _main(argv)
        except KeyboardInterrupt:
            print("\narena: interrupted; the games finished so far are in the PDN (continue with --resume)",
                  file=sys.stderr)
            return EXIT_INTERRUPTED


def _main(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    from .backends import BackendError, make_backend
    from .engine import check_command
    from .game import Settings
    from .openings import OpeningError, load, ordered
    from .plot import write_plot
    from .runner import Match, MatchError, schedule, stderr_is_tty, write_json
    from .sprt import Sprt, SprtError

    def fail(msg: str, code: int = EXIT_USAGE) -> int:
        print(f"uci-checkers match: {msg}", file=sys.stderr)
        return code

    try:
        _check_numbers(args)
        engines = engines_from_args(args)
        if args.backend == "local":        # Ray workers run the commands on their own machines
            for e in engines:
                if e.command is not None:
                    check_command(e.command, e.cwd)
        _check_outputs(args)
        tournament = args.tournament or "match"
        book = ordered(load(args.openings), args.seed, shuffle=not args.book_order)
        games = args.games if args.games is not None else 2 * len(book)
        if games < 1:
            raise EngineConfigError("--games must be at least 1")
        sprt = Sprt.parse(args.sprt) if args.sprt is not None else None
        timeouts = Timeouts(uciok=args.timeout_uci, readyok=args.timeout_ready, move=args.timeout_move,
                            margin_ms=args.margin)
        adjudication = draw_adjudication(args.adjudicate_draws) if args.adjudicate_draws is not None else None
        settings = Settings(timeouts=timeouts, no_progress_plies=args.no_progress_plies,
                            max_plies=args.max_plies, event=args.event, comments=not args.no_comments,
                            draw_adjudication=adjudication)
        jobs = schedule(engines, tournament, games, book)
        live = stderr_is_tty()
        show = live if args.progress is None else args.progress
        match = Match(engines, jobs, settings, tournament, args.pdn_out, args.resume, args.overwrite,
                      sprt, sys.stderr if show else None, progress_live=live and show)
    except (EngineConfigError, OpeningError, SprtError, MatchError) as exc:
        return fail(str(exc))

    log = (lambda line: print(line, file=sys.stderr, flush=True)) if args.debug else None
    if show:
        for e in engines:
            print(f"arena: {e.describe()} [{e.limits.describe()}]", file=sys.stderr)
        print(f"arena: {len(match.jobs)} games to play ({match.resumed} resumed), "
              f"{args.concurrency or ('1' if args.backend == 'local' else 'one per CPU')} at a time, "
              f"backend {args.backend}", file=sys.stderr)
    status = EXIT_OK
    result = None
    try:
        backend = make_backend(args.backend, settings, args.concurrency, args.address, log)
        result = match.run(backend)
    except BackendError as exc:
        return fail(str(exc))
    except EngineConfigError as exc:     # an engine refused its options or could not be started
        status = fail(str(exc))
        if match.finished == match.resumed:
            return status
    except KeyboardInterrupt:
        print("\narena: interrupted; the games finished so far are in the PDN "
              "(continue with --resume)", file=sys.stderr)
        status = EXIT_INTERRUPTED
    print(match.table())
    extra = {"interrupted": status == EXIT_INTERRUPTED,
             "stopped_by_sprt": bool(result and result.stopped_early)}
    if args.json:
        write_json(args.json, match.summary(extra))
    if args.plot:
        pairing = match.stats[0]
        bounds = (sprt.lower, sprt.upper) if sprt is not None else None
        why = write_plot(args.plot, f"{pairing.a} vs {pairing.b}", match.history[0], bounds)
        if why:
            print(f"arena: {why}", file=sys.stderr)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
