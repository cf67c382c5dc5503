"""``uci-checkers analyse``: annotate the games of a PDN file with an engine's evaluations.

::

    uci-checkers analyse games.pdn --depth 10 --out annotated.pdn --jobs 2

Every position of every readable game is searched (``--movetime`` ms or
``--depth`` plies; default ``--movetime 200``) by engine processes speaking
protocol.md (this package's engine unless ``--engine CMD``), driven through
:mod:`uci_checkers.client`; ``--jobs N`` runs N engine processes side by side,
``--backend ray`` sends each game to a Ray cluster instead (one engine process
per task, this package shipped to the workers as the arena does).  Broken games
of the file are reported on stderr and skipped.  An engine's own opening book
(``OwnBook``) is switched off, so every position gets a search's score and line,
unless ``--option OwnBook=true`` asks for it.

What is written (``--out``)
---------------------------
After each move a comment ``{+0.35/12}``: the evaluation of the position reached,
in men **from Black's point of view** (Black is the first player, as ``1-0``
is Black's win), and the depth (the arena writes its engines' scores in the same
convention, ``{+0.12/9 0.210s}``; such a comment is replaced by the analysis,
keeping its time, so a move carries one evaluation); ``#5``/``#-5`` is a forced win for Black/White in
5 moves; ``{end: Black wins}`` marks a position where the side to move has no
move.  When the engine prefers another move, a variation follows with its line
and evaluation: ``(12. 9-14 22-18 15x22 {+0.40/12})``.  Moves that lose
evaluation get a NAG: ``?`` (mistake) or ``??`` (blunder).

Mistakes and blunders
---------------------
The *loss* of a move is how much worse, for the player who made it, the position
after the move is than the position before it (the engine's best play), in
men: ``loss = v(before) - v(after)``, each from the mover's side.  Both values
are first clamped to ±5 men (a forced win counts as +5), so moves that keep a
won game won are not flagged, and a move that is the engine's own first choice
has no loss.  Thresholds (change with ``--mistake``/``--blunder``): a loss of at
least **0.35 men** is a mistake ``?``, at least **0.90 men** (about a man given
away for nothing) a blunder ``??``.
The summary gives per side the counts and the average loss per move.

Progress goes to stderr (a bar on a terminal, a line every 10 % otherwise); the
per-game summary to stdout.

Exit status (the tools' convention, :mod:`uci_checkers.util.commandline`): 0 done; 1 the
engine failed during the analysis; 2 a usage or input error (a bad flag, a file that cannot
be read or holds no readable game, an engine that cannot be used, ``--backend ray`` without
Ray); 130 interrupted.
"""
from __future__ import annotations

import argparse
import math
import os
import queue
import re
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..util.commandline import ToolParser, check_output_path, parse_option_args
from ..util.exitcodes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.interrupts import raise_if_interrupted
from ..client import ArgumentError, Engine, EngineError, EngineTerminatedError, EngineTimeoutError, Limit, Score
from ..rules.pdn import PdnGame, read_pdn_file, write_pdn_file
from ..rules.position import Game, Move

__all__ = ["PositionEval", "MoveVerdict", "GameReport", "AnalysisSettings", "AnalysisInterrupted",
           "analyse_games", "annotate_game", "main", "CLAMP_CP", "MISTAKE_CP", "BLUNDER_CP"]

CLAMP_CP = 500          # evaluations are clamped to +-5 men before losses are computed
MISTAKE_CP = 35         # loss >= 0.35 men: '?'
BLUNDER_CP = 90         # loss >= 0.90 men (about a man given away): '??'
PV_PLIES = 6            # plies of the engine's line shown in a variation
MAX_DEPTH = 200
MAX_MOVETIME_MS = 3_600_000
MAX_JOBS = 256


class AnalysisInterrupted(Exception):
    """Ctrl-C/SIGTERM during :func:`analyse_games`: ``partial[g]`` is game ``g``'s evaluations
    when all of them were finished, else None."""

    def __init__(self, partial: list[Optional[list["PositionEval"]]]) -> None:
        super().__init__("analysis interrupted")
        self.partial = partial


@dataclass
class PositionEval:
    """The engine's verdict on one position, from the side to move's point of view."""

    score: Optional[Score]          # None for a position without legal moves (the side to move has lost)
    depth: int = 0
    best: Optional[Move] = None
    pv: list[Move] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.score is None

    def value(self) -> int:
        """Centi-men for the side to move, clamped to +-CLAMP_CP (forced wins at the clamp)."""
        if self.score is None:
            return -CLAMP_CP
        if self.score.mate is not None:
            return CLAMP_CP if self.score.mate > 0 else -CLAMP_CP
        return max(-CLAMP_CP, min(CLAMP_CP, self.score.cp or 0))


@dataclass
class MoveVerdict:
    ply: int                        # 1-based ply of the move
    move: Move
    side: int                       # 0 Black, 1 White: who played it
    loss: int                       # centi-men lost by the mover (0 when it was the engine's choice)
    mark: str                       # "", "?" or "??"
    best: Optional[Move]


@dataclass
class GameReport:
    index: int
    title: str
    result: str
    verdicts: list[MoveVerdict]

    def side_stats(self, side: int) -> tuple[int, int, float]:
        """(mistakes, blunders, average loss in men) of one side."""
        mine = [v for v in self.verdicts if v.side == side]
        mistakes = sum(1 for v in mine if v.mark == "?")
        blunders = sum(1 for v in mine if v.mark == "??")
        avg = sum(v.loss for v in mine) / len(mine) / 100 if mine else 0.0
        return mistakes, blunders, avg

    def summary(self, label: Callable[[int], str]) -> str:
        lines = [f"game {self.index + 1}: {self.title} ({self.result}), {len(self.verdicts)} plies"]
        for side, name in ((0, "Black"), (1, "White")):
            m, b, avg = self.side_stats(side)
            lines.append(f"  {name}: {m} mistake{'s' if m != 1 else ''}, {b} blunder{'s' if b != 1 else ''}, "
                         f"average loss {avg:.2f} men/move")
        for v in self.verdicts:
            if v.mark:
                best = f", best {v.best}" if v.best is not None else ""
                lines.append(f"    {label(v.ply - 1)} {v.move}{v.mark} loses {v.loss / 100:.2f}{best}")
        return "\n".join(lines)


@dataclass
class AnalysisSettings:
    depth: Optional[int] = None
    movetime: Optional[int] = None
    engine: Optional[list[str]] = None              # command; None = this package's engine
    options: dict[str, str] = field(default_factory=dict)
    mistake: int = MISTAKE_CP
    blunder: int = BLUNDER_CP

    def limit(self) -> Limit:
        if self.depth is not None:
            return Limit(depth=self.depth, movetime=self.movetime)
        return Limit(movetime=self.movetime if self.movetime is not None else 200)


# --------------------------------------------------------------------------------------------------
# Searching
# --------------------------------------------------------------------------------------------------
def _evaluate(engine: Engine, game: Game, limit: Limit) -> PositionEval:
    if not game.position.has_legal_move():
        return PositionEval(None)
    res = engine.play(game, limit)
    info = res.info
    score = info.score if info.score is not None else Score(cp=0)
    pv = info.pv if info.pv and res.move is not None and info.pv[0].squares == res.move.squares \
        else ([res.move] if res.move is not None else [])
    return PositionEval(score, info.depth or 0, res.move, pv)


def _open_engine(settings: AnalysisSettings) -> Engine:
    """The engine, with its own opening book off (``OwnBook``, if it has one) unless ``--option OwnBook=...``
    says otherwise: the analysis wants the search's scores and lines, not a book's answer."""
    engine = Engine.popen(settings.engine, options=settings.options or None)
    given = {" ".join(name.split()).lower() for name in settings.options}
    if "ownbook" in engine.options and "ownbook" not in given:
        try:
            engine.configure({"OwnBook": False})
        except BaseException:
            engine.close(timeout=2.0, kill=True)
            raise
    return engine


def analyse_game_positions(game: PdnGame, engine: Engine, limit: Limit) -> list[PositionEval]:
    """Evaluate every position of ``game`` (start, after each move) with one engine."""
    g = Game(game.start)
    out = [_evaluate(engine, g, limit)]
    for m in game.moves:
        g.push(m)
        out.append(_evaluate(engine, g, limit))
    return out


class _Progress:
    def __init__(self, total: int, stream: Any = None, enabled: bool = True) -> None:
        self.total = max(1, total)
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.lock = threading.Lock()
        self.last_decile = -1
        self.start = time.monotonic()

    def step(self, n: int = 1) -> None:
        with self.lock:
            self.done += n
            if not self.enabled:
                return
            frac = self.done / self.total
            elapsed = time.monotonic() - self.start
            if self.tty:
                width = 30
                fill = int(width * frac)
                eta = elapsed / frac - elapsed if frac > 0 else 0
                self.stream.write(f"\ranalyse [{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                                  f"positions, {elapsed:.0f}s elapsed, ~{eta:.0f}s left ")
                if self.done >= self.total:
                    self.stream.write("\n")
                self.stream.flush()
            else:
                decile = int(frac * 10)
                if decile != self.last_decile:
                    self.last_decile = decile
                    self.stream.write(f"analyse: {self.done}/{self.total} positions ({frac:.0%}), "
                                      f"{elapsed:.1f}s\n")
                    self.stream.flush()


def analyse_games(games: Sequence[PdnGame], settings: AnalysisSettings, jobs: int = 1,
                  progress: bool = True, stream: Any = None, first_engine: Optional[Engine] = None
                  ) -> list[list[PositionEval]]:
    """Evaluate every position of every game, over ``jobs`` engine processes (threads).

    ``first_engine`` (already started, e.g. to check the options) is used by the first
    worker and quit at the end like the others.  An engine that dies or hangs is replaced
    once per position and at most ``jobs + 2`` times in all; past that, or on any other
    :class:`EngineError`, the work stops (no new engine is started) and the error is raised.
    Ctrl-C (``KeyboardInterrupt`` in the calling thread) kills the engines and raises
    :class:`AnalysisInterrupted` with the games finished so far.
    """
    limit = settings.limit()
    tasks: "queue.Queue[tuple[int, int]]" = queue.Queue()
    prefixes: list[list[Game]] = []
    for gi, game in enumerate(games):
        g = Game(game.start)
        seq = [_copy_game(g)]
        for m in game.moves:
            g.push(m)
            seq.append(_copy_game(g))
        prefixes.append(seq)
        for k in range(len(seq)):
            tasks.put((gi, k))
    results: list[list[Optional[PositionEval]]] = [[None] * len(seq) for seq in prefixes]
    bar = _Progress(tasks.qsize(), stream, progress)
    halt = threading.Event()                 # an error or an interrupt: take no new position
    lock = threading.Lock()
    engines: list[Engine] = []
    errors: list[BaseException] = []
    restarts = [jobs + 2]
    spare = [first_engine] if first_engine is not None else []

    def new_engine() -> Engine:
        with lock:
            engine = spare.pop() if spare else None
        if engine is None:
            engine = _open_engine(settings)
        with lock:
            engines.append(engine)
        if halt.is_set():                    # interrupted while it started: do not use it
            engine.close(timeout=1.0, kill=True)
            raise EngineTerminatedError("analysis stopped")
        return engine

    def worker() -> None:
        engine: Optional[Engine] = None
        try:
            while not halt.is_set():
                try:
                    gi, k = tasks.get_nowait()
                except queue.Empty:
                    return
                for attempt in (1, 2):
                    if engine is None:
                        engine = new_engine()
                    try:
                        results[gi][k] = _evaluate(engine, prefixes[gi][k], limit)
                        break
                    except (EngineTerminatedError, EngineTimeoutError) as exc:
                        engine.close(timeout=2.0, kill=True)
                        engine = None
                        with lock:
                            restarts[0] -= 1
                            give_up = attempt == 2 or restarts[0] < 0 or halt.is_set()
                        if give_up:
                            raise
                        print(f"uci-checkers analyse: engine failed on game {games[gi].index + 1} ply {k} "
                              f"({exc}); restarting it", file=sys.stderr)
                bar.step()
        except EngineError as exc:
            if not halt.is_set():
                errors.append(exc)
            halt.set()
        except BaseException as exc:          # a bug: stop everything and let the caller see it
            errors.append(exc)
            halt.set()

    threads = [threading.Thread(target=worker, name=f"analyse-{i}", daemon=True)
               for i in range(max(1, min(jobs, tasks.qsize())))]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)                   # short joins: Ctrl-C is taken at once
                raise_if_interrupted()
    except KeyboardInterrupt:
        halt.set()
        with lock:
            running = list(engines)
        for engine in running:                # a worker blocked on its engine gets EOF at once
            engine.close(timeout=1.0, kill=True)
        for t in threads:
            t.join(5.0)
        raise AnalysisInterrupted([_complete(seq) for seq in results]) from None
    finally:
        with lock:
            running = list(engines)
        for engine in running:
            try:
                engine.quit(timeout=2.0)
            except EngineError:
                pass
    if errors:
        raise errors[0]
    return [[r for r in seq if r is not None] for seq in results]


def _complete(seq: list[Optional[PositionEval]]) -> Optional[list[PositionEval]]:
    return None if any(r is None for r in seq) else [r for r in seq if r is not None]


def _copy_game(g: Game) -> Game:
    c = Game(g.start, g.no_progress_plies)
    for m in g.moves:
        c.push(m)
    return c


def _ray_analyse(pdn_text: str, settings: AnalysisSettings) -> list[PositionEval]:
    """The Ray task: one game, its own engine process."""
    from ..rules.pdn import read_game

    game = read_game(pdn_text)
    engine = _open_engine(settings)
    try:
        return analyse_game_positions(game, engine, settings.limit())
    finally:
        engine.quit()


def analyse_games_ray(games: Sequence[PdnGame], settings: AnalysisSettings, address: Optional[str] = None,
                      progress: bool = True, stream: Any = None) -> list[list[PositionEval]]:
    """Each game a Ray task (connecting with ``ray.init(address)`` when Ray is not initialised yet)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("the ray backend needs Ray: pip install 'uci_checkers[cluster]'") from None
    from ..util.raycluster import RayConnectError, connect_ray

    try:
        connect_ray(address)
    except RayConnectError as exc:
        raise RayUnavailable(str(exc)) from exc
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_analyse)
    refs = {remote.remote(g.pdn(), settings): i for i, g in enumerate(games)}
    bar = _Progress(sum(len(g.moves) + 1 for g in games), stream, progress)
    out: list[Optional[list[PositionEval]]] = [None] * len(games)
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
            raise_if_interrupted()
            for ref in ready:
                i = refs[ref]
                out[i] = ray.get(ref)
                bar.step(len(games[i].moves) + 1)
    except KeyboardInterrupt:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        raise AnalysisInterrupted(out) from None
    return [r or [] for r in out]


class RayUnavailable(RuntimeError):
    """``--backend ray`` without Ray installed, or without a cluster to connect to."""


# --------------------------------------------------------------------------------------------------
# Annotating
# --------------------------------------------------------------------------------------------------
def _black_pov_text(ev: PositionEval, turn: int) -> str:
    """``+0.35/12`` / ``#5/12`` from Black's point of view for a position with ``turn`` to move."""
    if ev.score is None:
        return "end: " + ("White wins" if turn == 0 else "Black wins")
    sign = 1 if turn == 0 else -1
    if ev.score.mate is not None:
        text = f"#{sign * ev.score.mate}"
    else:
        text = f"{sign * (ev.score.cp or 0) / 100:+.2f}"
    return f"{text}/{ev.depth}"


def _variation(game: PdnGame, ply0: int, moves: list[Move], comment: str) -> str:
    """Variation text starting at 0-based ``ply0`` with proper move numbers."""
    parts = []
    for j, m in enumerate(moves):
        label = game.move_label(ply0 + j)
        if j == 0 or label.endswith(".") and not label.endswith("..."):
            parts.append(f"{label} {m.text()}")
        else:
            parts.append(m.text())
    return " ".join(parts) + (f" {{{comment}}}" if comment else "")


# An evaluation comment as the arena writes it (``+0.12/9 0.210s``, ``#-3/7 0.5s``, ``0.210s``;
# older files: ``+M3/9``): the analysis takes its place and keeps the time.
_EVAL_COMMENT = re.compile(r"^(?:[+-][0-9]+\.[0-9]{2}|#-?[0-9]+|[+-]M[0-9]+)?(?:/[0-9]+)?\s*([0-9]+\.[0-9]+s)?$")


def _merge_eval_comment(comments: list[str], text: str) -> list[str]:
    """``comments`` of one move with ``text`` first: an existing evaluation comment is replaced."""
    if comments:
        m = _EVAL_COMMENT.match(comments[0].strip())
        if m and comments[0].strip():
            return [text + (f" {m.group(1)}" if m.group(1) else "")] + comments[1:]
    return [text] + comments


def annotate_game(game: PdnGame, evals: list[PositionEval], mistake: int = MISTAKE_CP,
                  blunder: int = BLUNDER_CP) -> tuple[PdnGame, GameReport]:
    """A copy of ``game`` with evaluation comments, best-move variations and ?/?? marks, and its report."""
    if len(evals) != len(game.moves) + 1:
        raise ValueError(f"need {len(game.moves) + 1} evaluations, got {len(evals)}")
    out = PdnGame(tags=dict(game.tags), start=game.start, moves=list(game.moves), result=game.result,
                  comments={k: list(v) for k, v in game.comments.items()},
                  nags={k: list(v) for k, v in game.nags.items()},
                  variations={k: list(v) for k, v in game.variations.items()},
                  first_move_number=game.first_move_number, index=game.index, line=game.line)
    positions = game.positions()
    verdicts = []
    for i, move in enumerate(game.moves):
        before, after = evals[i], evals[i + 1]
        turn = positions[i].turn
        is_best = before.best is not None and before.best.squares == move.squares
        loss = 0 if is_best else max(0, before.value() + after.value())
        mark = "??" if loss >= blunder else "?" if loss >= mistake else ""
        ply = i + 1
        out.comments[ply] = _merge_eval_comment(out.comments.get(ply, []), _black_pov_text(after, positions[i + 1].turn))
        if mark:
            out.nags[ply] = [mark] + [n for n in out.nags.get(ply, []) if n not in ("?", "??")]
        if not is_best and before.best is not None:
            line = before.pv[:PV_PLIES] if before.pv else [before.best]
            out.variations.setdefault(ply, []).insert(0, _variation(game, i, line, _black_pov_text(before, turn)))
        verdicts.append(MoveVerdict(ply, move, turn, loss, mark, None if is_best else before.best))
    out.tags.setdefault("Annotator", "uci_checkers analyse")
    title = f"{game.tags.get('Black', '?')} - {game.tags.get('White', '?')}"
    if game.tags.get("Event"):
        title = f"{game.tags['Event']}: {title}"
    return out, GameReport(game.index, title, game.result, verdicts)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = ToolParser(prog="uci-checkers analyse",
                   description="Annotate the games of a PDN file with engine evaluations; "
                               "mark mistakes (?) and blunders (??).")
    p.add_argument("pdn", help="PDN file to analyse")
    lim = p.add_mutually_exclusive_group()
    lim.add_argument("--movetime", type=int, metavar="MS", help="search time per position in ms (default 200)")
    lim.add_argument("--depth", type=int, metavar="N", help="search depth per position in plies")
    p.add_argument("--out", metavar="FILE", help="write the annotated games here (PDN)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="engine processes to run side by side")
    p.add_argument("--engine", metavar="CMD", help="engine command (protocol.md); default: this package's engine")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="engine option, repeatable (e.g. --option Hash=64)")
    p.add_argument("--mistake", type=float, default=MISTAKE_CP / 100, metavar="MEN",
                   help=f"loss (men) that makes a mistake '?' (default {MISTAKE_CP / 100:.2f})")
    p.add_argument("--blunder", type=float, default=BLUNDER_CP / 100, metavar="MEN",
                   help=f"loss (men) that makes a blunder '??' (default {BLUNDER_CP / 100:.2f})")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local engine processes (default) or one Ray task per game")
    p.add_argument("--address", default=None, help="Ray address (with --backend ray), e.g. auto")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    print(f"uci-checkers analyse: {message}", file=sys.stderr)
    return code


def _check_arguments(args: argparse.Namespace) -> Optional[str]:
    """Why the arguments cannot be used (numbers, paths), or None."""
    if args.depth is not None and not 1 <= args.depth <= MAX_DEPTH:
        return f"--depth must be between 1 and {MAX_DEPTH}"
    if args.movetime is not None and not 1 <= args.movetime <= MAX_MOVETIME_MS:
        return f"--movetime must be between 1 and {MAX_MOVETIME_MS} ms"
    if not 1 <= args.jobs <= MAX_JOBS:
        return f"--jobs must be between 1 and {MAX_JOBS}"
    for flag, value in (("--mistake", args.mistake), ("--blunder", args.blunder)):
        if not (math.isfinite(value) and 0 <= value <= CLAMP_CP / 100 * 2):
            return f"{flag} must be between 0 and {CLAMP_CP / 100 * 2:g} men"
    if args.out is not None:
        try:
            check_output_path(args.out, "--out")
        except ValueError as exc:
            return str(exc)
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def main(argv: Optional[list[str]] = None) -> int:
    from ..util.interrupts import handle_interrupts

    with handle_interrupts():              # SIGTERM ends the run as Ctrl-C does, from the start
        try:
            return _main(argv)
        except KeyboardInterrupt:
            print("uci-checkers analyse: interrupted (any --out file is whole: written atomically or not at all)",
                  file=sys.stderr)
            return EXIT_INTERRUPTED


def _main(argv: Optional[list[str]]) -> int:
    args = _parser().parse_args(argv)
    problem = _check_arguments(args)
    if problem:
        return _fail(problem)
    try:
        options = parse_option_args(args.option)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        command = shlex.split(args.engine) if args.engine else None
    except ValueError as exc:
        return _fail(f"--engine: {exc}")
    if args.engine is not None and not command:
        return _fail("--engine: empty command")
    try:
        doc = read_pdn_file(args.pdn)
    except OSError as exc:
        return _fail(f"cannot read {args.pdn}: {exc.strerror or exc}")
    raise_if_interrupted()                    # one that came while the reader compiled its kernels
    for err in doc.errors:
        print(f"uci-checkers analyse: skipping {err}", file=sys.stderr)
    if args.out is not None and doc.errors and _same_file(args.out, args.pdn):
        return _fail(f"--out is the input file, which has {len(doc.errors)} unreadable game(s) that "
                     "the output would not contain: write to another file")
    if not doc.games:
        return _fail("no readable game in the file")
    settings = AnalysisSettings(depth=args.depth, movetime=args.movetime, engine=command, options=options,
                                mistake=int(round(args.mistake * 100)), blunder=int(round(args.blunder * 100)))
    first_engine = None
    if args.backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            return _fail("the ray backend needs Ray: pip install 'uci_checkers[cluster]'")
    else:
        if not args.quiet:
            print("uci-checkers analyse: starting the engine (the first start compiles)", file=sys.stderr)
        try:                                  # options refused or a missing command: before any work
            first_engine = _open_engine(settings)
        except (EngineError, ArgumentError) as exc:   # ArgumentError: a value unfit for the option's type
            return _fail(f"the engine cannot be used: {exc}")
    interrupted = False
    try:
        if args.backend == "ray":
            evals: list[Optional[list[PositionEval]]] = list(
                analyse_games_ray(doc.games, settings, args.address, progress=not args.quiet))
        else:
            evals = list(analyse_games(doc.games, settings, args.jobs, progress=not args.quiet,
                                       first_engine=first_engine))
    except AnalysisInterrupted as exc:
        evals, interrupted = exc.partial, True
    except RayUnavailable as exc:
        return _fail(str(exc))
    except ArgumentError as exc:              # --backend ray: the options are first checked in a task
        return _fail(f"the engine cannot be used: {exc}")
    except EngineError as exc:
        return _fail(f"engine failure: {exc}", EXIT_FAILED)
    annotated = []
    for game, ev in zip(doc.games, evals):
        if ev is None:                        # not finished before the interrupt: kept as it was
            annotated.append(game)
            continue
        new, report = annotate_game(game, ev, settings.mistake, settings.blunder)
        annotated.append(new)
        print(report.summary(game.move_label))
    done = sum(1 for ev in evals if ev is not None)
    if args.out:
        write_pdn_file(args.out, annotated)
        note = "" if done == len(annotated) else f" ({done} of {len(annotated)} annotated, the rest as they were)"
        print(f"annotated PDN written to {args.out}{note}", file=sys.stderr)
    if interrupted:
        print(f"uci-checkers analyse: interrupted after {done} of {len(doc.games)} games", file=sys.stderr)
        return EXIT_INTERRUPTED
    if doc.errors:
        print(f"uci-checkers analyse: {len(doc.errors)} unreadable game(s) skipped (listed above)", file=sys.stderr)
    return EXIT_OK
