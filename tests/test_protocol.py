"""In-process transcript tests of the protocol loop (protocol.md): feed lines, check the lines written.

No subprocess: a :class:`Session` wraps ``Protocol`` with a collecting writer.  Search
output is asynchronous (the engine's worker thread), so tests wait for lines with
generous timeouts and assert behaviour, never speed.
"""
from __future__ import annotations

import io
import re
import threading
import time
from typing import Callable, Optional, Union

import pytest

from uci_checkers.engine.facade import Engine
from uci_checkers.engine.timeman import GoParams, TimeManager, phase_factor
from uci_checkers.engine.options import OptionError
from uci_checkers.protocols.uci import MAX_LINE_BYTES, Protocol, format_info, read_line

START_FEN = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"
START_MOVES = ["9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16"]
INFO_RE = re.compile(r"^info depth \d+ seldepth \d+ multipv \d+ score (cp -?\d+|mate -?\d+)( lowerbound| upperbound)?"
                     r" nodes \d+ nps \d+ hashfull \d+ time \d+( pv( \d+([-x]\d+)+)+)?$")
WAIT = 30.0  # generous: the machine is shared


class Session:
    """A Protocol with its output collected; ``send`` runs a command, ``wait_for`` waits for a line."""

    def __init__(self, engine: Optional[Engine] = None) -> None:
        self.lines: list[str] = []
        self.cv = threading.Condition()
        self.proto = Protocol(write=self._write, engine=engine)
        self.mark = 0

    def _write(self, line: str) -> None:
        with self.cv:
            self.lines.append(line)
            self.cv.notify_all()

    def send(self, line: str) -> list[str]:
        """Run one command; return the lines written synchronously by it."""
        with self.cv:
            before = len(self.lines)
        self.proto.handle(line)
        with self.cv:
            return self.lines[before:]

    def new(self) -> list[str]:
        """Lines since the previous call to ``new``."""
        with self.cv:
            out = self.lines[self.mark:]
            self.mark = len(self.lines)
            return out

    def wait_for(self, match: Union[str, Callable[[str], bool]], timeout: float = WAIT) -> str:
        """Wait for a line (after ``mark``) equal to / starting with ``match`` or satisfying it."""
        pred = match if callable(match) else (lambda s: s == match or s.startswith(match + " "))
        deadline = time.monotonic() + timeout
        with self.cv:
            i = self.mark
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i]):
                        return self.lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no line {match!r} within {timeout}s; got {self.lines[self.mark:]}")
                self.cv.wait(left)

    def bestmove(self, timeout: float = WAIT) -> str:
        line = self.wait_for("bestmove", timeout)
        return line

    def idle(self, timeout: float = WAIT) -> None:
        assert self.proto.engine.wait(timeout), "worker did not finish"

    def close(self) -> None:
        self.proto.handle("quit")


@pytest.fixture
def s():
    session = Session()
    session.send("setoption name OwnBook value false")   # these tests are about the search (the book: test_book.py)
    session.send("isready")
    session.new()
    yield session
    session.close()


def errors(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("info string error:")]


# --------------------------------------------------------------------------------------------------
# uci, isready, debug, help, unknown input
# --------------------------------------------------------------------------------------------------
def test_uci_lists_identity_and_every_option():
    sess = Session()
    out = sess.send("uci")
    assert out[0].startswith("id name uci_checkers ")
    assert out[1].startswith("id author ")
    assert out[-1] == "uciok"
    options = {line.split(" type ")[0][len("option name "):]: line for line in out if line.startswith("option ")}
    for name in ("Hash", "Clear Hash", "Ponder", "MultiPV", "Skill Level", "Seed", "Move Overhead",
                 "NoProgressPlies", "UCI_AnalyseMode", "Contempt"):
        assert name in options, name
    assert options["NoProgressPlies"] == "option name NoProgressPlies type spin default 80 min 0 max 1000"
    assert options["Contempt"] == "option name Contempt type spin default 0 min -100 max 100"
    assert options["Skill Level"] == "option name Skill Level type spin default 20 min 0 max 20"
    assert options["Clear Hash"] == "option name Clear Hash type button"
    assert options["Ponder"] == "option name Ponder type check default false"
    assert all(not e for e in errors(out))
    sess.close()


def test_isready_and_debug_and_help(s):
    assert s.send("isready") == ["readyok"]
    assert s.send("debug on") == [] and s.proto.debug
    out = s.send("setoption name hash value 8")
    assert out == ["info string option Hash = 8"]
    assert s.send("setoption name clear hash") == ["info string option Clear Hash pressed"]
    assert s.send("debug off") == [] and not s.proto.debug
    assert errors(s.send("debug maybe")) == ["info string error: debug needs on or off"]
    assert errors(s.send("debug")) == ["info string error: debug needs on or off"]
    help_lines = s.send("help")
    text = "\n".join(help_lines)
    for word in ("uci", "isready", "setoption", "ucinewgame", "position", "go perft", "stop", "ponderhit",
                 "quit", "debug", "eval", "bench"):
        assert word in text


def test_unknown_commands_and_odd_input_are_reported_and_harmless(s):
    assert s.send("") == []
    assert s.send("   \t ") == []
    assert s.send("foo bar") == ["info string error: unknown command 'foo' (type help for the list)"]
    out = s.send("\ufffd\ufffdgo")          # what undecodable bytes become
    assert len(out) == 1 and out[0].startswith("info string error: unknown command")
    big = "x" * (1 << 20)
    out = s.send(big)
    assert len(out) == 1 and out[0].startswith("info string error: unknown command") and len(out[0]) < 300
    out = s.send("position startpos moves " + "11-15 " * 200000)   # a 1 MB position line
    assert len(out) == 1 and out[0].startswith("info string error: position: illegal move '11-15'")
    assert s.proto.engine.game.moves == []
    assert s.send("UCI")[-1] == "uciok"    # command words are case-insensitive
    assert s.send("isready") == ["readyok"]


def test_read_line_decodes_and_drops_overlong_lines():
    stream = io.BytesIO(b"uci\n\xff\xfeisready\r\n" + b"a" * (MAX_LINE_BYTES + 10) + b"\nisready\nlast")
    assert read_line(stream) == ("uci\n", 0)
    text, size = read_line(stream)
    assert size == 0 and text.strip() == "\ufffd\ufffdisready"
    text, size = read_line(stream)
    assert text == "" and size == MAX_LINE_BYTES + 11
    assert read_line(stream) == ("isready\n", 0)
    assert read_line(stream) == ("last", 0)
    assert read_line(stream) == (None, 0)


# --------------------------------------------------------------------------------------------------
# setoption
# --------------------------------------------------------------------------------------------------
def test_setoption_names_are_case_insensitive_and_may_contain_spaces(s):
    eng = s.proto.engine
    assert s.send("setoption name hash value 32") == []
    assert eng.get_option("Hash") == 32
    assert s.send("setoption name skill level value 3") == []
    assert eng.get_option("Skill Level") == 3
    assert s.send("setoption name  MOVE   overhead  value 120") == []
    assert eng.get_option("Move Overhead") == 120
    assert s.send("setoption name Ponder value TRUE") == []
    assert eng.get_option("Ponder") is True
    assert s.send("setoption name Clear Hash") == []
    assert s.send("setoption name noprogressplies value 0") == []
    assert eng.get_option("NoProgressPlies") == 0 and eng.game.no_progress_plies == 0
    assert s.send("setoption name UCI_AnalyseMode value true") == []
    assert s.send("setoption name Seed value 12345") == []
    assert s.send("setoption name MultiPV value 3") == []
    assert s.send("isready") == ["readyok"]


@pytest.mark.parametrize("line, message", [
    ("setoption name Foo value 1", "setoption: unknown option 'Foo'"),
    ("setoption name Hash value 0", "setoption: option Hash value 0 is out of range 1..4096"),
    ("setoption name Hash value 100000", "setoption: option Hash value 100000 is out of range 1..4096"),
    ("setoption name Hash value big", "setoption: option Hash needs a whole number, not 'big'"),
    ("setoption name Hash value 1.5", "setoption: option Hash needs a whole number, not '1.5'"),
    ("setoption name Hash", "setoption: option Hash needs a value"),
    ("setoption name Hash value", "setoption: option Hash needs a value"),
    ("setoption name Skill Level value 21", "setoption: option Skill Level value 21 is out of range 0..20"),
    ("setoption name Skill Level value -1", "setoption: option Skill Level value -1 is out of range 0..20"),
    ("setoption name Ponder value yes", "setoption: option Ponder needs true or false, not 'yes'"),
    ("setoption name NoProgressPlies value -5",
     "setoption: option NoProgressPlies value -5 is out of range 0..1000"),
    ("setoption Hash value 4", "setoption needs: setoption name <name> [value <value>]"),
    ("setoption", "setoption needs: setoption name <name> [value <value>]"),
    ("setoption name", "setoption needs: setoption name <name> [value <value>]"),
])
def test_setoption_errors_keep_the_old_value(s, line, message):
    eng = s.proto.engine
    before = {spec.name: eng.get_option(spec.name) for spec in eng.option_specs() if spec.type != "button"}
    assert s.send(line) == ["info string error: " + message]
    after = {spec.name: eng.get_option(spec.name) for spec in eng.option_specs() if spec.type != "button"}
    assert before == after


def test_option_parse_unit():
    eng = Engine()
    with pytest.raises(OptionError):
        eng.set_option("Threads?", "1")
    eng.set_option("multipv", "2")
    assert eng.get_option("MULTIPV") == 2


# --------------------------------------------------------------------------------------------------
# position, ucinewgame, d, eval
# --------------------------------------------------------------------------------------------------
def test_position_startpos_fen_and_moves(s):
    eng = s.proto.engine
    assert s.send("position startpos moves 11-15 23-19 8-11") == []
    assert [str(m) for m in eng.game.moves] == ["11-15", "23-19", "8-11"]
    assert s.send("position fen B:W21-32:B1-12") == []
    assert eng.game.position.fen() == START_FEN and eng.game.moves == []
    # spaces after commas and colons, as PDN allows, and the moves keyword in any case
    assert s.send("position fen W:W21, 22, 23,24,25,26,27,28,29,30,31,32: B1,2,3,4,5,6,7,8,9,10,11,15 MOVES 22-18") == []
    assert eng.game.position.fen() == "B:W18,21,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,15"
    assert s.send('position fen [FEN "B:WK14:BK1"] moves 1-5') == []
    assert eng.game.position.fen() == "W:WK14:BK5"
    # short capture form
    assert s.send("position fen B:W14,15,K16,22,23:BK10,K11,21,K27 moves 10x19x12") == []
    assert eng.game.position.fen() == "W:W14,22,23:BK11,K12,21,K27"


@pytest.mark.parametrize("line, message", [
    ("position", "position needs startpos or fen <FEN>"),
    ("position middle", "position needs startpos or fen, not 'middle'"),
    ("position fen", "position fen needs a FEN, like B:W21-32:B1-12"),
    ("position fen moves 11-15", "position fen needs a FEN, like B:W21-32:B1-12"),
    ("position startpos 11-15", "position startpos: unexpected '11-15' (expected moves or the end of the line)"),
    ("position fen X:W1:B2", "position: FEN must start with the side to move 'B' or 'W', not 'X' "
                             "(position unchanged)"),
    ("position fen B:W21,21:B1", "position: square 21 appears twice in the FEN (position unchanged)"),
    ("position fen B:W33:B1", "position: square 33 is outside 1-32 (position unchanged)"),
    ("position startpos moves 11-15 11-15", "position: illegal move '11-15' in "
     "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15; legal moves: 21-17 22-17 22-18 "
     "23-18 23-19 24-19 24-20 (position unchanged)"),
    ("position startpos moves 11-15 hello", "position: cannot read move 'hello': expected squares joined by "
     "'-' or 'x', like 11-15 or 15x24x31 (position unchanged)"),
    ("position fen B:W14,15,K16,22,23:BK10,K11,21,K27 moves 10x12",
     "position: move '10x12' is ambiguous in B:W14,15,K16,22,23:BK10,K11,21,K27: it could be 10x17x26x19x12 "
     "10x19x12; give the full path (position unchanged)"),
])
def test_position_errors_keep_the_old_position(s, line, message):
    s.send("position startpos moves 9-13 22-18")
    before = s.proto.engine.game.position
    assert s.send(line) == ["info string error: " + message]
    assert s.proto.engine.game.position == before
    assert len(s.proto.engine.game.moves) == 2


def test_ucinewgame_resets_the_game(s):
    s.send("position startpos moves 11-15")
    assert s.send("ucinewgame") == []
    assert s.proto.engine.game.position.fen() == START_FEN
    assert errors(s.send("ucinewgame now")) == ["info string error: ucinewgame takes no arguments"]
    assert s.send("isready") == ["readyok"]


def test_d_shows_board_fen_key_moves_and_status(s):
    s.send("position startpos moves 11-15")
    out = s.send("d")
    assert len(out) == 8 + 5
    assert out[8] == "Fen: W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15"
    assert out[9] == "Side to move: white"
    assert re.fullmatch(r"Key: [0-9a-f]{16}", out[10])
    assert out[11] == "Legal moves: 21-17 22-17 22-18 23-18 23-19 24-19 24-20"
    assert out[12] == "Status: ongoing; no-progress plies 0/80; repetitions 1; moves played 1"
    s.send("position fen W:W:B5")
    assert s.send("d")[-2:] == ["Legal moves: (none)",
                                "Status: black wins (white has no legal moves); no-progress plies 0/80; "
                                "repetitions 1; moves played 0"]
    s.send("position fen B:WK30:BK1 moves 1-5 30-26 5-1 26-30 1-5 30-26 5-1 26-30")
    assert s.send("d")[-1] == ("Status: draw by repetition; no-progress plies 8/80; repetitions 3; "
                               "moves played 8")
    s.send("setoption name NoProgressPlies value 3")
    s.send("position fen B:WK30:BK1 moves 1-5 30-26 5-9")
    assert s.send("d")[-1] == "Status: draw by no progress; no-progress plies 3/3; repetitions 1; moves played 3"
    s.send("setoption name NoProgressPlies value 0")
    s.send("position fen B:WK30:BK1 moves 1-5 30-26 5-9")
    assert s.send("d")[-1] == "Status: ongoing; no-progress plies 3 (rule off); repetitions 1; moves played 3"


def test_eval_prints_terms(s):
    out = s.send("eval")
    assert out[0].startswith("Static evaluation of " + START_FEN)
    names = [line.split()[0] for line in out[1:]]
    assert "total" in names
    total = int(next(line.split()[1] for line in out[1:] if line.split()[0] == "total"))
    stm = out[-1]
    assert stm.startswith("side to move") and stm.endswith("(black)")
    assert int(stm.split()[3]) == total  # Black to move: same view


def test_eval_without_evaluation_module(s, monkeypatch):
    monkeypatch.setattr(s.proto.engine, "evaluate_terms", lambda: {})
    assert s.send("eval") == ["info string error: eval unavailable: no evaluation module"]


# --------------------------------------------------------------------------------------------------
# go: searches and their replies
# --------------------------------------------------------------------------------------------------
def legal_after(fen_or_start: str) -> set[str]:
    from uci_checkers.rules.position import Position
    pos = Position.start() if fen_or_start == "startpos" else Position.from_fen(fen_or_start)
    return {str(m) for m in pos.legal_moves()}


def test_go_depth_prints_info_lines_then_bestmove(s):
    s.send("position startpos")
    assert s.send("go depth 3") == []
    best = s.bestmove()
    lines = s.new()
    infos = [line for line in lines if line.startswith("info depth")]
    assert infos, lines
    for line in infos:
        assert INFO_RE.match(line), line
    assert max(int(line.split()[2]) for line in infos) == 3
    assert lines[-1] == best
    parts = best.split()
    assert parts[1] in START_MOVES
    if len(parts) > 2:
        assert parts[2] == "ponder" and len(parts) == 4
    assert not s.proto.engine.searching or s.idle() is None


def test_go_before_position_searches_the_start_position():
    sess = Session()
    out = sess.send("go depth 1")
    assert out == ["info string error: go before position: searching the start position"]
    assert sess.bestmove().split()[1] in START_MOVES
    sess.idle()
    sess.new()
    assert errors(sess.send("go depth 1")) == []    # said once
    sess.bestmove()
    sess.close()


def test_two_go_nodes_runs_around_ucinewgame_are_identical(s):
    def run() -> list[str]:
        s.send("ucinewgame")
        s.send("position startpos moves 11-15 23-19")
        s.send("isready")
        s.new()
        s.send("go nodes 20000")
        s.bestmove()
        s.idle()
        out = [line for line in s.new() if line.startswith(("info depth", "bestmove"))]
        return [re.sub(r" (time|nps) \d+", "", line) for line in out]

    first, second = run(), run()
    assert len(first) >= 2 and first == second


def test_go_searchmoves_restricts_the_root(s):
    s.send("position startpos")
    s.send("go depth 4 searchmoves 12-16 9-13")
    assert s.bestmove().split()[1] in ("12-16", "9-13")
    s.idle()
    s.new()
    assert s.send("go searchmoves 11-15 depth 3") == []
    assert s.bestmove().split()[1] == "11-15"


def test_contempt_scores_draws_in_games_not_in_analysis(s):
    """Two kings against one, two plies before the no-progress draw: every line is a draw, scored minus
    the contempt in a game and 0 while the host analyses."""
    def score() -> str:
        s.send("position fen B:WK1:BK20,K21")
        s.send("go depth 8")
        s.bestmove()
        s.idle()
        infos = [line for line in s.new() if line.startswith("info depth")]
        return infos[-1].split(" score ")[1].split()[1]

    s.send("setoption name NoProgressPlies value 2")
    s.send("setoption name Contempt value 20")
    assert score() == "-20"
    s.send("setoption name UCI_AnalyseMode value true")
    assert score() == "0"
    s.send("setoption name UCI_AnalyseMode value false")
    s.send("setoption name Contempt value -15")
    assert score() == "15"
    assert s.send("setoption name Contempt value 101") == [
        "info string error: setoption: option Contempt value 101 is out of range -100..100"]


def test_go_searchmoves_errors(s):
    s.send("position startpos")
    out = s.send("go depth 2 searchmoves 11-15 23-19")
    assert len(out) == 1 and out[0].startswith("info string error: go searchmoves: illegal move '23-19'")
    out = s.send("go searchmoves")
    assert out == ["info string error: go: searchmoves needs at least one move"]
    time.sleep(0.2)
    assert not any(line.startswith("bestmove") for line in s.new())
    assert not s.proto.engine.searching


@pytest.mark.parametrize("line, message", [
    ("go depth", "go: depth needs a number"),
    ("go depth x", "go: depth needs a whole number, not 'x'"),
    ("go depth 0", "go: depth must be >= 1, not 0"),
    ("go nodes -5", "go: nodes must be >= 1, not -5"),
    ("go movetime 1e3", "go: movetime needs a whole number, not '1e3'"),
    ("go movetime -1", "go: movetime must be >= 0, not -1"),
    ("go wtime 100 binc -3", "go: binc must be >= 0, not -3"),
    ("go movestogo 0", "go: movestogo must be >= 1, not 0"),
    ("go mate 0", "go: mate must be >= 1, not 0"),
    ("go fast", "go: unknown parameter 'fast'"),
    ("go perft", "go: perft needs a number"),
    ("go perft -1", "go perft: depth must be 0..40, not -1"),
    ("go perft 2 depth 3", "go perft takes only a depth: go perft <n>"),
    ("go perft 2 3", "go perft takes only a depth: go perft <n>"),
    ("go depth 3 perft 2", "go perft takes only a depth: go perft <n>"),
    ("go depth \u0661\u0662", "go: depth needs a whole number, not '\u0661\u0662'"),
])
def test_go_errors_start_nothing(s, line, message):
    s.send("position startpos")
    assert s.send(line) == ["info string error: " + message]
    time.sleep(0.05)
    assert not s.proto.engine.searching
    assert not any(line.startswith("bestmove") for line in s.new())


def test_negative_clock_is_treated_as_zero(s):
    s.send("position startpos")
    assert s.send("go wtime -100 btime -100") == []
    assert s.bestmove(10).split()[1] in START_MOVES


def test_go_infinite_waits_for_stop_and_isready_answers_meanwhile(s):
    s.send("position startpos")
    s.send("go infinite")
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in s.new())
    t0 = time.monotonic()
    assert s.send("isready") == ["readyok"]
    assert time.monotonic() - t0 < 2.0
    out = s.send("go depth 1")
    assert out == ["info string error: go: a search is already running (send stop first); this go is ignored"]
    assert errors(s.send("go perft 1")) == [
        "info string error: go: a search is already running (send stop first); this go is ignored"]
    assert errors(s.send("ponderhit")) == ["info string error: ponderhit: no ponder search is running"]
    s.send("stop")
    assert s.bestmove().split()[1] in START_MOVES
    s.idle()
    time.sleep(0.1)
    assert sum(line.startswith("bestmove") for line in s.new()) == 1   # exactly one, for the first go
    assert errors(s.send("stop")) == ["info string error: stop: no search is running"]


def test_go_infinite_on_a_won_position_holds_bestmove_until_stop(s):
    s.send("position fen W:WK1:B5,K9")            # tiny: the search finishes at its depth cap fast
    s.send("go infinite depth 2")
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in s.new())
    s.send("stop")
    assert s.bestmove().split()[1] in legal_after("W:WK1:B5,K9")


def test_ponder_then_ponderhit_plays_under_the_clock(s):
    s.send("position startpos moves 11-15 23-19")
    s.send("go ponder wtime 2000 btime 2000 winc 0 binc 0")
    time.sleep(0.3)
    assert not any(line.startswith("bestmove") for line in s.new())
    assert s.proto.engine.pondering
    t0 = time.monotonic()
    assert s.send("ponderhit") == []
    line = s.bestmove(10)
    assert time.monotonic() - t0 < 5.0            # maximum for this move is 0.4 s
    assert line.split()[1] in legal_after("B:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15")


def test_ponder_then_stop_gives_a_bestmove(s):
    s.send("position startpos")
    s.send("go ponder btime 60000 wtime 60000")
    time.sleep(0.2)
    s.send("stop")
    assert s.bestmove().split()[1] in START_MOVES


def test_movetime_and_clock_limits_are_respected(s):
    s.send("position startpos")
    t0 = time.monotonic()
    s.send("go movetime 300")
    s.bestmove()
    elapsed = time.monotonic() - t0
    assert 0.1 < elapsed < 10
    s.idle()
    s.new()
    s.send("setoption name Move Overhead value 100")
    t0 = time.monotonic()
    s.send("go btime 400 wtime 400")
    s.bestmove()
    assert time.monotonic() - t0 < 10


def test_single_legal_move_under_a_clock_is_played_at_once(s):
    fen = "W:W22:B17,K1"   # White must capture 22x13
    s.send(f"position fen {fen}")
    s.send("go wtime 100000 btime 100000")
    assert s.bestmove(10).split()[1] == "22x13"


def test_no_legal_moves_reports_the_result(s):
    s.send("position fen W:W:B5")
    s.send("go depth 5")
    assert s.bestmove() == "bestmove (none)"
    lines = s.new()
    assert lines[-2:] == ["info string result black no legal moves", "bestmove (none)"]
    s.send("position fen B:W5,6,10:B1")   # Black's man on 1 is blocked
    s.send("go infinite")
    time.sleep(0.2)
    assert not any(line.startswith("bestmove") for line in s.new())
    s.send("stop")
    assert s.bestmove() == "bestmove (none)"
    assert s.new()[-2:] == ["info string result white no legal moves", "bestmove (none)"]


def test_game_already_drawn_is_searched_with_a_note(s):
    s.send("position fen B:WK30:BK1 moves 1-5 30-26 5-1 26-30 1-5 30-26 5-1 26-30")
    out = s.send("go depth 2")
    assert out == ["info string game already over: draw by repetition (searching anyway)"]
    assert s.bestmove().split()[1] in ("1-5", "1-6")
    s.idle()
    s.new()
    s.send("setoption name NoProgressPlies value 2")
    s.send("position fen B:WK30:BK1 moves 1-5 30-26")
    assert s.send("go depth 2") == ["info string game already over: draw by no progress (searching anyway)"]
    s.bestmove()


def test_go_perft_divides_and_counts(s):
    s.send("position startpos")
    s.send("go perft 3")
    s.wait_for(lambda line: line.startswith("Nodes searched"))
    lines = s.new()
    assert lines[-2:] == ["", "Nodes searched: 302"]
    moves = lines[:-2]
    assert [line.split(":")[0] for line in moves] == START_MOVES
    assert sum(int(line.split(": ")[1]) for line in moves) == 302
    s.idle()
    s.send("go perft 0")
    assert s.wait_for("Nodes searched: 1")
    s.idle()


def test_go_perft_can_be_stopped(s):
    s.send("position startpos")
    s.send("go perft 11")
    time.sleep(0.2)
    s.send("stop")
    s.wait_for("info string perft stopped")
    s.idle()
    assert s.send("isready") == ["readyok"]


def test_bench_reports_nodes(s):
    s.send("bench 1")
    s.wait_for(lambda line: line.startswith("Nodes searched"), timeout=60)
    lines = s.new()
    assert any(line.startswith("Nodes/second") for line in lines) or s.wait_for(
        lambda line: line.startswith("Nodes/second"))
    assert errors(s.send("bench x")) == ["info string error: bench: depth must be a whole number, not 'x'"]
    assert errors(s.send("bench 1 2")) == ["info string error: bench takes at most a depth: bench [depth]"]


def test_worker_exception_is_reported_and_a_move_still_played(s, monkeypatch):
    s.send("position startpos")

    def broken(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(s.proto.engine._searcher, "search", broken)
    s.send("go depth 3")
    best = s.bestmove()
    assert best == "bestmove 9-13"
    assert "info string error: internal: RuntimeError: kaboom" in s.new()


def test_position_during_search_applies_to_the_next_go(s):
    s.send("position startpos")
    s.send("go infinite")
    assert errors(s.send("position startpos moves 11-15")) == []
    assert errors(s.send("setoption name Clear Hash")) == []
    s.send("stop")
    assert s.bestmove().split()[1] in START_MOVES
    s.idle()
    s.new()
    s.send("go depth 2")
    assert s.bestmove().split()[1] in legal_after("W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15")


def test_quit_mid_search_ends_the_session():
    sess = Session()
    sess.send("position startpos")
    sess.send("go infinite")
    time.sleep(0.1)
    assert sess.proto.handle("quit") is False
    assert not sess.proto.engine.searching
    assert sess.proto.handle("isready") is False


# --------------------------------------------------------------------------------------------------
# formatting and time management units
# --------------------------------------------------------------------------------------------------
def test_format_info_fields():
    from uci_checkers.rules.position import Position
    from uci_checkers.search.alphabeta import SearchInfo

    pos = Position.start()
    move = pos.parse_move("11-15")
    info = SearchInfo(5, 9, 1, 37, None, "lowerbound", 1234, 56, 22035, 12, [move])
    assert format_info(info) == ("info depth 5 seldepth 9 multipv 1 score cp 37 lowerbound nodes 1234 nps 22035 "
                                 "hashfull 12 time 56 pv 11-15")
    info = SearchInfo(7, 7, 2, 29990, 5, None, 10, 1, 10, 0, [])
    assert format_info(info) == "info depth 7 seldepth 7 multipv 2 score mate 5 nodes 10 nps 10 hashfull 0 time 1"


def test_phase_factor_spends_the_clock_early():
    factors = [phase_factor(n) for n in range(24, 0, -1)]
    assert factors == sorted(factors, reverse=True) and factors[0] > 2 * factors[-1]


def test_a_sudden_death_game_keeps_time_for_its_ending():
    """10 s + 0.1 s, each move using its optimum: about 1 s a move after the opening, the ending on about the
    increment, and the clock never below 0.7 s (what it earns back in the ending: optimum = increment)."""
    left, used = 10000.0, []
    for move in range(70):
        pieces = max(4, 24 - move // 3)
        tm = TimeManager(GoParams(btime=int(left), wtime=10000, binc=100, winc=100), turn=0, overhead_ms=5,
                         legal_count=7, pieces=pieces)
        used.append(tm.optimum_ms)
        left += 100 - tm.optimum_ms
        assert left > 700
    assert 700 < used[0] < 1200 and max(used[-10:]) < 200


def test_time_manager_limits():
    tm = TimeManager(GoParams(btime=10000, wtime=5000, binc=100), turn=0, overhead_ms=50, legal_count=7)
    assert tm.limited and 0 < tm.optimum_ms <= tm.maximum_ms <= 0.8 * (10000 - 50)
    assert tm.optimum_ms == pytest.approx(((10000 - 50) / 30 + 75) * phase_factor(24))
    assert tm.maximum_ms == pytest.approx(0.3 * (10000 - 50))           # sudden death: 30 % of what is left
    middle = TimeManager(GoParams(btime=10000, wtime=5000, binc=100), turn=0, overhead_ms=50, legal_count=7,
                         pieces=14)
    assert middle.optimum_ms < tm.optimum_ms                             # the clock is spent early
    tm = TimeManager(GoParams(btime=10000, movestogo=2), turn=0, overhead_ms=0, legal_count=7)
    assert tm.maximum_ms == pytest.approx(8000)                          # a control in sight: up to 80 %
    assert tm.optimum_ms == pytest.approx(5000)                          # ... but aim at half at most
    tm = TimeManager(GoParams(btime=10000, wtime=300), turn=1, overhead_ms=50, legal_count=7)
    assert tm.maximum_ms <= 250                                          # White's clock: 300 - 50
    tm = TimeManager(GoParams(btime=1000, movestogo=1), turn=0, overhead_ms=100, legal_count=7)
    assert tm.maximum_ms <= 900 and tm.maximum_ms >= 800
    tm = TimeManager(GoParams(btime=30, binc=5000), turn=0, overhead_ms=50, legal_count=7)
    assert tm.maximum_ms == 0                                            # never beyond the clock
    tm = TimeManager(GoParams(movetime=500), turn=0, overhead_ms=50, legal_count=7)
    assert tm.optimum_ms == tm.maximum_ms == 450
    assert tm.iteration_done(30, False, 0) is False                      # movetime: the deadline decides
    tm = TimeManager(GoParams(btime=60000), turn=0, overhead_ms=50, legal_count=1)
    assert tm.single_move and tm.maximum_ms <= 100 and tm.iteration_done(1, False, 0)
    tm = TimeManager(GoParams(depth=5), turn=0)
    assert not tm.limited and tm.deadline() is None and tm.iteration_done(5, True, 0) is False
    tm = TimeManager(GoParams(infinite=True, btime=1000), turn=0)
    assert not tm.limited


def test_time_manager_soft_limit_and_ponderhit():
    start = time.monotonic()
    tm = TimeManager(GoParams(btime=3000, ponder=True), turn=0, overhead_ms=0, legal_count=5, start=start - 10)
    assert tm.deadline() is None and tm.iteration_done(10, False, 0) is False
    tm.ponderhit()
    assert tm.deadline() is not None and tm.deadline() - time.monotonic() <= tm.maximum_ms / 1000
    assert tm.elapsed_ms() < 1000
    # an optimum of 100 ms: far past it, stop; early, go on
    tm = TimeManager(GoParams(btime=3000), turn=0, overhead_ms=0, legal_count=5, start=time.monotonic() - 1.0,
                     pieces=12)
    assert tm.iteration_done(3, False, 0) is True
    tm = TimeManager(GoParams(btime=300000), turn=0, overhead_ms=0, legal_count=5)
    assert tm.iteration_done(1, False, 0) is False
    # instability buys time: same elapsed, best move changing -> continue longer
    # (an optimum of 800 ms: 30 s / 30 moves, phase factor 0.8 with 8 pieces)
    stable = TimeManager(GoParams(btime=30000), turn=0, overhead_ms=0, legal_count=5,
                         start=time.monotonic() - 0.9, pieces=8)
    unstable = TimeManager(GoParams(btime=30000), turn=0, overhead_ms=0, legal_count=5,
                           start=time.monotonic() - 0.9, pieces=8)
    stable._iteration_ends = [200.0, 400.0]
    unstable._iteration_ends = [200.0, 400.0]
    unstable._instability = 2.0
    assert stable.iteration_done(8, False, 0) is True
    assert unstable.iteration_done(8, True, 0) is False


def test_single_legal_move_without_a_clock_is_analysed_to_the_depth_asked(s):
    s.send("position fen W:W22:B17,K1")
    s.send("go depth 3")
    assert s.bestmove().split()[1] == "22x13"
    assert any(line.startswith("info depth 3 ") for line in s.new())


def test_go_while_the_kernels_compile_is_answered_in_time_with_a_fallback_move():
    eng = Engine()
    gate = threading.Event()
    real_warm = eng._warm

    def slow_warm() -> None:
        gate.wait(10)
        real_warm()

    eng._warm = slow_warm                  # the warm-up thread runs this instead: "compiling" until the gate
    sess = Session(engine=eng)
    sess.send("setoption name OwnBook value false")   # the start position is in the book (test_book.py)
    sess.send("position startpos")
    t0 = time.monotonic()
    sess.send("go wtime 400 btime 400")    # maximum about 70 ms: due long before the kernels are ready
    best = sess.bestmove(5)
    assert time.monotonic() - t0 < 1.0
    assert not eng.ready
    assert best.split()[1] in START_MOVES
    assert any("still compiling" in line for line in sess.new())
    # a stop during compilation is answered at once too
    sess.send("go infinite")
    time.sleep(0.1)
    t0 = time.monotonic()
    sess.send("stop")
    assert sess.bestmove(5).split()[1] in START_MOVES
    assert time.monotonic() - t0 < 1.0
    gate.set()
    assert eng.ensure_ready(timeout=30)
    sess.close()


def test_ponderhit_after_the_ponder_search_finished_releases_bestmove_at_once(s):
    s.send("position startpos")
    s.send("go ponder depth 2 btime 5000 wtime 5000")
    s.wait_for(lambda line: line.startswith("info depth 2 "))
    time.sleep(0.2)
    assert not any(line.startswith("bestmove") for line in s.new())
    assert s.proto.engine.searching          # holding the result
    t0 = time.monotonic()
    s.send("ponderhit")
    s.bestmove(5)
    assert time.monotonic() - t0 < 2.0
    s.idle()
    assert not s.proto.engine.searching


def test_debug_reports_time_budget(s):
    s.send("debug on")
    s.send("position startpos")
    out = s.send("go btime 3000 wtime 3000")
    assert any(re.fullmatch(r"info string time plan: black to move, btime 3000 ms, .*: optimum \d+ ms "
                            r"maximum \d+ ms \(lag kept back \d+ ms\)", line) for line in out)
    s.bestmove()


def test_facade_go_busy_errors_and_exactly_one_on_done():
    from uci_checkers.engine.facade import EngineBusyError
    from uci_checkers.rules.notation import IllegalMoveError
    from uci_checkers.rules.position import Position

    eng = Engine()
    assert eng.ensure_ready(timeout=120)
    eng.set_position(Position.start(), ["11-15"])
    with pytest.raises(IllegalMoveError):
        eng.set_position(Position.start(), ["11-15", "11-15"])
    assert [str(m) for m in eng.game.moves] == ["11-15"]
    done: list = []
    infos: list = []
    with pytest.raises(IllegalMoveError):
        eng.go(GoParams(depth=2, searchmoves=["9-13"]), infos.append, done.append)
    assert not eng.searching
    eng.go(GoParams(infinite=True), infos.append, done.append)
    with pytest.raises(EngineBusyError):
        eng.go(GoParams(depth=1), infos.append, done.append)
    time.sleep(0.2)
    assert done == [] and eng.searching
    eng.stop()
    assert eng.wait(10)
    assert len(done) == 1 and done[0].best is not None and infos
    eng.stop()                               # idle: a no-op
    eng.quit()
    assert len(done) == 1
