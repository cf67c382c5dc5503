"""The training pipeline end to end on a tiny generated set, and the weights file format."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.search import evaluate as E
from uci_checkers.search import weights as W
from uci_checkers.learn import selfplay, train
from uci_checkers.learn.dataset import DataError, load_pdn_positions, load_shards
from uci_checkers.rules.position import Position

REPO = Path(__file__).resolve().parent.parent
TINY = selfplay.SelfPlayConfig(seed=3, nodes=300)


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("selfplay")
    selfplay.generate(out, games=12, config=TINY, jobs=1, shard_size=4, progress=None)
    return out


def test_selfplay_writes_labelled_quiet_positions(shards):
    files = sorted(shards.glob("shard-*.npz"))
    assert [f.name for f in files] == ["shard-00000.npz", "shard-00001.npz", "shard-00002.npz"]
    data = load_shards([shards])
    assert len(data) > 100
    for b, w, k, s in zip(data.black[:200], data.white[:200], data.kings[:200], data.stm[:200]):
        pos = Position(int(b), int(w), int(k), int(s))
        assert not pos.is_capture_pending() and pos.has_legal_move()
    assert set(np.unique(data.result)) <= {0, 1, 2}
    with np.load(files[0]) as z:
        meta = json.loads(bytes(z["meta"]))
        assert meta["config"]["nodes"] == 300 and meta["games"] == 4 and meta["positions"] == len(z["black"])


def test_selfplay_is_reproducible_and_resumes(shards, tmp_path):
    # the same seed gives the same shard, bit for bit in its arrays
    selfplay.generate(tmp_path, games=4, config=TINY, jobs=1, shard_size=4, progress=None)
    with np.load(tmp_path / "shard-00000.npz") as a, np.load(shards / "shard-00000.npz") as b:
        for key in ("black", "white", "kings", "stm", "score", "result", "ply"):
            assert np.array_equal(a[key], b[key]), key
    # a finished shard is never played again; the missing ones are
    stamp = (tmp_path / "shard-00000.npz").stat().st_mtime_ns
    summary = selfplay.generate(tmp_path, games=8, config=TINY, jobs=1, shard_size=4, progress=None)
    assert (tmp_path / "shard-00000.npz").stat().st_mtime_ns == stamp
    assert (tmp_path / "shard-00001.npz").exists() and summary["new_positions"] > 0


def test_selfplay_records_the_code_that_played_not_the_checkout_at_write_time(tmp_path, monkeypatch):
    """The engine identity is taken once, when the process's player is made: a checkout that moves on
    while a long run plays (a merge beside it) must not be written into later shards."""
    asked = iter(({"commit": "played"}, {"commit": "checkout moved on"}))
    monkeypatch.setattr(selfplay, "engine_identity", lambda weights="": next(asked))
    monkeypatch.setattr(selfplay, "_WORKER", None)
    selfplay.generate(tmp_path, games=4, config=TINY, jobs=1, shard_size=2, progress=None)
    for f in sorted(tmp_path.glob("shard-*.npz")):
        with np.load(f) as z:
            assert json.loads(bytes(z["meta"]))["engine"] == {"commit": "played"}


def test_training_lowers_the_loss_and_writes_loadable_weights(shards, tmp_path):
    data = load_shards([shards])
    losses = []
    w, report = train.train(data, train.TrainConfig(epochs=4, batch=256, lr=0.02, val_share=0.25, seed=1),
                             on_epoch=lambda e, tl, vl, s: losses.append(tl), progress=None)
    assert losses[-1] < losses[0] < np.log(2)        # zero weights score log 2 on every position
    assert report["train_positions"] + report["val_positions"] == len(data)
    saved = W.save_weights(tmp_path / "t.weights", train.to_table(w, report["scale"]), {"test": True})
    loaded = W.load_weights(tmp_path / "t.weights")
    assert loaded.checksum == saved.checksum and np.array_equal(loaded.table, train.to_table(w, report["scale"]))
    # the trained table scores positions the way the float model does, up to rounding: each weight is
    # rounded to 1/UNIT centi-men (at most half a unit, times the feature's count) and the score is floored
    feats = train.features_of(data)
    z = train.logits(w, feats)[:50] * report["scale"]
    for i in range(50):
        v = E.evaluate(int(data.black[i]), int(data.white[i]), int(data.kings[i]), int(data.stm[i]), loaded.table)
        rounding = 0.5 * np.abs(feats.cnt[i]).sum() / E.UNIT
        assert abs(v - z[i]) <= 1 + rounding, (i, v, z[i], rounding)


def test_training_is_reproducible(shards):
    data = load_shards([shards])
    cfg = train.TrainConfig(epochs=2, batch=128, val_share=0.25, seed=4)
    w1, _ = train.train(data, cfg, progress=None)
    w2, _ = train.train(data, cfg, progress=None)
    assert np.array_equal(w1, w2)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_selfplay_and_train_progress_is_plain_lines_in_a_log_and_live_on_a_terminal(shards, tmp_path):
    # issue 20 item 12: \r updates went to a log file too, which then held one endless line
    log = io.StringIO()
    selfplay.generate(tmp_path / "a", games=4, config=TINY, jobs=1, shard_size=4, progress=log)
    data = load_shards([shards])
    cfg = train.TrainConfig(epochs=2, batch=128, val_share=0.25, seed=4)
    train.train(data, cfg, progress=log)
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[0].startswith("selfplay: 4/4 games ")
    assert [ln.split(":")[0] for ln in lines[1:]] == ["epoch 1/2", "epoch 2/2"]
    tty = _Tty()
    selfplay.generate(tmp_path / "b", games=4, config=TINY, jobs=1, shard_size=4, progress=tty)
    train.train(data, cfg, progress=tty)
    assert "\rselfplay [" in tty.getvalue().replace("\x1b[2K", "") and "\rtrain [" in tty.getvalue().replace("\x1b[2K", "")


def test_split_keeps_games_whole(shards):
    data = load_shards([shards])
    tr, va = train.split_by_game(data, 0.3, seed=2)
    assert not set(data.game[tr]) & set(data.game[va])


def test_train_cli_end_to_end(shards, tmp_path):
    out = tmp_path / "cli.weights"
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "train", "--data", str(shards), "--epochs", "2",
                           "--batch", "256", "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["checksum"] == W.load_weights(out).checksum
    assert "epoch 2/2: train log-loss" in proc.stderr
    header = W.load_weights(out).header
    assert header["provenance"]["data_files"] == 3 and len(header["provenance"]["data_digest"]) == 64


def test_train_writes_a_new_file_by_default_and_never_the_shipped_weights(shards, tmp_path):
    # issue 20 item 13: without --out, train wrote over the shipped pattern tables
    shipped = W.pattern_path().read_bytes()
    cmd = [sys.executable, "-m", "uci_checkers", "train", "--data", str(shards), "--epochs", "1", "--batch", "512"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert W.load_weights(tmp_path / "trained.weights").checksum == json.loads(proc.stdout)["checksum"]
    assert W.pattern_path().read_bytes() == shipped
    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2 and "exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    assert subprocess.run(cmd + ["--overwrite"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600).returncode == 0


def test_train_cli_refuses_missing_data(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "train", "--data", str(tmp_path / "none"),
                           "--out", str(tmp_path / "x.weights")], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    with pytest.raises(DataError, match="no shard"):
        load_shards([tmp_path])


def test_pdn_positions_for_validation(tmp_path):
    pdn = tmp_path / "g.pdn"
    pdn.write_text('[Result "1-0"]\n1. 11-15 23-19 2. 8-11 22-17 1-0\n\n[Result "*"]\n1. 11-15 *\n')
    data = load_pdn_positions(pdn)
    assert len(data) == 5 and list(data.result) == [2, 0, 2, 0, 2]


# --- the weights file ------------------------------------------------------------------------
def test_package_weights_load_and_carry_provenance():
    w = W.pattern_weights()
    assert w.table.shape == (2 * E.NF,) and w.table.dtype == np.int64
    assert len(w.checksum) == 64
    prov = w.header["provenance"]
    assert prov["trainer"] == "uci_checkers.learn.train" and "data_digest" in prov and "config" in prov


def _copy_default(tmp_path) -> Path:
    p = tmp_path / "w.weights"
    p.write_bytes(W.pattern_path().read_bytes())
    return p


def test_corrupt_truncated_missing_and_foreign_files_are_refused(tmp_path):
    p = _copy_default(tmp_path)
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x40
    p.write_bytes(bytes(data))
    with pytest.raises(W.WeightsError, match="checksum"):
        W.load_weights(p)
    p.write_bytes(W.pattern_path().read_bytes()[:1000])
    with pytest.raises(W.WeightsError):
        W.load_weights(p)
    with pytest.raises(W.WeightsError, match="missing"):
        W.load_weights(tmp_path / "nope.weights")
    p.write_bytes(b"not a weights file at all" * 10)
    with pytest.raises(W.WeightsError, match="magic"):
        W.load_weights(p)
    # a well-formed file for another feature layout
    hdr = json.dumps({"format": W.FORMAT_VERSION, "layout": "other", "nf": 3, "unit": 16}).encode()
    import hashlib
    import struct
    body = W.MAGIC + struct.pack("<I", len(hdr)) + hdr + np.zeros(6, dtype="<i4").tobytes()
    p.write_bytes(body + hashlib.sha256(body).digest())
    with pytest.raises(W.WeightsError, match="another evaluation"):
        W.load_weights(p)


def test_engine_refuses_to_start_without_its_weights(tmp_path):
    """A broken package weights file: one clear line on stderr, exit 2, nothing on stdout."""
    import shutil
    pkg = tmp_path / "uci_checkers"
    shutil.copytree(REPO / "uci_checkers", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "data" / W.DEFAULT_NAME).write_bytes(b"UCKWEIGHTS\n" + b"\0" * 100)
    proc = subprocess.run([sys.executable, "-m", "uci_checkers"], cwd=tmp_path, input="uci\n",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("uci-checkers: evaluation weights file") and "corrupt" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_validate_tool_on_tiny_files(tmp_path):
    puzzles = tmp_path / "p.tsv"
    puzzles.write_text("idx\tname\tfen\tside_to_move\texpected_result\n"
                       "1\tWON\tB:WK30:BK1,K2\tB\tblack_wins\n"
                       "2\tDRAWN\tB:WK14:BK19\tB\tdraw\n"
                       "3\tBROKEN\tB:W1:B30\tB\tdraw\n")
    games = tmp_path / "g.pdn"
    games.write_text('[Result "1-0"]\n1. 11-15 23-19 2. 8-11 22-17 1-0\n\n'
                     '[Result "0-1"]\n1. 9-14 22-18 2. 5-9 24-20 0-1\n')
    # the tool's bookkeeping is under test, not the evaluation's knowledge: a wide draw band (a lone king
    # each is a draw the static score does not know exactly; the databases do)
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "validate", "--puzzles", str(puzzles),
                           "--pdn", str(games), "--depth", "4", "--sample", "3", "--threshold", "120"], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["puzzles"]["puzzles"] == 2 and report["puzzles"]["skipped_invalid"] == 1
    assert report["puzzles"]["by_result"] == {"black_wins": "1/1", "draw": "1/1"}
    sg = report["games"]
    assert sg["positions"] == 8 and sg["move_sample"] == 3 and 0 <= sg["move_agreement"] <= 1


def test_selfplay_interrupt_keeps_shards_and_leaves_no_worker(tmp_path):
    """SIGTERM to a two-process run: exit 130, finished shards intact, every worker gone."""
    import os
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "uci_checkers", "selfplay", "--out", str(tmp_path),
                             "--games", "400", "--nodes", "300", "--shard-size", "2", "--jobs", "2"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("shard-*.npz")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(tmp_path.glob("shard-*.npz")), "no shard written in time"
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in err
    assert "leaked semaphore" not in err, err     # the pool's semaphores are released before the fast exit
    time.sleep(2)
    alive = [pid for pid in children if os.path.exists(f"/proc/{pid}") and
             "zombie" not in open(f"/proc/{pid}/status").read().lower()]
    assert not alive, f"workers left behind: {alive}"
    for shard in tmp_path.glob("shard-*.npz"):
        with np.load(shard) as z:
            assert len(z["black"]) > 0


def test_train_net_oversamples_the_early_middle_game_rows_only():
    """``train-net --oversample K``: the rows of positions with enough pieces, K - 1 more times, in order
    (the network trainer itself needs PyTorch; this part is numpy)."""
    from uci_checkers.learn import train_net
    from uci_checkers.learn.dataset import PositionSet, piece_counts
    start = Position.start()
    after = start.play(start.parse_move("11-15"))
    after = after.play(after.parse_move("23-19"))
    ending = Position.from_fen("B:W18,K27:B5,9")
    positions = [ending, start, ending, after, ending]
    n = len(positions)
    data = PositionSet(*(np.array([getattr(p, a) for p in positions], dtype=np.int64)
                         for a in ("black", "white", "kings", "turn")),
                       np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64), [])
    assert list(piece_counts(data.black, data.white)) == [4, 24, 4, 24, 4]
    assert list(train_net.oversampled_rows(data, 13, 3)) == [1, 3, 1, 3]
    assert list(train_net.oversampled_rows(data, 4, 2)) == [0, 1, 2, 3, 4]
    assert list(train_net.oversampled_rows(data, 13, 1)) == []      # the default: no oversampling
    assert list(train_net.buckets(data)) == [0, 3, 0, 3, 0]
    with pytest.raises(SystemExit) as exc:                            # a usage error, before any work
        train_net.main(["--data", "x", "--out", "y", "--oversample", "0"])
    assert exc.value.code == 2
