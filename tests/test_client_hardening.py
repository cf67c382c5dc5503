"""The client against the faults of issue 13: an info flood, a deaf engine behind a shell script,
and an analysis left running when the next command comes (fake engines in tests/engines)."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from uci_checkers.client import ArgumentError, Engine, EngineTimeoutError, Limit, OptionValueError
from uci_checkers.rules.position import Position

ENGINES = Path(__file__).resolve().parent / "engines"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_play_with_timeout_ends_although_info_lines_keep_coming():
    engine = Engine.popen([sys.executable, str(ENGINES / "info_flood.py")], timeout=5)
    try:
        t0 = time.monotonic()
        with pytest.raises(EngineTimeoutError):
            engine.play(Position.start(), Limit(movetime=100), timeout=1)
        assert time.monotonic() - t0 < 8.0      # 1 s, then 2 s for the ignored stop, then the kill
    finally:
        engine.close(timeout=1, kill=True)


def test_close_kills_the_engine_behind_a_shell_script(tmp_path, monkeypatch):
    pid_file = tmp_path / "pid"
    monkeypatch.setenv("DEAF_PID_FILE", str(pid_file))
    monkeypatch.setenv("PYTHON", sys.executable)
    engine = Engine.popen([str(ENGINES / "deaf_via_shell.sh")], timeout=5)
    child = int(pid_file.read_text())
    assert _alive(child)
    t0 = time.monotonic()
    engine.quit(timeout=0.5)                     # quit is ignored: the group is killed
    assert time.monotonic() - t0 < 8.0
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_next_command_stops_an_unfinished_analysis(tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("ANALYSER_LOG", str(log))
    engine = Engine.popen([sys.executable, str(ENGINES / "analyser.py")], timeout=5)
    try:
        analysis = engine.analysis(Position.start())        # infinite: only a stop ends it
        assert analysis.next() is not None                  # it is running
        t0 = time.monotonic()
        result = engine.play(Position.start(), Limit(depth=1), timeout=5)
        assert time.monotonic() - t0 < 5.0
        assert str(analysis.result.move) == "11-15"        # stopped, and its bestmove read as its own
        assert str(result.move) == "9-13"                  # not confused with the analysis' answer
        analysis2 = engine.analysis(Position.start())
        engine.configure({"Hash": 8})                        # any command: the same
        assert str(analysis2.result.move) == "11-15"
    finally:
        engine.quit()
    commands = [line.split()[0] for line in log.read_text().splitlines() if line.split()]
    assert commands.count("stop") == 2



def test_a_line_is_judged_by_when_it_arrived():
    engine = Engine.popen([sys.executable, str(ENGINES / "analyser.py")], timeout=5)
    try:
        now = time.monotonic()
        engine._reader.put(now - 0.5, "in time")             # arrived before the deadline, read late
        engine._reader.put(now, "too late")                   # arrived after it
        assert engine._line_before(now - 0.3, "testing") == "in time"
        with pytest.raises(EngineTimeoutError):
            engine._line_before(now - 0.3, "testing")
        assert engine._line_before(now + 5, "testing") == "too late"   # kept for the next wait
    finally:
        engine.quit()


# --- issue 20, item 1: a clock for the other side only ------------------------------------------------
def test_a_limit_with_the_other_sides_clock_only_has_a_short_budget():
    assert Limit(wtime=1000).budget_seconds(0) == 0.0        # Black to move: its clock counts as 0
    assert Limit(winc=500).budget_seconds(0) == 0.0
    assert Limit(wtime=1000, binc=200).budget_seconds(0) == 0.2
    assert Limit(btime=1000, wtime=2000).budget_seconds(1) == 2.0
    assert Limit(depth=3).budget_seconds(0) is None


def test_play_with_the_other_sides_clock_only_is_answered_at_once():
    with Engine.popen() as engine:
        t0 = time.monotonic()
        result = engine.play(Position.start(), Limit(wtime=1000))      # the old client waited 600 s
        assert time.monotonic() - t0 < 10.0
        assert result.move is not None


# --- issue 20, items 4-6: arguments are checked before anything is sent -----------------------------
@pytest.mark.parametrize("fields, name", [
    (dict(depth=0), "depth"), (dict(depth=-1), "depth"), (dict(movetime=-5), "movetime"),
    (dict(nodes="abc"), "nodes"), (dict(nodes=1.5), "nodes"), (dict(mate=0), "mate"), (dict(depth=True), "depth"),
    (dict(movestogo=0), "movestogo"), (dict(binc=-1), "binc"), (dict(time=float("nan")), "time"),
    (dict(time=-1), "time"), (dict(wtime="1000"), "wtime"), (dict(infinite="yes"), "infinite"),
])
def test_bad_limits_are_argument_errors_naming_the_field(fields, name):
    with pytest.raises(ArgumentError, match=f"Limit {name} must be") as info:
        Limit(**fields)
    assert isinstance(info.value, ValueError)


@pytest.fixture(scope="module")
def real():
    with Engine.popen() as engine:
        yield engine


def test_bad_search_arguments_are_refused_and_the_engine_stays(real):
    pos = Position.start()
    limit = Limit(depth=2)
    limit.depth = 0                                  # a Limit changed after it was made
    cases = [((pos, limit), {}, "Limit depth must be >= 1"),
             ((pos, None), {}, "limit must be a Limit, not NoneType"),
             ((pos, Limit(depth=1)), {"multipv": 0}, "multipv must be a whole number from 1 to 64"),
             ((pos, Limit(depth=1)), {"multipv": 65}, "multipv must be"),
             ((pos, Limit(depth=1)), {"multipv": "2"}, "multipv must be"),
             ((pos, Limit(depth=1)), {"timeout": -1}, "timeout must be a positive number"),
             (("start", Limit(depth=1)), {}, "position must be a Position, Game or PdnGame, not str"),
             ((pos, Limit()), {}, "the limit is empty")]
    for args, kwargs, message in cases:
        sent = len(real.log)
        with pytest.raises(ArgumentError, match=message):
            real.analyse(*args, **kwargs)
        assert not [line for line in list(real.log)[sent:] if line.startswith("> go")], message
    info = real.analyse(pos, Limit(depth=2))           # the engine was never touched
    assert info.depth == 2
    assert len(real.analyse(pos, Limit(depth=2), multipv=2)) == 2


def test_option_values_are_checked_against_the_declared_type(real):
    cases = [({"MultiPV": "lots"}, "option MultiPV needs a whole number, not 'lots'"),
             ({"MultiPV": 0}, "option MultiPV value 0 is out of range 1..64"),
             ({"Hash": 2.5}, "option Hash needs a whole number"),
             ({"Ponder": "maybe"}, "option Ponder needs True or False"),
             ({"Hash": None}, "option Hash needs a value"),
             ({"EGDB Path": "x\nquit"}, "option EGDB Path: a value must be one line"),
             ({"Hash": 8, "MultiPV": "x"}, "option MultiPV needs a whole number")]
    for options, message in cases:
        sent = len(real.log)
        with pytest.raises(OptionValueError, match=message):
            real.configure(options)
        assert not [line for line in list(real.log)[sent:] if line.startswith("> setoption")], message
    real.configure({"multipv": "2", "Ponder": "TRUE", "Hash": 8})   # text the engine would read is fine
    real.configure({"MultiPV": 1, "Ponder": False})
    assert real.play(Position.start(), Limit(depth=1)).move is not None
