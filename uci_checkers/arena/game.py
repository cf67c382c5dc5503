"""Playing one game between two engine processes, refereed by the rules core.

The runner, not the engines, decides every result:

* after each move :meth:`Game.status` applies the rules (no legal move loses,
  threefold repetition and the no-progress count draw) and a ply cap is the
  safety net (a draw); on request (:class:`DrawAdjudication`) a game both engines
  keep scoring level is called a draw early;
* every ``bestmove`` is checked with :meth:`Position.parse_move`; malformed,
  illegal or ambiguous text loses, and so does ``bestmove (none)`` when a legal
  move exists;
* the runner keeps the clocks: an engine over its time (plus the margin) loses
  on time;
* a crash or a missing ``uciok``/``readyok``/``bestmove`` loses the game; the
  process is discarded and :class:`EnginePool` starts a fresh one next game.

A finished game is written with :mod:`uci_checkers.rules.pdn` (see :meth:`GameRecord.pdn_game`)::

    [Event "uci_checkers arena"]
    [Site "host"]
    [Date "2026.11.29"]
    [Round "7"]
    [Black "new"]
    [White "old"]
    [Result "1-0"]
    [GameType "21"]
    [Opening "ACF 12: 9-13 23-19 11-16"]
    [Termination "no legal moves"]
    [PlyCount "57"]
    [TimeControl "10+0.1"]
    [Limits "tc=10+0.1"]

    1. 9-13 23-19 2. 11-16 {+0.12/9 0.210s} 2... 22-18 {-0.08/9 0.198s} ...

The result is from the first player's (Black's) side.  A game from a set-up
position carries ``[SetUp "1"]`` and ``[FEN "..."]`` (``1...`` starts the move text
when White moves first).  The opening moves are part of the move text, so the
record replays from its own start; each engine move has its ``{score/depth time}``
comment (the score in men from Black's point of view, ``#n`` for a mate, as
``uci-checkers analyse`` writes them) and the reason for an adjudicated end is a
last comment.  A game played with draw adjudication also carries ``[DrawAdjudication
"after=40 plies=8 score=10"]``, which ``--resume`` checks as it checks ``Limits``.
"""
from __future__ import annotations

import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Optional

from ..rules.notation import AmbiguousMoveError, IllegalMoveError, InvalidMoveError, NotationError
from ..rules.pdn import PdnGame, write_game
from ..rules.position import DEFAULT_NO_PROGRESS_PLIES, GameStatus, Position
from .engine import (EngineConfig, EngineConfigError, EngineCrashed, EngineError, EngineProcess, EngineStartError,
                     EngineTimeout, Limits, Timeouts)
from .openings import START_FEN, Opening

# Termination tag values (PDN ``[Termination "..."]``).
NO_MOVES = "no legal moves"
REPETITION = "threefold repetition"
NO_PROGRESS = "no progress"
PLY_CAP = "ply cap"
TIME_FORFEIT = "time forfeit"
ILLEGAL_MOVE = "illegal move"
ENGINE_CRASH = "engine crash"
ENGINE_TIMEOUT = "engine timeout"
ADJUDICATED_DRAW = "adjudicated draw"
TERMINATIONS = (NO_MOVES, REPETITION, NO_PROGRESS, PLY_CAP, TIME_FORFEIT, ILLEGAL_MOVE, ENGINE_CRASH,
                ENGINE_TIMEOUT, ADJUDICATED_DRAW)

SIDES = ("Black", "White")


@dataclass(frozen=True)
class DrawAdjudication:
    """When the arena calls a game drawn before its end (cutechess-cli's ``-draw``): once at least ``after``
    plies are on the board (the opening's included) and each of the last ``plies`` moves came with a score
    (``cp``, not a mate) within ``score`` centi-men of zero.  A move without a score starts the count again.

    Engines that agree a position is level for several moves in a row seldom go on to decide it, and the
    level endings they shuffle through to a repetition are about a third of a match's plies (README).  Not
    exact: both can be wrong about an ending (then a game one side would have won is a draw).
    """

    after: int = 40
    plies: int = 8
    score: int = 10

    def describe(self) -> str:
        return f"after={self.after} plies={self.plies} score={self.score}"


@dataclass
class Settings:
    """Everything about a game that is not the engines or the opening."""

    timeouts: Timeouts = field(default_factory=Timeouts)
    no_progress_plies: int = DEFAULT_NO_PROGRESS_PLIES
    max_plies: int = 400
    draw_adjudication: Optional[DrawAdjudication] = None     # None: every game is played out
    event: str = "uci_checkers arena"
    site: str = field(default_factory=socket.gethostname)
    comments: bool = True

    @property
    def adjudication_tag(self) -> str:
        """The games' ``DrawAdjudication`` tag ("" when every game is played out)."""
        return self.draw_adjudication.describe() if self.draw_adjudication is not None else ""


@dataclass
class GameJob:
    """One scheduled game: who plays which side of which opening.

    ``number`` is the game's number in the schedule (the PDN ``Round``);
    ``pairing`` names the engine pair; ``pair_game`` the opening pair within it
    (its two games share the opening with colours reversed).
    """

    number: int
    pairing: int
    pair_game: int
    black: EngineConfig
    white: EngineConfig
    opening: Opening
    opening_index: int


@dataclass
class GameRecord:
    """A finished game: everything the PDN, the statistics and the summary need."""

    number: int
    pairing: int
    pair_game: int
    black: str
    white: str
    opening: str
    fen: str
    moves: list[str]
    opening_plies: int
    result: str                    # "1-0" Black won, "0-1" White won, "1/2-1/2"
    termination: str
    detail: str = ""
    comments: list[Optional[str]] = field(default_factory=list)
    date: str = ""
    duration_s: float = 0.0
    time_control: str = "-"
    limits: str = ""               # both engines' limits (Limits.describe), "a" or "black / white"
    adjudication: str = ""         # the draw adjudication's settings (DrawAdjudication.describe), "" when off

    def score_for(self, name: str) -> float:
        """Points (1, 0.5, 0) the engine called ``name`` earned in this game."""
        if self.result == "1/2-1/2":
            return 0.5
        winner = self.black if self.result == "1-0" else self.white
        return 1.0 if winner == name else 0.0

    def pdn_game(self, event: str, site: str) -> PdnGame:
        """The game as a :class:`PdnGame` (tags in the order above; moves checked by the rules core)."""
        tags = {"Event": event, "Site": site, "Date": self.date[:10].replace("-", ".") or "????.??.??",
                "Round": str(self.number), "Black": self.black, "White": self.white,
                "Result": self.result, "GameType": "21"}
        if not self.fen_is_start:
            tags.update(SetUp="1", FEN=self.fen)
        tags.update(Opening=self.opening, Termination=self.termination, PlyCount=str(len(self.moves)),
                    TimeControl=self.time_control)
        if self.limits:
            tags["Limits"] = self.limits
        if self.adjudication:
            tags["DrawAdjudication"] = self.adjudication
        game = PdnGame.from_moves(self.moves, Position.from_fen(self.fen), tags, self.result)
        game.comments = {ply: [text] for ply, text in enumerate(self.comments, 1) if text}
        if self.detail:
            game.comments.setdefault(len(self.moves), []).append(self.detail)
        return game

    def pdn(self, event: str, site: str) -> str:
        """PDN text of the game, ending with a blank line (ready to append to a file)."""
        return write_game(self.pdn_game(event, site)) + "\n"

    @property
    def fen_is_start(self) -> bool:
        return self.fen == START_FEN


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_once(engine: str, text: str) -> None:
    """A warning about an engine's settings on stderr, once per engine and text for the whole run."""
    with _warned_lock:
        if (engine, text) in _warned:
            return
        _warned.add((engine, text))
    print(f"arena: warning: {engine}: {text}", file=sys.stderr, flush=True)


def time_warnings(limits: Limits, move_overhead_ms: Optional[int]) -> list[str]:
    """Why these limits would make the engine play far below its strength (empty when they are fine).

    An engine keeps ``Move Overhead`` ms of every move for the communication lag; when
    that is most of a fixed move time, it searches for almost nothing (depth 1).
    """
    out = []
    if limits.movetime_ms is not None:
        if move_overhead_ms is not None and move_overhead_ms >= limits.movetime_ms:
            out.append(f"Move Overhead {move_overhead_ms} ms eats the whole movetime of {limits.movetime_ms} ms: "
                       "it will play at minimal depth (lower option.Move Overhead or raise --movetime)")
        elif move_overhead_ms is not None and 2 * move_overhead_ms >= limits.movetime_ms:
            out.append(f"Move Overhead {move_overhead_ms} ms is half or more of the movetime of "
                       f"{limits.movetime_ms} ms: the engine searches for "
                       f"{limits.movetime_ms - move_overhead_ms} ms a move")
    if limits.has_clock and limits.tc_base_ms is not None and move_overhead_ms is not None \
            and limits.tc_inc_ms + limits.tc_base_ms // 40 <= move_overhead_ms:
        out.append(f"Move Overhead {move_overhead_ms} ms is more than a typical move of this clock "
                   f"({limits.describe()}): expect very shallow searches")
    return out


class EnginePool:
    """The engine processes one worker drives, started on first use and restarted after a failure.

    ``started`` names the engines that have got through a start at least once; pools of one
    match share it (the local backend's workers), so that only an engine that never started
    anywhere counts as one that cannot start.
    """

    def __init__(self, settings: Settings, log: Optional[Callable[[str], None]] = None,
                 started: Optional[set[str]] = None) -> None:
        self.settings = settings
        self.log = log
        self.engines: dict[str, EngineProcess] = {}
        self.started = started if started is not None else set()

    def prepare(self, config: EngineConfig) -> EngineProcess:
        """A running engine that has just answered ``ucinewgame``/``isready``.

        Raises :class:`EngineError` (the process is discarded) when it cannot get there, and
        :class:`EngineConfigError` when its command or options are wrong (no game can be played):
        :class:`EngineStartError`, with the engine's last stderr lines, when its first start
        fails (a typo in the command, a program that exits or does not speak the protocol).
        """
        eng = self.engines.get(config.name)
        if eng is not None and not eng.alive:
            self.discard(config.name)
            eng = None
        try:
            if eng is None:
                eng = EngineProcess(config, self.settings.timeouts, self.log)
                self.engines[config.name] = eng
                try:
                    eng.start()
                except EngineError as exc:
                    if config.name in self.started:
                        raise            # it has started before: a crash, the game is lost
                    raise EngineStartError("\n  ".join(
                        [f"engine {config.describe()} could not start: {exc}"] + eng.failure_report())) from None
                self.started.add(config.name)
                if eng.has_option("NoProgressPlies") and not any(
                        k.lower() == "noprogressplies" for k in config.options):
                    eng.set_option("NoProgressPlies", str(self.settings.no_progress_plies))
                for text in time_warnings(config.limits, _int_or_none(eng.option_value("Move Overhead"))):
                    warn_once(config.name, text)
            eng.new_game()
        except (EngineError, EngineConfigError):
            self.discard(config.name)
            raise
        return eng

    def discard(self, name: str) -> None:
        eng = self.engines.pop(name, None)
        if eng is not None:
            eng.kill()
            eng.close(timeout=0.2)

    def close(self) -> None:
        for name in list(self.engines):
            eng = self.engines.pop(name)
            eng.close()


def _int_or_none(text: Optional[str]) -> Optional[int]:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _fmt_comment(reply_score: Optional[str], depth: Optional[int], elapsed_ms: float, turn: int) -> str:
    """``+0.12/9 0.210s``: the engine's score in men from Black's point of view (``#3``/``#-3``
    for a mate in 3 for Black/White; the convention of ``uci-checkers analyse``), depth, time."""
    parts = []
    if reply_score:
        kind, _, value = reply_score.partition(" ")
        v = int(value) if turn == 0 else -int(value)     # the protocol's score is the mover's
        parts.append(f"#{v}" if kind == "mate" else f"{v / 100:+.2f}")
        if depth is not None:
            parts[-1] += f"/{depth}"
    parts.append(f"{elapsed_ms / 1000:.3f}s")
    return " ".join(parts)


def _go_command(limits: tuple[Limits, Limits], clocks: list[Optional[float]], turn: int) -> str:
    """``go`` for the side to move, from its limits and the clocks the runner keeps."""
    own = limits[turn]
    words = ["go"]
    if own.has_clock:
        for side, prefix in ((0, "b"), (1, "w")):
            if clocks[side] is not None:
                words += [f"{prefix}time", str(max(0, int(clocks[side])))]
        for side, prefix in ((0, "b"), (1, "w")):
            if limits[side].has_clock:
                words += [f"{prefix}inc", str(limits[side].tc_inc_ms)]
    if own.movetime_ms is not None:
        words += ["movetime", str(own.movetime_ms)]
    if own.depth is not None:
        words += ["depth", str(own.depth)]
    if own.nodes is not None:
        words += ["nodes", str(own.nodes)]
    return " ".join(words)


def play_game(job: GameJob, pool: EnginePool, stop: Optional[threading.Event] = None
              ) -> Optional[GameRecord]:
    """Play ``job`` to its end and return the record (``None`` if ``stop`` was set mid-game)."""
    settings = pool.settings
    configs = (job.black, job.white)
    limits = (job.black.limits, job.white.limits)
    game = job.opening.game(settings.no_progress_plies)
    start_fen = game.start.fen()
    started = time.monotonic()
    record = GameRecord(
        number=job.number, pairing=job.pairing, pair_game=job.pair_game, black=job.black.name,
        white=job.white.name, opening=job.opening.label, fen=start_fen,
        moves=[str(m) for m in game.moves], opening_plies=len(game.moves), result="*",
        termination="", comments=[None] * len(game.moves),
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        time_control=time_control_tag(limits), limits=limits_tag(limits),
        adjudication=settings.adjudication_tag)

    def finish(result: str, termination: str, detail: str = "") -> GameRecord:
        record.result, record.termination, record.detail = result, termination, detail
        record.moves = [str(m) for m in game.moves]
        record.duration_s = time.monotonic() - started
        return record

    def lose(side: int, termination: str, detail: str) -> GameRecord:
        who = f"{SIDES[side]} ({configs[side].name})"
        return finish("0-1" if side == 0 else "1-0", termination, f"{who}: {detail}")

    # Both engines ready (Black first): failing here loses the game for that engine.
    engines: list[EngineProcess] = []
    for side in (0, 1):
        try:
            engines.append(pool.prepare(configs[side]))
        except EngineTimeout as exc:
            return lose(side, ENGINE_TIMEOUT, f"{exc} (start-up or new game)")
        except EngineCrashed as exc:
            return lose(side, ENGINE_CRASH, f"{exc} (start-up or new game)")

    clocks: list[Optional[float]] = [float(l.tc_base_ms) if l.has_clock else None for l in limits]
    adjudication = settings.draw_adjudication
    level_plies = 0        # the last moves in a row whose score was within the adjudication's margin
    base_cmd = "position startpos" if record.fen_is_start else f"position fen {start_fen}"
    margin = settings.timeouts.margin_ms
    while True:
        status = game.status()
        if status.is_over:
            return finish(status.pdn_result, _termination(status), _status_detail(status, game))
        if len(game.moves) >= settings.max_plies:
            return finish("1/2-1/2", PLY_CAP, f"adjudicated a draw after {len(game.moves)} plies")
        if (adjudication is not None and level_plies >= adjudication.plies
                and len(game.moves) >= adjudication.after):
            return finish("1/2-1/2", ADJUDICATED_DRAW,
                          f"both engines scored the last {level_plies} moves within {adjudication.score} "
                          f"centi-men of a draw (adjudication {adjudication.describe()})")
        if stop is not None and stop.is_set():
            return None
        turn = game.position.turn
        eng = engines[turn]
        own = limits[turn]
        if own.has_clock:
            budget_ms = clocks[turn] + margin
        elif own.movetime_ms is not None:
            budget_ms = own.movetime_ms + margin
        else:
            budget_ms = None
        timeout = settings.timeouts.move if budget_ms is None else max(budget_ms, 1) / 1000.0
        moves_text = " ".join(str(m) for m in game.moves)
        position_cmd = base_cmd + (f" moves {moves_text}" if moves_text else "")
        try:
            reply = eng.search(position_cmd, _go_command(limits, clocks, turn), timeout)
        except EngineTimeout:
            if not eng.settle():
                pool.discard(configs[turn].name)
            if budget_ms is not None:
                return lose(turn, TIME_FORFEIT, f"no bestmove within {budget_ms:.0f} ms")
            return lose(turn, ENGINE_TIMEOUT, f"no bestmove within {timeout:g} s")
        except EngineCrashed as exc:
            pool.discard(configs[turn].name)
            return lose(turn, ENGINE_CRASH, str(exc))
        if budget_ms is not None and reply.elapsed_ms > budget_ms:
            return lose(turn, TIME_FORFEIT,
                        f"used {reply.elapsed_ms:.0f} ms with {budget_ms - margin:.0f} ms left "
                        f"(margin {margin} ms)")
        if own.has_clock:
            clocks[turn] = clocks[turn] - reply.elapsed_ms + own.tc_inc_ms
        text = reply.move
        if text == "(none)":
            return lose(turn, ILLEGAL_MOVE, "claimed to have no legal move (bestmove (none)) but "
                        f"{len(game.position.legal_moves())} legal moves exist")
        try:
            move = game.position.parse_move(text)
        except (AmbiguousMoveError, IllegalMoveError) as exc:
            return lose(turn, ILLEGAL_MOVE, str(exc))          # the message names the move
        except (InvalidMoveError, NotationError) as exc:
            return lose(turn, ILLEGAL_MOVE, f"malformed move {text!r} ({exc})")
        game.push(move)
        if adjudication is not None:
            level_plies = level_plies + 1 if _is_level(reply.score, adjudication.score) else 0
        record.comments.append(_fmt_comment(reply.score, reply.depth, reply.elapsed_ms, turn)
                               if settings.comments else None)


def _is_level(reply_score: Optional[str], margin: int) -> bool:
    """The engine's reported score (``cp 12``, ``mate 3`` or none) is a centi-men score within ``margin`` of 0."""
    if not reply_score:
        return False
    kind, _, value = reply_score.partition(" ")
    return kind == "cp" and value.lstrip("-").isdigit() and abs(int(value)) <= margin


def _termination(status: GameStatus) -> str:
    return {GameStatus.BLACK_WINS: NO_MOVES, GameStatus.WHITE_WINS: NO_MOVES,
            GameStatus.DRAW_REPETITION: REPETITION, GameStatus.DRAW_NO_PROGRESS: NO_PROGRESS}[status]


def _status_detail(status: GameStatus, game) -> str:
    if status is GameStatus.BLACK_WINS:
        return "White has no legal move"
    if status is GameStatus.WHITE_WINS:
        return "Black has no legal move"
    if status is GameStatus.DRAW_REPETITION:
        return "the same position occurred a third time with the same side to move"
    return f"{game.quiet_plies} plies without a capture or a man move"


def limits_tag(limits: tuple[Limits, Limits]) -> str:
    """The PDN ``Limits`` tag: every limit of both engines (``--resume`` checks it)."""
    a, b = limits[0].describe(), limits[1].describe()
    return a if a == b else f"{a} / {b}"


def time_control_tag(limits: tuple[Limits, Limits]) -> str:
    a, b = limits[0].pdn_time_control(), limits[1].pdn_time_control()
    return a if a == b else f"{a} / {b}"
