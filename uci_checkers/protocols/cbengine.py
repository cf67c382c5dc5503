"""``uci-checkers cbengine PATH``: a CheckerBoard engine library served as a protocol.md engine process.

The strong English engines (KingsRow, Cake, GuiNN and many older ones) exist only as libraries
for CheckerBoard's engine API: ``getmove``, ``enginecommand`` and optionally ``islegal``
(``bridge/checkerboard/cb_api.h``).  This front end loads one and answers ``uci``/``isready``/
``setoption``/``ucinewgame``/``position``/``go``/``stop``/``quit`` as ``protocol.md`` says, so
the arena, the client, ``analyse`` and the browser game can use it like any other engine::

    uci-checkers cbengine /path/to/engine.so [--ini FILE] [--grace S]     # native library: ctypes
    uci-checkers cbengine C:\\engines\\kingsrow.dll                        # on Windows: ctypes too
    uci-checkers cbengine ~/engines/cake64.dll [--wine CMD] [--host EXE]  # elsewhere: under wine

Loading.  A native library (``.so``, a ``.dll`` on Windows) is loaded into this process with
ctypes (:class:`NativeLibrary`): ``CDLL`` (cdecl) on Linux and macOS, ``WinDLL`` on Windows, which
is the API's ``__stdcall`` on 32-bit Windows and the one x64 convention on 64-bit.  A ``.dll``
on any other system is loaded by ``cbhost.exe`` (``bridge/cbhost/``, built with mingw-w64 into a
cache directory on first use) running under wine, which speaks a small line protocol with this
process (:class:`HostLibrary`).  The working directory is the library's own folder (engines
read their books and databases relative to it) unless the ini file names another.

Mapping.

* ``position`` becomes CheckerBoard's ``board[8][8]`` and colour; ``getmove`` gets
  ``CB_RESET_MOVES`` unless the game just continued: the position is the one the library's last
  move produced, or that one plus one move.
* ``go movetime T``: ``maxtime`` = T with ``CB_EXACT_TIME``.  A clock (``wtime``/``btime``,
  ``winc``/``binc``, ``movestogo``): its share for the side to move, left/movestogo (30 by default)
  + 3/4 of the increment, as ``maxtime``; with ``--clock incremental`` (the default for libraries of
  protocol version 2, except Cake, which reads those bits as other switches) also the
  incremental-clock bits of ``info`` with the time left and the increment in ``moreinfo``, else
  (``--clock maxtime``) with ``CB_EXACT_TIME``.  ``depth``/``nodes``/``infinite``/no limit: a
  ``maxtime`` of one day, ended by ``*playnow`` once the status string shows the depth (or node
  count) asked for, or at ``stop``.  ``ponder``, ``searchmoves``, ``mate`` and ``go perft`` are
  refused (the API has no such thing).
* ``stop`` sets ``*playnow`` (``getmove`` runs in a worker thread); so does the time limit
  (``movetime``, or the clock minus 5 % and at least 50 ms).
* The status string is streamed as ``info string <text>`` (at most ten a second) and, when it
  shows ``depth N`` (and ``eval``/``value``/``score``, ``nodes``), as ``info depth N [score cp S]
  [nodes N] time T``, the score turned to the side to move's view: most libraries show it so, GuiNN
  from Black's view whoever moves (``--score``, ini ``score``; ``auto`` knows GuiNN by its name;
  GuiNN's lines during an iteration may still show its root move's own score).  ``getmove``'s
  return value appears as ``info string getmove result: win|loss|draw|unknown``.
* ``bestmove`` is the move the library played, as a full landing path: the board it left when that
  changed (Cake and GuiNN only play the move on the board, as CheckerBoard reads it), else its
  ``CBmove``; the rules core checks it.  An illegal, ambiguous or missing move is an ``info string
  error: ...`` line and ``bestmove (none)``, which the arena scores as an illegal move.
* ``setoption name Hash value N`` is ``set hashsize N``; ``setoption name CB value <text>`` sends
  any ``enginecommand`` text (``set book 0``) and shows the reply as ``info string CB <text> ->
  <reply>`` (`` (returned 0)`` added when the library did not handle it: Cake returns 0 for some
  commands it carries out, so that is no error).  ``id name`` is the library's answer to ``name``.

Faults.  A library that crashes ends this process (the arena scores a crash); under wine the host
reports it and this process exits with status 3.  A ``getmove`` still running ``--grace`` seconds
after ``*playnow`` was set (by ``stop`` or the time limit) gets ``info string error: engine did not
stop`` and the process exits with status 3, the wine host killed with it.

The ini file (``--ini FILE``)::

    ; uci-checkers cbengine settings
    [engine]
    directory = /path/to/folder        ; working directory (default: the library's folder); relative
                                       ; paths are relative to the ini file
    clock = auto                       ; or incremental, maxtime (as --clock, which wins)
    score = auto                       ; or mover, black, white (as --score, which wins)
    [options]
    Hash = 128                         ; sent at start as "set hashsize 128"
    CB = set book 0                    ; enginecommand text sent at start, in the order given
    CB = set dbmbytes 512

A refused ``Hash`` at start is one line on stderr and exit status 2; a ``CB`` command the library
answers with 0 is a note on stderr, and the engine starts.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..engine.timeman import GoParams
from ..util.cbuild import (COMMON_FLAGS, CBuildError, bridge_root, compile_c, default_compiler,
                           native_link_flags, pe_header)
from ..util.cachedir import user_cache_dir
from ..util.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from ..util.commandline import ToolParser
from ..util.interrupts import exit_now
from ..util.linereader import EndOfOutput, LineTimeout, StampedLineReader
from .uci import LineProtocol, ProtocolError, _clip, parse_go, parse_position, read_commands, run_commands

__all__ = ["main", "CBEngineProtocol", "NativeLibrary", "HostLibrary", "LibraryError", "RawMove", "SearchPlan",
           "plan_search", "resolve_move", "parse_status", "board_of_position", "square_xy", "xy_square",
           "read_ini", "build_host"]

# CheckerBoard's engine API (bridge/checkerboard/cb_api.h)
CB_WHITE, CB_BLACK, CB_MAN, CB_KING = 1, 2, 4, 8
CB_DRAW, CB_WIN, CB_LOSS, CB_UNKNOWN = 0, 1, 2, 3
CB_RESET_MOVES, CB_EXACT_TIME = 1, 2
CB_INCR_TIME_SHIFT = 2
CB_STATUS_SIZE, CB_COMMAND_SIZE, CB_REPLY_SIZE, CB_MOVE_SLOTS = 1024, 256, 1024, 12
RESULT_NAMES = {CB_DRAW: "draw", CB_WIN: "win", CB_LOSS: "loss", CB_UNKNOWN: "unknown"}
PIECE_VALUES = {"b": CB_BLACK | CB_MAN, "B": CB_BLACK | CB_KING, "w": CB_WHITE | CB_MAN, "W": CB_WHITE | CB_KING}

EXIT_LIBRARY_FAILED = 3          # the library hung past the grace, or crashed inside the wine host

DEFAULT_GRACE_S = 2.0            # after *playnow, how long getmove may take to return
LONG_MAXTIME_S = 86400.0         # depth/nodes/infinite: one day, ended by *playnow
POLL_S = 0.01                    # the status string and the time limit are looked at this often
STATUS_INTERVAL_S = 0.1          # at most ten info string lines a second from the status string
COMMAND_TIMEOUT_S = 60.0         # one enginecommand (set hashsize may allocate gigabytes)
HOST_START_TIMEOUT_S = 180.0     # wine's first start in a new prefix sets the prefix up (tens of seconds)
RULES_TIMEOUT_S = 600.0          # the rules kernels: compiled on a first run, loaded from the cache later
CLOCK_RESERVE_MS = 50            # a clock search is stopped this long (or 5 %) before the time runs out
GETMOVE_STACK_BYTES = 16 << 20   # engines recurse deeply; CheckerBoard gives them a large stack
CLOCK_MODES = ("auto", "incremental", "maxtime")
# whose point of view the status string's score takes: the side to move's (most engines), or one colour's
SCORE_VIEWS = ("auto", "mover", "black", "white")
HOST_SOURCES = ("cbhost/cbhost.c", "checkerboard/board.c", "checkerboard/board.h", "checkerboard/cb_api.h")


class LibraryError(Exception):
    """The library cannot be used: not loadable, not an engine, a host that did not start (one line)."""


class LibraryFailed(LibraryError):
    """The library failed while in use: it crashed (wine host gone) or did not answer in time."""


class LibraryMoveError(ValueError):
    """The move a library returned is not a legal move of the position (the message says how)."""


# ------------------------------------------------------------------------------------------------
# CheckerBoard's board: board[x][y], x the column from the left, y the row (0 = squares 1-4, where
# Black, the first mover, starts).  The same mapping as bridge/checkerboard/board.c (tested).
# ------------------------------------------------------------------------------------------------
Board = (ctypes.c_int * 8) * 8


def square_xy(square: int) -> tuple[int, int]:
    """CheckerBoard's (x, y) of square 1..32: square 1 is (6, 0), square 4 (0, 0), square 32 (1, 7)."""
    y = (square - 1) // 4
    return 2 * (3 - (square - 1) % 4) + y % 2, y


def xy_square(x: int, y: int) -> int:
    """The square at (x, y), or 0 for a light square or a point off the board."""
    if not (0 <= x < 8 and 0 <= y < 8) or (x + y) % 2:
        return 0
    return 4 * y + (7 - x) // 2 + 1


def board_of_position(pos: Any) -> tuple[Any, int]:
    """CheckerBoard's board and colour (CB_BLACK/CB_WHITE) for a :class:`Position`."""
    board = Board()
    for square in range(1, 33):
        piece = pos.piece_at(square)
        if piece:
            x, y = square_xy(square)
            board[x][y] = PIECE_VALUES[piece]
    return board, CB_BLACK if pos.turn == 0 else CB_WHITE


class Coor(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]


class CBmove(ctypes.Structure):
    _fields_ = [("jumps", ctypes.c_int), ("newpiece", ctypes.c_int), ("oldpiece", ctypes.c_int),
                ("from_", Coor), ("to", Coor), ("path", Coor * CB_MOVE_SLOTS), ("del_", Coor * CB_MOVE_SLOTS),
                ("delpiece", ctypes.c_int * CB_MOVE_SLOTS)]


# ------------------------------------------------------------------------------------------------
# The returned move, checked against the rules core
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RawMove:
    """What getmove answered: the ``CBmove`` as square numbers (0 = no dark square: unset or garbage),
    i.e. from, to, jumps, the path (path[0] = from, then the landings) and the captured squares
    (``del``), and the board it left (the values of squares 1..32; None if unknown)."""

    jumps: int
    from_square: int
    to_square: int
    path: tuple[int, ...] = ()
    captured: tuple[int, ...] = ()
    board: Optional[tuple[int, ...]] = None

    @classmethod
    def from_cbmove(cls, move: CBmove, board: Any = None) -> "RawMove":
        jumps = move.jumps
        ok = 0 <= jumps < CB_MOVE_SLOTS
        path = tuple(xy_square(move.path[i].x, move.path[i].y) for i in range(jumps + 1 if jumps > 0 else 2)) \
            if ok else ()
        captured = tuple(xy_square(move.del_[i].x, move.del_[i].y) for i in range(jumps)) if ok else ()
        values = None if board is None else tuple(board[x][y] for x, y in map(square_xy, range(1, 33)))
        return cls(jumps, xy_square(move.from_.x, move.from_.y), xy_square(move.to.x, move.to.y), path, captured,
                   values)

    def text(self) -> str:
        """What the library said, for messages: ``from-to``, or ``fromxlandingx...`` for a capture."""
        if self.jumps > 0 and len(self.path) == self.jumps + 1 and all(self.path):
            return "x".join(str(s) for s in self.path)
        shown = [str(s) if s else "?" for s in (self.from_square, self.to_square)]
        return ("x" if self.jumps > 0 else "-").join(shown)


def placement(pos: Any) -> tuple[int, ...]:
    """The CheckerBoard values of squares 1..32 of a position."""
    return tuple(PIECE_VALUES.get(pos.piece_at(square), 0) for square in range(1, 33))


def resolve_move(pos: Any, raw: RawMove) -> Any:
    """The legal move of ``pos`` that ``raw`` names (a :class:`Move`), else :class:`LibraryMoveError`.

    As CheckerBoard does, the board the library left decides first: when it changed, it must be the
    result of a legal move (Cake and GuiNN only play the move on the board).  The ``CBmove`` then
    only picks among paths with that result, and decides alone when the board was left as it was:
    its full path when that is a legal move, else the legal moves with its start, end and number of
    captures (and its captured squares, when given), which must all lead to the same position.
    """
    legal = pos.legal_moves()
    if raw.board is not None and raw.board != placement(pos):
        played = [m for m in legal if placement(pos.play(m)) == raw.board]
        if not played:
            changed = [str(s) for s in range(1, 33) if raw.board[s - 1] != placement(pos)[s - 1]]
            raise LibraryMoveError(f"the library left a board that no legal move gives in {pos.fen()} (squares "
                                   f"{','.join(changed)} changed); legal moves: "
                                   + (" ".join(m.text() for m in legal) or "none"))
        try:
            named = _move_of_cbmove(pos, legal, raw)
        except LibraryMoveError:
            named = None
        return named if named in played else played[0]
    return _move_of_cbmove(pos, legal, raw)


def _move_of_cbmove(pos: Any, legal: list[Any], raw: RawMove) -> Any:
    shown_legal = " ".join(m.text() for m in legal) or "none"
    if (raw.from_square == 0 and raw.to_square == 0) or (raw.jumps <= 0 and raw.from_square == raw.to_square):
        raise LibraryMoveError("the library returned no move")     # a CBmove left unset, or zeroed
    if raw.from_square == 0 or raw.to_square == 0:
        raise LibraryMoveError(f"the library's move {raw.text()} names a square that is not on the board")
    if not 0 <= raw.jumps < CB_MOVE_SLOTS:
        raise LibraryMoveError(f"the library's move {raw.text()} has {raw.jumps} jumps")
    squares = (raw.from_square, *raw.path[1:]) if raw.jumps > 0 else (raw.from_square, raw.to_square)
    for m in legal:
        if m.squares == squares and squares[-1] == raw.to_square:
            return m
    candidates = [m for m in legal if m.squares[0] == raw.from_square and m.squares[-1] == raw.to_square
                  and len(m.captured_squares) == raw.jumps]
    if raw.jumps > 0 and raw.captured and all(raw.captured):
        candidates = [m for m in candidates if sorted(m.captured_squares) == sorted(raw.captured)]
    if not candidates:
        raise LibraryMoveError(f"the library played {raw.text()}, not a legal move in {pos.fen()}; "
                               f"legal moves: {shown_legal}")
    if len({pos.play(m) for m in candidates}) > 1:
        raise LibraryMoveError(f"the library's move {raw.text()} is ambiguous in {pos.fen()}: it could be "
                               + " ".join(m.text() for m in candidates))
    return candidates[0]


# ------------------------------------------------------------------------------------------------
# go -> getmove's maxtime, info and moreinfo; the status string -> info lines
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchPlan:
    """How one ``go`` is asked of ``getmove``, and when ``*playnow`` is set by this side."""

    maxtime: float                     # seconds
    info: int = 0                      # CB_EXACT_TIME, incremental-clock bits (CB_RESET_MOVES added later)
    moreinfo: int = 0
    hard_limit_ms: Optional[float] = None   # *playnow this long after go arrived
    depth: Optional[int] = None        # *playnow once the status string shows this depth
    nodes: Optional[int] = None        # ... or this many nodes
    hold: bool = False                 # infinite: bestmove only after stop


def _incremental_bits(left_ms: int, inc_ms: int) -> tuple[int, int]:
    """``info`` bits 2-3 and ``moreinfo`` for a clock: the finest unit (1, 10, 100 ms) in which both
    fit in 16 bits (time left in the high half, the increment in the low half), clamped beyond;
    ``moreinfo`` as the signed 32-bit int the library receives."""
    for mode, unit in ((1, 1), (2, 10), (3, 100)):
        if left_ms // unit <= 0xFFFF and inc_ms // unit <= 0xFFFF:
            break
    left_units, inc_units = min(left_ms // unit, 0xFFFF), min(inc_ms // unit, 0xFFFF)
    moreinfo = (left_units << 16) | inc_units
    return mode << CB_INCR_TIME_SHIFT, moreinfo - (1 << 32) if moreinfo >= 1 << 31 else moreinfo   # a C int


def plan_search(params: GoParams, turn: int, incremental: bool) -> SearchPlan:
    """The getmove call for ``go`` with ``params`` when ``turn`` (0 Black, 1 White) is to move.

    ``incremental``: a clock is given as the incremental-clock bits (protocol version 2); else
    as its share in ``maxtime`` with ``CB_EXACT_TIME``.
    """
    depth, nodes, hold = params.depth, params.nodes, params.infinite
    if params.movetime is not None:
        ms = max(1, params.movetime)
        return SearchPlan(ms / 1000.0, CB_EXACT_TIME, 0, float(ms), depth, nodes, hold)
    left = params.btime if turn == 0 else params.wtime
    if left is not None and not params.infinite:
        left = max(0, left)
        inc = max(0, (params.binc if turn == 0 else params.winc) or 0)
        share = left / (params.movestogo or 30) + 0.75 * inc
        share = max(1.0, min(share, 0.8 * left))
        info, moreinfo = _incremental_bits(left, inc) if incremental else (CB_EXACT_TIME, 0)
        hard = max(1.0, left - max(CLOCK_RESERVE_MS, 0.05 * left))
        return SearchPlan(share / 1000.0, info, moreinfo, hard, depth, nodes, hold)
    return SearchPlan(LONG_MAXTIME_S, CB_EXACT_TIME, 0, None, depth, nodes, hold)


@dataclass(frozen=True)
class StatusReport:
    depth: int
    score_cp: Optional[int] = None
    nodes: Optional[int] = None


_DEPTH = re.compile(r"\bdepth\s*[=:]?\s*(\d{1,4})\b", re.IGNORECASE)
# "nodes 1376325" (Cake), "Nodes: 340.10 kn" (GuiNN: kilonodes), "12345 nodes"
_NODES = re.compile(r"\bnodes\s*[=:]?\s*(\d{1,18}(?:\.\d+)?)\s*(kn|k|mn|m)?\b", re.IGNORECASE)
_NUMBER_NODES = re.compile(r"(?<![\d.])(\d{1,18}(?:\.\d+)?)\s*(kn|k|mn|m)?\s*nodes\b", re.IGNORECASE)
_NODE_UNITS = {"": 1, "k": 1000, "kn": 1000, "m": 1000000, "mn": 1000000}
_SCORE = re.compile(r"\b(?:eval|value|score)\s*[=:]?\s*([+-]?\d{1,6}(?:\.\d+)?)(?![\d.])", re.IGNORECASE)


def parse_status(text: str) -> Optional[StatusReport]:
    """The depth (and score, nodes) a status string shows, or None when it shows no ``depth N``.

    A score with a decimal point is in men (``eval +0.12`` = 12 centi-men), a whole number in
    centi-men (``value 12``).
    """
    depth = _DEPTH.search(text)
    if depth is None:
        return None
    score = _SCORE.search(text)
    score_cp = None
    if score is not None:
        value = score.group(1)
        score_cp = round(float(value) * 100) if "." in value else int(value)
    nodes = _NODES.search(text) or _NUMBER_NODES.search(text)
    node_count = None
    if nodes is not None:
        node_count = round(float(nodes.group(1)) * _NODE_UNITS[(nodes.group(2) or "").lower()])
    return StatusReport(int(depth.group(1)), score_cp, node_count)


# ------------------------------------------------------------------------------------------------
# The libraries
# ------------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    """What one getmove returned: its result code and the move."""

    result: int
    move: RawMove


def _run_with_deadline(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """``fn()`` in a daemon thread; LibraryFailed if it has not returned after ``timeout`` s."""
    box: list[Any] = []
    failure: list[BaseException] = []

    def call() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=call, name="cbengine-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise LibraryFailed(f"{what} did not return within {timeout:g} s")
    if failure:
        raise failure[0]
    return box[0]


class NativeLibrary:
    """A library loaded into this process with ctypes (the platform's calling convention)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        loader = ctypes.WinDLL if os.name == "nt" else ctypes.CDLL   # type: ignore[attr-defined]
        try:
            lib = loader(str(self.path))
        except OSError as exc:
            raise LibraryError(f"cannot load {self.path}: {exc}") from None
        missing = [name for name in ("getmove", "enginecommand") if not hasattr(lib, name)]
        if missing:
            raise LibraryError(f"{self.path} does not export {' and '.join(missing)}: not a CheckerBoard engine")
        self.exports = ("getmove", "enginecommand") + (("islegal",) if hasattr(lib, "islegal") else ())
        self._getmove = lib.getmove
        self._getmove.argtypes = [Board, ctypes.c_int, ctypes.c_double, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                                  ctypes.c_int, ctypes.c_int, ctypes.POINTER(CBmove)]
        self._getmove.restype = ctypes.c_int
        self._enginecommand = lib.enginecommand
        self._enginecommand.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self._enginecommand.restype = ctypes.c_int
        self._status = ctypes.create_string_buffer(4 * CB_STATUS_SIZE)   # room for a library that overruns it
        self._playnow = ctypes.c_int(0)
        self._lib = lib

    def command(self, text: str, timeout: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
        data = text.encode("utf-8", "replace")
        if len(data) >= CB_COMMAND_SIZE:
            return 0, f"command longer than {CB_COMMAND_SIZE - 1} characters"
        command = ctypes.create_string_buffer(data, CB_COMMAND_SIZE)   # a fresh copy: libraries tokenise it
        reply = ctypes.create_string_buffer(4 * CB_REPLY_SIZE)

        def call() -> int:
            return int(self._enginecommand(command, reply))

        handled = _run_with_deadline(call, timeout, f"enginecommand {text!r}")
        return handled, _one_line(reply.raw[:CB_REPLY_SIZE])

    def start_getmove(self, pos: Any, maxtime: float, info: int, moreinfo: int) -> None:
        """Set up one getmove (in the caller's thread: a stop that follows at once must not be lost)."""
        board, color = board_of_position(pos)
        move = CBmove()
        ctypes.memset(ctypes.byref(move), 0xFF, ctypes.sizeof(move))   # every field -1: what stays unset shows
        ctypes.memset(self._status, 0, ctypes.sizeof(self._status))
        self._playnow.value = 0                                        # GuiNN never clears it itself
        self._call = (board, color, maxtime, info, moreinfo, move)

    def finish_getmove(self, abandon: threading.Event) -> Outcome:
        """Run the getmove set up by :meth:`start_getmove` (blocks: the worker thread calls it)."""
        board, color, maxtime, info, moreinfo, move = self._call
        result = self._getmove(board, color, maxtime, self._status, ctypes.byref(self._playnow), info, moreinfo,
                               ctypes.byref(move))
        return Outcome(int(result), RawMove.from_cbmove(move, board))

    def status(self) -> str:
        return _one_line(self._status.raw[:CB_STATUS_SIZE])

    def press_playnow(self) -> None:
        self._playnow.value = 1

    def close(self) -> None:
        """Nothing to do: the library goes with the process."""


class HostLibrary:
    """A library in a host process (``cbhost``, under wine for a Windows DLL), over its line protocol."""

    def __init__(self, command: list[str], cwd: Optional[Path] = None, env: Optional[dict[str, str]] = None,
                 start_timeout: float = HOST_START_TIMEOUT_S) -> None:
        self.command_line = command
        self._status_text = ""
        self._write_lock = threading.Lock()
        self.crash_note = ""
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, cwd=str(cwd) if cwd else None, env=env,
                                         text=True, encoding="utf-8", errors="replace", bufsize=1,
                                         start_new_session=True)   # its own group: killed as a whole
        except OSError as exc:
            raise LibraryError(f"cannot start {command[0]}: {exc.strerror or exc}") from None
        assert self.proc.stdout is not None
        self.reader = StampedLineReader(self.proc.stdout, "cbengine-host")
        try:
            hello = self._next(time.monotonic() + start_timeout, "the host's start")
        except LibraryFailed as exc:
            self.close()
            raise LibraryError(f"the host {Path(command[1] if len(command) > 1 else command[0]).name} did not "
                               f"start: {exc}") from None
        if hello.startswith("error "):
            self.close()
            raise LibraryError(hello[len("error "):])
        words = hello.split()
        if words[:2] != ["cbhost", "1"] or len(words) < 3:
            self.close()
            raise LibraryError(f"the host answered {hello[:80]!r}, not 'cbhost 1 ...'")
        self.exports = tuple(words[2].split(","))

    def _send(self, line: str) -> None:
        with self._write_lock:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(line + "\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                pass        # the host is gone: the next read says so

    def _next(self, deadline: float, waiting_for: str, abandon: Optional[threading.Event] = None) -> str:
        """The next line that is not a crash note; LibraryFailed at the end of the output or the deadline."""
        while True:
            slice_end = min(deadline, time.monotonic() + 0.05)
            try:
                _, line = self.reader.next_before(slice_end)
            except LineTimeout:
                if abandon is not None and abandon.is_set():
                    raise LibraryFailed(f"{waiting_for}: abandoned") from None
                if time.monotonic() >= deadline:
                    raise LibraryFailed(f"no answer to {waiting_for} within the time allowed") from None
                continue
            except EndOfOutput:
                code = self._exit_status()
                note = self.crash_note or (f"the host exited with status {code}" if code is not None
                                           else "the host closed its output")
                raise LibraryFailed(f"{note} (during {waiting_for})") from None
            if line.startswith("crash "):
                self.crash_note = line[len("crash "):]
                continue
            if line:
                return line

    def _exit_status(self) -> Optional[int]:
        try:
            return self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None

    def command(self, text: str, timeout: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
        if "\n" in text or "\r" in text:
            return 0, "a command is one line"
        self._send(f"command {text}")
        deadline = time.monotonic() + timeout
        while True:
            line = self._next(deadline, f"enginecommand {text!r}")
            if line.startswith("reply "):
                handled, _, reply = line[len("reply "):].partition(" ")
                return (int(handled) if handled.lstrip("-").isdigit() else 0), reply

    def start_getmove(self, pos: Any, maxtime: float, info: int, moreinfo: int) -> None:
        """Send the getmove request (in the caller's thread, so that a stop after it comes after it)."""
        _, color = board_of_position(pos)
        self._status_text = ""
        self._send(f"getmove {color} {maxtime!r} {info} {moreinfo} {pos.fen()}")

    def finish_getmove(self, abandon: threading.Event) -> Outcome:
        """Its status lines and its answer (blocks: the worker thread calls it)."""
        while True:
            line = self._next(time.monotonic() + LONG_MAXTIME_S, "getmove", abandon)
            if line.startswith("status "):
                self._status_text = line[len("status "):]
            elif line.startswith("done "):
                return _parse_done(line)
            elif line.startswith("error "):
                raise LibraryFailed(f"the host refused getmove: {line[len('error '):]}")

    def status(self) -> str:
        return self._status_text

    def press_playnow(self) -> None:
        self._send("stop")

    def close(self) -> None:
        """``quit``, then the host's whole process group is killed (a wine process that lingers too)."""
        proc = self.proc
        if proc.poll() is None:
            self._send("quit")
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError, AttributeError):
            proc.kill()
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            pass


def _parse_done(line: str) -> Outcome:
    """``done <result> <jumps> <from> <to> <path> <del> <board>`` of the host."""
    words = line.split()
    try:
        result, jumps, from_square, to_square = (int(w) for w in words[1:5])

        def squares(word: str) -> tuple[int, ...]:
            return () if word == "-" else tuple(int(s) for s in word.split(","))

        path, captured, board = squares(words[5]), squares(words[6]), squares(words[7])
        if len(board) != 32:
            raise ValueError("a board of 32 squares")
    except (ValueError, IndexError):
        raise LibraryFailed(f"the host's answer {line[:120]!r} is not 'done <result> <jumps> <from> <to> <path> "
                            "<del> <board>'") from None
    return Outcome(result, RawMove(jumps, from_square, to_square, path, captured, board))


def _one_line(data: bytes) -> str:
    """A NUL-terminated C string as one printable line."""
    text = data.split(b"\0", 1)[0].decode("utf-8", "replace")
    return "".join(ch if ch.isprintable() else " " for ch in text).strip()


# ------------------------------------------------------------------------------------------------
# The wine host: built on demand into a cache directory
# ------------------------------------------------------------------------------------------------
def host_cache_dir() -> Path:
    """``$UCI_CHECKERS_CBHOST_DIR``, else ``$XDG_CACHE_HOME/uci_checkers/cbhost`` (``~/.cache/...``)."""
    return user_cache_dir("cbhost", "UCI_CHECKERS_CBHOST_DIR")


def build_host(target: str = "windows", out_dir: Optional[Path] = None, cc: Optional[str] = None) -> Path:
    """``cbhost.exe`` (``windows``: x64, for wine) or the native ``cbhost``, built once per source version.

    The file name carries a hash of the sources and the compiler, so an edited source builds a
    new host and an existing one is used as it is.
    """
    root = bridge_root()
    compiler = cc or default_compiler(target)
    digest = hashlib.sha256(compiler.encode())
    for name in HOST_SOURCES:
        digest.update((root / name).read_bytes())
    out = Path(out_dir) if out_dir is not None else host_cache_dir()
    output = out / (f"cbhost-{digest.hexdigest()[:16]}" + (".exe" if target == "windows" else ""))
    if output.is_file():
        return output
    out.mkdir(parents=True, exist_ok=True)
    sources = [str(root / "cbhost" / "cbhost.c"), str(root / "checkerboard" / "board.c")]
    include = ["-I", str(root / "checkerboard")]
    if target == "windows":
        command = [compiler, *COMMON_FLAGS, *include, "-s", "-static-libgcc", "-o", "@OUT@", *sources]
    else:
        command = [compiler, *COMMON_FLAGS, "-D_POSIX_C_SOURCE=200809L", *include, "-o", "@OUT@", *sources,
                   *native_link_flags()]
    compile_c(command, output)
    return output


# Debian's wine64 package installs its loader here and leaves the commands on PATH to the package
# ``wine`` (which wine64 only recommends): a machine with wine64 alone has no ``wine64`` command.
DEBIAN_WINE64 = "/usr/lib/wine/wine64"


def find_wine(requested: Optional[str] = None) -> Optional[str]:
    """The wine program: ``requested`` (a name or a path), else ``wine64`` or ``wine`` on PATH, else
    Debian's wine64 loader (:data:`DEBIAN_WINE64`)."""
    if requested:
        return shutil.which(requested)
    for name in ("wine64", "wine"):
        found = shutil.which(name)
        if found:
            return found
    return DEBIAN_WINE64 if os.access(DEBIAN_WINE64, os.X_OK) else None


def wine_path(path: Path) -> str:
    """The Windows name wine gives a Unix path (drive Z: is the root in every prefix)."""
    return "Z:" + str(path).replace("/", "\\")


def wine_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("WINEDEBUG", "-all")                  # wine's diagnostics are not protocol lines
    env.setdefault("WINEDLLOVERRIDES", "mscoree,mshtml=")   # no Mono/Gecko install dialog in a new prefix
    return env


# ------------------------------------------------------------------------------------------------
# The ini file
# ------------------------------------------------------------------------------------------------
@dataclass
class IniSettings:
    directory: Optional[Path] = None
    clock: Optional[str] = None
    score: Optional[str] = None
    commands: list[tuple[str, str]] = field(default_factory=list)   # (option name as written, enginecommand)


class IniError(ValueError):
    """The ini file cannot be read or has a line it does not understand (the message names it)."""


def read_ini(path: Path) -> IniSettings:
    """``[engine] directory = ...`` and ``[options] Hash = N`` / ``CB = <enginecommand>`` (repeatable)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise IniError(f"cannot read {path}: {exc.strerror or exc}") from None
    settings = IniSettings()
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)[;#].*$", "", raw).strip()     # comments: whole lines, or after a space
        if not line:
            continue
        where = f"{path}:{number}"
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            if section not in ("engine", "options"):
                raise IniError(f"{where}: unknown section [{section}] (there are [engine] and [options])")
            continue
        key, equals, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not key:
            raise IniError(f"{where}: expected NAME = VALUE, not {raw.strip()!r}")
        if section == "engine" and key.lower() == "directory":
            folder = Path(value).expanduser()
            settings.directory = folder if folder.is_absolute() else (path.parent / folder).resolve()
        elif section == "engine" and key.lower() in ("clock", "score"):
            choices = CLOCK_MODES if key.lower() == "clock" else SCORE_VIEWS
            if value.lower() not in choices:
                raise IniError(f"{where}: {key.lower()} is one of {', '.join(choices)}, not {value!r}")
            setattr(settings, key.lower(), value.lower())
        elif section == "options" and key.lower() == "hash":
            if not value.isdigit() or int(value) < 1:
                raise IniError(f"{where}: Hash needs a size in MB, not {value!r}")
            settings.commands.append(("Hash", f"set hashsize {int(value)}"))
        elif section == "options" and key.lower() == "cb":
            if not value:
                raise IniError(f"{where}: CB needs an enginecommand text, e.g. CB = set book 0")
            settings.commands.append(("CB", value))
        elif section in ("engine", "options"):
            known = "directory, clock and score" if section == "engine" else "Hash and CB"
            raise IniError(f"{where}: unknown setting {key!r} in [{section}] (it has {known})")
        else:
            raise IniError(f"{where}: {key!r} outside a section ([engine] or [options])")
    return settings


# ------------------------------------------------------------------------------------------------
# The protocol front end
# ------------------------------------------------------------------------------------------------
HELP_TEXT = """\
uci-checkers cbengine serves a CheckerBoard engine library over protocol.md.
  uci | isready | ucinewgame | quit | debug on|off | d | help
  setoption name Hash value <MB>           the library's hash table (set hashsize)
  setoption name CB value <text>           any enginecommand text, e.g. set book 0 (the reply is shown)
  position startpos|fen <FEN> [moves ...]
  go [wtime <ms>] [btime <ms>] [winc <ms>] [binc <ms>] [movestogo <n>] [movetime <ms>] [depth <n>]
     [nodes <n>] [infinite]
  stop"""


@dataclass
class _Job:
    """One getmove: its plan, the position, and the state the worker, the watcher and stop share."""

    plan: SearchPlan
    position: Any
    started: float
    abandon: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    pressed_at: Optional[float] = None
    stop_requested: bool = False
    held: Optional[list[str]] = None
    status_lock: threading.Lock = field(default_factory=threading.Lock)   # the watcher and the worker report
    last_status: str = ""
    status_at: float = 0.0
    last_report: Optional[StatusReport] = None


class CBEngineProtocol(LineProtocol):
    """protocol.md over one CheckerBoard library (:class:`NativeLibrary` or :class:`HostLibrary`).

    ``fatal(code)`` ends the process after a library failure (hung past the grace, crashed in the
    host); the error line is written first.  Tests give their own.
    """

    def __init__(self, library: Any, write: Optional[Callable[[str], None]] = None, name: Optional[str] = None,
                 grace: float = DEFAULT_GRACE_S, fatal: Optional[Callable[[int], None]] = None,
                 rules_ready: Optional[threading.Event] = None, clock: str = "auto",
                 score: str = "auto") -> None:
        super().__init__(write)
        self.library = library
        self.grace = grace
        self._fatal_exit = fatal if fatal is not None else _exit
        self._rules_ready = rules_ready
        handled, reply = library.command("name")
        self.name = name or (reply if handled and reply else Path(getattr(library, "path", "library")).stem)
        handled, reply = library.command("get protocolversion")
        self.protocol_version = int(reply) if handled and reply.strip().isdigit() else 1
        handled, reply = library.command("get hashsize")
        self.hash_default = int(reply) if handled and reply.strip().isdigit() else None
        if clock not in CLOCK_MODES:
            raise ValueError(f"clock must be one of {', '.join(CLOCK_MODES)}, not {clock!r}")
        # Cake 1.89 says protocol version 2 but reads info bit 3 as "all-scores search", not as a clock unit
        self.incremental = clock == "incremental" or (clock == "auto" and self.protocol_version >= 2
                                                       and not self.name.lower().startswith("cake"))
        if score not in SCORE_VIEWS:
            raise ValueError(f"score must be one of {', '.join(SCORE_VIEWS)}, not {score!r}")
        # GuiNN 2.06 shows its "Eval" from Black's (Red's) point of view whoever is to move
        self.score_view = score if score != "auto" else (
            "black" if self.name.lower().startswith("guinn") else "mover")
        self.game: Any = None
        self.position_given = False
        self._continues_from: Optional[Any] = None   # the position the library's last move produced
        self._pending: list[tuple[str, str]] = []    # setoption during a search: (name, command), sent before the next
        self._job: Optional[_Job] = None
        self._job_lock = threading.Lock()
        self._depth_note_given = False
        self._commands = {
            "uci": self._uci, "isready": self._isready, "setoption": self._setoption,
            "ucinewgame": self._ucinewgame, "position": self._position, "go": self._go, "stop": self._stop,
            "ponderhit": self._ponderhit, "quit": self._quit, "debug": self._debug, "d": self._d,
            "help": self._help,
        }

    # --- helpers -------------------------------------------------------------------------------
    def _wait_rules(self) -> None:
        if self._rules_ready is not None and not self._rules_ready.wait(RULES_TIMEOUT_S):
            raise ProtocolError(f"the rules kernels are still not ready after {RULES_TIMEOUT_S:.0f} s")

    def _ensure_game(self) -> Any:
        if self.game is None:
            from ..rules.position import Game

            self.game = Game()
        return self.game

    def _running(self) -> Optional[_Job]:
        with self._job_lock:       # the worker writes bestmove and marks the job done under this lock
            job = self._job
            return job if job is not None and not job.done.is_set() else None

    def _wait_stopped(self) -> None:
        """After stop: wait for the stopped getmove's bestmove (within the grace; then it is a hang)."""
        job = self._running()
        if job is not None and job.pressed_at is not None:
            job.done.wait(self.grace + 1.0)

    def _fail(self, text: str) -> None:
        """A library failure: the error line, then the process ends (status 3)."""
        self.error(text)
        self._fatal_exit(EXIT_LIBRARY_FAILED)

    def _send_command(self, name: str, command: str) -> None:
        """One option's enginecommand, now; a refusal is an error line."""
        try:
            handled, reply = self.library.command(command)
        except LibraryFailed as exc:
            self._fail(f"the engine library failed: {exc}")
            return
        if name == "CB":
            # not an error when 0: Cake answers 0 to some set commands it carries out
            self.info_string(f"CB {command} -> {reply or '(no reply)'}" + ("" if handled else " (returned 0)"))
        elif not handled:
            self.error(f"setoption: the library refused {command!r}" + (f": {reply}" if reply else ""))
        elif self.debug:
            self.info_string(f"option {name} = {command.rsplit(' ', 1)[-1]}")

    def _apply_pending(self) -> None:
        pending, self._pending = self._pending, []
        for name, command in pending:
            self._send_command(name, command)

    # --- commands ------------------------------------------------------------------------------
    def _uci(self, tokens: list[str], line: str) -> None:
        self.write(f"id name {self.name}")
        self.write("id author CheckerBoard engine library, served by uci-checkers cbengine")
        if self.hash_default is not None:
            self.write(f"option name Hash type spin default {max(1, self.hash_default)} min 1 max 1048576")
        self.write("option name CB type string default <empty>")
        self.write("uciok")

    def _isready(self, tokens: list[str], line: str) -> None:
        self._wait_stopped()
        self._wait_rules()
        if self._running() is None:
            self._apply_pending()
        self.write("readyok")

    def _setoption(self, tokens: list[str], line: str) -> None:
        m = re.match(r"^\s*\S+\s+name\s+(?P<name>.*?)(?:\s+value(?:\s+(?P<value>.*?))?)?\s*$", line,
                     re.IGNORECASE | re.DOTALL)
        if len(tokens) < 3 or tokens[1].lower() != "name" or m is None or not m.group("name").strip():
            raise ProtocolError("setoption needs: setoption name <name> [value <value>]")
        name, value = " ".join(m.group("name").split()), (m.group("value") or "").strip()
        if name.lower() == "hash" and self.hash_default is not None:
            if not value:
                raise ProtocolError("setoption: option Hash needs a value")
            if not value.isdigit() or not 1 <= int(value) <= 1048576:
                raise ProtocolError(f"setoption: option Hash needs a whole number 1..1048576, not {_clip(value, 40)!r}")
            entry = ("Hash", f"set hashsize {int(value)}")
        elif name.lower() == "cb":
            if not value:
                raise ProtocolError("setoption: option CB needs a value: an enginecommand text, e.g. set book 0")
            entry = ("CB", value)
        else:
            raise ProtocolError(f"setoption: unknown option {_clip(name, 60)!r}")
        if self._running() is not None:
            self._pending.append(entry)          # sent before the next getmove: never during one
        else:
            self._send_command(*entry)

    def _ucinewgame(self, tokens: list[str], line: str) -> None:
        if len(tokens) > 1:
            raise ProtocolError("ucinewgame takes no arguments")
        self.game = None
        self.position_given = False
        self._continues_from = None

    def _position(self, tokens: list[str], line: str) -> None:
        from ..rules.position import Game

        self._wait_rules()

        def apply(start: Any, moves: list[str]) -> None:
            self.game = Game.from_moves(start, moves)

        parse_position(tokens, apply)
        self.position_given = True

    def _go(self, tokens: list[str], line: str, received: float) -> None:
        params, perft = parse_go(tokens)
        if perft is not None:
            raise ProtocolError("go perft: not available for a CheckerBoard engine")
        for refused, present in (("ponder", params.ponder), ("searchmoves", params.searchmoves),
                                 ("mate", params.mate is not None)):
            if present:
                raise ProtocolError(f"go: {refused} is not available for a CheckerBoard engine")
        self._wait_stopped()
        if self._running() is not None:
            raise ProtocolError("go: a search is already running (send stop first); this go is ignored")
        self._wait_rules()
        if not self.position_given:
            self.error("go before position: searching the start position")
            self.position_given = True
        game = self._ensure_game()
        pos = game.position
        plan = plan_search(params, pos.turn, self.incremental)
        job = _Job(plan, pos, received)
        self._job = job
        if not pos.has_legal_move():
            winner = "white" if pos.turn == 0 else "black"
            self._finish(job, [f"info string result {winner} no legal moves", "bestmove (none)"])
            return
        status = game.status()
        if status.is_over:
            self.info_string(f"game already over: {status.value} (searching anyway)")
        if (plan.depth is not None or plan.nodes is not None) and not self._depth_note_given:
            self._depth_note_given = True
            self.info_string("go depth/nodes: a CheckerBoard engine cannot be told a depth; playnow is set once "
                             "its status string shows the depth (or the node count) asked for")
        self._apply_pending()
        continued = self._continues_from is not None and (
            pos == self._continues_from or (len(game.positions) >= 2 and game.positions[-2] == self._continues_from))
        info = plan.info | (0 if continued else CB_RESET_MOVES)
        self._continues_from = None
        if self.debug:
            self.info_string(f"getmove maxtime {plan.maxtime:g} info {info} moreinfo {plan.moreinfo}")
        self.library.start_getmove(pos, plan.maxtime, info, plan.moreinfo)
        previous = threading.stack_size(GETMOVE_STACK_BYTES)
        try:
            threading.Thread(target=self._search, args=(job,), name="cbengine-getmove", daemon=True).start()
        finally:
            threading.stack_size(previous)
        threading.Thread(target=self._watch, args=(job,), name="cbengine-watch", daemon=True).start()

    def _search(self, job: _Job) -> None:
        """The worker: one getmove, then its result and bestmove."""
        try:
            outcome = self.library.finish_getmove(job.abandon)
        except LibraryFailed as exc:
            if not job.abandon.is_set():
                self._fail(f"the engine library failed: {exc}")
            return
        self._report_status(job, final=True)
        lines = [f"info string getmove result: {RESULT_NAMES.get(outcome.result, str(outcome.result))}"]
        try:
            move = resolve_move(job.position, outcome.move)
        except LibraryMoveError as exc:
            lines += ["info string error: " + _clip(str(exc), 400), "bestmove (none)"]
        else:
            lines.append(f"bestmove {move.text()}")
            self._continues_from = job.position.play(move)
        self._finish(job, lines)

    def _finish(self, job: _Job, lines: list[str]) -> None:
        with self._job_lock:
            if job.plan.hold and not job.stop_requested:
                job.held = lines                 # infinite: the bestmove waits for stop
            else:
                for text in lines:
                    self.write(text)
            job.done.set()

    def _press(self, job: _Job) -> None:
        if job.pressed_at is None:
            job.pressed_at = time.monotonic()
            self.library.press_playnow()

    def _report_status(self, job: _Job, final: bool = False) -> None:
        with job.status_lock:
            self._report_status_locked(job, final)

    def _report_status_locked(self, job: _Job, final: bool) -> None:
        text = self.library.status()
        if not text or text == job.last_status:
            return
        now = time.monotonic()
        report = parse_status(text)
        reached = report is not None and not final and (
            (job.plan.depth is not None and report.depth >= job.plan.depth)
            or (job.plan.nodes is not None and report.nodes is not None and report.nodes >= job.plan.nodes))
        if reached:
            self._press(job)
        if not final and not reached and now < job.status_at + STATUS_INTERVAL_S:
            return                      # ten a second, but the line that reached the limit is always shown
        job.last_status, job.status_at = text, now
        self.info_string(text)
        if report is not None and report != job.last_report:
            job.last_report = report
            parts = ["info", "depth", str(report.depth)]
            if report.score_cp is not None:
                parts += ["score", "cp", str(self._mover_score(report.score_cp, job.position.turn))]
            if report.nodes is not None:
                parts += ["nodes", str(report.nodes)]
            parts += ["time", str(int((now - job.started) * 1000))]
            self.write(" ".join(parts))

    def _mover_score(self, shown: int, turn: int) -> int:
        """A status string's score (in ``score_view``'s point of view) as the side to move's (turn 0: Black)."""
        if (self.score_view, turn) in (("black", 1), ("white", 0)):
            return -shown
        return shown

    def _watch(self, job: _Job) -> None:
        """The watcher: status lines, the depth/nodes and time limits, and the grace after playnow."""
        limit = job.plan.hard_limit_ms
        while not job.done.wait(POLL_S):
            self._report_status(job)
            now = time.monotonic()
            if limit is not None and now >= job.started + limit / 1000.0:
                self._press(job)
            if job.pressed_at is not None and now >= job.pressed_at + self.grace and not job.done.is_set():
                job.abandon.set()
                self._fail(f"engine did not stop (getmove ran on {self.grace:g} s after playnow was set)")
                return

    def _stop(self, tokens: list[str], line: str) -> None:
        job = self._job
        with self._job_lock:
            if job is None or (job.done.is_set() and job.held is None):
                raise ProtocolError("stop: no search is running")
            job.stop_requested = True
            if job.held is not None:
                held, job.held = job.held, None
                for text in held:
                    self.write(text)
                return
        self._press(job)

    def _ponderhit(self, tokens: list[str], line: str) -> None:
        raise ProtocolError("ponderhit: no ponder search is running (a CheckerBoard engine does not ponder)")

    def _quit(self, tokens: list[str], line: str) -> None:
        self.abort.set()
        job = self._running()
        if job is not None:
            job.stop_requested = True
            self._press(job)
            job.done.wait(min(self.grace, 1.0))
        self.finished = True

    def _d(self, tokens: list[str], line: str) -> None:
        self._wait_rules()
        pos = self._ensure_game().position
        self.write_board(pos)
        self.write("Legal moves: " + (" ".join(m.text() for m in pos.legal_moves()) or "(none)"))
        self.write(f"Library: {getattr(self.library, 'path', '')} exports {','.join(self.library.exports)}, "
                   f"protocol version {self.protocol_version}")

    def _help(self, tokens: list[str], line: str) -> None:
        for row in HELP_TEXT.splitlines():
            self.write(row)


# ------------------------------------------------------------------------------------------------
# The process
# ------------------------------------------------------------------------------------------------
_LIBRARY: list[Any] = []          # the library to close on the way out (the wine host's group)


def _exit(code: int) -> None:
    """Leave at once (a getmove thread may be stuck inside the library): the host first, then stdout."""
    for library in _LIBRARY:
        try:
            library.close()
        except Exception:
            pass
    exit_now(code)


def _warm_rules(ready: threading.Event) -> None:
    """Load the rules kernels (numba: compiled once, then from the cache) while uci is answered."""
    from ..rules.position import Position

    Position.start().legal_moves()
    ready.set()


def open_library(path: Path, directory: Path, wine: Optional[str] = None, host: Optional[Path] = None) -> Any:
    """The library at ``path``, loaded the way this system needs; LibraryError (one line) if it cannot be."""
    if path.suffix.lower() == ".dll":
        try:
            header = pe_header(path)
        except CBuildError as exc:
            raise LibraryError(str(exc)) from None
        missing = [name for name in ("getmove", "enginecommand") if name not in header.exports]
        if missing:
            raise LibraryError(f"{path} does not export {' and '.join(missing)}: not a CheckerBoard engine")
        if os.name != "nt":
            if not header.is_x64:
                raise LibraryError(f"{path} is a {header.machine_name} DLL; the wine host is x64 and loads only "
                                   "64-bit engine DLLs")
            wine_program = find_wine(wine)
            if wine_program is None:
                raise LibraryError((f"wine {wine!r} not found" if wine else "wine is not installed (wine64 or wine "
                                    "on PATH; Debian: apt-get install wine64)")
                                   + f": it is needed to run the Windows DLL {path.name}")
            if host is None:
                try:
                    host = build_host("windows")
                except CBuildError as exc:
                    raise LibraryError(f"the wine host cbhost.exe is not built and cannot be: {exc}") from None
            elif not Path(host).is_file():
                raise LibraryError(f"the wine host {host} does not exist")
            return HostLibrary([wine_program, str(host), wine_path(path)], cwd=directory, env=wine_env())
        if header.machine == 0x14C and sys.maxsize > 2 ** 32:
            raise LibraryError(f"{path} is a 32-bit DLL: it needs a 32-bit Python")
    os.chdir(directory)                   # engines open their books and databases relative to it
    return NativeLibrary(path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = ToolParser(prog="uci-checkers cbengine",
                   description="Serve a CheckerBoard engine library (getmove/enginecommand) as a "
                               "protocol.md engine on stdin/stdout.")
    p.add_argument("library", type=Path, help="the engine library: .so (Linux/macOS) or .dll (Windows; elsewhere "
                                              "under wine)")
    p.add_argument("--ini", type=Path, default=None, help="settings: [engine] directory=, [options] Hash=, CB=")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE_S, metavar="S",
                   help=f"seconds getmove may run on after playnow before it counts as hung (default {DEFAULT_GRACE_S:g})")
    p.add_argument("--wine", default=None, metavar="CMD", help="the wine program for a .dll (default wine64 or wine)")
    p.add_argument("--host", type=Path, default=None, metavar="EXE",
                   help="a built cbhost.exe (default: built with mingw-w64 into the cache on first use)")
    p.add_argument("--clock", choices=CLOCK_MODES, default=None,
                   help="how a clock reaches the library: incremental (info/moreinfo bits), maxtime (its share, "
                        "exact), auto (default: incremental for protocol version 2, except Cake)")
    p.add_argument("--score", choices=SCORE_VIEWS, default=None,
                   help="whose view the library's status score takes: mover (the side to move), black, white, "
                        "auto (default: black for GuiNN, mover for the rest); info lines give the mover's")
    args = p.parse_args(list(argv) if argv is not None else None)

    def usage_error(text: str) -> int:
        print(f"uci-checkers cbengine: {text}", file=sys.stderr)
        return EXIT_USAGE

    if not 0 < args.grace <= 3600:
        return usage_error(f"--grace must be more than 0 and at most 3600 s, not {args.grace:g}")
    path = args.library.expanduser().resolve()
    if not path.is_file():
        return usage_error(f"no such library: {args.library}")
    try:
        settings = read_ini(args.ini) if args.ini is not None else IniSettings()
    except IniError as exc:
        return usage_error(str(exc))
    directory = settings.directory or path.parent
    if not directory.is_dir():
        return usage_error(f"the working directory {directory} does not exist")
    ready = threading.Event()      # the rules load while the library does (wine takes seconds to start)
    threading.Thread(target=_warm_rules, args=(ready,), name="cbengine-rules", daemon=True).start()
    try:
        library = open_library(path, directory, args.wine, args.host)
    except LibraryError as exc:
        return usage_error(str(exc))
    _LIBRARY.append(library)
    try:
        for name, command in settings.commands:
            handled, reply = library.command(command)
            if not handled and name == "Hash":
                library.close()
                return usage_error(f"{args.ini}: the library refused {command!r}" + (f": {reply}" if reply else ""))
            if not handled:      # a note, not a failure: Cake answers 0 to some set commands it carries out
                print(f"uci-checkers cbengine: note: the library returned 0 for {command!r} from {args.ini}"
                      + (f": {reply}" if reply else ""), file=sys.stderr)
        proto = CBEngineProtocol(library, grace=args.grace, rules_ready=ready,
                                 clock=args.clock or settings.clock or "auto",
                                 score=args.score or settings.score or "auto")
    except LibraryFailed as exc:
        library.close()
        return usage_error(f"the library failed at start: {exc}")

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)     # like Ctrl-C: the wine host goes with us
    lines: "queue.Queue[tuple[Optional[str], int, float]]" = queue.Queue()
    done = threading.Event()
    threading.Thread(target=read_commands, args=(sys.stdin.buffer, lines, proto.abort, done, _exit),
                     name="cbengine-stdin", daemon=True).start()
    try:
        run_commands(proto, lines)
    except KeyboardInterrupt:
        done.set()
        _exit(EXIT_INTERRUPTED)
    done.set()
    _exit(EXIT_OK)
    return EXIT_OK  # pragma: no cover

