"""``uci-checkers analyse``: annotate the games of a PDN file with an engine's evaluations.

::

    uci-checkers analyse games.pdn --depth 10 --out annotated.pdn --jobs 2

Every position of every readable game is searched (``--movetime`` ms or
``--depth`` plies; default ``--movetime 200``) by engine processes speaking
protocol.md (this package's engine unless ``--engine CMD``), driven through
:mod:`uci_checkers.client`; ``--jobs N`` runs N engine processes side by side,
``--backend ray`` sends each game to a Ray cluster instead (one engine process
per task, this package shipped to the workers as the arena does).  Broken games
of the file are reported on stderr and skipped.

What is written (``--out``)
---------------------------
After each move a comment ``{+0.35/12}``: the evaluation of the position reached,
in men **from Black's point of view** (Black is the first player, as ``1-0``
is Black's win), and the depth; ``#5``/``#-5`` is a forced win for Black/White in
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
"""
from __future__ import annotations

import argparse
import shlex
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from .cli import parse_option_args
from .client import Engine, EngineError, EngineTerminatedError, EngineTimeoutError, Limit, Score
from .pdn import PdnGame, read_pdn_file, write_pdn_file
from .position import Game, Move, Position

__all__ = ["PositionEval", "MoveVerdict", "GameReport", "AnalysisSettings", "analyse_games", "annotate_game",
           "main", "CLAMP_CP", "MISTAKE_CP", "BLUNDER_CP"]

CLAMP_CP = 500          # evaluations are clamped to +-5 men before losses are computed
MISTAKE_CP = 35         # loss >= 0.35 men: '?'
BLUNDER_CP = 90         # loss >= 0.90 men (about a man given away): '??'
PV_PLIES = 6            # plies of the engine's line shown in a variation


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
    return Engine.popen(settings.engine, options=settings.options or None)


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
                  progress: bool = True, stream: Any = None) -> list[list[PositionEval]]:
    """Evaluate every position of every game, over ``jobs`` engine processes (threads)."""
    limit = settings.limit()
    tasks: list[tuple[int, int]] = []
    prefixes: list[list[Game]] = []
    for gi, game in enumerate(games):
        g = Game(game.start)
        seq = [_copy_game(g)]
        for m in game.moves:
            g.push(m)
            seq.append(_copy_game(g))
        prefixes.append(seq)
        tasks += [(gi, k) for k in range(len(seq))]
    results: list[list[Optional[PositionEval]]] = [[None] * len(seq) for seq in prefixes]
    bar = _Progress(len(tasks), stream, progress)
    local = threading.local()
    engines: list[Engine] = []
    engines_lock = threading.Lock()

    def run(task: tuple[int, int]) -> None:
        gi, k = task
        for attempt in (1, 2):     # an engine that dies or hangs is replaced once per position
            engine = getattr(local, "engine", None)
            if engine is None:
                engine = _open_engine(settings)
                local.engine = engine
                with engines_lock:
                    engines.append(engine)
            try:
                results[gi][k] = _evaluate(engine, prefixes[gi][k], limit)
                break
            except (EngineTerminatedError, EngineTimeoutError) as exc:
                local.engine = None
                engine.close(timeout=2.0, kill=True)
                if attempt == 2:
                    raise
                print(f"uci-checkers analyse: engine failed on game {games[gi].index + 1} ply {k} ({exc}); "
                      "restarting it", file=sys.stderr)
        bar.step()

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="analyse") as pool:
            for fut in [pool.submit(run, t) for t in tasks]:
                fut.result()
    finally:
        for engine in engines:
            try:
                engine.quit()
            except EngineError:
                pass
    return [[r for r in seq if r is not None] for seq in results]


def _copy_game(g: Game) -> Game:
    c = Game(g.start, g.no_progress_plies)
    for m in g.moves:
        c.push(m)
    return c


def _ray_analyse(pdn_text: str, settings: AnalysisSettings) -> list[PositionEval]:
    """The Ray task: one game, its own engine process."""
    from .pdn import read_game

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
        raise RuntimeError("the ray backend needs Ray (pip install ray)") from None
    from .arena.backends import ray_runtime_env

    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env=ray_runtime_env())
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_analyse)
    refs = {remote.remote(g.pdn(), settings): i for i, g in enumerate(games)}
    bar = _Progress(sum(len(g.moves) + 1 for g in games), stream, progress)
    out: list[Optional[list[PositionEval]]] = [None] * len(games)
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for ref in ready:
            i = refs[ref]
            out[i] = ray.get(ref)
            bar.step(len(games[i].moves) + 1)
    return [r or [] for r in out]


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
        out.comments.setdefault(ply, []).insert(0, _black_pov_text(after, positions[i + 1].turn))
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
    p = argparse.ArgumentParser(prog="uci-checkers analyse",
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


def main(argv: Optional[list[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.depth is not None and args.depth < 1:
        print("uci-checkers analyse: --depth must be at least 1", file=sys.stderr)
        return 2
    if args.movetime is not None and args.movetime < 1:
        print("uci-checkers analyse: --movetime must be at least 1", file=sys.stderr)
        return 2
    try:
        options = parse_option_args(args.option)
    except ValueError as exc:
        print(f"uci-checkers analyse: {exc}", file=sys.stderr)
        return 2
    try:
        doc = read_pdn_file(args.pdn)
    except OSError as exc:
        print(f"uci-checkers analyse: cannot read {args.pdn}: {exc}", file=sys.stderr)
        return 2
    for err in doc.errors:
        print(f"uci-checkers analyse: skipping {err}", file=sys.stderr)
    if not doc.games:
        print("uci-checkers analyse: no readable game in the file", file=sys.stderr)
        return 1
    settings = AnalysisSettings(depth=args.depth, movetime=args.movetime,
                                engine=shlex.split(args.engine) if args.engine else None, options=options,
                                mistake=int(round(args.mistake * 100)), blunder=int(round(args.blunder * 100)))
    try:
        if args.backend == "ray":
            evals = analyse_games_ray(doc.games, settings, args.address, progress=not args.quiet)
        else:
            evals = analyse_games(doc.games, settings, args.jobs, progress=not args.quiet)
    except EngineError as exc:
        print(f"uci-checkers analyse: engine failure: {exc}", file=sys.stderr)
        return 1
    annotated = []
    for game, ev in zip(doc.games, evals):
        new, report = annotate_game(game, ev, settings.mistake, settings.blunder)
        annotated.append(new)
        print(report.summary(game.move_label))
    if args.out:
        write_pdn_file(args.out, annotated)
        print(f"annotated PDN written to {args.out}", file=sys.stderr)
    return 0
