"""`uci-checkers go`: one search, printed for shell scripts."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from uci_checkers.protocols.oneshot import main
from uci_checkers.rules.position import Game, Position

ROOT = Path(__file__).resolve().parents[1]


def test_depth_start_position(capsys):
    assert main(["--depth", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    legal = {m.text() for m in Position.start().legal_moves()}
    assert out[0] in legal
    assert out[1].startswith("pv " + out[0])
    words = out[2].split()
    assert words[0] == "score" and words[1] in ("cp", "mate") and words[words.index("depth") + 1] == "3"
    # the printed line is legal from the position
    Game.from_moves(None, out[1].split()[1:])


def test_moves_multipv_and_json(capsys):
    assert main(["--moves", "11-15 23-19", "--depth", "2", "--multipv", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    game = Game.from_moves(None, ["11-15", "23-19"])
    assert data["fen"] == game.position.fen()
    assert [ln["multipv"] for ln in data["lines"]] == [1, 2]
    assert data["bestmove"] == data["lines"][0]["pv"][0]
    assert data["lines"][0]["pv"][0] != data["lines"][1]["pv"][0]
    assert data["status"] == "ongoing"


def test_no_legal_move_and_errors(capsys):
    assert main(["--fen", "W:W:B5", "--movetime", "50"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["(none)", "result black wins"]
    assert main(["--fen", "X:W1:B5"]) == 2
    assert "FEN" in capsys.readouterr().err
    assert main(["--moves", "11-15 11-16", "--depth", "1"]) == 2
    assert "illegal move" in capsys.readouterr().err
    assert main(["--depth", "0"]) == 2


def test_command_line_process():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "go", "--fen",
                           "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13",
                           "--movetime", "200"], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    pos = Position.from_fen("W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13")
    assert first in {m.text() for m in pos.legal_moves()}


def test_bad_option_argument_is_refused(capsys):
    assert main(["--fen", "B:W18:B14", "--depth", "2", "--option", "Hash"]) == 2
    assert "--option needs NAME=VALUE" in capsys.readouterr().err


def test_interrupt_exits_130_without_traceback():
    from toolrun import interrupt_tool
    code, out, err = interrupt_tool(["go", "--movetime", "600000"], after=4.0)
    assert code == 130, err
    assert "Traceback" not in err and "interrupted" in err
    assert out == ""


def test_numbers_out_of_range_are_refused(capsys):
    for args in (["--movetime", "9300000000000"], ["--depth", "100000"], ["--multipv", "0"]):
        assert main(args) == 2
    assert "must be" in capsys.readouterr().err
