"""``uci-checkers relabel``: positions of recorded shards scored again with the endgame databases."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.egdb import build as egbuild
from uci_checkers.learn import relabel as R
from uci_checkers.learn.dataset import load_shards
from uci_checkers.learn.selfplay import (RESULT_DRAW, RESULT_LOSS, RESULT_WIN, GameRecord, SelfPlayConfig,
                                        engine_identity, write_shard)
from uci_checkers.rules.position import Position

# (FEN, recorded result from Black's view, expected result after relabelling: None = the recorded one stays)
CASES = [
    ("B:WK29:BK1,K2", RESULT_DRAW, RESULT_WIN),        # two kings against one: the database's win, Black to move
    ("W:WK29:BK1,K2", RESULT_DRAW, RESULT_WIN),        # the same with White to move: still Black's win
    ("B:WK10:BK1", RESULT_WIN, RESULT_DRAW),           # a king each: the database's draw beats the recorded win
    ("W:WK14:BK19", RESULT_LOSS, RESULT_DRAW),
    ("W:WK30:B12", RESULT_DRAW, RESULT_LOSS),        # a king against a man on the edge: White wins
    ("B:W21,22:B9,10", RESULT_LOSS, None),             # four men: not in a three-piece database
    ("B:W21,22,23,24,25:B1,2,3,4,5", RESULT_WIN, None),  # ten pieces: outside the --pieces range below
]


@pytest.fixture(scope="module")
def db3(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("egdb3")
    egbuild.build(directory, 3, quiet=True)
    return directory


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """One shard of two 'games' holding the positions of CASES, twice over (the copies must be chosen once)."""
    out = tmp_path_factory.mktemp("recorded")
    games = []
    for copy in range(2):
        for fen, result, _ in CASES:
            pos = Position.from_fen(fen)
            games.append(GameRecord([pos.black], [pos.white], [pos.kings], [pos.turn], [17], [40], result, 41))
    write_shard(out, 0, len(games), SelfPlayConfig(), games, engine_identity())
    return out


def _config(db3: Path) -> R.RelabelConfig:
    return R.RelabelConfig(nodes=3000, hash_mb=2, egdb_dir=str(db3), egdb_pieces=3)


def _rows(directory: Path) -> dict[str, tuple[int, int]]:
    data = load_shards([directory])
    out = {}
    for i in range(len(data)):
        fen = Position(int(data.black[i]), int(data.white[i]), int(data.kings[i]), int(data.stm[i])).fen()
        black_view = int(data.result[i]) if data.stm[i] == 0 else 2 - int(data.result[i])
        out[fen] = (black_view, int(data.score[i]))
    return out


def test_choice_is_unique_in_range_and_fixed_by_the_seed(recorded):
    a, _ = R.choose_positions([recorded], 2, 4, 100, seed=1)
    assert a["black"].shape[0] == 6                 # ten pieces are out of range; copies are chosen once
    pieces = R.piece_counts(a["black"], a["white"])
    assert pieces.min() >= 2 and pieces.max() <= 4
    again, _ = R.choose_positions([recorded], 2, 4, 100, seed=1)
    assert all(np.array_equal(a[k], again[k]) for k in a)
    orders = {tuple(R.choose_positions([recorded], 2, 4, 100, seed=s)[0]["black"]) for s in range(1, 9)}
    assert len(orders) > 1                          # the seed orders the positions
    assert R.choose_positions([recorded], 2, 4, 3, seed=1)[0]["black"].shape[0] == 3


def test_database_verdicts_replace_recorded_results_and_the_rest_stay(recorded, db3, tmp_path):
    summary = R.relabel([recorded], tmp_path, 2, 4, 100, 2, 1, _config(db3), progress=None)
    assert summary["positions"] == 6 and summary["chunks"] == 3 and summary["new_proven"] == 5
    rows = _rows(tmp_path)
    for fen, recorded_result, expected in CASES:
        pos = Position.from_fen(fen)
        if (pos.black | pos.white).bit_count() > 4:
            assert pos.fen() not in rows
            continue
        result, score = rows[pos.fen()]
        assert result == (recorded_result if expected is None else expected), fen
        if expected in (RESULT_WIN, RESULT_LOSS):
            mover_wins = (expected == RESULT_WIN) == (pos.turn == 0)
            assert score == (R.SCORE_CLAMP if mover_wins else -R.SCORE_CLAMP), fen
        elif expected == RESULT_DRAW:
            assert score == 0, fen
        else:
            assert score != 17                        # searched again, not copied
    meta = json.loads(np.load(tmp_path / "shard-00000.npz")["meta"].tobytes())
    assert meta["egdb_pieces"] == 3 and meta["pieces"] == [2, 4] and meta["config"]["nodes"] == 3000


def test_a_run_resumes_and_two_processes_give_the_same_labels(recorded, db3, tmp_path):
    one = tmp_path / "one"
    R.relabel([recorded], one, 2, 4, 100, 2, 1, _config(db3), progress=None)
    (one / "shard-00001.npz").unlink()
    summary = R.relabel([recorded], one, 2, 4, 100, 2, 1, _config(db3), progress=None)
    assert summary["new_positions"] == 2             # only the missing chunk was searched again
    two = tmp_path / "two"
    R.relabel([recorded], two, 2, 4, 100, 2, 1, _config(db3), jobs=2, progress=None)
    assert _rows(one) == _rows(two)


def test_command_line_errors_are_one_line_and_exit_2(recorded, tmp_path, capsys):
    for argv in (["--pieces", "9-3"], ["--nodes", "0"], ["--egdb-dir", str(tmp_path / "none")],
                 ["--hash", "0"], ["--hash", "4097"]):
        with pytest.raises(SystemExit) as exc:
            R.main(["--data", str(recorded), "--out", str(tmp_path / "o")] + argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert "Traceback" not in "".join(err) and err[-1].startswith("uci-checkers relabel: ")
    assert R.main(["--data", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_the_command_line_passes_the_table_size_and_records_it(recorded, db3, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["--data", str(recorded), "--out", str(out), "--pieces", "2-4", "--chunk", "3", "--nodes", "2000",
            "--egdb-dir", str(db3), "--egdb-pieces", "3", "--hash", "1"]
    assert R.main(argv) == 0
    meta = json.loads(np.load(out / "shard-00000.npz")["meta"].tobytes())
    assert meta["config"]["hash_mb"] == 1 and meta["config"]["nodes"] == 2000
