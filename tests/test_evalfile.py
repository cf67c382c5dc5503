"""Other evaluation weights (issue 20 item 13): the EvalFile option, the tools' --weights, train's output file.

A weights file of zeros makes the evaluation say 0 everywhere: an easy way to see which weights a search used.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_protocol import Session
from uci_checkers.engine.options import DEFAULT_EVAL_FILE
from uci_checkers.search import evaluate as E
from uci_checkers.search import weights as W

REPO = Path(__file__).resolve().parent.parent
MOVER = str(REPO / "tests" / "engines" / "random_mover.py")


@pytest.fixture(scope="module")
def zero_weights(tmp_path_factory) -> W.EvalWeights:
    path = tmp_path_factory.mktemp("weights") / "zero.weights"
    return W.save_weights(path, np.zeros(2 * E.NF, dtype=np.int64), {"test": "all zero"})


def _foreign(path: Path, layout: str = "a-network-this-version-does-not-have") -> Path:
    header = json.dumps({"format": W.FORMAT_VERSION, "layout": layout, "nf": 3, "unit": 16}).encode()
    body = W.MAGIC + struct.pack("<I", len(header)) + header + np.zeros(6, dtype="<i4").tobytes()
    path.write_bytes(body + hashlib.sha256(body).digest())
    return path


def _side_to_move_score(sess: Session) -> int:
    line = next(ln for ln in sess.send("eval") if ln.startswith("side to move"))
    return int(line.split()[3])


# --- the weights file: which evaluation it is for --------------------------------------------

def test_the_header_layout_names_the_evaluation():
    assert W.PATTERN_LAYOUT == E.FEATURE_LAYOUT and W.EVALUATIONS[E.FEATURE_LAYOUT] == "pattern"
    assert W.default_weights().kind == "network" and W.pattern_weights().kind == "pattern"
    assert DEFAULT_EVAL_FILE == str(W.default_path())


def test_read_weights_checks_a_file_without_loading_numba(tmp_path):
    code = ("import sys; from uci_checkers.search.weights import WeightsError, pattern_path, read_weights\n"
            "w = read_weights(pattern_path()); assert w.kind == 'pattern'\n"
            f"try:\n    read_weights({str(_foreign(tmp_path / 'f.weights'))!r})\n"
            "except WeightsError as exc:\n    print(exc)\n"
            "assert 'numba' not in sys.modules, 'read_weights loaded numba'\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "made for another evaluation, which this version does not have" in proc.stdout


# --- the EvalFile option ---------------------------------------------------------------------

def test_evalfile_option_loads_other_weights_and_keeps_them_after_a_bad_file(zero_weights, tmp_path):
    sess = Session()
    uci = sess.send("uci")
    assert f"option name EvalFile type string default {DEFAULT_EVAL_FILE}" in uci
    sess.send("isready")
    sess.wait_for("readyok")
    sess.send("position startpos moves 11-15")
    shipped = _side_to_move_score(sess)
    assert shipped != 0

    # a missing file: one error line, the option and the evaluation unchanged
    out = sess.send(f"setoption name EvalFile value {tmp_path / 'missing.weights'}")
    assert out == [f"info string error: setoption: option EvalFile: evaluation weights file "
                   f"{tmp_path / 'missing.weights'} is missing; the evaluation stays {DEFAULT_EVAL_FILE}"]
    assert sess.proto.engine.get_option("EvalFile") == DEFAULT_EVAL_FILE
    assert _side_to_move_score(sess) == shipped

    # other weights: used from now on, and the next go says which
    assert sess.send(f"setoption name EvalFile value {zero_weights.path}") == []
    assert _side_to_move_score(sess) == 0
    sess.new()
    sess.send("go depth 3")
    sess.wait_for("bestmove")
    lines = sess.new()
    assert f"info string evaluation: {zero_weights.describe()}" in lines
    assert any(" score cp 0 " in ln for ln in lines if ln.startswith("info depth 3 ")), lines

    # a corrupt file and one for an evaluation this version does not have: refused, the zeros stay
    corrupt = tmp_path / "corrupt.weights"
    data = bytearray(Path(zero_weights.path).read_bytes())
    data[len(data) // 2] ^= 1
    corrupt.write_bytes(bytes(data))
    for bad, why in ((corrupt, "corrupt (checksum mismatch)"), (_foreign(tmp_path / "net.weights"),
                                                                   "made for another evaluation"),
                     (tmp_path, "is a directory")):
        out = sess.send(f"setoption name EvalFile value {bad}")
        assert len(out) == 1 and out[0].startswith("info string error: setoption: option EvalFile: ")
        assert why in out[0] and out[0].endswith(f"the evaluation stays {zero_weights.path}"), out
    assert sess.proto.engine.get_option("EvalFile") == zero_weights.path
    assert _side_to_move_score(sess) == 0

    # the shipped file again, by its name or (through the facade, as Hub's set-param can) an empty value
    assert sess.send(f"setoption name EvalFile value {DEFAULT_EVAL_FILE}") == []
    assert _side_to_move_score(sess) == shipped
    sess.send(f"setoption name EvalFile value {zero_weights.path}")
    sess.proto.engine.set_option("EvalFile", "")
    assert _side_to_move_score(sess) == shipped
    sess.send("quit")


def test_evalfile_set_before_the_kernels_are_ready_is_used_by_the_first_search(zero_weights):
    from uci_checkers.engine.facade import Engine

    engine = Engine()                     # no warm-up started: the searcher does not exist yet
    engine.set_option("EvalFile", zero_weights.path)
    assert engine.ensure_ready(timeout=300)
    assert engine._searcher.weights.checksum == zero_weights.checksum
    assert engine.evaluate_terms()["total_stm"] == 0
    engine.quit()


# --- the tools ----------------------------------------------------------------------------------

def test_bench_go_and_validate_take_weights(zero_weights, tmp_path, capsys):
    from uci_checkers.learn import validate
    from uci_checkers.protocols import oneshot
    from uci_checkers.tools import bench

    assert bench.main(["2", "-q", "--weights", zero_weights.path]) == 0
    out = capsys.readouterr().out
    assert f"Evaluation      : {zero_weights.describe()}" in out
    zero_nodes = int(next(ln for ln in out.splitlines() if ln.startswith("Nodes searched")).split(":")[1])
    assert zero_nodes != bench.run_bench(2)[0]            # other weights search other trees

    assert oneshot.main(["--depth", "3", "--weights", zero_weights.path]) == 0
    assert "score cp 0 " in capsys.readouterr().out

    puzzles = tmp_path / "p.tsv"
    puzzles.write_text("idx\tname\tfen\tside_to_move\texpected_result\n1\tWON\tB:WK30:BK1,K2\tB\tblack_wins\n")
    assert validate.main(["--puzzles", str(puzzles), "--depth", "2", "--weights", zero_weights.path]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["weights"] == {"file": zero_weights.path, "kind": "pattern", "checksum": zero_weights.checksum}

    missing = str(tmp_path / "missing.weights")
    for run in (lambda: bench.main(["2", "--weights", missing]),
                lambda: validate.main(["--puzzles", str(puzzles), "--weights", missing]),
                lambda: oneshot.main(["--depth", "1", "--weights", missing])):
        try:
            code = run()
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and "missing" in err, err


def test_selfplay_plays_with_the_weights_it_is_given_and_records_them(zero_weights, tmp_path, capsys):
    from uci_checkers.learn import selfplay

    config = selfplay.SelfPlayConfig(seed=3, nodes=200, weights=zero_weights.path)
    selfplay.generate(tmp_path, games=2, config=config, jobs=1, shard_size=2, progress=None)
    with np.load(tmp_path / "shard-00000.npz") as z:
        meta = json.loads(bytes(z["meta"]))
        scores = z["score"]
    assert meta["engine"]["weights"] == zero_weights.checksum and meta["config"]["weights"] == zero_weights.path
    assert not np.any(scores[np.abs(scores) < 3000])      # a zero evaluation scores 0 unless a mate is seen
    with pytest.raises(SystemExit) as exc:
        selfplay.main(["--out", str(tmp_path / "x"), "--weights", str(tmp_path / "missing.weights")])
    assert exc.value.code == 2 and "missing" in capsys.readouterr().err


def test_train_never_writes_over_a_file_unless_told(tmp_path, capsys):
    from uci_checkers.learn import train

    assert train.DEFAULT_OUT == "trained.weights"
    taken = tmp_path / "taken.weights"
    taken.write_bytes(b"keep me")
    for out, needle in ((str(taken), "exists"), (str(W.default_path()), "the shipped weights"),
                        (str(W.pattern_path()), "the shipped weights")):
        with pytest.raises(SystemExit) as exc:
            train.main(["--data", str(tmp_path / "no-data"), "--out", out])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and "--overwrite" in err, err
    assert taken.read_bytes() == b"keep me"


def test_train_net_never_writes_over_a_file_unless_told(tmp_path, capsys):
    """The shipped network is the default evaluation: train-net refuses to write over it (or any file)
    without --overwrite, before any work (and before it needs torch, so this runs without it)."""
    from uci_checkers.learn import train_net

    taken = tmp_path / "taken.weights"
    taken.write_bytes(b"keep me")
    for out, needle in ((str(taken), "exists"), (str(W.default_path()), "the shipped weights")):
        with pytest.raises(SystemExit) as exc:
            train_net.main(["--data", str(tmp_path / "no-data"), "--out", out])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and needle in err and "--overwrite" in err, err
    assert taken.read_bytes() == b"keep me"


# --- the arena passes EvalFile through -------------------------------------------------------------

def test_match_passes_evalfile_to_the_engine_and_stops_on_a_bad_one(zero_weights, tmp_path, capsys):
    from uci_checkers.arena import main as arena_main

    mover = f"cmd={sys.executable} {MOVER} --name mover"
    code = arena_main(["--engine", "name=zero", f"option.EvalFile={tmp_path / 'missing.weights'}",
                       "--engine", "name=mover", mover, "--depth", "1", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "EvalFile" in err and "missing" in err, err
    out = tmp_path / "g.pdn"
    code = arena_main(["--engine", "name=zero", f"option.EvalFile={zero_weights.path}",
                       "--engine", "name=mover", mover, "--depth", "2", "--games", "2", "--no-progress",
                       "--pdn-out", str(out), "--book-order"])
    assert code == 0, capsys.readouterr().err
    text = out.read_text()
    assert "{+0.00/2 " in text                                  # the zero evaluation's scores
