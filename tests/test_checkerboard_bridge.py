"""The CheckerBoard bridge (bridge/checkerboard) called through ctypes exactly as CheckerBoard calls it.

The Linux shared library is built once per session from the same C source as the Windows DLL.
Each test loads its own copy (a separate instance with its own engine process and an ini file
beside it).  Engines: the real one (``python -m uci_checkers`` run from the repository) and
``tests/engines/random_mover.py``, whose ``--log`` shows every line the bridge sent.
The rules core (``uci_checkers.rules.position``) is the reference for every move and CBmove.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

from uci_checkers.tools import checkerboard as cbtool
from uci_checkers.rules.position import Game, Move, Position
from uci_checkers.util.cbuild import WINDOWS_CC

REPO = Path(__file__).resolve().parent.parent
MOVER = Path(__file__).resolve().parent / "engines" / "random_mover.py"
POSITIONS = Path(__file__).resolve().parent / "data" / "cb_bridge_positions.txt"
REQUIRE_WINDOWS_TOOLS = os.environ.get("UCI_CHECKERS_REQUIRE_MINGW") == "1"

# CheckerBoard's constants (cb_api.h)
CB_WHITE, CB_BLACK, CB_MAN, CB_KING = 1, 2, 4, 8
CB_DRAW, CB_WIN, CB_LOSS, CB_UNKNOWN = 0, 1, 2, 3
CB_RESET_MOVES, CB_EXACT_TIME = 1, 2


class Coor(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]


class CBmove(ctypes.Structure):
    _fields_ = [("jumps", ctypes.c_int), ("newpiece", ctypes.c_int), ("oldpiece", ctypes.c_int),
                ("from_", Coor), ("to", Coor), ("path", Coor * 12), ("del_", Coor * 12),
                ("delpiece", ctypes.c_int * 12)]


Board = (ctypes.c_int * 8) * 8


def square_xy(square: int) -> tuple[int, int]:
    """CheckerBoard's board[x][y] of a square, English numbering (cb_api.h), computed independently here."""
    y = (square - 1) // 4
    return 2 * (3 - (square - 1) % 4) + y % 2, y


def cb_piece(symbol: str) -> int:
    return {"b": CB_BLACK | CB_MAN, "B": CB_BLACK | CB_KING, "w": CB_WHITE | CB_MAN, "W": CB_WHITE | CB_KING}[symbol]


def board_of(pos: Position) -> tuple[Board, int]:
    board = Board()
    for square in range(1, 33):
        piece = pos.piece_at(square)
        if piece:
            x, y = square_xy(square)
            board[x][y] = cb_piece(piece)
    return board, CB_BLACK if pos.turn == 0 else CB_WHITE


def cells(board: Board) -> list[list[int]]:
    return [list(column) for column in board]


class Bridge:
    """One loaded copy of the library, called as CheckerBoard calls it."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.lib.getmove.argtypes = [Board, ctypes.c_int, ctypes.c_double, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int, ctypes.POINTER(CBmove)]
        self.lib.getmove.restype = ctypes.c_int
        self.lib.enginecommand.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self.lib.islegal.argtypes = [Board, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(CBmove)]
        self.status = ctypes.create_string_buffer(1024)

    def command(self, text: str) -> tuple[int, str]:
        reply = ctypes.create_string_buffer(1024)
        handled = self.lib.enginecommand(text.encode(), reply)
        return handled, reply.value.decode()

    def getmove(self, board: Board, color: int, maxtime: float = 0.2, info: int = 0, moreinfo: int = 0,
                playnow: Optional[ctypes.c_int] = None) -> tuple[int, CBmove]:
        move = CBmove()
        playnow = playnow if playnow is not None else ctypes.c_int(0)
        result = self.lib.getmove(board, color, maxtime, self.status, ctypes.byref(playnow), info, moreinfo,
                                  ctypes.byref(move))
        return result, move

    @property
    def text(self) -> str:
        return self.status.value.decode(errors="replace")


@pytest.fixture(scope="session")
def bridge_library(tmp_path_factory) -> Path:
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler (cc) to build the bridge")
    return cbtool.build("native", tmp_path_factory.mktemp("cb_build"))


def load_bridge(library: Path, directory: Path, command: str, engine_dir: Path = REPO,
                options: Optional[dict[str, str]] = None) -> Bridge:
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / library.name
    shutil.copyfile(library, copy)
    (directory / f"{cbtool.LIBRARY_NAME}.ini").write_text(cbtool.ini_text(command, str(engine_dir), options))
    return Bridge(copy)


def quoted(path: object) -> str:
    return f'"{path}"'


ENGINE_COMMAND = f"{quoted(sys.executable)} -m uci_checkers"


@pytest.fixture(scope="module")
def engine_bridge(bridge_library, tmp_path_factory) -> Bridge:
    """The real engine behind one library instance, shared by the tests of this module (in order)."""
    return load_bridge(bridge_library, tmp_path_factory.mktemp("cb_engine"), ENGINE_COMMAND)


def mover_bridge(library: Path, directory: Path, *extra: str) -> tuple[Bridge, Path]:
    log = directory / "engine.log"
    command = " ".join([quoted(sys.executable), quoted(MOVER), "--log", quoted(log), *extra])
    return load_bridge(library, directory, command), log


def sent(log: Path, word: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.split()[:1] == [word]]


def cbmove_squares(move: CBmove) -> list[int]:
    """from, every landing square, as square numbers (path[0] = from, path[1..] the landings)."""
    landings = max(move.jumps, 1)
    xy_to_square = {square_xy(s): s for s in range(1, 33)}
    return [xy_to_square[(move.path[i].x, move.path[i].y)] for i in range(landings + 1)]


def assert_cbmove_is(move: CBmove, pos: Position, expected: Move) -> None:
    """The CBmove says exactly what the rules core's move does."""
    board, _ = board_of(pos)
    assert (move.from_.x, move.from_.y) == square_xy(expected.from_square)
    assert (move.to.x, move.to.y) == square_xy(expected.to_square)
    assert cbmove_squares(move) == list(expected.squares)
    captured = expected.captured_squares
    assert move.jumps == len(captured)
    deleted = [(move.del_[i].x, move.del_[i].y) for i in range(move.jumps)]
    assert sorted(deleted) == sorted(square_xy(s) for s in captured)
    for i, (x, y) in enumerate(deleted):
        # the i-th captured piece lies between the i-th and (i+1)-th square of the path
        assert (2 * x, 2 * y) == (move.path[i].x + move.path[i + 1].x, move.path[i].y + move.path[i + 1].y)
        assert move.delpiece[i] == board[x][y] != 0
    if move.jumps < 12:
        assert move.del_[move.jumps].x == -1
    old = cb_piece(pos.piece_at(expected.from_square))
    assert move.oldpiece == old
    after = pos.play(expected)
    assert move.newpiece == cb_piece(after.piece_at(expected.to_square))
    assert (move.newpiece != old) == expected.promotes


def read_positions() -> list[str]:
    return [line.strip() for line in POSITIONS.read_text().splitlines() if line.strip() and not line.startswith("#")]


# --- the bridge's own rules: conversion, move generation, CBmove fill (no engine) ---------------

def test_board_fen_round_trip_on_random_positions(bridge_library):
    lib = Bridge(bridge_library).lib
    fens = read_positions()
    assert len(fens) >= 250
    for fen in fens:
        pos = Position.from_fen(fen)
        expected, color = board_of(pos)
        board, got_color = Board(), ctypes.c_int()
        assert lib.cbbridge_fen_to_board(fen.encode(), board, ctypes.byref(got_color)) == 0, fen
        assert cells(board) == cells(expected) and got_color.value == color, fen
        out = ctypes.create_string_buffer(256)
        assert lib.cbbridge_board_to_fen(board, color, out, 256) == 0
        assert out.value.decode() == pos.fen(), fen
        assert Position.from_fen(out.value.decode()) == pos


def test_bridge_move_generator_and_cbmove_agree_with_the_rules_core(bridge_library):
    lib = Bridge(bridge_library).lib
    extra = ["W:WK14:B10,11,18,19", "B:W26,27:B22", "W:W9:B5,6", "B:W18,27:B14", "W:W23,27:BK18,K26,K19"]
    moves_checked = captures_checked = 0
    for fen in read_positions() + extra:
        pos = Position.from_fen(fen)
        out = ctypes.create_string_buffer(8192)
        n = lib.cbbridge_legal_moves(fen.encode(), out, 8192)
        legal = pos.legal_moves()
        assert n == len(legal), fen
        assert sorted(out.value.decode().split()) == sorted(m.text() for m in legal), fen
        for m in legal:
            move = CBmove()
            assert lib.cbbridge_fill_move(fen.encode(), m.text().encode(), ctypes.byref(move)) == 0
            assert_cbmove_is(move, pos, m)
            moves_checked += 1
            captures_checked += m.is_capture
    print(f"{moves_checked} moves, {captures_checked} captures checked")
    assert moves_checked > 1500 and captures_checked > 100, (moves_checked, captures_checked)


def test_islegal_fills_the_move(bridge_library):
    bridge = Bridge(bridge_library)
    pos = Position.from_fen("B:W10,19:B6")
    board, color = board_of(pos)
    move = CBmove()
    assert bridge.lib.islegal(board, color, 6, 24, ctypes.byref(move)) == 1
    assert_cbmove_is(move, pos, pos.legal_moves()[0])
    assert bridge.lib.islegal(board, color, 6, 15, ctypes.byref(move)) == 0
    start, color = board_of(Position.start())
    assert bridge.lib.islegal(start, color, 11, 15, ctypes.byref(move)) == 1
    assert bridge.lib.islegal(start, color, 22, 18, ctypes.byref(move)) == 0   # White's man, Black to move


def test_bad_boards_get_a_message_not_a_crash(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path)
    board, _ = board_of(Position.start())
    board[3][3] = 3                                  # no such piece
    result, move = bridge.getmove(board, CB_BLACK)
    assert result == CB_UNKNOWN and "board[3][3] holds 3" in bridge.text
    board, _ = board_of(Position.start())
    board[1][0] = CB_BLACK | CB_MAN                  # a light square
    assert bridge.getmove(board, CB_BLACK)[0] == CB_UNKNOWN and "light square" in bridge.text
    board, _ = board_of(Position.start())
    assert bridge.getmove(board, 7)[0] == CB_UNKNOWN and "side to move" in bridge.text
    assert not log.exists()                          # no engine was started for any of them


# --- enginecommand ------------------------------------------------------------------------------

def test_enginecommand_replies(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path)
    assert bridge.command("name") == (1, "uci_checkers")
    handled, about = bridge.command("about")
    assert handled == 1 and "random_mover.py" in about and "uci_checkers_cb.ini" in about
    assert bridge.command("get protocolversion") == (1, "2")
    assert bridge.command("get gametype") == (1, "21")
    assert bridge.command("get hashsize") == (1, "16")
    assert bridge.command("get book") == (1, "1")                 # the engine's own book, on by default
    assert bridge.command("set book 0")[0] == 1                    # -> setoption name OwnBook value false
    assert bridge.command("get book") == (1, "0") and bridge.command("get option OwnBook") == (1, "false")
    assert bridge.command("set book 4")[0] == 0 and bridge.command("set book x")[0] == 0
    assert bridge.command("set book 2")[0] == 1 and bridge.command("get book") == (1, "1")
    assert bridge.command("get movelist B:W1:B") == (0, "?")      # English: CheckerBoard's own generator
    assert bridge.command("help") == (0, "")
    (tmp_path / cbtool.HELP_FILE).write_text("<p>help</p>")
    assert bridge.command("help") == (1, cbtool.HELP_FILE)         # CheckerBoard opens it from engines/
    assert bridge.command("frobnicate") == (0, "?")
    assert bridge.command("set hashsize lots")[0] == 0
    assert bridge.command("set hashsize 99999999999999999999")[0] == 0
    # before the engine runs, settings are kept and sent with the first move
    assert bridge.command("set hashsize 64")[0] == 1
    assert bridge.command("get hashsize") == (1, "64")
    assert bridge.command("set option NoProgressPlies 60")[0] == 1
    assert bridge.command("get option NoProgressPlies") == (1, "60")
    board, color = board_of(Position.start())
    assert bridge.getmove(board, color, info=CB_RESET_MOVES)[0] == CB_UNKNOWN
    assert "setoption name Hash value 64" in sent(log, "setoption")
    assert "setoption name NoProgressPlies value 60" in sent(log, "setoption")
    assert "setoption name OwnBook value true" in sent(log, "setoption")
    # with the engine running: its option list is known and changes go straight to it
    handled, reply = bridge.command("set option Hash 128")
    assert handled == 1 and reply == "Hash = 128"
    assert sent(log, "setoption")[-1] == "setoption name Hash value 128"
    assert bridge.command("set option Frobs 3") == (0, "the engine has no option 'Frobs'")
    assert bridge.command("set option Hash") == (0, "set option needs: set option <name> <value>")


def test_engine_rejections_are_reported(engine_bridge):
    board, color = board_of(Position.start())
    engine_bridge.getmove(board, color, maxtime=0.1, info=CB_RESET_MOVES)    # the engine runs from here on
    handled, reply = engine_bridge.command("set option Hash 0")
    assert handled == 0 and "out of range" in reply        # the engine's own message
    assert engine_bridge.command("get hashsize") == (1, "16")
    assert engine_bridge.command("set option Skill Level 20") == (1, "Skill Level = 20")
    handled, reply = engine_bridge.command("set option Clear Hash")
    assert handled == 1 and "pressed" in reply


def test_ini_options_reach_the_engine_and_refusals_show(bridge_library, tmp_path):
    bridge = load_bridge(bridge_library, tmp_path, ENGINE_COMMAND, options={"Hash": "0", "Skill Level": "0"})
    assert bridge.command("get hashsize") == (1, "0")
    board, color = board_of(Position.start())
    assert bridge.getmove(board, color, maxtime=0.1, info=CB_RESET_MOVES)[1].oldpiece == CB_BLACK | CB_MAN
    assert "option Hash rejected: setoption: option Hash value 0 is out of range 1..4096" in bridge.text
    assert bridge.command("get hashsize") == (1, "16")          # dropped: the engine's default is back
    assert bridge.command("get option Skill Level") == (1, "0")


# --- getmove against the real engine ------------------------------------------------------------

@pytest.mark.parametrize("fen", ["B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12",
                                 "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"])
def test_start_position_for_both_colours(engine_bridge, fen):
    pos = Position.from_fen(fen)
    board, color = board_of(pos)
    result, move = engine_bridge.getmove(board, color, maxtime=0.3, info=CB_RESET_MOVES)
    assert result == CB_UNKNOWN, engine_bridge.text
    played = [m for m in pos.legal_moves() if list(m.squares) == cbmove_squares(move)]
    assert len(played) == 1, engine_bridge.text
    assert_cbmove_is(move, pos, played[0])
    assert cells(board) == cells(board_of(pos.play(played[0]))[0])   # board updated in place
    assert engine_bridge.text.startswith("uci_checkers") and " plays " in engine_bridge.text


@pytest.mark.parametrize("fen, expected", [
    ("B:W18:B14", "14x23"),                     # single jump
    ("B:W10,19:B6", "6x15x24"),                 # double jump
    ("B:W18,27:B14", "14x23x32"),               # double jump that crowns
    ("B:W26,27:B22", "22x31"),                  # crowning ends the capture although the king could jump on
    ("W:W9:B5,6", "9x2"),                       # White crowns on Black's back row
    ("W:WK14:B10,11,18,19", None),              # a king's loop: two paths, same start and end
])
def test_captures_fill_the_cbmove_exactly(engine_bridge, fen, expected):
    pos = Position.from_fen(fen)
    board, color = board_of(pos)
    result, move = engine_bridge.getmove(board, color, maxtime=0.2, info=CB_RESET_MOVES)
    assert result in (CB_UNKNOWN, CB_WIN), engine_bridge.text
    played = [m for m in pos.legal_moves() if list(m.squares) == cbmove_squares(move)]
    assert len(played) == 1, engine_bridge.text
    if expected:
        assert played[0].text() == expected
    assert_cbmove_is(move, pos, played[0])
    assert cells(board) == cells(board_of(pos.play(played[0]))[0])


@pytest.mark.parametrize("fen", ["W:W:B5", "B:W32:B28"])
def test_no_legal_move_returns_a_loss(engine_bridge, fen):
    board, color = board_of(Position.from_fen(fen))
    before = cells(board)
    result, move = engine_bridge.getmove(board, color)
    assert result == CB_LOSS
    assert cells(board) == before and move.jumps == 0 and move.oldpiece == 0
    assert "no legal move" in engine_bridge.text


def test_a_won_position_returns_win(engine_bridge):
    pos = Position.from_fen("B:WK29:BK1,K2,K3")     # three kings against one: the engine sees the win
    board, color = board_of(pos)
    result, _ = engine_bridge.getmove(board, color, maxtime=1.0, info=CB_RESET_MOVES | CB_EXACT_TIME)
    assert result == CB_WIN, engine_bridge.text
    assert "win in" in engine_bridge.text


def test_playnow_stops_a_long_search_within_100ms(engine_bridge):
    board, color = board_of(Position.start())
    engine_bridge.getmove(board, color, maxtime=0.05)   # the engine is up (start-up is not what is measured)
    latencies = []
    for _ in range(3):
        board, color = board_of(Position.start())
        playnow = ctypes.c_int(0)
        pressed = []

        def press() -> None:
            time.sleep(1.0)
            pressed.append(time.monotonic())
            playnow.value = 1

        presser = threading.Thread(target=press)
        presser.start()
        started = time.monotonic()
        result, move = engine_bridge.getmove(board, color, maxtime=60.0, info=CB_RESET_MOVES | CB_EXACT_TIME,
                                             playnow=playnow)
        returned = time.monotonic()
        presser.join()
        assert returned - started < 10, "the search was not stopped"
        assert move.oldpiece == CB_BLACK | CB_MAN, engine_bridge.text
        latencies.append(returned - pressed[0])
    print(f"playnow -> return: {', '.join(f'{1000 * s:.1f} ms' for s in latencies)}")
    assert statistics.median(latencies) < 0.100, latencies


def test_short_game_through_the_library(engine_bridge):
    """Both sides played by getmove, the board carried from call to call as CheckerBoard does."""
    game = Game()
    board, color = board_of(game.position)
    transcript = []
    for ply in range(16):
        if not game.position.legal_moves():
            break
        before = game.position
        result, move = engine_bridge.getmove(board, color, maxtime=0.15,
                                             info=(CB_RESET_MOVES if ply == 0 else 0) | CB_EXACT_TIME)
        played = [m for m in before.legal_moves() if list(m.squares) == cbmove_squares(move)]
        assert len(played) == 1, engine_bridge.text
        assert_cbmove_is(move, before, played[0])
        game.push(played[0])
        assert cells(board) == cells(board_of(game.position)[0])
        transcript.append(f"{ply + 1:>2}. {'Black' if color == CB_BLACK else 'White'} {played[0].text():<10} "
                          f"return {result}  status: {engine_bridge.text[:110]}")
        color = CB_WHITE if color == CB_BLACK else CB_BLACK
    print("\nCheckerBoard bridge game transcript:\n" + "\n".join(transcript))   # shown with pytest -s
    assert len(transcript) == 16


# --- the game history, time controls, restarts (fake engine with an input log) ----------------

def position_line(start: str, moves: list[Move]) -> str:
    """What protocol.md's host should send: the FEN after the last capture or man move, then the moves since."""
    pos, base, since = Position.from_fen(start), Position.from_fen(start).fen(), []
    for m in moves:
        man = pos.piece_at(m.from_square) in ("b", "w")
        pos = pos.play(m)
        if m.is_capture or man:
            base, since = pos.fen(), []
        else:
            since.append(m.text())
    return f"position fen {base}" + (" moves " + " ".join(since) if since else "")


def engine_reply(before: Position, board: Board) -> Move:
    """The move that turned before into board."""
    (move,) = [m for m in before.legal_moves() if cells(board_of(before.play(m))[0]) == cells(board)]
    return move


def test_history_is_sent_from_the_last_irreversible_move(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path)
    start = "B:WK29:BK4"
    pos = Position.from_fen(start)
    board, color = board_of(pos)
    bridge.getmove(board, color, info=CB_RESET_MOVES)
    assert sent(log, "ucinewgame") == ["ucinewgame"]
    assert sent(log, "position")[-1] == "position fen B:WK29:BK4"
    # the bridge recognises the opponent's reply on the board it is given next
    played = [engine_reply(pos, board)]
    pos = pos.play(played[0])
    played.append(pos.legal_moves()[0])
    pos = pos.play(played[1])
    board, color = board_of(pos)
    bridge.getmove(board, color)
    assert sent(log, "position")[-1] == position_line(start, played) == f"position fen {start} moves {played[0]} {played[1]}"
    assert len(sent(log, "ucinewgame")) == 1
    # CheckerBoard's own history (set gamehist) wins when it matches the board
    assert bridge.command("set gamehist B:WK29:BK4 4-8 29-25 8-11 25-22") == (1, "ok")
    board, color = board_of(Game.from_moves(Position.from_fen(start), ["4-8", "29-25", "8-11", "25-22"]).position)
    bridge.getmove(board, color)
    assert sent(log, "position")[-1] == "position fen B:WK29:BK4 moves 4-8 29-25 8-11 25-22"
    assert bridge.command("set gamehist B:WK29:BK4 4-9")[0] == 0          # an illegal move is refused
    # men moves and captures cannot be undone: the history restarts after them
    start = "W:W21,22,K32:BK1,9"
    pos = Position.from_fen(start)
    board, color = board_of(pos)
    bridge.getmove(board, color, info=CB_RESET_MOVES)
    assert sent(log, "position")[-1] == f"position fen {start}"
    played = []
    for _ in range(4):
        played.append(engine_reply(pos, board))
        pos = pos.play(played[-1])
        if not pos.legal_moves():
            break
        played.append(pos.legal_moves()[-1])
        pos = pos.play(played[-1])
        if not pos.legal_moves():
            break
        board, color = board_of(pos)
        bridge.getmove(board, color)
        assert sent(log, "position")[-1] == position_line(start, played)
    # an unrelated position without CB_RESET_MOVES: a fresh start, no stale moves
    board, color = board_of(Position.from_fen("B:WK20:BK9"))
    bridge.getmove(board, color)
    assert sent(log, "position")[-1] == "position fen B:WK20:BK9"


def test_time_controls_map_to_go(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path)
    board, color = board_of(Position.start())
    bridge.getmove(board, color, maxtime=0.25, info=CB_EXACT_TIME)
    assert sent(log, "go")[-1] == "go movetime 250"
    board, color = board_of(Position.start())
    bridge.getmove(board, color, maxtime=0.5)                  # on average: a two-move clock
    assert sent(log, "go")[-1] == "go btime 1000 wtime 1000 movestogo 2"
    board, color = board_of(Position.start())
    bridge.getmove(board, color, maxtime=1.0, info=1 << 2, moreinfo=(5000 << 16) | 100)       # units of 1 ms
    assert sent(log, "go")[-1] == "go btime 5000 wtime 5000 binc 100 winc 100"
    board, color = board_of(Position.start())
    bridge.getmove(board, color, maxtime=1.0, info=3 << 2, moreinfo=(600 << 16) | 20)         # units of 0.1 s
    assert sent(log, "go")[-1] == "go btime 60000 wtime 60000 binc 2000 winc 2000"
    board, color = board_of(Position.start())
    bridge.getmove(board, color, maxtime=1e12, info=CB_EXACT_TIME)   # "infinite" analysis levels: one day at most
    assert sent(log, "go")[-1] == "go movetime 86400000"


def engine_children(marker: str) -> list[int]:
    """Processes whose parent is this test process and whose command line contains marker (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and marker in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the engine process through /proc")
def test_an_engine_killed_between_moves_is_restarted(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path)
    start = Position.from_fen("B:WK29:BK4")
    board, color = board_of(start)
    assert bridge.getmove(board, color, info=CB_RESET_MOVES)[1].oldpiece == CB_BLACK | CB_KING
    played = [engine_reply(start, board)]
    (pid,) = engine_children(str(log))
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while engine_children(str(log)) and time.monotonic() < deadline:
        time.sleep(0.01)
    pos = start.play(played[0])
    played.append(pos.legal_moves()[0])
    board, color = board_of(pos.play(played[1]))
    before = cells(board)
    result, move = bridge.getmove(board, color)
    assert move.oldpiece == CB_BLACK | CB_KING and cells(board) != before, bridge.text
    assert len(sent(log, "uci")) == 2                         # a second engine answered
    assert len(engine_children(str(log))) == 1
    # the new engine got the game so far, not just the board
    assert sent(log, "position")[-1] == f"position fen {start.fen()} moves {played[0]} {played[1]}"


def test_an_engine_that_dies_on_go_is_restarted_within_the_call(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path, "--fault", "crash", "--fault-at", "2")
    board, color = board_of(Position.start())
    assert bridge.getmove(board, color, info=CB_RESET_MOVES)[1].oldpiece == CB_BLACK | CB_MAN
    result, move = bridge.getmove(board, CB_WHITE)             # the engine exits instead of answering
    assert move.oldpiece == CB_WHITE | CB_MAN, bridge.text
    assert len(sent(log, "uci")) == 2


def test_a_hung_engine_is_killed_and_replaced(bridge_library, tmp_path):
    bridge, log = mover_bridge(bridge_library, tmp_path, "--fault", "hang", "--fault-at", "1")
    board, color = board_of(Position.start())
    before = cells(board)
    playnow = ctypes.c_int(1)                                  # the user presses "play" at once
    started = time.monotonic()
    result, move = bridge.getmove(board, color, maxtime=30, info=CB_EXACT_TIME, playnow=playnow)
    assert time.monotonic() - started < 6                      # stop grace, then the engine is killed
    assert result == CB_UNKNOWN and move.oldpiece == 0 and cells(board) == before
    assert "did not answer" in bridge.text
    if Path("/proc/self/stat").exists():
        assert engine_children(str(log)) == []


@pytest.mark.parametrize("fault, message", [("illegal", "the engine played '9-10', not a legal move here"),
                                            ("malformed", "the engine played 'zz', not a legal move here"),
                                            ("none", "the engine found no move")])
def test_a_wrong_answer_leaves_the_board_alone(bridge_library, tmp_path, fault, message):
    bridge, log = mover_bridge(bridge_library, tmp_path, "--fault", fault)
    board, color = board_of(Position.start())
    before = cells(board)
    result, move = bridge.getmove(board, color, info=CB_RESET_MOVES)
    assert result == CB_UNKNOWN and move.oldpiece == 0 and cells(board) == before
    assert message in bridge.text
    assert bridge.getmove(board, color)[1].oldpiece == CB_BLACK | CB_MAN     # the next go is answered normally


def test_a_missing_engine_is_reported(bridge_library, tmp_path):
    bridge = load_bridge(bridge_library, tmp_path, str(tmp_path / "no-such-engine"))
    board, color = board_of(Position.start())
    result, move = bridge.getmove(board, color)
    assert result == CB_UNKNOWN and move.oldpiece == 0
    assert "no-such-engine" in bridge.text and "check the command" in bridge.text
    # set engine switches to a working one for the next move
    handled, _ = bridge.command(f"set engine {quoted(sys.executable)} {quoted(MOVER)}")
    assert handled == 1
    assert bridge.getmove(board, color)[1].oldpiece == CB_BLACK | CB_MAN, bridge.text


# --- the Windows DLL --------------------------------------------------------------------------

def windows_tool(name: str) -> str:
    if shutil.which(name) is None:
        if REQUIRE_WINDOWS_TOOLS:
            pytest.fail(f"{name} is required here (UCI_CHECKERS_REQUIRE_MINGW=1) but not installed")
        pytest.skip(f"{name} not installed (Debian: gcc-mingw-w64-x86-64)")
    return name


@pytest.fixture(scope="session")
def windows_dll(tmp_path_factory) -> Path:
    windows_tool(WINDOWS_CC)
    return cbtool.build("windows", tmp_path_factory.mktemp("cb_windows"))


def test_windows_dll_exports_the_checkerboard_api(windows_dll):
    names = cbtool.pe_exports(windows_dll)
    assert {"getmove", "enginecommand", "islegal"} <= set(names)
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if objdump:  # a second, independent reading of the export table
        listing = subprocess.run([objdump, "-p", str(windows_dll)], capture_output=True, text=True, timeout=60).stdout
        table = listing.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
        assert sorted(line.split("]")[-1].strip() for line in table.strip().splitlines()) == sorted(names)
    print("exports:", " ".join(names))


def test_install_writes_the_dll_and_its_ini(windows_dll, tmp_path):
    dll, ini = cbtool.install(tmp_path, windows_dll, command="uci-checkers", options={"Hash": "64"})
    assert dll.read_bytes() == windows_dll.read_bytes()
    text = ini.read_text()
    assert "command = uci-checkers" in text and "Hash = 64" in text
    assert (tmp_path / cbtool.HELP_FILE).is_file()
    assert cbtool.main(["install", str(tmp_path / "missing"), "--dll", str(windows_dll)]) == 2


def test_install_and_exports_input_errors_exit_2_in_one_line(tmp_path, capsys):
    # issue 20 item 11: these exited 1, and a missing --dll gave a raw "[Errno 2] ..."
    not_a_dll = tmp_path / "notes.txt"
    not_a_dll.write_text("hello")
    cases = [(["install", str(tmp_path), "--dll", str(tmp_path / "missing.dll")], "--dll"),
             (["install", str(tmp_path / "no-such-folder"), "--dll", str(not_a_dll)], "is not a directory"),
             (["install", str(tmp_path), "--dll", str(not_a_dll)], "not a readable Windows DLL"),
             (["exports", str(tmp_path / "missing.dll")], "missing.dll"),
             (["install"], "required")]
    for argv, needle in cases:
        try:
            code = cbtool.main(argv)
        except SystemExit as exc:                            # a usage error found by the parser
            code = exc.code
        assert code == 2, argv
        err = capsys.readouterr().err
        assert needle in err and "Errno" not in err and "Traceback" not in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, (argv, err)
    assert list(tmp_path.iterdir()) == [not_a_dll]          # nothing was installed


def test_dll_loads_under_wine(windows_dll):
    from uci_checkers.protocols.cbengine import find_wine

    wine = find_wine()
    if wine is None:
        if REQUIRE_WINDOWS_TOOLS:
            pytest.fail("wine is required here (UCI_CHECKERS_REQUIRE_MINGW=1) but not installed")
        pytest.skip("wine not installed")
    probe, stand_in_engine = cbtool.build_wine_probe(windows_dll.parent)
    # one prefix per machine, reused between runs (creating it takes ~15 s)
    prefix = Path(tempfile.gettempdir()) / f"uci_checkers_wineprefix_{os.getuid() if hasattr(os, 'getuid') else 0}"
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEDEBUG="-all", WINEDLLOVERRIDES="mscoree,mshtml=")
    engine = "Z:" + str(stand_in_engine).replace("/", "\\")          # wine maps / to drive Z:
    done = subprocess.run([wine, str(probe), str(windows_dll), engine], capture_output=True, text=True,
                          timeout=240, env=env, cwd=windows_dll.parent)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "name -> 1 'uci_checkers'" in done.stdout and "OK" in done.stdout.splitlines()[-1]
    assert "wine_engine plays 11-15" in done.stdout        # a getmove through the Win32 process layer
    assert "wait: playnow -> return" in done.stdout and "hang: playnow -> return" in done.stdout
