"""``uci-checkers cbengine``: CheckerBoard engine libraries served over protocol.md.

The library under test is ``tests/engines/cb_test_engine.c`` (built here with the C compiler, with
the bridge's rules core ``bridge/checkerboard/board.c``), whose modes misbehave on purpose.  Most
tests drive :class:`CBEngineProtocol` in this process over ctypes (each test loads its own copy of
the library: it keeps its mode in a global) or over the native build of the wine host
``bridge/cbhost/cbhost.c``; a crash or a hang is driven through the real process; matches run
``uci-checkers match`` against the package's engine.  The rules core judges every move.
"""
from __future__ import annotations

import ctypes
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

from uci_checkers.engine.timeman import GoParams
from uci_checkers.protocols import cbengine as cb
from uci_checkers.rules.pdn import read_pdn_file
from uci_checkers.rules.position import Game, Position
from uci_checkers.tools import checkerboard as cbtool
from uci_checkers.util.cbuild import COMMON_FLAGS, WINDOWS_CC, compile_c

REPO = Path(__file__).resolve().parent.parent
ENGINE_SOURCE = REPO / "tests" / "engines" / "cb_test_engine.c"
BOARD_DIR = REPO / "bridge" / "checkerboard"
POSITIONS = REPO / "tests" / "data" / "cb_bridge_positions.txt"
REQUIRE_WINDOWS_TOOLS = os.environ.get("UCI_CHECKERS_REQUIRE_MINGW") == "1"
PROTOCOL_LINE = re.compile(r"^(id (name|author) .+|option name .+|uciok|readyok|info .+|bestmove .+)$")


def env_with_repo(**extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# --- building the test engine and the hosts -----------------------------------------------------

@pytest.fixture(scope="session")
def engine_so(tmp_path_factory) -> Path:
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip("no C compiler (cc) to build the test engine")
    out = tmp_path_factory.mktemp("cb_engine") / "cb_test_engine.so"
    compile_c([cc, *COMMON_FLAGS, "-D_POSIX_C_SOURCE=200809L", "-fPIC", "-fvisibility=hidden", "-shared",
               "-I", str(BOARD_DIR), "-o", "@OUT@", str(ENGINE_SOURCE), str(BOARD_DIR / "board.c")], out)
    return out


@pytest.fixture(scope="session")
def native_host(tmp_path_factory, engine_so) -> Path:
    return cb.build_host("native", tmp_path_factory.mktemp("cb_host"))


def fresh_copy(library: Path, folder: Path, name: Optional[str] = None) -> Path:
    """A copy under a new name: dlopen of the same file would share the library's globals."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / (name or library.name)
    shutil.copyfile(library, copy)
    return copy


class Session:
    """One CBEngineProtocol in this process; its output lines in a queue, its fatal exits recorded."""

    def __init__(self, library: object, grace: float = 2.0, **options: str) -> None:
        self.out: "queue.Queue[str]" = queue.Queue()
        self.exits: list[int] = []
        self.proto = cb.CBEngineProtocol(library, write=self.out.put, fatal=self.exits.append, grace=grace, **options)

    def send(self, *lines: str) -> None:
        for line in lines:
            self.proto.handle(line)

    def until(self, pattern: str, timeout: float = 15.0) -> list[str]:
        """Lines up to and including the first that matches ``pattern``."""
        seen, deadline = [], time.monotonic() + timeout
        while True:
            try:
                line = self.out.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout} s; got {seen}") from None
            seen.append(line)
            if re.search(pattern, line):
                return seen

    def quiet(self, seconds: float) -> list[str]:
        """Whatever comes within ``seconds``."""
        time.sleep(seconds)
        seen = []
        while not self.out.empty():
            seen.append(self.out.get())
        return seen


def native_session(engine_so: Path, folder: Path, monkeypatch, mode: str = "first", grace: float = 2.0,
                   setup: tuple[str, ...] = (), **options: str) -> tuple[Session, Path]:
    """A session over a fresh copy of the test engine; ``setup``: enginecommands sent before the protocol
    asks the library its name; ``options``: CBEngineProtocol's keywords (clock=, score=)."""
    log = folder / "engine.log"
    monkeypatch.setenv("CB_TEST_LOG", str(log))
    monkeypatch.setenv("CB_TEST_MODE", mode)
    library = cb.NativeLibrary(fresh_copy(engine_so, folder))
    for command in setup:
        assert library.command(command)[0] == 1
    return Session(library, grace, **options), log


def logged(log: Path, word: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith(word)] if log.exists() else []


def read_positions() -> list[str]:
    return [line.strip() for line in POSITIONS.read_text().splitlines() if line.strip() and not line.startswith("#")]


# --- the board, the move and the clock: pure functions ------------------------------------------

def test_board_mapping_agrees_with_the_bridges_c_code(tmp_path):
    """The Python mapping (ctypes path) and bridge/checkerboard/board.c (the wine host's) on 414 positions."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler (cc) to build the bridge")
    lib = ctypes.CDLL(str(cbtool.build("native", tmp_path)))
    fens = read_positions()
    assert len(fens) >= 400
    for fen in fens:
        pos = Position.from_fen(fen)
        ours, colour = cb.board_of_position(pos)
        theirs, their_colour = cb.Board(), ctypes.c_int()
        assert lib.cbbridge_fen_to_board(fen.encode(), theirs, ctypes.byref(their_colour)) == 0
        assert [list(c) for c in ours] == [list(c) for c in theirs] and colour == their_colour.value, fen
    for square in range(1, 33):
        assert cb.xy_square(*cb.square_xy(square)) == square
    assert cb.square_xy(1) == (6, 0) and cb.square_xy(4) == (0, 0) and cb.square_xy(32) == (1, 7)
    assert cb.xy_square(1, 0) == 0 and cb.xy_square(-1, -1) == 0 and cb.xy_square(8, 0) == 0
    start, colour = cb.board_of_position(Position.start())
    assert colour == cb.CB_BLACK and start[6][0] == cb.CB_BLACK | cb.CB_MAN and start[1][7] == cb.CB_WHITE | cb.CB_MAN


def raw(text_squares: tuple[int, ...], jumps: int, captured: tuple[int, ...] = (), path: Optional[tuple[int, ...]] = None):
    return cb.RawMove(jumps, text_squares[0], text_squares[-1], text_squares if path is None else path, captured)


def test_the_returned_move_is_checked_by_the_rules():
    start = Position.start()
    assert cb.resolve_move(start, raw((11, 15), 0)).text() == "11-15"
    double = Position.from_fen("B:W10,19:B6")
    assert cb.resolve_move(double, raw((6, 15, 24), 2, (10, 19))).text() == "6x15x24"
    # a library that fills from, to and the captured pieces but not the path
    assert cb.resolve_move(double, raw((6, 24), 2, (10, 19), path=(0, 0, 0))).text() == "6x15x24"
    assert cb.resolve_move(double, raw((6, 24), 2, (0, 0), path=(6, 0, 24))).text() == "6x15x24"
    with pytest.raises(cb.LibraryMoveError, match="not a legal move"):
        cb.resolve_move(start, raw((11, 18), 0))
    with pytest.raises(cb.LibraryMoveError, match="not a legal move"):
        cb.resolve_move(double, raw((6, 10), 0))            # a capture is compulsory
    with pytest.raises(cb.LibraryMoveError, match="returned no move"):
        cb.resolve_move(start, cb.RawMove(-1, 0, 0))
    with pytest.raises(cb.LibraryMoveError, match="returned no move"):   # a zeroed CBmove: (0, 0) is square 4
        cb.resolve_move(start, cb.RawMove(0, 4, 4, (4, 4)))
    with pytest.raises(cb.LibraryMoveError, match="not on the board"):
        cb.resolve_move(start, cb.RawMove(0, 11, 0))
    with pytest.raises(cb.LibraryMoveError, match="has 40 jumps"):
        cb.resolve_move(start, cb.RawMove(40, 11, 15))
    # a king's capture loop: two paths, one result -> either is fine; a wrong capture count is not
    loop = Position.from_fen("W:WK14:B10,11,18,19")
    paths = {m.squares for m in loop.legal_moves()}
    assert len(paths) == 2
    assert cb.resolve_move(loop, cb.RawMove(4, 14, 14, (14, 0, 0, 0, 0), (0, 0, 0, 0))).squares in paths
    with pytest.raises(cb.LibraryMoveError, match="not a legal move"):
        cb.resolve_move(loop, cb.RawMove(3, 14, 14))


def test_the_board_the_library_leaves_decides_first():
    """Cake and GuiNN leave the CBmove alone and play the move on the board, as CheckerBoard expects."""
    start = Position.start()
    after = cb.placement(start.play(start.parse_move("11-15")))
    assert cb.resolve_move(start, cb.RawMove(-1, 0, 0, board=after)).text() == "11-15"
    assert cb.resolve_move(start, cb.RawMove(0, 9, 13, (9, 13), board=after)).text() == "11-15"   # the board wins
    with pytest.raises(cb.LibraryMoveError, match="returned no move"):
        cb.resolve_move(start, cb.RawMove(-1, 0, 0, board=cb.placement(start)))
    garbage = list(cb.placement(start))
    garbage[10] = 0                                        # square 11 emptied, nothing arrives
    with pytest.raises(cb.LibraryMoveError, match=r"left a board that no legal move gives .* \(squares 11 changed\)"):
        cb.resolve_move(start, cb.RawMove(0, 11, 15, (11, 15), board=tuple(garbage)))
    loop = Position.from_fen("W:WK14:B10,11,18,19")     # two paths, one board: the CBmove picks the path
    second = loop.legal_moves()[1]
    board = cb.placement(loop.play(second))
    assert cb.resolve_move(loop, cb.RawMove(4, 14, 14, second.squares, board=board)) == second
    assert cb.resolve_move(loop, cb.RawMove(-1, 0, 0, board=board)).squares[-1] == 14


def test_ambiguous_moves_are_refused():
    pos = Position.from_fen("B:W6,7,14,15,23:BK2,K10")
    legal = pos.legal_moves()
    by_end: dict[tuple[int, int, int], list] = {}
    for m in legal:
        by_end.setdefault((m.squares[0], m.squares[-1], len(m.captured_squares)), []).append(m)
    ambiguous = [ms for ms in by_end.values() if len({pos.play(m) for m in ms}) > 1]
    assert ambiguous, [m.text() for m in legal]
    m = ambiguous[0][0]
    with pytest.raises(cb.LibraryMoveError, match="ambiguous"):
        cb.resolve_move(pos, cb.RawMove(len(m.captured_squares), m.squares[0], m.squares[-1]))
    # with the path given it is exact
    assert cb.resolve_move(pos, cb.RawMove(len(m.captured_squares), m.squares[0], m.squares[-1], m.squares)) == m


def test_go_maps_to_maxtime_info_and_moreinfo():
    plan = cb.plan_search(GoParams(movetime=100), 0, True)
    assert (plan.maxtime, plan.info, plan.moreinfo, plan.hard_limit_ms) == (0.1, cb.CB_EXACT_TIME, 0, 100.0)
    # a clock: the share of the side to move, and the incremental bits in the finest unit that fits
    plan = cb.plan_search(GoParams(btime=60000, wtime=1000, binc=1000, winc=0), 0, True)
    assert plan.info == 1 << 2 and plan.moreinfo == (60000 << 16 | 1000) - (1 << 32)
    assert plan.maxtime == pytest.approx((60000 / 30 + 750) / 1000) and plan.hard_limit_ms == 57000
    assert (plan.moreinfo & 0xFFFFFFFF) >> 16 == 60000
    plan = cb.plan_search(GoParams(btime=60000, wtime=600000, winc=2000), 1, True)    # White's clock, 10 ms units
    assert plan.info == 2 << 2 and (plan.moreinfo & 0xFFFFFFFF) == (60000 << 16 | 200)
    plan = cb.plan_search(GoParams(wtime=10 ** 9, btime=10 ** 9), 1, True)            # beyond 16 bits of 0.1 s
    assert plan.info == 3 << 2 and (plan.moreinfo & 0xFFFFFFFF) >> 16 == 0xFFFF
    plan = cb.plan_search(GoParams(btime=3000, wtime=3000, movestogo=2), 0, False)   # the share, exactly
    assert plan.info == cb.CB_EXACT_TIME and plan.moreinfo == 0 and plan.maxtime == pytest.approx(1.5)
    for params in (GoParams(depth=5), GoParams(nodes=10 ** 6), GoParams(infinite=True), GoParams()):
        plan = cb.plan_search(params, 0, True)
        assert plan.maxtime == cb.LONG_MAXTIME_S and plan.info == cb.CB_EXACT_TIME and plan.hard_limit_ms is None
    assert cb.plan_search(GoParams(depth=5), 0, True).depth == 5
    assert cb.plan_search(GoParams(infinite=True), 0, True).hold


def test_status_strings_are_parsed_where_they_are_plain():
    bridge = cb.parse_status("uci_checkers  depth 9/21  eval +0.35  time 0.52s  nodes 81234  156 kN/s  pv 11-15 23-19")
    assert bridge == cb.StatusReport(9, 35, 81234)
    assert cb.parse_status("cb_test_engine depth 4/6  eval +0.20  nodes 4000") == cb.StatusReport(4, 20, 4000)
    assert cb.parse_status("value=-12 depth 17 1234567 nodes") == cb.StatusReport(17, -12, 1234567)
    assert cb.parse_status("uci_checkers  depth 12/30  eval win in 7  nodes 5") == cb.StatusReport(12, None, 5)
    cake = "depth 17/47/25.1  time 0.27s  value=0  nodes 1376325  5193kN/s  db 0% cut 95.4% pv 4-8 26-23 15-18"
    assert cb.parse_status(cake) == cb.StatusReport(17, 0, 1376325)
    guinn = ("Eval: 12  Depth: 16/36 (0/7)  Move: 11-15   Time: 0.20s   Speed 3582 KN/s   Nodes: 720.14 kn "
             "(db: 0 n) 11-15  23-18")
    assert cb.parse_status(guinn) == cb.StatusReport(16, 12, 720140)
    assert cb.parse_status("interrupt: best 9-14 value 4") is None
    assert cb.parse_status("thinking...") is None
    assert cb.parse_status("book move") is None


def test_ini_files(tmp_path):
    ini = tmp_path / "engine.ini"
    ini.write_text("; settings\n[engine]\ndirectory = books   ; relative to the ini\nscore = Black\n[options]\n"
                   "Hash = 64\nCB = set book 0\nCB = set dbmbytes 256\n")
    settings = cb.read_ini(ini)
    assert settings.directory == (tmp_path / "books").resolve() and settings.score == "black"
    assert settings.commands == [("Hash", "set hashsize 64"), ("CB", "set book 0"), ("CB", "set dbmbytes 256")]
    for text, message in (("[engine]\ncolour = red\n", "unknown setting 'colour'"), ("[books]\n", "unknown section"),
                          ("[options]\nHash = lots\n", "Hash needs a size"), ("Hash = 4\n", "outside a section"),
                          ("[options]\njust words\n", "expected NAME = VALUE"),
                          ("[engine]\nclock = sundial\n", "clock is one of auto, incremental, maxtime"),
                          ("[engine]\nscore = red\n", "score is one of auto, mover, black, white")):
        ini.write_text(text)
        with pytest.raises(cb.IniError, match=message):
            cb.read_ini(ini)
    with pytest.raises(cb.IniError, match="cannot read"):
        cb.read_ini(tmp_path / "missing.ini")


# --- protocol.md through ctypes --------------------------------------------------------------------

def test_uci_names_the_library_and_its_options(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch)
    s.send("uci")
    lines = s.until("^uciok$")
    assert lines == ["id name cb_test_engine", "id author CheckerBoard engine library, served by uci-checkers cbengine",
                     "option name Hash type spin default 32 min 1 max 1048576",
                     "option name CB type string default <empty>", "uciok"]
    s.send("isready")
    assert s.until("readyok") == ["readyok"]
    assert "command name -> 1 cb_test_engine" in logged(log, "command")


def test_a_game_through_the_library_and_the_reset_flag(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch)
    game = Game()
    s.send("ucinewgame", "position startpos", "go movetime 20")
    lines = s.until("^bestmove")
    assert lines[-2:-1] == ["info string getmove result: unknown"]
    best = lines[-1].split()[1]
    game.push_text(best)
    reply = game.position.legal_moves()[-1]
    game.push(reply)
    s.send(f"position startpos moves {best} {reply}", "go movetime 20")          # the game went on by one move
    game.push_text(s.until("^bestmove")[-1].split()[1])
    s.send("position startpos moves " + " ".join(m.text() for m in game.moves), "go movetime 20")   # by none
    s.until("^bestmove")
    s.send("position fen B:W18,22:B9,10", "go movetime 20")                     # elsewhere
    s.until("^bestmove")
    s.send("ucinewgame", "position startpos", "go movetime 20")
    s.until("^bestmove")
    gets = logged(log, "getmove")
    infos = [int(re.search(r"info=(\d+)", g).group(1)) for g in gets]
    assert infos == [3, 2, 2, 3, 3], gets          # CB_RESET_MOVES (1) | CB_EXACT_TIME (2)
    assert all("maxtime=0.020" in g for g in gets)
    assert gets[0].endswith("fen=B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12")
    assert gets[1].endswith("fen=" + Game.from_moves(None, [best, reply.text()]).position.fen())


def test_clocks_reach_the_library_as_incremental_time(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch)
    s.send("position startpos moves 11-15", "go wtime 60000 btime 5000 winc 1000 binc 0")
    s.until("^bestmove")
    (line,) = logged(log, "getmove")
    info, moreinfo = (int(re.search(rf"{k}=(-?\d+)", line).group(1)) for k in ("info", "moreinfo"))
    assert info == 1 | 1 << 2 and (moreinfo & 0xFFFFFFFF) == (60000 << 16 | 1000)
    assert "maxtime=2.750" in line


@pytest.mark.parametrize("setup, clock, incremental", [
    ((), "auto", True), (("set protocolversion 1",), "auto", False), (("set name Cake 1.89g",), "auto", False),
    ((), "maxtime", False), (("set protocolversion 1",), "incremental", True)])
def test_how_a_clock_reaches_the_library(engine_so, tmp_path, monkeypatch, setup, clock, incremental):
    s, log = native_session(engine_so, tmp_path, monkeypatch, setup=setup, clock=clock)
    s.send("position startpos", "go wtime 3000 btime 3000 movestogo 2")
    s.until("^bestmove")
    line = logged(log, "getmove")[-1]
    info = int(re.search(r"info=(\d+)", line).group(1))
    assert (info & 12 != 0) == incremental and (info & cb.CB_EXACT_TIME != 0) == (not incremental), line
    assert "maxtime=1.500" in line


@pytest.mark.parametrize("setup, score, moves, sign", [
    ((), "auto", "", 1), ((), "auto", " moves 11-15", 1),                  # the side to move's view
    (("set name GuiNN Checkers 2.06",), "auto", "", 1),                    # GuiNN: Black's view
    (("set name GuiNN Checkers 2.06",), "auto", " moves 11-15", -1),
    ((), "black", " moves 11-15", -1), ((), "white", "", -1), ((), "white", " moves 11-15", 1),
    (("set name GuiNN Checkers 2.06",), "mover", " moves 11-15", 1)])
def test_status_scores_are_turned_to_the_side_to_move(engine_so, tmp_path, monkeypatch, setup, score, moves, sign):
    s, _ = native_session(engine_so, tmp_path, monkeypatch, mode="status", setup=setup, score=score)
    s.send("position startpos" + moves, "go movetime 100")
    scores = [int(m.group(1)) for line in s.until("^bestmove") if (m := re.match(r"info depth \d+ score cp (-?\d+)", line))]
    assert scores and all(value * sign > 0 for value in scores), scores   # the library shows +0.05 a depth


def test_a_library_that_only_plays_on_the_board(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode="board")
    s.send("position startpos moves 11-15", "go movetime 10")
    assert s.until("^bestmove")[-1] == "bestmove 21-17"


def test_status_strings_become_info_lines_and_depth_sets_playnow(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode="status")
    s.send("position startpos", "go movetime 300")
    lines = s.until("^bestmove")
    infos = [line for line in lines if line.startswith("info depth")]
    assert infos and all(re.fullmatch(r"info depth \d+ score cp \d+ nodes \d+ time \d+", line) for line in infos)
    assert any(line.startswith("info string cb_test_engine depth") for line in lines)
    assert len([line for line in lines if line.startswith("info string cb_test_engine")]) <= 5   # ten a second
    started = time.monotonic()
    s.send("go depth 3")
    lines = s.until("^bestmove")
    assert time.monotonic() - started < 5.0                       # not the day-long maxtime
    assert any(re.match(r"info depth ([3-9]|\d\d)", line) for line in lines), lines
    assert "maxtime=86400.000" in logged(log, "getmove")[-1]
    s.send("go nodes 5000")
    assert any(re.match(r"info depth \d+ score cp \d+ nodes ([5-9]\d{3}|\d{5,})", line) for line in s.until("^bestmove"))


def test_playnow_ends_wait_and_infinite_searches(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode="wait")
    started = time.monotonic()
    s.send("position startpos", "go movetime 150")              # the library waits for playnow: the time limit sets it
    s.until("^bestmove")
    assert 0.14 <= time.monotonic() - started < 2.0
    s.send("go infinite")
    assert not [line for line in s.quiet(0.3) if line.startswith("bestmove")]
    s.send("isready")
    assert s.until("readyok")[-1] == "readyok"                   # answered during the search
    s.send("stop")
    assert s.until("^bestmove")[-1].startswith("bestmove ")
    s.send("stop")
    assert s.until("error")[-1] == "info string error: stop: no search is running"
    # a library that returns by itself during infinite: the bestmove waits for stop, as in UCI
    s.send("setoption name CB value set mode first", "go infinite")
    assert not [line for line in s.quiet(0.3) if line.startswith("bestmove")]
    s.send("stop")
    assert s.until("^bestmove")[-1].startswith("bestmove ")
    # a stop right after go is never lost, however late the worker thread starts (playnow is armed before)
    s.send("setoption name CB value set mode wait")
    search = cb.CBEngineProtocol._search

    def late_search(self, job) -> None:
        time.sleep(0.2)
        search(self, job)

    monkeypatch.setattr(cb.CBEngineProtocol, "_search", late_search)
    s.send("go infinite", "stop")
    assert s.until("^bestmove|error", timeout=5)[-1].startswith("bestmove ")
    monkeypatch.setattr(cb.CBEngineProtocol, "_search", search)
    # stop then go at once: the new search starts after the stopped one's bestmove
    s.send("go infinite", "stop", "go movetime 50")
    assert [line for line in s.until("^bestmove") if line.startswith("bestmove")]
    assert [line for line in s.until("^bestmove") if line.startswith("bestmove")]


@pytest.mark.parametrize("mode, message", [
    ("illegal", r"info string error: the library played 9-\d+, not a legal move in B:W21,.*; legal moves: 9-13 9-14"),
    ("none", "info string error: the library returned no move")])
def test_a_wrong_move_is_an_error_and_no_move(engine_so, tmp_path, monkeypatch, mode, message):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode=mode)
    s.send("position startpos", "go movetime 10")
    lines = s.until("^bestmove")
    assert re.match(message, lines[-2]) and lines[-1] == "bestmove (none)", lines


def test_getmove_result_and_no_legal_move(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch)
    s.send("setoption name CB value set result 1", "position startpos", "go movetime 10")
    assert "info string getmove result: win" in s.until("^bestmove")
    s.send("position fen W:W:B5", "go movetime 10")
    assert s.until("^bestmove")[-2:] == ["info string result black no legal moves", "bestmove (none)"]
    assert len(logged(log, "getmove")) == 1                     # the library was not asked


def test_options_go_through_enginecommand(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode="wait")
    s.send("setoption name Hash value 64", "setoption name CB value get hashsize")
    assert s.until("get hashsize") == ["info string CB get hashsize -> 64"]
    s.send("setoption name CB value frobnicate")           # shown, not an error: Cake answers 0 to real commands
    assert s.until("frobnicate") == ["info string CB frobnicate -> ? (returned 0)"]
    s.send("setoption name Hash value 5000")
    assert s.until("error") == ["info string error: setoption: the library refused 'set hashsize 5000': hashsize "
                                "must be 1..4096 MB"]
    for line, message in (("setoption name Book value 2", "unknown option 'Book'"),
                          ("setoption name Hash value lots", "option Hash needs a whole number"),
                          ("setoption name CB", "option CB needs a value"),
                          ("go ponder", "go: ponder is not available"), ("go searchmoves 11-15", "searchmoves"),
                          ("go mate 3", "go: mate is not available"), ("go perft 3", "go perft: not available"),
                          ("go depth x", "go: depth needs a whole number"), ("ponderhit", "ponderhit: no ponder"),
                          ("position middle", "position needs startpos or fen"), ("frob", "unknown command 'frob'")):
        s.send(line)
        assert message in s.until("error")[-1], line
    # an option given during a search is sent before the next getmove, never during one
    s.send("position startpos", "go infinite", "setoption name Hash value 128")
    s.quiet(0.1)
    assert "command set hashsize 128 -> 1 ok" not in logged(log, "command")
    s.send("stop")
    s.until("^bestmove")
    s.send("setoption name CB value set mode first", "go movetime 10")
    s.until("^bestmove")
    entries = [line for line in log.read_text().splitlines()]
    assert entries.index("command set hashsize 128 -> 1 ok") < len(entries) - 1
    assert entries[-1].startswith("getmove")


def test_a_library_that_ignores_playnow_is_reported_hung(engine_so, tmp_path, monkeypatch):
    s, log = native_session(engine_so, tmp_path, monkeypatch, mode="ignore", grace=0.3)
    started = time.monotonic()
    s.send("position startpos", "go movetime 50")
    line = s.until("error")[-1]
    assert line.startswith("info string error: engine did not stop")
    assert 0.3 <= time.monotonic() - started < 3.0
    deadline = time.monotonic() + 2
    while not s.exits and time.monotonic() < deadline:
        time.sleep(0.01)
    assert s.exits == [cb.EXIT_LIBRARY_FAILED]


# --- the host program (the wine host's protocol, built natively) -------------------------------------

def host_session(native_host: Path, engine_so: Path, folder: Path, monkeypatch, mode: str = "first",
                 grace: float = 2.0) -> tuple[Session, Path, cb.HostLibrary]:
    log = folder / "engine.log"
    monkeypatch.setenv("CB_TEST_LOG", str(log))
    monkeypatch.setenv("CB_TEST_MODE", mode)
    library = cb.HostLibrary([str(native_host), str(fresh_copy(engine_so, folder))], cwd=folder, start_timeout=30)
    return Session(library, grace), log, library


def test_the_host_and_ctypes_give_the_library_the_same_boards(native_host, engine_so, tmp_path, monkeypatch):
    fens = read_positions()[::14]
    results = []
    for kind in ("ctypes", "host"):
        folder = tmp_path / kind
        if kind == "ctypes":
            s, log = native_session(engine_so, folder, monkeypatch)
            library = None
        else:
            s, log, library = host_session(native_host, engine_so, folder, monkeypatch)
        moves = []
        for fen in fens:
            s.send(f"position fen {fen}", "go movetime 1")
            moves.append(s.until("^bestmove")[-1])
        results.append((moves, [g.split(" fen=")[1] for g in logged(log, "getmove")]))
        if library is not None:
            library.close()
    assert results[0] == results[1]
    assert results[0][1] == [Position.from_fen(f).fen() for f in fens if Position.from_fen(f).has_legal_move()]


def test_host_protocol_status_stop_and_crash(native_host, engine_so, tmp_path, monkeypatch):
    s, log, library = host_session(native_host, engine_so, tmp_path, monkeypatch, mode="status")
    try:
        assert library.exports == ("getmove", "enginecommand", "islegal")
        s.send("uci")
        assert s.until("uciok")[0] == "id name cb_test_engine"
        s.send("position startpos", "go infinite")
        s.quiet(0.2)
        s.send("stop")
        lines = s.until("^bestmove")
        assert any(line.startswith("info depth") for line in lines) and lines[-1] == "bestmove 9-14"
        s.send("setoption name CB value set mode board", "go movetime 10")      # the board travels back too
        assert s.until("^bestmove")[-1] == "bestmove 9-14"
        s.send("setoption name CB value set mode crash", "go movetime 100")
        line = s.until("error")[-1]
        assert re.fullmatch(r"info string error: the engine library failed: signal 11 in the engine library .*", line)
        deadline = time.monotonic() + 5
        while not s.exits and time.monotonic() < deadline:
            time.sleep(0.01)
        assert s.exits == [cb.EXIT_LIBRARY_FAILED]
    finally:
        library.close()
    assert library.proc.poll() is not None


def test_the_host_ends_with_its_input_even_while_the_library_hangs(native_host, engine_so, tmp_path, monkeypatch):
    """cbengine killed (SIGKILL by the arena) closes the host's stdin: the host must not outlive it."""
    s, log, library = host_session(native_host, engine_so, tmp_path, monkeypatch, mode="ignore")
    s.send("position startpos", "go infinite")
    deadline = time.monotonic() + 10
    while not logged(log, "getmove") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert library.proc.poll() is None and logged(log, "getmove")
    assert library.proc.stdin is not None
    library.proc.stdin.close()
    library.proc.wait(timeout=5)
    library.close()


def test_the_host_says_why_a_library_does_not_load(native_host, tmp_path):
    (tmp_path / "junk.so").write_text("not a library")
    with pytest.raises(cb.LibraryError, match="cannot load .*junk.so"):
        cb.HostLibrary([str(native_host), str(tmp_path / "junk.so")], start_timeout=30)


# --- the real process: crashes, hangs, signals, the command line ------------------------------------

def cbengine(*args: str, env: Optional[dict[str, str]] = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "uci_checkers", "cbengine", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or env_with_repo(),
                            start_new_session=True, **kw)


def talk(proc: subprocess.Popen, lines: list[str], timeout: float = 60) -> tuple[str, str]:
    try:
        return proc.communicate("\n".join(lines) + "\n", timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def test_a_crash_in_getmove_ends_the_process(engine_so, tmp_path):
    lib = fresh_copy(engine_so, tmp_path)
    proc = cbengine(str(lib), env=env_with_repo(CB_TEST_MODE="crash"))
    out, err = talk(proc, ["uci", "isready", "position startpos", "go movetime 100"])
    assert proc.returncode == -signal.SIGSEGV
    assert "uciok" in out and "bestmove" not in out
    assert all(PROTOCOL_LINE.match(line) for line in out.splitlines()), out


def test_a_hung_library_is_reported_and_the_process_exits(engine_so, tmp_path):
    proc = cbengine(str(fresh_copy(engine_so, tmp_path)), "--grace", "0.5", env=env_with_repo(CB_TEST_MODE="ignore"))
    started = time.monotonic()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("uci\nisready\nposition startpos\ngo movetime 100\n")
    proc.stdin.flush()
    out = []
    for line in proc.stdout:
        out.append(line.rstrip("\n"))
        if line.startswith("info string error"):
            break
    go_sent = time.monotonic()
    proc.wait(timeout=30)
    assert proc.returncode == cb.EXIT_LIBRARY_FAILED, out
    assert out[-1] == "info string error: engine did not stop (getmove ran on 0.5 s after playnow was set)"
    assert go_sent - started < 60
    proc.stdin.close()
    assert proc.stderr is not None and proc.stderr.read() == ""


def _default_sigint() -> None:
    # a test run started in the background of a non-interactive shell has SIGINT ignored, and a child
    # inherits that (Python then installs no KeyboardInterrupt handler): give the engine the default, as a
    # terminal does
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupts_exit_130(engine_so, tmp_path, signum):
    proc = cbengine(str(fresh_copy(engine_so, tmp_path)), env=env_with_repo(CB_TEST_MODE="wait"),
                    preexec_fn=_default_sigint)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("uci\nisready\nposition startpos\ngo infinite\n")
    proc.stdin.flush()
    read_until(proc, "readyok")
    time.sleep(0.2)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err


def read_until(proc: subprocess.Popen, prefix: str) -> list[str]:
    """stdout lines up to the first that starts with ``prefix`` (the test's timeout bounds the wait)."""
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith(prefix):
            return lines
    raise AssertionError(f"end of output before {prefix!r}: {lines}")


def test_quit_during_a_search_exits_at_once(engine_so, tmp_path):
    proc = cbengine(str(fresh_copy(engine_so, tmp_path)), env=env_with_repo(CB_TEST_MODE="wait"))
    assert proc.stdin is not None
    proc.stdin.write("uci\nisready\n")
    proc.stdin.flush()
    read_until(proc, "readyok")
    proc.stdin.write("position startpos\ngo infinite\n")
    proc.stdin.flush()
    time.sleep(0.2)
    started = time.monotonic()
    out, err = talk(proc, ["quit"])
    assert proc.returncode == 0 and time.monotonic() - started < 3.0 and err == ""


def test_the_ini_file_and_the_working_directory(engine_so, tmp_path):
    lib = fresh_copy(engine_so, tmp_path / "engine")
    log = tmp_path / "engine.log"
    env = env_with_repo(CB_TEST_LOG=str(log))
    out, err = talk(cbengine(str(lib), env=env), ["setoption name CB value get cwd", "quit"])
    assert f"info string CB get cwd -> {lib.parent}" in out.splitlines(), out + err     # the library's folder
    (tmp_path / "books").mkdir()
    ini = tmp_path / "cb.ini"
    ini.write_text("[engine]\ndirectory = books\n[options]\nHash = 8\nCB = set mode timed\n")
    out, err = talk(cbengine(str(lib), "--ini", str(ini), env=env),
                    ["setoption name CB value get cwd", "setoption name CB value get mode", "quit"])
    lines = out.splitlines()
    assert f"info string CB get cwd -> {tmp_path / 'books'}" in lines and "info string CB get mode -> timed" in lines
    assert "command set hashsize 8 -> 1 ok" in log.read_text().splitlines()
    ini.write_text("[options]\nCB = launch rockets\n")            # a note on stderr; the engine runs
    proc = cbengine(str(lib), "--ini", str(ini), env=env)
    out, err = talk(proc, ["uci", "quit"])
    assert proc.returncode == 0 and "uciok" in out
    assert err == f"uci-checkers cbengine: note: the library returned 0 for 'launch rockets' from {ini}: ?\n"
    ini.write_text("[options]\nHash = 99999\n")
    proc = cbengine(str(lib), "--ini", str(ini), env=env)
    out, err = talk(proc, [])
    assert proc.returncode == 2 and out == ""
    assert err == f"uci-checkers cbengine: {ini}: the library refused 'set hashsize 99999': hashsize must be 1..4096 MB\n"


def test_command_line_errors_are_one_line_and_exit_2(engine_so, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)                     # main() moves into the library's folder before loading it
    (tmp_path / "text.so").write_text("not a library")
    cc = os.environ.get("CC", "cc")
    (tmp_path / "empty.c").write_text("int nothing_here(void) { return 0; }\n")
    compile_c([cc, "-shared", "-fPIC", "-o", "@OUT@", str(tmp_path / "empty.c")], tmp_path / "empty.so")
    dll = tmp_path / "engine.dll"
    if shutil.which(WINDOWS_CC):
        compile_c([WINDOWS_CC, *COMMON_FLAGS, "-shared", "-s", "-static-libgcc", "-Wl,--kill-at", "-I",
                   str(BOARD_DIR), "-o", "@OUT@", str(ENGINE_SOURCE), str(BOARD_DIR / "board.c")], dll)
    cases = [([str(tmp_path / "missing.so")], "no such library"),
             ([str(tmp_path / "text.so")], "cannot load"),
             ([str(tmp_path / "empty.so")], "does not export getmove and enginecommand: not a CheckerBoard engine"),
             ([str(tmp_path / "text.so"), "--ini", str(tmp_path / "none.ini")], "cannot read"),
             ([str(tmp_path / "text.so"), "--grace", "0"], "--grace must be more than 0"),
             ([str(tmp_path / "missing.dll")], "no such library")]
    (tmp_path / "text.dll").write_text("MZ but nothing else")
    cases.append(([str(tmp_path / "text.dll")], "is not a readable Windows DLL: it is cut short"))
    if dll.exists() and os.name != "nt":
        cases += [([str(dll), "--wine", str(tmp_path / "no-wine")], "not found: it is needed to run the Windows DLL"),
                  ([str(dll), "--wine", "/bin/true", "--host", str(tmp_path / "no-host.exe")], "does not exist")]
    for args, message in cases:
        assert cb.main(args) == 2, args
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and message in err, (args, err)
    proc = cbengine(str(tmp_path / "missing.so"))   # and through the real entry point
    out, err = talk(proc, [])
    assert proc.returncode == 2 and out == "" and err.startswith("uci-checkers cbengine: no such library")


# --- matches: the arena scores what the library does -----------------------------------------------

def run_match(tmp_path: Path, engines: list[list[str]], *extra: str, env: Optional[dict[str, str]] = None,
              ours: tuple[str, ...] = (), timeout: float = 300) -> list:
    """``uci-checkers match``: the package's engine (name ours) against ``engines``; the games, checked."""
    pdn = tmp_path / "games.pdn"
    args = [sys.executable, "-m", "uci_checkers", "match", "--engine", "name=ours", *ours, *extra]
    for spec in engines:
        args += ["--engine", *spec]
    args += ["--pdn-out", str(pdn), "--book-order", "--no-progress"]
    done = subprocess.run(args, env=env or env_with_repo(), capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    doc = read_pdn_file(pdn)
    assert not doc.errors, doc.errors
    for g in doc.games:                               # every game legal move by move, and finished
        replay = Game(Position.from_fen(g.tag("FEN")) if g.tag("SetUp") == "1" else Position.start())
        for move in g.moves:
            assert not replay.status().is_over, "a move after the end of the game"
            replay.push_text(str(move))
        assert g.complete and g.result in ("1-0", "0-1", "1/2-1/2"), g.tags
        if g.tag("Termination") in NATURAL_ENDS:
            assert replay.status().is_over and replay.status().pdn_result == g.result, g.tags
        else:
            assert not replay.status().is_over, g.tags
    return doc.games


NATURAL_ENDS = ("no legal moves", "threefold repetition", "no progress")


def cb_cmd(library: Path, *args: str) -> str:
    return "cmd=" + " ".join([f'"{sys.executable}"', "-m", "uci_checkers", "cbengine", f'"{library}"', *args])


def loser(game) -> str:
    return game.tag("White") if game.result == "1-0" else game.tag("Black")


def test_a_gauntlet_scores_every_mode_right(engine_so, tmp_path):
    """Our engine against the library in each mode: faults lose the game as what they are; the rest play."""
    modes = ["first", "status", "wait", "crash", "illegal", "ignore"]
    engines = [[f"name=cb-{mode}", cb_cmd(fresh_copy(engine_so, tmp_path / mode), "--grace", "1"),
                f"option.CB=set mode {mode}"] for mode in modes]
    # ours at depth 2 answers at once: the time goes to the library's side
    games = run_match(tmp_path, engines, "--tournament", "gauntlet", "--movetime", "20", "--games", "1",
                      "--max-plies", "60", "--margin", "300", ours=("depth=2", "movetime=none"))
    assert len(games) == len(modes)
    by_mode: dict[str, list] = {}
    for g in games:
        print(g.tag("Black"), g.tag("White"), g.result, g.tag("Termination"), len(g.moves), g.tag("Duration") if "Duration" in g.tags else "")
        cb_side = g.tag("Black") if g.tag("Black").startswith("cb-") else g.tag("White")
        by_mode.setdefault(cb_side[3:], []).append(g)
    expected = {"crash": "engine crash", "illegal": "illegal move", "ignore": "time forfeit"}
    for mode, played in by_mode.items():
        assert len(played) == 1, mode
        for g in played:
            termination = g.tag("Termination")
            if mode in expected:
                assert termination == expected[mode] and loser(g) == f"cb-{mode}", (mode, g.tags)
            else:
                assert termination in NATURAL_ENDS + ("ply cap",), g.tags
                assert len(g.moves) >= 10


def test_round_trip_our_bridge_through_cbengine_against_our_engine(tmp_path):
    """bridge/checkerboard (the CheckerBoard library that hosts this engine) served back by cbengine."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler (cc) to build the bridge")
    folder = tmp_path / "bridge"
    library = cbtool.build("native", folder)
    (folder / f"{cbtool.LIBRARY_NAME}.ini").write_text(cbtool.ini_text(f'"{sys.executable}" -m uci_checkers', str(REPO)))
    # depth 4 for both: the bridge's status string shows its engine's depth, so cbengine's depth limit
    # (playnow once the status shows depth 4) is what ends each of its searches; no clock is charged for
    # the bridge starting its engine on the first move
    games = run_match(tmp_path, [["name=bridge", cb_cmd(library)]], "--depth", "4", "--games", "2",
                      "--max-plies", "40", "--timeout-move", "120")
    assert len(games) == 2
    for g in games:
        assert g.tag("Termination") in NATURAL_ENDS + ("ply cap",), g.tags
        assert len(g.moves) >= 20


# --- a Windows DLL under wine ------------------------------------------------------------------------

def windows_tools() -> str:
    wine = cb.find_wine()
    for name, found in ((WINDOWS_CC, shutil.which(WINDOWS_CC)), ("wine", wine)):
        if found is None:
            if REQUIRE_WINDOWS_TOOLS:
                pytest.fail(f"{name} is required here (UCI_CHECKERS_REQUIRE_MINGW=1) but not installed")
            pytest.skip(f"{name} not installed (Debian: gcc-mingw-w64-x86-64, wine64)")
    assert wine is not None
    return wine


def test_a_windows_dll_plays_a_match_through_the_wine_host(tmp_path):
    windows_tools()
    dll = tmp_path / "cb_test_engine.dll"
    compile_c([WINDOWS_CC, *COMMON_FLAGS, "-shared", "-s", "-static-libgcc", "-Wl,--kill-at", "-I", str(BOARD_DIR),
               "-o", "@OUT@", str(ENGINE_SOURCE), str(BOARD_DIR / "board.c")], dll)
    prefix = Path(tempfile.gettempdir()) / f"uci_checkers_wineprefix_{os.getuid() if hasattr(os, 'getuid') else 0}"
    env = env_with_repo(WINEPREFIX=str(prefix), UCI_CHECKERS_CBHOST_DIR=str(tmp_path / "host"))
    games = run_match(tmp_path, [["name=wine-first", cb_cmd(dll), "option.CB=set mode timed"],
                                 ["name=wine-crash", cb_cmd(dll), "option.CB=set mode crash"]],
                      "--tournament", "gauntlet", "--movetime", "50", "--games", "1", "--max-plies", "80",
                      "--margin", "300", "--timeout-uci", "240", env=env, timeout=600)
    assert len(games) == 2
    for g in games:
        if "wine-crash" in (g.tag("Black"), g.tag("White")):
            assert g.tag("Termination") == "engine crash" and loser(g) == "wine-crash", g.tags
        else:
            assert g.tag("Termination") in NATURAL_ENDS + ("ply cap",), g.tags
            print(f"\n[wine game] {g.tag('Black')} - {g.tag('White')} {g.result} ({g.tag('Termination')}):\n"
                  + " ".join(str(m) for m in g.moves))
    assert list((tmp_path / "host").glob("cbhost-*.exe")), "the host was built into the cache directory"
