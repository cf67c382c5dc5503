"""Batch analysis: annotation logic on hand-made evaluations, and the command on a short PDN file."""
from __future__ import annotations

import re

import pytest

from uci_checkers.tools.analyse import BLUNDER_CP, MISTAKE_CP, PositionEval, annotate_game, main
from uci_checkers.client import Score
from uci_checkers.rules.pdn import PdnGame, read_game, read_pdn_file
from uci_checkers.rules.position import Position

EVAL = re.compile(r"^(?:[+-]\d+\.\d\d|#-?\d+)/\d+$|^end: (Black|White) wins$")


def test_annotate_marks_by_loss():
    g = PdnGame.from_moves(["11-15", "23-19", "8-11", "22-17"], tags={"Event": "t"})
    pos = g.positions()
    best = [p.legal_moves()[0] for p in pos[:-1]]       # the "engine's" choice: never the move played
    assert all(b.squares != m.squares for b, m in zip(best, g.moves))
    evals = [
        PositionEval(Score(cp=10), 5, best[0], [best[0]]),        # Black to move: +0.10
        PositionEval(Score(cp=-10), 5, best[1], [best[1]]),       # after 11-15 White -0.10: loss 0
        PositionEval(Score(cp=50), 5, best[2], [best[2]]),        # after 23-19 Black +0.50: White lost 0.40
        PositionEval(Score(cp=100), 5, best[3], [best[3]]),       # after 8-11 White +1.00: Black lost 1.50
        PositionEval(Score(mate=3), 5, None, []),                 # after 22-17 Black mates in 3: White lost
    ]
    out, report = annotate_game(g, evals)
    marks = [v.mark for v in report.verdicts]
    assert marks == ["", "?", "??", "??"]
    assert [v.loss for v in report.verdicts] == [0, 40, 150, 600]
    assert out.comments[1][0] == "+0.10/5" and out.comments[2][0] == "+0.50/5"   # Black's point of view
    assert out.comments[3][0] == "-1.00/5" and out.comments[4][0] == "#3/5"
    assert out.nags == {2: ["?"], 3: ["??"], 4: ["??"]}
    assert out.variations[1][0].startswith("1. " + best[0].text())
    assert out.variations[2][0].startswith("1... " + best[1].text())
    m, b, avg = report.side_stats(1)
    assert (m, b) == (1, 1) and avg == pytest.approx((40 + 600) / 2 / 100)
    again = read_game(out.pdn())                          # the annotated game is valid PDN
    assert again.moves == g.moves and again.nags == out.nags
    for ply, texts in again.variations.items():
        for k in range(len(texts)):
            again.variation_moves(ply, k)
    assert MISTAKE_CP < BLUNDER_CP


def test_annotate_terminal_and_best_move():
    # White to move has no legal move after 1... : the mover (Black) won
    start = Position.from_fen("B:W14:B5,9")
    g = PdnGame.from_moves(["9x18"], start=start)
    move = g.moves[0]
    out, report = annotate_game(g, [PositionEval(Score(mate=1), 3, move, [move]), PositionEval(None)])
    assert out.comments[1] == ["end: Black wins"]
    assert report.verdicts[0].loss == 0 and report.verdicts[0].mark == "" and not out.variations
    with pytest.raises(ValueError):
        annotate_game(g, [PositionEval(None)])


SHORT = """[Event "blunder"]
[Black "A"]
[White "B"]
[Result "*"]

1. 11-15 23-19 2. 8-11 22-17 3. 12-16 {gives a man away} *

[Event "second"]
[FEN "W:W17,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,6,7,8,9,10,11,12,13"]
1... 22-18 2. 13x22 26x17 *

[Event "broken"]
1. 11-15 11-16 *
"""


def test_analyse_command(tmp_path, capsys):
    src = tmp_path / "short.pdn"
    src.write_text(SHORT)
    out = tmp_path / "annotated.pdn"
    assert main([str(src), "--depth", "4", "--jobs", "2", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "skipping game 3" in captured.err
    assert "game 1: blunder: A - B" in captured.out and "game 2: second" in captured.out
    assert "analyse:" in captured.err                      # progress on stderr
    doc = read_pdn_file(out)
    assert not doc.errors and len(doc.games) == 2
    original = read_pdn_file(src).games
    for a, b in zip(original, doc.games):
        assert a.moves == b.moves and a.start == b.start
        for ply in range(1, len(b.moves) + 1):
            assert EVAL.match(b.comments[ply][0]), b.comments[ply]
        for ply, texts in b.variations.items():
            for k in range(len(texts)):
                assert b.variation_moves(ply, k)            # legal from the position before the move
        assert b.tags["Annotator"] == "uci_checkers analyse"
    g1 = doc.games[0]
    assert g1.comments[5][1] == "gives a man away"        # the original comment is kept after the eval
    assert g1.nags.get(5, [""])[0] in ("?", "??")          # 12-16 loses a man
    assert 1 not in g1.nags                                # 11-15 is fine
    assert "3. 12-16?" in captured.out


def test_analyse_command_errors(tmp_path, capsys):
    assert main([str(tmp_path / "missing.pdn")]) == 2
    empty = tmp_path / "empty.pdn"
    empty.write_text("1. 11-15 11-16 *\n")
    assert main([str(empty), "--depth", "1"]) == 2          # no readable game: an input error
    assert main([str(empty), "--depth", "0"]) == 2
    assert main([str(empty), "--option", "Hash"]) == 2


@pytest.mark.skipif(not __import__("os").environ.get("UCI_CHECKERS_RAY_TESTS"),
                    reason="starts a local Ray instance (~20 s): set UCI_CHECKERS_RAY_TESTS=1")
def test_analyse_ray_backend(tmp_path, capsys):
    pytest.importorskip("ray")
    src = tmp_path / "short.pdn"
    src.write_text(SHORT)
    out = tmp_path / "annotated.pdn"
    try:
        assert main([str(src), "--depth", "3", "--backend", "ray", "--out", str(out), "--quiet"]) == 0
    finally:
        import ray
        ray.shutdown()
    doc = read_pdn_file(out)
    assert not doc.errors and len(doc.games) == 2
    assert all(EVAL.match(doc.games[0].comments[p][0]) for p in range(1, 6))


FLAKY = '''
import os, sys
sys.path.insert(0, {root!r})
from uci_checkers.rules.position import Game, Position
marker = {marker!r}
game = Game()
def out(s):
    sys.stdout.write(s + "\\n"); sys.stdout.flush()
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "uci":
        out("id name Flaky"); out("uciok")
    elif w[0] == "isready":
        out("readyok")
    elif w[0] == "position":
        moves = w[w.index("moves") + 1:] if "moves" in w else []
        fen = " ".join(w[2:w.index("moves")] if "moves" in w else w[2:])
        game = Game.from_moves(Position.from_fen(fen), moves)
    elif w[0] == "go":
        if not os.path.exists(marker):
            open(marker, "w").close()
            sys.exit(1)                       # the first engine dies on its first search
        legal = game.position.legal_moves()
        if not legal:
            out("bestmove (none)")
        else:
            out("info depth 1 score cp 0 nodes 1 pv " + legal[0].text())
            out("bestmove " + legal[0].text())
    elif w[0] == "quit":
        break
'''


def test_analyse_replaces_a_dying_engine(tmp_path, capsys):
    from pathlib import Path
    root = str(Path(__file__).resolve().parents[1])
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY.format(root=root, marker=str(tmp_path / "died")))
    src = tmp_path / "short.pdn"
    src.write_text(SHORT)
    out = tmp_path / "annotated.pdn"
    import shlex
    import sys
    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    assert main([str(src), "--depth", "1", "--engine", cmd, "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "restarting it" in err and (tmp_path / "died").exists()
    doc = read_pdn_file(out)
    assert not doc.errors and len(doc.games) == 2
