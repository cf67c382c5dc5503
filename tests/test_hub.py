"""Hub protocol: syntax, positions/moves in both orientations, in-process transcripts, and full games
driven by pydraughts' HubEngine and by a hand-written transcript against the real process."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from uci_checkers.client import Engine as LineChannel
from uci_checkers.protocols.hub import HubError, HubSession, format_hub_move, format_hub_position, parse_hub_line, parse_hub_move, parse_hub_position
from uci_checkers.rules.position import Game, Position

ROOT = Path(__file__).resolve().parents[1]
PYDRAUGHTS_START = "Wbbbbbbbbbbbbeeeeeeeewwwwwwwwwwww"
NORMAL_START = "Bbbbbbbbbbbbbeeeeeeeewwwwwwwwwwww"


# --- syntax, positions, moves ----------------------------------------------------------------------
def test_parse_hub_line():
    assert parse_hub_line('pos pos=Wbe moves="11-15 23-19" start') == (
        "pos", {"pos": "Wbe", "moves": "11-15 23-19"}, ["start"])
    assert parse_hub_line("go think") == ("go", {}, ["think"])
    assert parse_hub_line('set-param name=x value=""') == ("set-param", {"name": "x", "value": ""}, [])
    assert parse_hub_line("   ") == ("", {}, [])


def test_positions_both_orientations():
    start = Position.start()
    assert format_hub_position(start) == NORMAL_START
    assert format_hub_position(start, "pydraughts") == PYDRAUGHTS_START
    assert parse_hub_position(NORMAL_START) == start
    assert parse_hub_position(PYDRAUGHTS_START, "pydraughts") == start
    # the same string read normally is the start with White to move
    assert parse_hub_position(PYDRAUGHTS_START).turn == 1
    rng = random.Random(5)
    game = Game()
    for _ in range(60):
        if game.status().is_over:
            break
        game.push(rng.choice(game.position.legal_moves()))
        pos = game.position
        for orient in ("normal", "pydraughts"):
            assert parse_hub_position(format_hub_position(pos, orient), orient) == pos
    with pytest.raises(HubError, match="33 characters"):
        parse_hub_position("Wbbb")
    with pytest.raises(HubError, match="impossible"):
        parse_hub_position("W" + "e" * 28 + "bbbb")   # black men on their crowning row


def test_pydraughts_orientation_matches_pydraughts():
    draughts = pytest.importorskip("draughts")
    b = draughts.Board(variant="english")
    for text in ["11-15", "23-19", "8-11", "22-17", "9-14"]:
        b.push(draughts.Move(b, pdn_move=text))
    assert b._game.initial_hub_fen == PYDRAUGHTS_START
    pos = Game.from_moves(None, ["11-15", "23-19", "8-11", "22-17", "9-14"]).position
    assert b._game.get_fen() == format_hub_position(pos, "pydraughts")


def test_hub_moves():
    pos = Position.from_fen("B:W6,7,8,15,16,24:BK3")
    moves = {str(m): m for m in pos.legal_moves()}
    long = moves["3x12x19x10x1"]
    assert format_hub_move(long) == "3x1x8x16x15x6"           # captured in the order jumped
    assert parse_hub_move(pos, "3x1x6x8x15x16") == long       # any order
    assert parse_hub_move(pos, "3x1x16x15x8x6") == long
    assert parse_hub_move(pos, "3x12x19x10x1") == long        # a landing path is accepted too
    short = moves["3x10x1"]
    assert parse_hub_move(pos, format_hub_move(short)) == short
    assert parse_hub_move(Position.start(), "11-15").squares == (11, 15)
    with pytest.raises(HubError):
        parse_hub_move(pos, "3x1x7")
    with pytest.raises(HubError):
        parse_hub_move(Position.start(), "11-16x")


# --- in-process transcripts -------------------------------------------------------------------------
class Transcript:
    def __init__(self, **kw):
        self.lines: list[str] = []
        self.session = HubSession(self.lines.append, **kw)

    def send(self, *lines: str) -> None:
        for line in lines:
            assert self.session.handle(line) in (True, False)

    def wait_for(self, prefix: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, line in enumerate(self.lines):
                if line.startswith(prefix):
                    del self.lines[:i + 1]
                    return line
            time.sleep(0.01)
        raise AssertionError(f"no {prefix!r} in {self.lines}")


@pytest.fixture(scope="module")
def session():
    t = Transcript()
    t.send("hub")
    t.wait_for("wait")
    t.send("init")
    t.wait_for("ready", 180)
    yield t
    t.session.close()


def test_session_handshake_and_params():
    t = Transcript()
    t.send("hub")
    t.wait_for("wait")
    t.send("hub")
    ident = t.wait_for("id ")
    assert "name=uci_checkers" in ident
    params = [ln for ln in t.lines if ln.startswith("param ")]
    assert any('name=variant value=english type=enum values=english' in p for p in params)
    assert any('name=orientation value=auto type=enum values="auto normal pydraughts"' in p for p in params)
    assert any(p.startswith("param name=hash ") and "type=int" in p for p in params)
    for p in params:                           # pydraughts splits every argument on '=': no bare flags
        _, args, flags = parse_hub_line(p)
        assert not flags and "name" in args and "value" in args
    t.lines.clear()
    t.send("set-param name=variant value=english", "set-param name=hash value=8", "set-param name=orientation value=normal")
    assert t.lines == []
    assert t.session.orientation == "normal"
    t.send("set-param name=variant value=international")
    assert t.lines.pop().startswith('error message="variant')
    t.send("set-param name=hash value=-5")
    assert t.lines.pop().startswith("error message=")
    t.send("set-param name=nonsense value=1", "frobnicate now")
    assert len(t.lines) == 1 and "unknown param" in t.lines.pop()
    t.session.close()


def test_session_think_ping_and_levels(session):
    t = session
    t.send(f'pos pos={NORMAL_START} moves="11-15 23-19"', "level depth=3", "go think", "ping")
    assert t.wait_for("pong")
    done = t.wait_for("done ")
    _, args, _ = parse_hub_line(done)
    pos = Game.from_moves(None, ["11-15", "23-19"]).position
    parse_hub_move(pos, args["move"])
    # every level form gives the engine what it should
    s = t.session
    s.engine.set_position(Position.start(), [])
    for line, expect in [("level depth=7", {"depth": 7}), ("level nodes=5000", {"nodes": 5000}),
                         ("level move-time=0.25", {"movetime": 250}),
                         ("level time=60 inc=2", {"btime": 62000, "binc": 2000}),
                         ("level moves=10 time=30", {"btime": 30000, "movestogo": 10}),
                         ("level infinite", {"infinite": True})]:
        t.send(line)
        params = s._go_params("think")
        for k, v in expect.items():
            assert getattr(params, k) == v, line
        assert s.level == {}                   # a level lasts one search
    assert s._go_params("think").movetime == 1000      # default without a level
    assert s._go_params("analyze").infinite
    t.send("level depth=x")
    assert t.wait_for("error ")


def test_a_book_move_in_hub_play_is_an_info_line_not_an_error(session):
    t = session
    t.lines.clear()
    t.send(f"pos pos={NORMAL_START}", "level move-time=0.2", "go think")
    deadline = time.monotonic() + 30
    while not any(line.startswith("done ") for line in t.lines) and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = list(t.lines)
    done = next(line for line in lines if line.startswith("done "))
    assert not [line for line in lines if line.startswith("error")], lines
    assert [line for line in lines if line.startswith("info ")]
    assert t.session.engine.opening_book() is not None       # the packaged book, which holds the start position
    book_move = t.session.engine.opening_book().probe(Position.start())[0].text()
    assert parse_hub_move(Position.start(), parse_hub_line(done)[1]["move"]).text() == book_move
    t.lines.clear()


def test_session_analyze_stop_ponder(session):
    t = session
    t.send(f"pos pos={NORMAL_START}", "go analyze")
    t.wait_for("info ")
    t.send("ping")
    t.wait_for("pong")
    t.send("stop")
    done = t.wait_for("done ")
    assert parse_hub_line(done)[1]["move"] in {m.text() for m in Position.start().legal_moves()}
    # ponder: nothing until ponder-hit, then the level's limit applies
    t.send(f'pos pos={NORMAL_START} moves="11-15 23-19"', "level move-time=0.2", "go ponder")
    time.sleep(0.4)
    assert not any(ln.startswith("done") for ln in t.lines)
    t.send("ponder-hit")
    t.wait_for("done ", 20)
    # a new go while searching replaces the search; only one done comes back
    t.lines.clear()
    t.send(f"pos pos={NORMAL_START}", "go analyze", f'pos pos={NORMAL_START} moves="9-13"', "level depth=2",
           "go think")
    t.wait_for("done ")
    time.sleep(0.3)
    assert not any(ln.startswith("done") for ln in t.lines)
    t.send("new-game")


def test_session_bad_positions(session):
    t = session
    t.lines.clear()
    t.send("pos pos=Bbbb")
    assert "33 characters" in t.wait_for("error ")
    t.send(f'pos pos={NORMAL_START} moves="11-15 11-16"')
    assert "move 2" in t.wait_for("error ")
    t.send("pos")
    assert t.wait_for("error ")


def test_session_auto_orientation():
    t = Transcript()
    s = t.session
    # only the pydraughts reading makes 11-15 legal (Black moves first from the set-up)
    start, moves = s._read_position(PYDRAUGHTS_START, ["11-15"])
    assert start == Position.start() and s.detected == "pydraughts"
    # ambiguous (no moves): the reading detected earlier in the session wins
    s.detected = "normal"
    start, _ = s._read_position(PYDRAUGHTS_START, [])
    assert start.turn == 1
    s.detected = None
    start, _ = s._read_position(PYDRAUGHTS_START, [])         # the initial set-up with Black to move
    assert start == Position.start()
    start, _ = s._read_position(NORMAL_START, [])
    assert start == Position.start()
    start, moves = s._read_position(NORMAL_START, ["11-15", "23-19"])
    assert s.detected == "normal" and len(moves) == 2
    s.orientation = "pydraughts"
    with pytest.raises(HubError):
        s._read_position(NORMAL_START, ["11-15"])
    start, _ = s._read_position("start", ["11-15"])
    assert start == Position.start()
    t.session.close()


# --- the real process --------------------------------------------------------------------------------
def _wrapper(tmp_path: Path) -> str:
    """pydraughts resolves symlinks in the command (losing a venv's python): run through a script."""
    script = tmp_path / "uci-checkers-hub.sh"
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" '
                      f'-m uci_checkers "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_pydraughts_plays_complete_games(tmp_path):
    draughts = pytest.importorskip("draughts")
    from draughts.engine import HubEngine, Limit

    engine = HubEngine([_wrapper(tmp_path), "hub"], cwd=str(tmp_path))
    try:
        assert engine.id["name"] == "uci_checkers" and "english" in engine.variants
        engine.setoption("variant", "english")
        engine.init()
        rng = random.Random(3)
        # game 1: the engine plays both sides; game 2: the engine is White against a random Black
        for game_no in (1, 2):
            board = draughts.Board(variant="english")
            plies = 0
            while not board.is_over():
                assert plies < 400, "game did not finish"
                if game_no == 2 and plies % 2 == 0:
                    board.push(rng.choice(board.legal_moves()))
                else:
                    result = engine.play(board, Limit(depth=2 if game_no == 1 else 3), ponder=False)
                    assert result.move is not None
                    board.push(result.move)          # pydraughts checks legality
                plies += 1
            ours = Game.from_moves(None, [m.pdn_move for m in board.move_stack])
            assert len(ours.moves) == plies
            if game_no == 2:
                assert board.winner() == draughts.WHITE, "the engine should beat a random mover"
        # a game from a set-up position whose pydraughts string is read in pydraughts' orientation
        engine.setoption("orientation", "pydraughts")
        board = draughts.Board(variant="english", fen="W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13")
        result = engine.play(board, Limit(movetime=0.1), ponder=False)
        board.push(result.move)
        # a clock (pydraughts subtracts the increment, Hub engines add it back) and pondering
        result = engine.play(board, Limit(time=3, inc=0.1), ponder=False)
        board.push(result.move)
        box = []
        worker = threading.Thread(target=lambda: box.append(engine.play(board, Limit(movetime=0.2), ponder=True)))
        worker.start()
        time.sleep(0.3)
        assert not box                               # pondering: no answer before ponder-hit
        engine.ponderhit()
        worker.join(30)
        assert box and box[0].move is not None
        board.push(box[0].move)
    finally:
        engine.quit()
        try:
            engine.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            engine.kill_process()


def _spawn(args: list[str]) -> LineChannel:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers"] + args, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
    return LineChannel(proc, timeout=60)


@pytest.mark.parametrize("entry", [["hub"], []])
def test_transcript_normal_orientation_full_game(entry):
    """A hand-written Hub conversation in normal orientation, through `uci-checkers hub` and through the
    default engine (which hands over when the first line is `hub`)."""
    chan = _spawn(entry)
    try:
        chan.send("hub")
        chan._lines_until("wait", 60)
        chan.send("set-param name=orientation value=normal")
        chan.send("init")
        chan._lines_until("ready", 180)
        game = Game()
        hub_moves: list[str] = []
        while not game.status().is_over:
            assert len(game.moves) < 400
            moves = f' moves="{" ".join(hub_moves)}"' if hub_moves else ""
            chan.send(f"pos pos={NORMAL_START}{moves}")
            chan.send("level depth=2")
            chan.send("go think")
            before = chan._lines_until("done", 60)
            assert all(ln.startswith("info ") for ln in before), before
            done = chan.log[-1][2:]
            _, args, _ = parse_hub_line(done)
            move = parse_hub_move(game.position, args["move"])
            assert format_hub_move(move) == args["move"]
            game.push(move)
            hub_moves.append(args["move"])
        chan.send("ping")
        chan._lines_until("pong", 10)
        chan.send("quit")
        assert chan.process.wait(timeout=20) == 0
    finally:
        chan.close(timeout=5, kill=True)


# --- issue 20, item 10: what Hub does not understand is ignored (nothing on stdout), noted on stderr ----
def test_unknown_commands_and_arguments_are_ignored_and_noted_once():
    notes: list[str] = []
    t = Transcript(log=notes.append)
    try:
        t.send("foo", "foo", "bar x=1 flag")
        assert t.lines == [] and len(notes) == 2
        assert "ignored unknown command 'foo'" in notes[0] and "'bar'" in notes[1]
        t.send("ping extra=1")
        assert t.lines == ["pong"]                           # understood: done, the argument noted
        assert "ignored unknown argument 'extra' of ping" in notes[-1]
        t.send("pos start colour=red")
        assert t.lines == ["pong"] and "unknown argument 'colour' of pos" in notes[-1]
        t.send("pos pos=xyz")                                 # understood but wrong: an error line
        assert t.lines[-1].startswith("error message=")
        t.send("set_param name=x value=1")                    # not Hub's spelling: unknown too
        assert "unknown command 'set_param'" in notes[-1] and len(t.lines) == 2
        for i in range(200):                                   # a flood is noted a bounded number of times
            t.send(f"junk{i}")
        assert len(notes) <= 60 and "without a note" in notes[-1]
    finally:
        t.session.close()


def test_the_hub_process_writes_nothing_on_stdout_for_an_unknown_command():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run([sys.executable, "-m", "uci_checkers", "hub"], input="hub\nfoo\nping\nquit\n",
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0
    out = done.stdout.splitlines()
    assert out[-1] == "pong" and out[-2] == "wait" and not any("foo" in line for line in out)
    assert "hub: ignored unknown command 'foo'" in done.stderr
