"""A Python client for engines speaking ``protocol.md`` (ours by default), in the spirit of python-chess.

::

    from uci_checkers.client import Engine, Limit
    from uci_checkers import Position

    with Engine.popen() as engine:                      # python -m uci_checkers, or any command
        engine.configure({"Hash": 32})
        info = engine.analyse(Position.start(), Limit(depth=10))
        print(info.score, info.depth, [str(m) for m in info.pv])
        result = engine.play(Position.start(), Limit(movetime=200))
        print(result.move, result.ponder)

The client starts the engine as a subprocess (in its own process group, killed as
a group) and talks to it over pipes; a reader thread queues every line, so
**every wait has a deadline**, checked before each line: an engine that floods
``info`` lines without answering still times out.  It raises
:class:`EngineTerminatedError` when the process dies (with its exit code and the
last lines it wrote on stderr), :class:`EngineTimeoutError` when an answer does not
come in time, and :class:`EngineError` when the engine misbehaves (an illegal best
move, an ``info string error: ...`` answer to a position, option or ``go``; the engine is
resynchronised with ``stop`` and ``isready`` and stays usable).  A bad argument (a
:class:`Limit` field, ``multipv``, ``timeout``, an option value that does not fit the
type the engine declared) raises :class:`ArgumentError`, a ``ValueError`` that names it,
before anything is sent.

An unfinished :meth:`Engine.analysis` is stopped (``stop``, then its ``bestmove``
read) when the next command is given, as python-chess does; its ``result`` is then
set.

Positions: pass a :class:`Position`, a :class:`Game` (its start position and moves
are sent, so the engine sees the history for repetitions and the no-progress
count) or a :class:`~uci_checkers.pdn.PdnGame`.

Scores are :class:`Score` values from the point of view of the side to move, as
the protocol gives them: ``cp`` in hundredths of a man, or ``mate`` in moves.

Asyncio: :class:`AsyncEngine` is a thin wrapper that runs the same synchronous
calls in a worker thread (``asyncio.to_thread``); it is convenient in asyncio
programs but it is not a native asyncio protocol implementation: one call at a
time per engine.
"""
from __future__ import annotations

import asyncio
import math
import numbers
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from .util.linereader import EndOfOutput, LineTimeout, StampedLineReader
from .rules.notation import NotationError
from .rules.position import Game, Move, Position

__all__ = ["Engine", "AsyncEngine", "Analysis", "Limit", "Score", "Info", "PlayResult", "Option",
           "EngineError", "EngineTerminatedError", "EngineTimeoutError", "ArgumentError", "OptionValueError",
           "PositionLike"]

PositionLike = Union[Position, Game, Any]   # Any: a PdnGame (start + moves)

DEFAULT_TIMEOUT = 30.0        # seconds for handshakes and short commands
READY_TIMEOUT = 180.0         # isready may wait for a cold numba compile
SEARCH_GRACE = 15.0           # extra seconds allowed beyond a search's own time budget
UNBOUNDED_SEARCH_TIMEOUT = 600.0
STOP_GRACE = 10.0             # after `stop`, seconds allowed for the bestmove


class EngineError(RuntimeError):
    """The engine misbehaved or refused something."""


class EngineTerminatedError(EngineError):
    """The engine process ended (or was never started) while the client needed it."""


class EngineTimeoutError(EngineError, TimeoutError):
    """An expected answer did not arrive in time."""


class ArgumentError(ValueError, TypeError):
    """An argument of a client call that cannot be used; the message names it.  Raised before anything
    is sent, so the engine is unaffected.  (Also a TypeError: some are of the wrong type.)"""


class OptionValueError(ArgumentError):
    """An option value that does not fit the option's type or range as the engine declared it."""


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_seconds(name: str, value: Any) -> float:
    """``value`` as a positive, finite number of seconds (ArgumentError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ArgumentError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class Score:
    """A score from the side to move's point of view: ``cp`` (hundredths of a man) or ``mate`` (moves)."""

    cp: Optional[int] = None
    mate: Optional[int] = None
    bound: Optional[str] = None    # None, "lowerbound" or "upperbound"

    def is_mate(self) -> bool:
        return self.mate is not None

    def value(self, mate_score: int = 100_000) -> int:
        """One comparable integer: mates become ±(mate_score - moves)."""
        if self.mate is not None:
            return mate_score - self.mate if self.mate > 0 else -mate_score - self.mate
        return self.cp or 0

    def __neg__(self) -> "Score":
        bound = {"lowerbound": "upperbound", "upperbound": "lowerbound"}.get(self.bound or "", None)
        return Score(None if self.cp is None else -self.cp, None if self.mate is None else -self.mate, bound)

    def __str__(self) -> str:
        if self.mate is not None:
            return f"#{self.mate}"
        return f"{(self.cp or 0) / 100:+.2f}"


@dataclass
class Info:
    """One ``info`` report, typed.  Fields the engine did not send stay None / empty."""

    depth: Optional[int] = None
    seldepth: Optional[int] = None
    multipv: int = 1
    score: Optional[Score] = None
    nodes: Optional[int] = None
    nps: Optional[int] = None
    hashfull: Optional[int] = None
    time_ms: Optional[int] = None
    pv: list[Move] = field(default_factory=list)
    pv_text: list[str] = field(default_factory=list)   # as sent (kept even where a move was not legal)
    currmove: Optional[str] = None
    currmovenumber: Optional[int] = None
    string: Optional[str] = None


@dataclass
class PlayResult:
    """What ``play`` returns: the move (None when the side to move has none), the ponder move, the last info."""

    move: Optional[Move]
    ponder: Optional[Move]
    info: Info


@dataclass
class Option:
    """An option as the engine declared it in its ``option`` line."""

    name: str
    type: str
    default: Optional[str] = None
    min: Optional[int] = None
    max: Optional[int] = None
    var: list[str] = field(default_factory=list)


@dataclass
class Limit:
    """When a search should stop.  Times in milliseconds, except ``time`` (seconds, python-chess style).

    ``btime``/``wtime``/``binc``/``winc`` are the clocks of Black (the first mover) and White.
    """

    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    movetime: Optional[int] = None
    time: Optional[float] = None
    btime: Optional[int] = None
    wtime: Optional[int] = None
    binc: Optional[int] = None
    winc: Optional[int] = None
    movestogo: Optional[int] = None
    infinite: bool = False

    # the smallest value of each whole-number field (protocol.md's go); clocks may be negative (flagged)
    _MINIMA = {"depth": 1, "nodes": 1, "mate": 1, "movetime": 0, "binc": 0, "winc": 0, "movestogo": 1,
               "btime": None, "wtime": None}

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise :class:`ArgumentError` naming the first field that the engine would refuse."""
        for name, low in self._MINIMA.items():
            value = getattr(self, name)
            if value is None:
                continue
            if not _is_int(value):
                raise ArgumentError(f"Limit {name} must be a whole number, not {value!r}")
            if low is not None and value < low:
                raise ArgumentError(f"Limit {name} must be >= {low}, not {value}")
        if self.time is not None and (isinstance(self.time, bool) or not isinstance(self.time, numbers.Real)
                                      or not math.isfinite(self.time) or self.time < 0):
            raise ArgumentError(f"Limit time must be a number of seconds >= 0, not {self.time!r}")
        if not isinstance(self.infinite, bool):
            raise ArgumentError(f"Limit infinite must be True or False, not {self.infinite!r}")

    def go_args(self) -> list[str]:
        args: list[str] = []
        movetime = self.movetime
        if movetime is None and self.time is not None:
            movetime = max(1, int(round(self.time * 1000)))
        for name, value in (("btime", self.btime), ("wtime", self.wtime), ("binc", self.binc),
                            ("winc", self.winc), ("movestogo", self.movestogo), ("depth", self.depth),
                            ("nodes", self.nodes), ("mate", self.mate), ("movetime", movetime)):
            if value is not None:
                args += [name, str(int(value))]
        if self.infinite:
            args.append("infinite")
        return args

    def budget_seconds(self, turn: int) -> Optional[float]:
        """The most time this search should legitimately take, or None when only depth/nodes bound it."""
        if self.movetime is not None:
            return self.movetime / 1000
        if self.time is not None:
            return float(self.time)
        clock = self.btime if turn == 0 else self.wtime
        clocks = (self.btime, self.wtime, self.binc, self.winc, self.movestogo)
        if clock is not None or any(v is not None for v in clocks):
            # the other side's clock only: the engine counts its own as 0 and moves at once
            inc = (self.binc if turn == 0 else self.winc) or 0
            return (max(0, clock or 0) + inc) / 1000
        return None

    def is_empty(self) -> bool:
        return not self.go_args()


def _position_parts(position: PositionLike) -> tuple[Position, list[Move]]:
    if isinstance(position, Position):
        return position, []
    if isinstance(position, Game):
        return position.start, list(position.moves)
    start, moves = getattr(position, "start", None), getattr(position, "moves", None)
    if isinstance(start, Position) and moves is not None:
        return start, list(moves)
    raise ArgumentError(f"position must be a Position, Game or PdnGame, not {type(position).__name__}")


def _final_position(start: Position, moves: Sequence[Move]) -> Position:
    pos = start
    for m in moves:
        pos = pos.play(m)
    return pos


def _default_command() -> tuple[list[str], dict[str, str]]:
    """``python -m uci_checkers`` running this very package (its directory put on PYTHONPATH)."""
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return [sys.executable, "-m", "uci_checkers"], env


_ASCII_INT = re.compile(r"[+-]?[0-9]+")      # what the engine reads as a whole number (no '1_000', no '١')
_INFO_INT = {"depth", "seldepth", "multipv", "nodes", "nps", "hashfull", "time", "currmovenumber"}


def parse_info(text: str, position: Optional[Position] = None) -> Info:
    """Parse the arguments of an ``info`` line (without the word ``info``).

    With ``position`` the pv is turned into moves, stopping at the first one that
    is not legal (``pv_text`` keeps the whole line).
    """
    info = Info()
    tokens = text.split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "string":
            info.string = " ".join(tokens[i + 1:])
            break
        if tok == "pv":
            info.pv_text = tokens[i + 1:]
            break
        if tok == "score":
            cp = mate = bound = None
            j = i + 1
            while j < len(tokens) and tokens[j] in ("cp", "mate", "lowerbound", "upperbound"):
                if tokens[j] in ("cp", "mate") and j + 1 < len(tokens):
                    try:
                        value = int(tokens[j + 1])
                    except ValueError:
                        break
                    if tokens[j] == "cp":
                        cp = value
                    else:
                        mate = value
                    j += 2
                else:
                    bound = tokens[j]
                    j += 1
            info.score = Score(cp, mate, bound) if (cp is not None or mate is not None) else None
            i = j
            continue
        if tok == "currmove" and i + 1 < len(tokens):
            info.currmove = tokens[i + 1]
            i += 2
            continue
        if tok in _INFO_INT and i + 1 < len(tokens):
            try:
                value = int(tokens[i + 1])
            except ValueError:
                i += 1
                continue
            setattr(info, "time_ms" if tok == "time" else tok, value)
            i += 2
            continue
        i += 1
    if position is not None and info.pv_text:
        pos = position
        for text_move in info.pv_text:
            try:
                mv = pos.parse_move(text_move)
            except NotationError:
                break
            info.pv.append(mv)
            pos = pos.play(mv)
    return info


class Engine:
    """A running engine process speaking ``protocol.md``.  Use :meth:`popen` to start one."""

    def __init__(self, process: subprocess.Popen, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.process = process
        self.timeout = timeout
        self.id: dict[str, str] = {}
        self.options: dict[str, Option] = {}
        self._stderr: deque[str] = deque(maxlen=30)
        self._closed = False
        self._eof = False
        self._multipv = 1
        self._analysis: Optional["Analysis"] = None   # an analysis() not yet finished
        self.log: deque[str] = deque(maxlen=200)     # recent traffic, '>' sent and '<' received
        self._reader = StampedLineReader(process.stdout, "engine-stdout")
        if process.stderr is not None:
            threading.Thread(target=self._read_stderr, daemon=True, name="engine-stderr").start()

    # --- start-up --------------------------------------------------------------
    @classmethod
    def popen(cls, command: Union[None, str, Sequence[str]] = None, *, timeout: float = DEFAULT_TIMEOUT,
              ready_timeout: float = READY_TIMEOUT, cwd: Optional[str] = None,
              env: Optional[Mapping[str, str]] = None, options: Optional[Mapping[str, Any]] = None) -> "Engine":
        """Start ``command`` (default: this package's engine), do the ``uci`` handshake and wait for ``readyok``.

        ``options`` are set right after the handshake (see :meth:`configure`).
        """
        _check_seconds("timeout", timeout)
        _check_seconds("ready_timeout", ready_timeout)
        if options is not None and not isinstance(options, Mapping):
            raise ArgumentError(f"options must be a mapping of names to values, not {type(options).__name__}")
        if command is None:
            argv, default_env = _default_command()
            env = default_env if env is None else env
        else:
            argv = [command] if isinstance(command, str) else list(command)
        try:
            # Own session: Ctrl-C reaches the host only (which stops the engine), and the
            # engine and any child it starts are killed together.
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=cwd, env=dict(env) if env is not None else None, text=True,
                                    encoding="utf-8", errors="replace", bufsize=1, start_new_session=True)
        except OSError as exc:
            raise EngineTerminatedError(f"cannot start engine {argv!r}: {exc}") from exc
        engine = cls(proc, timeout)
        try:
            engine._handshake(ready_timeout)
            if options:
                engine.configure(options)
        except BaseException:
            engine.close()
            raise
        return engine

    def _handshake(self, ready_timeout: float) -> None:
        self.send("uci")
        for line in self._lines_until("uciok", self.timeout):
            if line.startswith("id "):
                parts = line.split(None, 2)
                if len(parts) == 3:
                    self.id[parts[1]] = parts[2]
            elif line.startswith("option "):
                opt = _parse_option(line)
                if opt is not None:
                    self.options[opt.name.lower()] = opt
        self.ping(ready_timeout)

    # --- plumbing ----------------------------------------------------------------
    def _read_stderr(self) -> None:
        try:
            for line in self.process.stderr:
                self._stderr.append(line.rstrip("\r\n"))
        except (OSError, ValueError):
            pass

    def _terminated(self, doing: str) -> EngineTerminatedError:
        self._eof = True
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        time.sleep(0.05)     # let the stderr thread catch the last words
        tail = "\n".join(list(self._stderr)[-10:])
        msg = f"engine terminated while {doing} (exit code {code})"
        if tail:
            msg += f"; its last stderr lines:\n{tail}"
        return EngineTerminatedError(msg)

    def send(self, line: str) -> None:
        """Send one raw protocol line."""
        if self._closed or self._eof or self.process.poll() is not None:
            raise self._terminated(f"sending {line!r}")
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._terminated(f"sending {line!r}") from None
        self.log.append("> " + line)

    def read_line(self, timeout: Optional[float] = None, doing: str = "waiting for the engine") -> str:
        """The next line from the engine; raises on timeout or end of output."""
        wait = self.timeout if timeout is None else max(0.0, timeout)
        return self._line_before(time.monotonic() + min(wait, threading.TIMEOUT_MAX), doing)

    def _line_before(self, deadline: float, doing: str) -> str:
        """The next line if the engine wrote it before ``deadline`` (see :mod:`uci_checkers.util.linereader`)."""
        if self._eof:
            raise self._terminated(doing)
        try:
            _, line = self._reader.next_before(deadline)
        except LineTimeout:
            raise EngineTimeoutError(f"no answer from the engine in time while {doing}") from None
        except EndOfOutput:
            raise self._terminated(doing) from None
        self.log.append("< " + line)
        return line

    def _lines_until(self, word: str, timeout: float) -> list[str]:
        """Read lines up to the one whose first word is ``word``; return the lines before it (at most 1000)."""
        deadline = time.monotonic() + timeout
        seen: list[str] = []
        while True:
            line = self._line_before(deadline, f"waiting for {word!r} (allowed {timeout:.1f} s)")
            if line.split(None, 1)[:1] == [word]:
                return seen
            if len(seen) < 1000:
                seen.append(line)

    def _finish_analysis(self) -> None:
        """Stop an analysis still running, so the next command finds the engine idle."""
        analysis, self._analysis = self._analysis, None
        if analysis is not None and analysis.result is None and not self._eof:
            analysis.finish()

    def ping(self, timeout: Optional[float] = None) -> None:
        """``isready`` and wait for ``readyok``; raises :class:`EngineError` on an error reported meanwhile."""
        self._finish_analysis()
        self.send("isready")
        lines = self._lines_until("readyok", self.timeout if timeout is None else timeout)
        errors = [ln for ln in lines if ln.startswith("info string error")]
        if errors:
            raise EngineError(errors[0][len("info string "):])

    # --- commands ----------------------------------------------------------------
    def configure(self, options: Mapping[str, Any]) -> None:
        """Set options (names case-insensitive); unknown names or values the engine refuses raise.

        Every value is first checked against the type and range the engine declared for it
        (:class:`OptionValueError`, nothing sent); an unknown name raises :class:`EngineError`.
        """
        if not isinstance(options, Mapping):
            raise ArgumentError(f"options must be a mapping of names to values, not {type(options).__name__}")
        lines: list[tuple[str, Optional[str]]] = []
        for name, value in options.items():
            if not isinstance(name, str) or not name.strip() or any(c in name for c in "\r\n"):
                raise ArgumentError(f"option name must be a non-empty line of text, not {name!r}")
            opt = self.options.get(" ".join(name.split()).lower())
            if opt is None and self.options:
                raise EngineError(f"engine has no option {name!r} (it has: {', '.join(o.name for o in self.options.values())})")
            lines.append((opt.name if opt is not None else name.strip(), _option_text(opt, name.strip(), value)))
        self._finish_analysis()
        for real, text in lines:
            self.send(f"setoption name {real}" if text is None else f"setoption name {real} value {text}")
            if real.lower() == "multipv" and text is not None:
                self._multipv = int(text)
        self.ping(READY_TIMEOUT)

    def new_game(self) -> None:
        """``ucinewgame`` (clears the engine's tables) and wait until it is ready."""
        self._finish_analysis()
        self.send("ucinewgame")
        self.ping(READY_TIMEOUT)

    def _set_position(self, position: PositionLike) -> tuple[Position, list[Move]]:
        start, moves = _position_parts(position)
        line = f"position fen {start.fen()}"
        if moves:
            line += " moves " + " ".join(m.text() for m in moves)
        self.send(line)
        return start, moves

    def _check_search_arguments(self, position: PositionLike, limit: Any, multipv: Optional[int],
                                timeout: Optional[float]) -> None:
        """Raise :class:`ArgumentError` for what cannot be searched, before anything is sent."""
        if not isinstance(limit, Limit):
            raise ArgumentError(f"limit must be a Limit, not {type(limit).__name__} "
                                "(analysis() searches without one, until stop)")
        limit.validate()
        if limit.is_empty():
            raise ArgumentError("the limit is empty: give depth, nodes, movetime, time, clocks or infinite")
        if multipv is not None:
            declared = self.options.get("multipv")
            most = declared.max if declared is not None and declared.max is not None else None
            if not _is_int(multipv) or multipv < 1 or (most is not None and multipv > most):
                raise ArgumentError(f"multipv must be a whole number from 1 to {most if most else 'the most lines'}"
                                    f", not {multipv!r}")
        if timeout is not None:
            _check_seconds("timeout", timeout)
        _position_parts(position)

    def _start_search(self, position: PositionLike, limit: Limit, multipv: Optional[int],
                      timeout: Optional[float]) -> tuple[Position, float]:
        """Send position and go; the position searched and the monotonic deadline for bestmove."""
        self._check_search_arguments(position, limit, multipv, timeout)
        self._finish_analysis()
        want = multipv or 1
        if want != self._multipv and ("multipv" in self.options or want != 1):
            self.configure({"MultiPV": want})
        start, moves = self._set_position(position)
        self.ping()                                  # surfaces 'info string error' for a refused position
        current = _final_position(start, moves)
        budget = limit.budget_seconds(current.turn)
        if timeout is None:
            timeout = UNBOUNDED_SEARCH_TIMEOUT if budget is None or limit.infinite else budget + SEARCH_GRACE
        self.send("go " + " ".join(limit.go_args()))
        return current, time.monotonic() + timeout

    def _next_event(self, current: Position, deadline: float) -> tuple[str, Any, Any]:
        """The next search event: ``("info", Info, None)`` or ``("bestmove", move text, ponder text)``."""
        while True:
            try:
                line = self._line_before(deadline, "searching")
            except EngineTimeoutError:
                self._abort_search()
                raise
            words = line.split()
            if not words:
                continue
            if words[0] == "info":
                info = parse_info(line[4:], current)
                if info.string is not None:
                    if info.string.startswith("error"):
                        # a refused go has no bestmove to wait for; an accepted one's comes before readyok
                        self._resynchronise()
                        raise EngineError(f"engine reported: {info.string}")
                    continue
                if info.score is not None or info.pv_text or info.depth is not None:
                    return "info", info, None
            elif words[0] == "bestmove":
                best = words[1] if len(words) > 1 else None
                ponder = words[3] if len(words) > 3 and words[2] == "ponder" else None
                return "bestmove", best, ponder

    def _search(self, position: PositionLike, limit: Limit, multipv: Optional[int],
                timeout: Optional[float]) -> tuple[Optional[str], Optional[str], dict[int, Info], Position]:
        if isinstance(limit, Limit) and limit.infinite:
            raise ArgumentError("an infinite search never ends by itself: use analysis() and stop()")
        current, deadline = self._start_search(position, limit, multipv, timeout)
        infos: dict[int, Info] = {}
        while True:
            kind, a, b = self._next_event(current, deadline)
            if kind == "info":
                infos[a.multipv] = a
            else:
                return a, b, infos, current

    def analysis(self, position: PositionLike, limit: Optional[Limit] = None, multipv: Optional[int] = None,
                 timeout: Optional[float] = None) -> "Analysis":
        """Start a search and return an :class:`Analysis` to follow it (infinite when ``limit`` is None).

        ::

            with engine.analysis(game) as analysis:
                for info in analysis:
                    if info.depth and info.depth >= 12:
                        break            # leaving the block stops the search
            print(analysis.result.move, analysis.info.score)

        The engine is busy until the analysis is finished (``stop()``/``wait()`` or the end of
        the ``with`` block).
        """
        limit = limit if limit is not None else Limit(infinite=True)
        current, deadline = self._start_search(position, limit, multipv, timeout)
        self._analysis = Analysis(self, current, deadline)
        return self._analysis

    def _resolve(self, best: Optional[str], ponder: Optional[str], current: Position, info: Info) -> PlayResult:
        if best is None or best in ("(none)", "0000"):
            if current.has_legal_move():
                raise EngineError(f"engine returned no move in {current.fen()}, which has legal moves")
            return PlayResult(None, None, info)
        try:
            move = current.parse_move(best)
        except NotationError as exc:
            raise EngineError(f"engine returned an illegal move {best!r}: {exc}") from None
        ponder_move = None
        if ponder is not None:
            try:
                ponder_move = current.play(move).parse_move(ponder)
            except NotationError:
                ponder_move = None
        return PlayResult(move, ponder_move, info)

    def _resynchronise(self) -> None:
        """After an error line during a search: ``stop`` then ``isready``, reading up to ``readyok``.

        A refused ``go`` started nothing (its ``stop`` only gets an error line back); an accepted
        search writes its ``bestmove`` before ``readyok`` (protocol.md: after ``stop``, ``isready``
        waits for it).  Either way the engine is idle afterwards and stays in use; one that does
        not answer within ``STOP_GRACE`` seconds is killed.
        """
        try:
            self.send("stop")
            self.send("isready")
            self._lines_until("readyok", STOP_GRACE)
        except EngineError:
            self.close(timeout=1.0, kill=True)

    def _abort_search(self) -> None:
        """After a timeout: stop, and resynchronise if the engine answers; otherwise kill it."""
        try:
            self.send("stop")
            self._lines_until("bestmove", 2.0)
        except EngineError:
            self.close(timeout=1.0, kill=True)

    def analyse(self, position: PositionLike, limit: Limit, multipv: Optional[int] = None,
                timeout: Optional[float] = None) -> Union[Info, list[Info]]:
        """Search and return the last info (or, with ``multipv``, the list of the best lines, best first).

        ``timeout`` (seconds) defaults to the limit's own time plus 15 s, or 600 s when only
        depth/nodes/mate bound the search; on expiry the search is stopped and
        :class:`EngineTimeoutError` raised.
        """
        _, _, infos, _ = self._search(position, limit, multipv, timeout)
        if multipv is None:
            return infos.get(1, Info())
        return [infos[k] for k in sorted(infos)][:multipv]

    def play(self, position: PositionLike, limit: Limit, timeout: Optional[float] = None) -> PlayResult:
        """Search and return the move to play; :class:`EngineError` if the engine answers an illegal move."""
        best, ponder, infos, current = self._search(position, limit, None, timeout)
        return self._resolve(best, ponder, current, infos.get(1, Info()))

    # --- shutting down -------------------------------------------------------------
    def quit(self, timeout: float = 5.0) -> Optional[int]:
        """Send ``quit`` and wait for the process to end (killed after ``timeout``); its exit code."""
        if self._closed:
            return self.process.returncode
        try:
            self._finish_analysis()
        except EngineError:
            pass
        try:
            if self.process.poll() is None:
                self.send("quit")
        except EngineError:
            pass
        return self.close(timeout)

    def close(self, timeout: float = 5.0, kill: bool = False) -> Optional[int]:
        """End the process (kill its process group if it does not exit within ``timeout``).

        Only stdin is closed here: stdout and stderr belong to the reader threads, which end
        when the group is gone (closing a pipe another thread is reading can block).
        Returns the exit code, or None if the process could not even be reaped.
        """
        if kill:
            self._kill_group()
        try:
            self.process.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            code: Optional[int] = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        self._kill_group()     # also whatever the engine started and left behind
        if code is None:
            try:
                code = self.process.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                code = None
        self._closed = True
        return code

    def _kill_group(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.quit()

    def __del__(self) -> None:
        proc = getattr(self, "process", None)
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass


class Analysis:
    """A running search started by :meth:`Engine.analysis`: iterate over its infos, stop it, get its result.

    ``info`` is the latest report of the first line, ``multipv`` the latest per line
    number; ``result`` (a :class:`PlayResult`) is set once the engine has answered
    ``bestmove``.
    """

    def __init__(self, engine: Engine, position: Position, deadline: float) -> None:
        self.engine = engine
        self.position = position
        self.deadline = deadline
        self.info = Info()
        self.multipv: dict[int, Info] = {}
        self.result: Optional[PlayResult] = None
        self._stopped = False

    @property
    def finished(self) -> bool:
        return self.result is not None

    def next(self) -> Optional[Info]:
        """The next info, or None once the search has ended (then ``result`` is set)."""
        if self.result is not None:
            return None
        kind, a, b = self.engine._next_event(self.position, self.deadline)
        if kind == "info":
            self.multipv[a.multipv] = a
            if a.multipv == 1:
                self.info = a
            return a
        if self.engine._analysis is self:
            self.engine._analysis = None
        self.result = self.engine._resolve(a, b, self.position, self.info)
        return None

    def __iter__(self) -> "Analysis":
        return self

    def __next__(self) -> Info:
        info = self.next()
        if info is None:
            raise StopIteration
        return info

    def stop(self) -> None:
        """Ask the engine to stop (once); the result follows (see :meth:`wait`)."""
        if not self._stopped and self.result is None:
            self._stopped = True
            self.engine.send("stop")

    def wait(self) -> PlayResult:
        """Read up to the engine's ``bestmove`` and return the result (does not stop the search)."""
        while self.next() is not None:
            pass
        assert self.result is not None
        return self.result

    def finish(self, grace: float = STOP_GRACE) -> Optional[PlayResult]:
        """Stop the search and read up to its ``bestmove`` within ``grace`` seconds; the result.

        An engine that does not answer in time is killed (:class:`EngineTimeoutError`).
        """
        if self.result is not None:
            return self.result
        self.stop()
        self.deadline = min(self.deadline, time.monotonic() + grace)
        return self.wait()

    def __enter__(self) -> "Analysis":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.result is None and not self.engine._eof:
            self.finish()


def _option_text(opt: Optional[Option], name: str, value: Any) -> Optional[str]:
    """The ``value`` text of a setoption for ``value``, checked against the engine's declaration
    ``opt`` (None: undeclared, sent as text); None for a button.  Raises :class:`OptionValueError`."""
    kind = opt.type if opt is not None else None
    label = opt.name if opt is not None else name
    if kind == "button":
        return None
    if value is None:
        raise OptionValueError(f"option {label} needs a value")
    if kind == "check":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower()
        raise OptionValueError(f"option {label} needs True or False, not {value!r}")
    if kind == "spin":
        number: Optional[int] = None
        if _is_int(value):
            number = int(value)
        elif isinstance(value, str) and _ASCII_INT.fullmatch(value.strip()) and len(value.strip()) <= 30:
            number = int(value.strip())
        if number is None:
            raise OptionValueError(f"option {label} needs a whole number, not {value!r}")
        if (opt.min is not None and number < opt.min) or (opt.max is not None and number > opt.max):
            raise OptionValueError(f"option {label} value {number} is out of range {opt.min}..{opt.max}")
        return str(number)
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if "\n" in text or "\r" in text:
        raise OptionValueError(f"option {label}: a value must be one line, not {text[:40]!r}")
    if kind == "combo" and opt.var and text.strip().lower() not in (v.lower() for v in opt.var):
        raise OptionValueError(f"option {label} needs one of {', '.join(opt.var)}, not {value!r}")
    return text


def _parse_option(line: str) -> Optional[Option]:
    """``option name <words> type <t> [default <d>] [min <n>] [max <n>] [var <v>]...``"""
    words = line.split()[1:]
    if not words or words[0] != "name" or "type" not in words[1:]:
        return None
    t = words.index("type", 1)
    name = " ".join(words[1:t])
    rest = words[t + 1:]
    if not name or not rest:
        return None
    fields: dict[str, list[str]] = {}
    vars_: list[list[str]] = []
    cur: Optional[str] = None
    for w in rest[1:]:
        if w in ("default", "min", "max", "var"):
            cur = w
            if w == "var":
                vars_.append([])
            else:
                fields[w] = []
        elif cur == "var":
            vars_[-1].append(w)
        elif cur is not None:
            fields[cur].append(w)

    def num(key: str) -> Optional[int]:
        try:
            return int(fields[key][0]) if fields.get(key) else None
        except ValueError:
            return None

    default = " ".join(fields["default"]) if "default" in fields else None
    return Option(name, rest[0], default, num("min"), num("max"), [" ".join(v) for v in vars_])


class AsyncEngine:
    """The same client for asyncio programs: each call runs the synchronous one in a worker thread.

    Not a native asyncio implementation: calls on one engine are serialised by a lock.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = asyncio.Lock()

    @classmethod
    async def popen(cls, command: Union[None, str, Sequence[str]] = None, **kwargs: Any) -> "AsyncEngine":
        return cls(await asyncio.to_thread(Engine.popen, command, **kwargs))

    async def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await asyncio.to_thread(fn, *args, **kwargs)

    async def configure(self, options: Mapping[str, Any]) -> None:
        await self._call(self.engine.configure, options)

    async def analyse(self, position: PositionLike, limit: Limit, multipv: Optional[int] = None,
                      timeout: Optional[float] = None) -> Union[Info, list[Info]]:
        return await self._call(self.engine.analyse, position, limit, multipv, timeout)

    async def play(self, position: PositionLike, limit: Limit, timeout: Optional[float] = None) -> PlayResult:
        return await self._call(self.engine.play, position, limit, timeout)

    async def new_game(self) -> None:
        await self._call(self.engine.new_game)

    async def quit(self) -> Optional[int]:
        return await self._call(self.engine.quit)

    async def __aenter__(self) -> "AsyncEngine":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.quit()
