"""The Python client: against a scripted fake engine (misbehaviour) and against the real engine."""
from __future__ import annotations

import asyncio
import sys
import textwrap
import time

import pytest

from uci_checkers.client import AsyncEngine, Engine, EngineError, EngineTerminatedError, EngineTimeoutError, Info, Limit, OptionValueError, Score, _position_parts, parse_info
from uci_checkers.rules.position import Game, Position

FAKE = textwrap.dedent('''
    import sys, time
    mode = sys.argv[1]
    refused = False
    def out(s):
        sys.stdout.write(s + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "uci":
            out("id name Fake"); out("id author tests")
            out("option name Hash type spin default 16 min 1 max 1024")
            out("option name Move Overhead type spin default 30 min 0 max 5000")
            out("uciok")
        elif w[0] == "isready":
            out("readyok")
        elif w[0] == "setoption" and "Hash" in w and "value" in w and w[-1] == "7":
            out("info string error: Hash must be a power of two")
        elif w[0] == "go":
            if mode == "die":
                sys.stderr.write("fake engine: crashing on purpose\\n"); sys.stderr.flush()
                sys.exit(3)
            if mode == "silent":
                continue
            if mode == "refuse" and not refused:
                refused = True                    # protocol.md: a refused go starts nothing, no bestmove
                out("info string error: go: depth must be >= 1, not 0")
                continue
            if mode == "internal" and not refused:
                refused = True                    # a failure inside an accepted search: then its bestmove
                out("info string error: internal: boom")
                out("bestmove 9-13")
                continue
            out("info depth 1 score cp 12 nodes 7 pv 11-15 23-19")
            out("info string just chatting")
            if mode == "illegal":
                out("bestmove 1-2")
            else:
                out("bestmove 11-15 ponder 23-19")
        elif w[0] == "stop" and mode == "silent":
            pass
        elif w[0] == "stop" and mode in ("refuse", "internal"):
            out("info string error: stop: no search is running")
        elif w[0] == "quit":
            break
''')


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE)

    def start(mode: str, **kw) -> Engine:
        return Engine.popen([sys.executable, str(path), mode], **kw)
    return start


def test_fake_handshake_and_play(fake):
    with fake("normal") as eng:
        assert eng.id["name"] == "Fake"
        assert eng.options["move overhead"].max == 5000
        res = eng.play(Position.start(), Limit(depth=1))
        assert str(res.move) == "11-15" and str(res.ponder) == "23-19"
        assert res.info.score == Score(cp=12) and res.info.nodes == 7
        assert [str(m) for m in res.info.pv] == ["11-15", "23-19"]
        eng.configure({"hash": 32, "Move Overhead": 10})
        with pytest.raises(EngineError, match="no option"):
            eng.configure({"Nope": 1})
        with pytest.raises(EngineError, match="Hash must be a power of two"):   # refused by the engine
            eng.configure({"Hash": 7})
        with pytest.raises(OptionValueError, match="out of range 1..1024"):     # by the client: never sent
            eng.configure({"Hash": 0})
        assert "> setoption name Hash value 0" not in eng.log
        assert "> setoption name Hash value 32" in eng.log
    assert eng.process.returncode == 0


def test_fake_analysis_iterates_to_the_end(fake):
    with fake("normal") as eng:
        with eng.analysis(Position.start(), Limit(depth=1)) as an:
            infos = list(an)
        assert [i.depth for i in infos] == [1]
        assert str(an.result.move) == "11-15" and an.info.score == Score(cp=12)
        assert "> go depth 1" in eng.log


def test_fake_illegal_move_is_an_error(fake):
    with fake("illegal") as eng:
        with pytest.raises(EngineError, match="illegal move '1-2'"):
            eng.play(Position.start(), Limit(depth=1))


def test_fake_death_is_reported_with_stderr(fake):
    eng = fake("die")
    with pytest.raises(EngineTerminatedError, match="crashing on purpose") as info:
        eng.play(Position.start(), Limit(movetime=50))
    assert "exit code 3" in str(info.value)
    with pytest.raises(EngineTerminatedError):
        eng.play(Position.start(), Limit(movetime=50))
    eng.quit()


@pytest.mark.parametrize("mode", ["refuse", "internal"])
def test_an_error_answer_to_go_keeps_the_engine(fake, mode):
    """Issue 20, item 4: a refused go gets no bestmove; the client neither waits for one nor kills."""
    eng = fake(mode)
    try:
        t0 = time.monotonic()
        with pytest.raises(EngineError, match="engine reported: error: "):
            eng.play(Position.start(), Limit(depth=3))
        assert time.monotonic() - t0 < 1.5          # the old client waited 2 s for a bestmove, then killed
        assert eng.process.poll() is None
        res = eng.play(Position.start(), Limit(depth=1))  # usable, and not confused by an old bestmove
        assert str(res.move) == "11-15"
    finally:
        eng.quit()


def test_fake_timeout(fake):
    eng = fake("silent")
    t0 = time.monotonic()
    with pytest.raises(EngineTimeoutError):
        eng.play(Position.start(), Limit(depth=3), timeout=0.5)
    assert time.monotonic() - t0 < 15
    eng.quit(timeout=2)


def test_cannot_start_missing_binary(tmp_path):
    with pytest.raises(EngineTerminatedError, match="cannot start"):
        Engine.popen([str(tmp_path / "no-such-engine")])


def test_limit_and_info_parsing():
    assert Limit(depth=3, movetime=100).go_args() == ["depth", "3", "movetime", "100"]
    assert Limit(time=0.25).go_args() == ["movetime", "250"]
    assert Limit(btime=1000, wtime=2000, binc=10).go_args() == ["btime", "1000", "wtime", "2000", "binc", "10"]
    assert Limit(btime=1000, binc=500).budget_seconds(0) == 1.5
    assert Limit(depth=3).budget_seconds(0) is None
    assert Limit(infinite=True).go_args() == ["infinite"] and Limit().is_empty()
    info = parse_info("depth 7 seldepth 12 multipv 2 score mate -3 lowerbound nodes 99 time 5 pv 11-15 9-9")
    assert info.score == Score(mate=-3, bound="lowerbound") and info.multipv == 2 and info.time_ms == 5
    assert info.pv_text == ["11-15", "9-9"] and info.pv == []
    assert str(Score(cp=35)) == "+0.35" and str(Score(mate=-2)) == "#-2"
    assert (-Score(cp=35)).cp == -35
    assert Score(mate=3).value() > Score(cp=5000).value() > Score(mate=-3).value()
    with pytest.raises(TypeError):
        _position_parts("not a position")


# --- the real engine ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real():
    pytest.importorskip("uci_checkers.protocols.uci")
    with Engine.popen() as eng:
        yield eng


POSITIONS = [
    "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12",
    "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",
    "B:WK5,22,23:B9,K30",
    "W:W10,20,26,28,32:B1,2,3,4,5",
    "B:W6,7,8,15,16,24:BK3",
]


def test_real_analyse_positions(real):
    assert "uci_checkers" in real.id.get("name", "")
    for fen in POSITIONS:
        pos = Position.from_fen(fen)
        info = real.analyse(pos, Limit(depth=4))
        assert isinstance(info, Info)
        assert info.depth is not None and info.depth >= 1
        assert info.score is not None
        assert info.pv, fen
        legal = {m.squares for m in pos.legal_moves()}
        assert info.pv[0].squares in legal


def test_real_multipv(real):
    lines = real.analyse(Position.start(), Limit(depth=3), multipv=3)
    assert isinstance(lines, list) and len(lines) == 3
    firsts = [ln.pv[0].squares for ln in lines]
    assert len(set(firsts)) == 3
    assert [ln.multipv for ln in lines] == [1, 2, 3]
    real.configure({"MultiPV": 1})


def test_real_self_play_game(real):
    game = Game()
    real.new_game()
    while not game.status().is_over and len(game.moves) < 60:
        res = real.play(game, Limit(depth=2))
        assert res.move is not None
        game.push(res.move)
    # a finished position: the engine has no move and says so
    if game.status().is_over and not game.position.has_legal_move():
        assert real.play(game, Limit(depth=1)).move is None
    assert len(game.moves) >= 10


def test_real_infinite_analysis(real):
    with real.analysis(Position.start()) as an:
        for info in an:
            if info.depth and info.depth >= 3:
                break
    assert an.finished and an.result.move is not None
    assert an.info.depth >= 3
    assert "> go infinite" in real.log and "> stop" in real.log
    assert real.play(Position.start(), Limit(depth=1)).move is not None    # usable afterwards
    with pytest.raises(ValueError, match="infinite"):
        real.analyse(Position.start(), Limit(infinite=True))


def test_real_async_wrapper():
    pytest.importorskip("uci_checkers.protocols.uci")

    async def main():
        async with await AsyncEngine.popen() as eng:
            res = await eng.play(Position.start(), Limit(depth=2))
            return res.move
    move = asyncio.run(main())
    assert move is not None and move.squares in {m.squares for m in Position.start().legal_moves()}
