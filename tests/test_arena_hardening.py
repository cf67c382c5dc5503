"""The arena against the faults of issue 13: floods, deaf shell-script engines, bad commands and
options, unwritable outputs, interrupted and mismatched resumes, time settings that starve an engine.

Every engine here is a small script under tests/engines (milliseconds to start).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from uci_checkers.arena import main as arena_main
from uci_checkers.arena import game as G
from uci_checkers.arena import runner as R
from uci_checkers.arena.engine import EngineConfig, EngineOptionError, EngineProcess, EngineStartError, EngineTimeout, Limits, Timeouts
from uci_checkers.rules.pdn import read_pdn_file
from uci_checkers.util.linereader import LATE_READ_GRACE

ENGINES = Path(__file__).resolve().parent / "engines"
MOVER = str(ENGINES / "random_mover.py")
FLOOD = str(ENGINES / "info_flood.py")
DEAF_SHELL = str(ENGINES / "deaf_via_shell.sh")
REPO = Path(__file__).resolve().parent.parent


def quick() -> Timeouts:
    return Timeouts(uciok=5.0, readyok=5.0, move=2.0, margin_ms=100, stop_grace=0.5)


def mover_cmd(name: str) -> str:
    return f"cmd={sys.executable} {MOVER} --name {name}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                   # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


# --- item 3: an info flood is forfeited on time -------------------------------------------------

def test_info_flood_without_bestmove_is_a_timeout_at_the_deadline():
    eng = EngineProcess(EngineConfig("flood", [sys.executable, FLOOD]), quick())
    eng.start()
    try:
        t0 = time.monotonic()
        with pytest.raises(EngineTimeout):
            eng.search("position startpos", "go movetime 100", 0.5)
        # The flood never ends, so only the deadline ends this wait: 0.5 s, plus at most
        # LATE_READ_GRACE for the backlog of lines that arrived in time, plus slack for a busy
        # machine (CI once measured 2.1 s with the reader thread and a loaded CPU).
        assert time.monotonic() - t0 < 0.5 + LATE_READ_GRACE + 1.5
        assert not eng.settle()                  # stop is ignored too: settling fails in time
    finally:
        t0 = time.monotonic()
        eng.close()
        assert time.monotonic() - t0 < 5.0


def test_info_flood_loses_the_game_on_time(tmp_path):
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "name=flood", f"cmd={sys.executable} {FLOOD}",
                       "--engine", "name=mover", mover_cmd("mover"), "--movetime", "100", "--margin", "100",
                       "--games", "1", "--book-order", "--pdn-out", str(out), "--no-progress"])
    assert code == 0
    (game,) = read_pdn_file(out).games
    assert game.tag("Termination") == G.TIME_FORFEIT and game.result == "0-1"


# --- item 4: a shell-script engine without exec that ignores go and quit ------------------------

def test_close_does_not_freeze_on_a_deaf_engine_behind_a_shell(tmp_path, monkeypatch):
    pid_file = tmp_path / "deaf.pid"
    monkeypatch.setenv("DEAF_PID_FILE", str(pid_file))
    monkeypatch.setenv("PYTHON", sys.executable)
    eng = EngineProcess(EngineConfig("deaf", [DEAF_SHELL]), quick())
    eng.start()
    shell_pid = eng.proc.pid
    child = int(pid_file.read_text())
    assert child != shell_pid and _alive(child)
    with pytest.raises(EngineTimeout):
        eng.search("position startpos", "go movetime 50", 0.3)
    assert not eng.settle()
    t0 = time.monotonic()
    eng.close(timeout=0.5)
    assert time.monotonic() - t0 < 5.0
    deadline = time.monotonic() + 5.0
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the engine behind the shell outlived close()"


def test_a_match_against_a_deaf_shell_engine_ends_and_leaves_no_orphan(tmp_path):
    pid_file = tmp_path / "deaf.pid"
    env = {**os.environ, "DEAF_PID_FILE": str(pid_file), "PYTHON": sys.executable, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "match", "--engine", "name=deaf",
                           f"cmd={DEAF_SHELL}", "--engine", "name=mover", mover_cmd("mover"),
                           "--movetime", "100", "--games", "2", "--book-order", "--no-progress",
                           "--timeout-move", "2"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "time forfeit 2" in proc.stdout
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5.0
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


# --- item 16: a missing command or a refused option fails fast with exit 2 ----------------------

def test_missing_engine_command_exits_2_before_any_game(tmp_path, capsys):
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "cmd=/nonexistent/engine", "--depth", "1", "--pdn-out", str(out)])
    assert code == 2
    assert "/nonexistent/engine" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("option, needle", [("option.Hash=abc", "needs a whole number"),
                                            ("option.NoSuchThing=1", "has no option 'NoSuchThing'")])
def test_refused_or_unknown_option_exits_2(tmp_path, capsys, option, needle):
    code = arena_main(["--engine", "name=a", mover_cmd("a"), option, "--engine", "name=b", mover_cmd("b"),
                       "--depth", "1", "--games", "4", "--no-progress", "--pdn-out", str(tmp_path / "g.pdn")])
    assert code == 2
    err = capsys.readouterr().err
    assert needle in err
    assert read_pdn_file(tmp_path / "g.pdn").games == []


def test_engine_process_raises_config_errors():
    with pytest.raises(EngineStartError):
        EngineProcess(EngineConfig("x", [str(ENGINES / "no_such_engine")]), quick()).start()
    eng = EngineProcess(EngineConfig("m", [sys.executable, MOVER], options={"Hash": "abc"}), quick())
    with pytest.raises(EngineOptionError, match="whole number"):
        eng.start()
    eng.close()


# --- issue 20 item 7: an engine that cannot start stops the match at its first start --------------

@pytest.mark.parametrize("cmd, needle", [
    (f"{sys.executable} -m uci_chekers", "No module named uci_chekers"),   # a typo in the module name
    ("false", "wrote nothing on stderr or stdout"),
    ("cat", "its last output: 'uci'"),                                      # echoes, never says uciok
])
def test_an_engine_that_cannot_start_exits_2_at_its_first_start(tmp_path, capsys, cmd, needle):
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "name=a", mover_cmd("a"), "--engine", "name=b", f"cmd={cmd}",
                       "--depth", "1", "--games", "6", "--timeout-uci", "1", "--no-progress",
                       "--pdn-out", str(out)])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "engine b: " in captured.err and "could not start" in captured.err
    assert needle in captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""                     # no result table for a match that never started
    assert read_pdn_file(out).games == []         # stopped at the first start: no game was played


def test_an_engine_that_fails_a_restart_loses_that_game_only(tmp_path, capsys):
    # it starts, crashes in its first game, and its restart fails: it has started before, so the
    # match goes on (the games are lost), as for any crash
    mark = tmp_path / "started-once"
    script = tmp_path / "once.sh"
    script.write_text(f"#!/bin/sh\nif [ -e {mark} ]; then echo 'cannot start again' >&2; exit 1; fi\n"
                      f"touch {mark}\nexec {sys.executable} {MOVER} --name once --fault crash --fault-at 2\n")
    script.chmod(0o755)
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "name=good", mover_cmd("good"), "--engine", "name=once", f"cmd={script}",
                       "--depth", "1", "--games", "3", "--book-order", "--no-progress", "--pdn-out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    games = read_pdn_file(out).games
    assert len(games) == 3 and all(g.tag("Termination") == G.ENGINE_CRASH for g in games)
    assert all(g.result == ("1-0" if g.tag("Black") == "good" else "0-1") for g in games)


# --- item 15: outputs and matplotlib checked before work ----------------------------------------

@pytest.mark.parametrize("flag", ["--json", "--plot", "--pdn-out"])
def test_unwritable_output_is_refused_before_any_game(tmp_path, capsys, flag):
    target = str(tmp_path / "missing-dir" / "out.file")
    t0 = time.monotonic()
    code = arena_main(["--engine", mover_cmd("a"), "--engine", mover_cmd("b"), "--depth", "1", flag, target])
    assert code == 2 and time.monotonic() - t0 < 5.0
    assert "does not exist" in capsys.readouterr().err


def test_missing_matplotlib_is_reported_before_any_game(tmp_path, capsys, monkeypatch):
    import uci_checkers.arena.plot as plot
    monkeypatch.setattr(plot, "plot_available", lambda: "matplotlib is not installed")
    code = arena_main(["--engine", mover_cmd("a"), "--engine", mover_cmd("b"), "--depth", "1",
                       "--plot", str(tmp_path / "p.png"), "--pdn-out", str(tmp_path / "g.pdn")])
    assert code == 2
    assert "matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "g.pdn").exists()


@pytest.mark.parametrize("args", [["--timeout-move", "inf"], ["--timeout-move", "nan"], ["--margin", "-5"],
                                  ["--tc", "inf"], ["--tc", "nan+1"], ["--movetime", "9300000000000"],
                                  ["--nodes", "99999999999999999999999"]])
def test_numbers_out_of_range_are_refused(args, capsys):
    code = arena_main(["--engine", mover_cmd("a"), "--engine", mover_cmd("b"), "--depth", "1", *args])
    assert code == 2
    assert capsys.readouterr().err.startswith("uci-checkers match:")


# --- item 7: resume rewrites atomically, refuses other limits, is interruptible -----------------

def _play(tmp_path, *extra):
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "name=a", mover_cmd("a"), "--engine", "name=b", mover_cmd("b"),
                       "--games", "4", "--book-order", "--no-progress", "--pdn-out", str(out), *extra])
    return code, out


def test_resume_with_other_limits_is_refused(tmp_path, capsys):
    code, out = _play(tmp_path, "--depth", "1")
    assert code == 0
    before = out.read_bytes()
    assert read_pdn_file(out).games[0].tag("Limits") == "depth=1"
    code, _ = _play(tmp_path, "--depth", "2", "--games", "6", "--resume")
    assert code == 2
    assert "depth=1" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_resume_with_other_draw_adjudication_is_refused(tmp_path, capsys):
    code, out = _play(tmp_path, "--depth", "1", "--adjudicate-draws", "plies=200")
    assert code == 0
    before = out.read_bytes()
    assert read_pdn_file(out).games[0].tag("DrawAdjudication") == "after=40 plies=200 score=10"
    for other in ([], ["--adjudicate-draws"]):          # off, and other settings
        code, _ = _play(tmp_path, "--depth", "1", "--games", "6", "--resume", *other)
        assert code == 2
        err = capsys.readouterr().err
        assert "draw adjudication after=40 plies=200 score=10" in err and err.count("\n") == 1
        assert out.read_bytes() == before
    code, _ = _play(tmp_path, "--depth", "1", "--games", "6", "--resume", "--adjudicate-draws", "plies=200")
    assert code == 0 and len(read_pdn_file(out).games) == 6


def test_resume_rewrite_is_atomic(tmp_path, monkeypatch):
    code, out = _play(tmp_path, "--depth", "1")
    with out.open("a") as f:                   # a game cut off by a kill
        f.write('[Event "uci_checkers arena"]\n[Round "5"]\n\n1. 11-15')
    before = out.read_bytes()

    def crash(*args):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        R.Match(*_match_args(out))
    assert out.read_bytes() == before          # the old file, whole
    assert [p.name for p in tmp_path.iterdir()] == ["g.pdn"]   # no temporary file left
    monkeypatch.undo()
    match = R.Match(*_match_args(out))         # without the crash: the cut-off game is dropped
    assert match.resumed == 4 and "1. 11-15" not in out.read_text()


def _match_args(out, engine_args=None, games=6):
    from uci_checkers.arena import build_parser, engines_from_args
    from uci_checkers.arena.openings import load, ordered
    engine_args = engine_args or ["--engine", "name=a", mover_cmd("a"), "--engine", "name=b", mover_cmd("b")]
    args = build_parser().parse_args([*engine_args, "--depth", "1"])
    engines = engines_from_args(args)
    book = ordered(load("ballots3"), 1, shuffle=False)
    jobs = R.schedule(engines, "match", games, book)
    return engines, jobs, G.Settings(timeouts=quick()), "match", str(out), True


def test_interrupt_during_the_resume_rewrite_exits_130_and_keeps_the_file(tmp_path, monkeypatch, capsys):
    code, out = _play(tmp_path, "--depth", "1")
    before = out.read_bytes()

    def interrupted(self, path):
        raise KeyboardInterrupt

    monkeypatch.setattr(R.Match, "_resume", interrupted)
    code, _ = _play(tmp_path, "--depth", "1", "--resume")
    assert code == 130
    assert "Traceback" not in capsys.readouterr().err
    assert out.read_bytes() == before


def test_sigterm_during_a_match_keeps_finished_games_and_resumes(tmp_path):
    out = tmp_path / "g.pdn"
    cmd = [sys.executable, "-m", "uci_checkers", "match", "--engine", "name=a", mover_cmd("a"),
           "--engine", "name=b", f"cmd={sys.executable} {MOVER} --name b --fault slow --slow-ms 30",
           "--depth", "1", "--games", "40", "--book-order", "--no-progress", "--pdn-out", str(out)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(read_pdn_file(out).games if out.exists() else []) < 2:
        time.sleep(0.2)
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    kept = len(read_pdn_file(out).games)
    assert kept >= 2
    match = R.Match(*_match_args(out, cmd[4:10], games=40))
    assert match.resumed == kept and len(match.jobs) == 40 - kept


# --- item 14: Move Overhead that eats the move time ---------------------------------------------

def test_time_warnings():
    assert G.time_warnings(Limits(movetime_ms=50), 50)
    assert "half" in G.time_warnings(Limits(movetime_ms=80), 50)[0]
    assert G.time_warnings(Limits(movetime_ms=1000), 50) == []
    assert G.time_warnings(Limits(depth=3), 50) == []
    assert G.time_warnings(Limits(movetime_ms=50), None) == []


def test_match_warns_when_move_overhead_eats_the_movetime(tmp_path, capsys):
    code = arena_main(["--engine", "name=a", mover_cmd("a"), "--engine", "name=b", mover_cmd("b"),
                       "--movetime", "50", "--games", "2", "--book-order", "--no-progress"])
    assert code == 0
    err = capsys.readouterr().err
    assert "Move Overhead 50 ms eats the whole movetime of 50 ms" in err


def test_a_line_is_judged_by_when_it_arrived():
    eng = EngineProcess(EngineConfig("m", [sys.executable, MOVER]), quick())
    eng.start()
    try:
        now = time.monotonic()
        eng.reader.put(now - 0.5, "in time")     # arrived before the deadline, read late (a busy machine)
        eng.reader.put(now, "too late")
        assert eng._next_line(now - 0.3, "testing") == "in time"
        with pytest.raises(EngineTimeout):
            eng._next_line(now - 0.3, "testing")
        assert eng._next_line(now + 5, "testing") == "too late"
    finally:
        eng.close()
