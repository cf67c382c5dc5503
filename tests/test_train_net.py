"""The network trainer: its input views against the kernels' features, quantisation against the float
model, and a tiny training run end to end (skipped without PyTorch, the ``train`` extra)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.learn import selfplay
from uci_checkers.learn.dataset import PositionSet, load_shards
from uci_checkers.search import nnue as N
from uci_checkers.search import weights as W
from test_evaluate import random_positions
from test_nnue import reference_inputs

torch = pytest.importorskip("torch")
from uci_checkers.learn import train_net as T   # noqa: E402  (imports torch lazily; needs it to run)

REPO = Path(__file__).resolve().parent.parent


def position_set(positions) -> PositionSet:
    def col(attr):
        return np.array([getattr(p, attr) for p in positions], dtype=np.int64)
    n = len(positions)
    return PositionSet(col("black"), col("white"), col("kings"), col("turn"), np.ones(n, dtype=np.int64),
                       np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64), [])


def test_views_are_the_kernels_inputs():
    positions = random_positions(40, seed=21)
    xb = T.black_view(position_set(positions))
    xw = xb[:, T.white_permutation()]
    for pos, b, w in zip(positions, xb, xw):
        assert sorted(np.flatnonzero(b)) == sorted(reference_inputs(pos, 0))
        assert sorted(np.flatnonzero(w)) == sorted(reference_inputs(pos, 1))


@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_quantised_network_follows_the_float_model(layers):
    model = T.make_model(seed=5, layers=layers)
    with torch.no_grad():               # larger first-layer weights than the initialisation: many clip
        model.ft.weight.mul_(4.0)
        model.ft.bias.add_(0.3)
        if layers > 1:                  # phases that differ from the shared layer, each its own way
            g = torch.Generator().manual_seed(6)
            model.ft_phase.weight.copy_(0.3 * torch.randn(model.ft_phase.weight.shape, generator=g))
            model.ft_phase_bias.copy_(0.2 * torch.randn(model.ft_phase_bias.shape, generator=g))
    scale = 75.0
    net = T.quantise(model, scale)
    assert N.first_layers(net) == layers
    knet = N.kernel_net(net)
    acc = N.new_accumulators()
    positions = random_positions(300, seed=22, max_plies=120)
    data = position_set(positions)
    assert set(T.phases(data)) == {0, 1, 2, 3}      # every phase's layer is compared
    z = T._Tensors(torch, data, np.zeros(len(positions))).logits(torch, model)
    diffs = []
    for pos, zi in zip(positions, z):
        got = int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, knet, acc))
        diffs.append(got - zi * scale)
    diffs = np.abs(np.array(diffs))
    assert np.std(z * scale) > 5            # the model says something, so the comparison means something
    assert diffs.max() < 4 and diffs.mean() < 1.5


def test_a_network_beyond_the_kernels_ranges_is_refused_in_one_line(shards, tmp_path, monkeypatch, capsys):
    model = T.make_model(seed=5)
    with torch.no_grad():               # first-layer sums far beyond the int16 accumulators
        model.ft.weight.mul_(2000.0)
    with pytest.raises(T.TrainError, match="integer ranges"):
        T.quantise(model, 75.0)

    def train_too_large(data, config, progress=None, pdn=None):
        return T.quantise(model, 75.0), {}
    monkeypatch.setattr(T, "train", train_too_large)
    out = tmp_path / "n.weights"
    assert T.main(["--data", str(shards), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no weights written" in err and not out.exists()


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("selfplay")
    selfplay.generate(out, games=8, config=selfplay.SelfPlayConfig(seed=4, nodes=300), jobs=1, shard_size=4,
                      progress=None)
    return out


@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_training_is_reproducible_and_writes_a_network_file(shards, tmp_path, layers):
    data = load_shards([shards])
    cfg = T.NetConfig(epochs=2, batch=128, val_share=0.25, seed=3, phases=layers)
    net1, report = T.train(data, cfg, progress=None)
    net2, _ = T.train(data, cfg, progress=None)
    assert np.array_equal(net1, net2) and N.first_layers(net1) == layers
    assert report["history"][1]["train_loss"] < report["history"][0]["train_loss"]
    if layers > 1:                      # the phases present in the data have moved apart
        ft = [net1[p * N.FT_SIZE:(p + 1) * N.FT_SIZE] for p in range(layers)]
        present = sorted(set(T.phases(data)))
        assert len(present) > 1 and not np.array_equal(ft[present[0]], ft[present[-1]])
    out = tmp_path / "n.weights"
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "train-net", "--data", str(shards), "--epochs", "1",
                           "--batch", "128", "--phases", str(layers), "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    loaded = W.load_weights(out)
    assert loaded.kind == W.KIND_NETWORK
    assert loaded.header["layout"] == (N.LAYOUT if layers == 1 else N.PHASE_LAYOUT)


def test_bad_input_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "uci_checkers", "train-net", "--data", str(tmp_path / "nope"),
                           "--out", str(tmp_path / "n.weights")], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "nope" in proc.stderr


def test_an_interrupt_keeps_the_best_finished_epoch(shards, monkeypatch):
    """Ctrl-C keeps finished work: after one finished epoch the trainer returns that epoch's network."""
    data = load_shards([shards])
    calls = {"n": 0}
    real = T.log_loss

    def interrupt_in_second_epoch(z, t):
        calls["n"] += 1
        if calls["n"] == 2:                   # the second epoch's validation
            raise KeyboardInterrupt
        return real(z, t)
    monkeypatch.setattr(T, "log_loss", interrupt_in_second_epoch)
    net, report = T.train(data, T.NetConfig(epochs=3, batch=128, val_share=0.25, seed=3), progress=None)
    assert report["interrupted"] and report["best_epoch"] == 1 and len(report["history"]) == 1
    N.check_ranges(net)
    monkeypatch.setattr(T, "log_loss", lambda z, t: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):    # nothing finished: nothing to keep
        T.train(data, T.NetConfig(epochs=2, batch=128, val_share=0.25, seed=3), progress=None)
