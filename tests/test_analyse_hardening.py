"""``uci-checkers analyse`` against the faults of issue 13, with the fake engines of tests/engines:
refused options, interrupts, unreadable input, huge numbers, bad paths, Ray missing."""
from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from uci_checkers.tools.analyse import main
from uci_checkers.rules.pdn import read_pdn_file

ENGINES = Path(__file__).resolve().parent / "engines"
REPO = Path(__file__).resolve().parent.parent
MOVER = f"{shlex.quote(sys.executable)} {shlex.quote(str(ENGINES / 'random_mover.py'))}"

GAMES = """[Event "one"]
1. 11-15 23-19 *

[Event "two"]
1. 9-13 22-18 2. 10-14 *

[Event "three"]
1. 11-16 24-20 2. 16-19 23x16 3. 12x19 *
"""


def test_refused_option_fails_fast_with_exit_2(tmp_path, capsys):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    t0 = time.monotonic()
    assert main([str(src), "--depth", "1", "--engine", MOVER, "--option", "Hash=abc", "--quiet"]) == 2
    assert time.monotonic() - t0 < 15
    assert "needs a whole number" in capsys.readouterr().err


@pytest.mark.parametrize("option, message", [("MultiPV=lots", "option MultiPV needs a whole number, not 'lots'"),
                                             ("Ponder=maybe", "option Ponder needs True or False"),
                                             ("Hash=99999999", "option Hash value 99999999 is out of range")])
def test_an_option_value_of_the_wrong_type_is_one_line_and_exit_2(tmp_path, capsys, option, message):
    """Issue 20, item 6: the client checks the value against the engine's declaration (a traceback before)."""
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    assert main([str(src), "--depth", "1", "--option", option, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_unknown_option_fails_fast_with_exit_2(tmp_path, capsys):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    assert main([str(src), "--depth", "1", "--engine", MOVER, "--option", "NoSuchOption=1", "--quiet"]) == 2
    assert "no option 'NoSuchOption'" in capsys.readouterr().err


def test_missing_engine_command_fails_with_exit_2(tmp_path, capsys):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    assert main([str(src), "--depth", "1", "--engine", "/nonexistent/engine", "--quiet"]) == 2
    assert "cannot start engine" in capsys.readouterr().err


def test_writing_over_the_input_with_unreadable_games_is_refused(tmp_path, capsys):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES + '\n[Event "broken"]\n1. 11-15 ] 23-19 *\n')
    before = src.read_text()
    assert main([str(src), "--depth", "1", "--engine", MOVER, "--out", str(src), "--quiet"]) == 2
    assert "unreadable" in capsys.readouterr().err
    assert src.read_text() == before


def test_huge_number_is_one_games_error_and_the_rest_is_analysed(tmp_path, capsys):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES + '\n[Event "huge"]\n1. 11-15 ' + "9" * 4400 + '. 23-19 *\n')
    out = tmp_path / "out.pdn"
    assert main([str(src), "--depth", "1", "--engine", MOVER, "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "skipping game 4" in err and "digits" in err and "1 unreadable game(s) skipped" in err
    assert [g.tags["Event"] for g in read_pdn_file(out)] == ["one", "two", "three"]


@pytest.mark.parametrize("args", [["--out", "/nonexistent-dir/out.pdn"], ["--depth", "100000"],
                                  ["--movetime", "9300000000000"], ["--jobs", "0"], ["--mistake", "nan"]])
def test_bad_arguments_are_refused_before_work(tmp_path, capsys, args):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    assert main([str(src), "--engine", "/nonexistent/engine", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("uci-checkers analyse:") and "cannot start engine" not in err   # refused first


def test_ray_backend_without_ray_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    monkeypatch.setitem(sys.modules, "ray", None)          # import ray -> ImportError
    assert main([str(src), "--depth", "1", "--backend", "ray"]) == 2     # an input error (item 11 of issue 20)
    err = capsys.readouterr().err
    assert "needs Ray" in err and "Traceback" not in err


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_interrupt_writes_finished_games_and_keeps_the_rest(tmp_path, signame):
    src = tmp_path / "g.pdn"
    src.write_text(GAMES)
    out = tmp_path / "out.pdn"
    slow = f"{MOVER} --fault slow --slow-ms 400"
    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", "analyse", str(src), "--depth", "1",
                             "--engine", slow, "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:     # progress "3/13 positions": game one is done
            try:
                seen.append(lines.get(timeout=1.0))
            except queue.Empty:
                continue
            if "analyse: 3/13 positions" in seen[-1]:
                break
        proc.send_signal(getattr(signal, signame))
        proc.wait(timeout=20)
        stdout = proc.stdout.read()          # stderr is the reader thread's alone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.2)
    while not lines.empty():
        seen.append(lines.get())
    stderr = "".join(seen)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "restarting" not in stderr
    games = read_pdn_file(out).games
    assert [g.tags["Event"] for g in games] == ["one", "two", "three"]      # nothing lost
    annotated = [g.tags.get("Annotator") == "uci_checkers analyse" for g in games]
    assert annotated[0] and not annotated[2]
    assert "game 1: one" in stdout


def test_arena_evaluation_comment_is_replaced_not_doubled(tmp_path):
    src = tmp_path / "g.pdn"
    src.write_text('[Event "arena"]\n1. 11-15 {+0.12/9 0.210s} 23-19 {-0.05/8 0.190s} {a note} *\n')
    out = tmp_path / "out.pdn"
    assert main([str(src), "--depth", "1", "--engine", MOVER, "--out", str(out), "--quiet"]) == 0
    (game,) = read_pdn_file(out).games
    assert len(game.comments[1]) == 1 and game.comments[1][0].endswith(" 0.210s")
    assert game.comments[2][1:] == ["a note"] and game.comments[2][0].endswith(" 0.190s")
