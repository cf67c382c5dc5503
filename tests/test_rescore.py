"""``uci-checkers rescore``: every row of recorded shards kept, only the search score made again."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.learn import rescore as S
from uci_checkers.learn.relabel import Labeller, RelabelConfig
from uci_checkers.learn.selfplay import (RESULT_DRAW, RESULT_LOSS, RESULT_WIN, GameRecord, SelfPlayConfig,
                                        engine_identity, write_shard)
from uci_checkers.rules.position import Position

FENS = ["B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12",    # the start
        "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,13",
        "B:W18,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,13",
        "B:W21,22:B9,10", "W:WK30:B12,K3"]
MARK = 4321       # the recorded score of every row: outside the +-3000 a search score is clamped to


def _records(n_games: int, first: int) -> list[GameRecord]:
    games = []
    for g in range(n_games):
        fens = FENS[(g + first) % 2:]                  # games share positions (the start): repeated rows
        pos = [Position.from_fen(f) for f in fens]
        games.append(GameRecord([p.black for p in pos], [p.white for p in pos], [p.kings for p in pos],
                                [p.turn for p in pos], [MARK] * len(pos), list(range(len(pos))),
                                (RESULT_WIN, RESULT_DRAW, RESULT_LOSS)[g % 3], 40 + g))
    return games


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """Three shards of self-play-like games whose positions repeat within and across shards."""
    out = tmp_path_factory.mktemp("recorded")
    for shard in range(3):
        write_shard(out, shard, 3, SelfPlayConfig(), _records(3, shard), engine_identity())
    return out


def _config() -> RelabelConfig:
    return RelabelConfig(nodes=1500, hash_mb=1, egdb_pieces=0)


def _load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: np.asarray(z[k]) for k in z.files}


def test_every_row_is_kept_and_only_the_score_is_searched_again(recorded, tmp_path):
    summary = S.rescore(recorded, tmp_path, _config(), progress=None)
    assert summary["shards"] == 3 and summary["new_shards"] == 3
    labeller = Labeller(_config())
    by_position: dict[tuple, int] = {}
    for src in sorted(recorded.glob("shard-*.npz")):
        old, new = _load(src), _load(tmp_path / src.name)
        for column in ("black", "white", "kings", "stm", "ply", "result", "game"):
            assert np.array_equal(old[column], new[column]), column
        assert (new["score"] != MARK).all()
        for i in range(len(new["score"])):
            key = tuple(int(new[c][i]) for c in ("black", "white", "kings", "stm"))
            by_position.setdefault(key, int(new["score"][i]))
            assert by_position[key] == int(new["score"][i])        # a repeated position: one score
        meta = json.loads(new["meta"].tobytes())
        assert meta["input"]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest() and meta["config"]["nodes"] == 1500
        assert meta["rows"] == len(old["black"]) and meta["searches"] < meta["rows"]
    # the slow way: each distinct position searched alone from a cleared table gives the same score
    for (b, w, k, stm), score in by_position.items():
        assert labeller.label(b, w, k, stm) == score


def test_a_run_resumes_and_two_processes_write_the_same_shards(recorded, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    S.rescore(recorded, one, _config(), progress=None)
    (one / "shard-00001.npz").unlink()
    summary = S.rescore(recorded, one, _config(), progress=None)
    assert summary["new_shards"] == 1 and summary["shards"] == 3
    S.rescore(recorded, two, _config(), jobs=2, progress=None)
    for src in sorted(recorded.glob("shard-*.npz")):
        a, b = _load(one / src.name), _load(two / src.name)
        assert all(np.array_equal(a[k], b[k]) for k in S.COLUMNS)


def test_command_line_errors_are_one_line_and_exit_2(recorded, tmp_path, capsys):
    out = tmp_path / "o"
    for argv in (["--data", str(recorded), "--out", str(out), "--nodes", "0"],
                 ["--data", str(recorded), "--out", str(out), "--hash", "0"],
                 ["--data", str(tmp_path / "missing"), "--out", str(out)],
                 ["--data", str(recorded), "--out", str(out), "--weights", str(tmp_path / "none.weights")]):
        with pytest.raises(SystemExit) as exc:
            S.main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert "Traceback" not in "".join(err) and err[-1].startswith("uci-checkers rescore: "), argv
    # the input as its own output would overwrite the recorded scores: refused, nothing written
    before = {p.name: p.read_bytes() for p in recorded.glob("shard-*.npz")}
    assert S.main(["--data", str(recorded), "--out", str(recorded)]) == 2
    assert "input directory" in capsys.readouterr().err
    assert before == {p.name: p.read_bytes() for p in recorded.glob("shard-*.npz")}
    (tmp_path / "empty").mkdir()
    assert S.main(["--data", str(tmp_path / "empty"), "--out", str(out)]) == 2
    assert "no shard-*.npz" in capsys.readouterr().err
