"""The network evaluation: the kernels against a pure-Python forward pass, incremental accumulators
against a full recompute (along random games and through the search's lazy stack), colour symmetry,
the weights file of kind ``network``, and the search driving the network."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from uci_checkers.rules.position import Game, Position
from uci_checkers.search import nnue as N
from uci_checkers.search import weights as W
from uci_checkers.search.alphabeta import W_NNPOS, WS_SIZE, SearchLimits, Searcher
from test_evaluate import mirror, random_positions


def random_net(seed: int = 3, layers: int = 1) -> np.ndarray:
    """Quantised weights of plausible size (first-layer rows of a few QA, so the clipping matters), with
    one first layer or one per game phase (``layers`` N_PHASES), each its own."""
    rng = np.random.default_rng(seed)
    net = np.zeros(N.net_size(layers), dtype=np.int32)
    for layer in range(layers):
        ft = layer * N.FT_SIZE
        net[ft + N.O_W1:ft + N.O_B1] = rng.integers(-40, 41, N.N_IN * N.H)
        net[ft + N.O_B1:ft + N.FT_SIZE] = rng.integers(-30, 90, N.H)
    for b in range(N.N_BUCKETS):
        base = N.buckets_at(layers) + b * N.BUCKET_SIZE
        net[base + N.B_W2:base + N.B_B2] = rng.integers(-12, 13, N.L2 * 2 * N.H)
        net[base + N.B_B2:base + N.B_W3] = rng.integers(-3000, 9000, N.L2)
        net[base + N.B_W3:base + N.B_B3] = rng.integers(-40, 41, N.L3 * N.L2)
        net[base + N.B_B3:base + N.B_WO] = rng.integers(-3000, 9000, N.L3)
        net[base + N.B_WO:base + N.B_BO] = rng.integers(-4000, 4001, N.L3)
        net[base + N.B_BO] = rng.integers(-50000, 50000)
    return net


# --- a slow, obviously-correct reference ------------------------------------------------------
def reference_inputs(pos: Position, persp: int) -> list[int]:
    """Active inputs of one perspective, square by square (see the nnue docstring)."""
    out = []
    for s in range(1, 33):
        p = pos.piece_at(s)
        if p is None:
            continue
        colour = 0 if p.lower() == "b" else 1
        king = 1 if p.isupper() else 0
        rel = 0 if colour == persp else 1
        oriented = s - 1 if persp == 0 else 32 - s
        out.append((2 * rel + king) * 32 + oriented)
    return out


def reference_phase(pos: Position) -> int:
    """GuiNN's four nets, spelt out: at most 6 pieces, at most 8, a king on the board, no king."""
    pieces = [pos.piece_at(s) for s in range(1, 33) if pos.piece_at(s) is not None]
    if len(pieces) <= 6:
        return 0
    if len(pieces) <= 8:
        return 1
    return 2 if any(p.isupper() for p in pieces) else 3


def reference_eval(pos: Position, net: np.ndarray) -> int:
    """The quantised forward pass in plain Python integers (one first layer, or the position's phase's)."""
    w = [int(x) for x in net]
    H = N.H
    layers = 1 if len(w) == N.NET_SIZE else N.N_PHASES
    ft = (reference_phase(pos) if layers > 1 else 0) * N.FT_SIZE

    def clip(x):
        return max(0, min(N.QA, x))

    accs = []
    for persp in (pos.turn, 1 - pos.turn):
        a = [w[ft + N.O_B1 + j] for j in range(H)]
        for f in reference_inputs(pos, persp):
            for j in range(H):
                a[j] += w[ft + N.O_W1 + f * H + j]
        accs.append([clip(x) for x in a])
    x = accs[0] + accs[1]
    pieces = sum(1 for s in range(1, 33) if pos.piece_at(s) is not None)
    bucket = min(N.N_BUCKETS - 1, max(0, (pieces - 1) // 6))
    base = (N.FT_SIZE * layers) + bucket * N.BUCKET_SIZE
    h2 = [clip((sum(x[j] * w[base + N.B_W2 + i * 2 * H + j] for j in range(2 * H)) + w[base + N.B_B2 + i]) // N.QB)
          for i in range(N.L2)]
    h3 = [clip((sum(h2[j] * w[base + N.B_W3 + i * N.L2 + j] for j in range(N.L2)) + w[base + N.B_B3 + i]) // N.QB)
          for i in range(N.L3)]
    out = sum(h3[j] * w[base + N.B_WO + j] for j in range(N.L3)) + w[base + N.B_BO]
    return max(-N.SCORE_CLAMP, min(N.SCORE_CLAMP, out // (N.QA * N.QB)))


# --- the kernels ---------------------------------------------------------------------------------
def test_features_match_the_reference():
    for pos in random_positions(40, seed=11):
        for persp in (0, 1):
            acc = N.new_accumulators()
            net = np.zeros(N.NET_SIZE, dtype=np.int32)
            want = sorted(reference_inputs(pos, persp))
            got = []
            for f in range(N.N_IN):     # one-hot rows: the accumulator counts each input's uses
                net[:] = 0
                net[N.O_W1 + f * N.H] = 1
                N.refresh(pos.black, pos.white, pos.kings, N.kernel_net(net), acc, 0, 0)
                got += [f] * int(acc[persp * N.H])
            assert got == want, pos.fen()


def extreme_byte_net() -> np.ndarray:
    """Weights at -128 and 127 in the small layers against inputs often clipped at 127, where a 16-bit
    pairwise sum would be nearest to saturating."""
    rng = np.random.default_rng(12)
    net = random_net(seed=12)
    net[N.O_W1:N.O_B1] = rng.integers(-60, 200, N.N_IN * N.H)     # many inputs clipped at QA
    for b in range(N.N_BUCKETS):
        base = N.buckets_at(1) + b * N.BUCKET_SIZE
        net[base + N.B_W2:base + N.B_B2] = rng.choice([-128, 127, -1, 0], N.L2 * 2 * N.H)
        net[base + N.B_W3:base + N.B_B3] = rng.choice([-128, 127, 3], N.L3 * N.L2)
    N.check_ranges(net)
    return net


def test_byte_layers_at_the_ends_of_their_ranges_match_the_reference():
    """The small layers run as byte dot products (util.jit.clipped_layers; vpdpbusd on this CPU if it
    has AVX-512 VNNI), exact at the ends of the byte ranges."""
    net = extreme_byte_net()
    knet = N.kernel_net(net)
    acc = N.new_accumulators()
    for pos in random_positions(40, seed=13):
        got = int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, knet, acc))
        assert got == reference_eval(pos, net), pos.fen()


_PORTABLE_SCORES = """
import json, sys
import numpy as np
from uci_checkers.search import nnue as N
from uci_checkers.util import jit
data = json.load(sys.stdin)
knet = N.kernel_net(np.array(data["net"], dtype=np.int32))
acc = N.new_accumulators()
scores = [int(N.evaluate_position(b, w, k, t, knet, acc)) for b, w, k, t in data["positions"]]
print(json.dumps({"vnni": jit.VNNI_512, "scores": scores}))
"""


@pytest.mark.parametrize("cpu", ["haswell", "x86-64"])
def test_byte_layers_without_vnni_match_the_reference(tmp_path, cpu):
    """Compiled for a CPU without AVX-512 VNNI (AVX2 only, or baseline x86-64), the small layers read
    their weights row by row and reduce each output's products: the same integers."""
    import json
    import os
    import subprocess
    import sys

    net = extreme_byte_net()
    positions = random_positions(30, seed=13)
    env = dict(os.environ, NUMBA_CPU_NAME=cpu, NUMBA_CPU_FEATURES="", UCI_CHECKERS_CACHE_DIR=str(tmp_path))
    data = {"net": net.tolist(), "positions": [[p.black, p.white, p.kings, p.turn] for p in positions]}
    done = subprocess.run([sys.executable, "-c", _PORTABLE_SCORES], input=json.dumps(data), env=env,
                          cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(done.stdout)
    assert got["vnni"] is False
    assert got["scores"] == [reference_eval(p, net) for p in positions]


@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_kernel_forward_pass_matches_the_reference(layers):
    net = random_net(layers=layers)
    knet = N.kernel_net(net)
    acc = N.new_accumulators()
    scores = set()
    phases = set()
    for pos in random_positions(120, seed=5, max_plies=120):
        got = int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, knet, acc))
        assert got == reference_eval(pos, net), pos.fen()
        scores.add(got)
        phases.add(reference_phase(pos))
    assert len(scores) > 20          # the random net is not degenerate (all clipped to one value)
    assert phases == {0, 1, 2, 3}    # every phase's first layer was read


def test_phase_table_matches_the_reference():
    knet = N.kernel_net(random_net(layers=N.N_PHASES))
    for pos in random_positions(200, seed=15, max_plies=120):
        assert N.phase_rows(knet, pos.black, pos.white, pos.kings) == reference_phase(pos) * N.ROWS16
    one = N.kernel_net(random_net())
    assert {N.phase_rows(one, p.black, p.white, p.kings) for p in random_positions(50, seed=15)} == {0}


@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_colour_symmetry_with_any_weights(layers):
    net = N.kernel_net(random_net(seed=8, layers=layers))
    acc = N.new_accumulators()
    for pos in random_positions(60, seed=9, max_plies=120):
        m = mirror(pos)
        assert N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, net, acc) == \
            N.evaluate_position(m.black, m.white, m.kings, m.turn, net, acc), pos.fen()


@pytest.mark.parametrize("layers, layer", [(1, 0), (N.N_PHASES, 0), (N.N_PHASES, 3)])
def test_incremental_updates_equal_a_full_recompute_along_random_games(layers, layer):
    net = N.kernel_net(random_net(seed=4, layers=layers))
    rows = layer * N.ROWS16
    acc = N.new_accumulators()
    fresh = N.new_accumulators()
    rng = random.Random(2)
    steps = 0
    taken = set()                     # pieces captured by a move: update's three paths (0, 1, more)
    for _ in range(12):
        pos = Position.start()
        N.refresh(pos.black, pos.white, pos.kings, net, acc, 0, rows)
        for _ in range(150):
            moves = pos.legal_moves()
            if not moves:
                break
            nxt = pos.play(rng.choice(moves))         # captures, multi-jumps and crowning included
            N.update(pos.black, pos.white, pos.kings, nxt.black, nxt.white, nxt.kings, net, acc, 0, 1, rows)
            acc[:N.ROW] = acc[N.ROW:2 * N.ROW]
            N.refresh(nxt.black, nxt.white, nxt.kings, net, fresh, 0, rows)
            assert np.array_equal(acc[:N.ROW], fresh[:N.ROW]), nxt.fen()
            taken.add(min(2, bin(pos.black | pos.white).count("1") - bin(nxt.black | nxt.white).count("1")))
            pos = nxt
            steps += 1
    assert steps > 500
    assert taken == {0, 1, 2}


@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_lazy_stack_equals_a_full_recompute_through_a_random_tree(layers):
    """The search's use: enter nodes depth-first (note_position), evaluate some of them (evaluate_at),
    leave them in any order; every score equals the from-scratch evaluation, also where a move changes
    the phase (a phase network's first layer) between a computed ancestor and the node."""
    net = N.kernel_net(random_net(seed=6, layers=layers))
    nn = N.thread_array(random_net(seed=6, layers=layers))
    scratch = N.new_accumulators()
    ws = np.zeros(WS_SIZE, dtype=np.int64)
    rng = random.Random(7)
    checked = 0
    crossed = 0                       # evaluations whose parent is of another phase

    def visit(pos: Position, ply: int, parent_phase: int) -> None:
        nonlocal checked, crossed
        N.note_position(ws, W_NNPOS, ply, pos.black, pos.white, pos.kings)
        phase = reference_phase(pos)
        if rng.random() < 0.4:
            got = int(N.evaluate_at(ws, W_NNPOS, ply, pos.turn, nn))
            assert got == int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, net, scratch))
            checked += 1
            crossed += phase != parent_phase
        if ply >= 9:
            return
        moves = pos.legal_moves()
        for m in rng.sample(moves, min(len(moves), 2)):
            visit(pos.play(m), ply + 1, phase)

    starts = random_positions(6, seed=3, max_plies=30) + random_positions(6, seed=4, max_plies=110)
    for start in starts:
        for m in start.legal_moves():          # the root's children are ply 1, as in the search
            visit(start.play(m), 1, reference_phase(start))
    assert checked > 1000
    assert crossed > 10


# --- the weights file ---------------------------------------------------------------------------
def test_network_file_round_trip_and_refusals(tmp_path):
    net = random_net()
    saved = W.save_network(tmp_path / "n.weights", net, {"test": True})
    loaded = W.load_weights(tmp_path / "n.weights")
    assert loaded.kind == W.KIND_NETWORK and saved.checksum == loaded.checksum
    assert loaded.table.dtype == np.int32 and np.array_equal(loaded.table, net)
    assert loaded.header["layout"] == N.LAYOUT
    data = bytearray((tmp_path / "n.weights").read_bytes())
    data[-100] ^= 1
    (tmp_path / "bad.weights").write_bytes(bytes(data))
    with pytest.raises(W.WeightsError, match="checksum"):
        W.load_weights(tmp_path / "bad.weights")
    with pytest.raises(ValueError, match="shape"):
        W.save_network(tmp_path / "short.weights", net[:-1], {})
    big = net.copy()
    big[N.O_W1] = 40000
    with pytest.raises(ValueError, match="int16"):
        W.save_network(tmp_path / "big.weights", big, {})
    big = net.copy()
    big[N.O_W1 + 5:N.O_W1 + 24 * N.H:N.H] = 1400   # neuron 5: 24 pieces' rows could sum past 2^15
    with pytest.raises(ValueError, match="int16 accumulators"):
        W.save_network(tmp_path / "big.weights", big, {})
    big[N.O_W1 + 5 + 23 * N.H] = 0                 # one piece fewer on those rows: 23 * 1400 + bias fits
    N.check_ranges(big)
    big = net.copy()
    big[N.buckets_at(1) + N.B_W3] = 128          # the small hidden layers' weights are bytes (clipped_layers)
    with pytest.raises(ValueError, match="byte range"):
        W.save_network(tmp_path / "big.weights", big, {})
    big = net.copy()
    big[N.buckets_at(1) + N.B_B2] = 140_000       # 127 * (140,000 + weights) > 2^24: inexact
    with pytest.raises(ValueError, match="exact"):
        W.save_network(tmp_path / "big.weights", big, {})
    big = net.copy()
    big[N.buckets_at(1) + N.B_WO:N.buckets_at(1) + N.B_BO] = 5000   # output sum 127 * 32 * 5000 > 2^24: inexact
    with pytest.raises(ValueError, match="output weights"):
        W.save_network(tmp_path / "big.weights", big, {})


def test_a_phase_network_file_round_trip(tmp_path):
    net = random_net(layers=N.N_PHASES)
    W.save_network(tmp_path / "p.weights", net, {"test": True})
    loaded = W.load_weights(tmp_path / "p.weights")
    assert loaded.header["layout"] == N.PHASE_LAYOUT and loaded.header["size"] == N.PHASE_NET_SIZE
    assert np.array_equal(loaded.table, net)
    big = net.copy()
    big[3 * N.FT_SIZE + 7:3 * N.FT_SIZE + 24 * N.H:N.H] = 1400    # the last phase's neuron 7 only
    with pytest.raises(ValueError, match="int16 accumulators"):
        W.save_network(tmp_path / "big.weights", big, {})
    with pytest.raises(ValueError, match="shape"):
        W.save_network(tmp_path / "odd.weights", net[:-N.FT_SIZE], {})


def test_the_layout_name_describes_the_network_sizes():
    # one home for the name (search.layouts, read without numba); it must change when the sizes do
    assert N.LAYOUT == f"nnue-2x{N.N_IN}-{N.H}x2-crelu-{N.N_BUCKETS}x{N.L2}x{N.L3}x1-qa{N.QA}-qb{N.QB}"
    assert N.PHASE_LAYOUT == \
        f"nnue-2x{N.N_IN}-{N.N_PHASES}phasex{N.H}x2-crelu-{N.N_BUCKETS}x{N.L2}x{N.L3}x1-qa{N.QA}-qb{N.QB}"
    assert W.EVALUATIONS[N.LAYOUT] == W.EVALUATIONS[N.PHASE_LAYOUT] == W.KIND_NETWORK


def test_the_shipped_files_and_their_kinds():
    assert W.pattern_weights().kind == W.KIND_PATTERN
    net = W.default_weights()
    assert net.kind == W.KIND_NETWORK and len(net.checksum) == 64
    prov = net.header["provenance"]
    assert prov["trainer"] == "uci_checkers.learn.train_net" and "data_digest" in prov and "config" in prov


@pytest.mark.parametrize("fen", [
    "B:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12",   # a man up
    "W:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12",
    "B:W30,31:BK1,K2,3",                                                  # two kings and a man vs two men
    "B:WK30:BK1,K2",
])
def test_the_shipped_network_knows_material(fen):
    """The shipped network gives Black, a piece up, the better score (Black's view)."""
    assert N.evaluation_terms(Position.from_fen(fen), W.default_weights().table)["total"] > 50


# --- the search with a network ------------------------------------------------------------------
@pytest.mark.parametrize("layers", [1, N.N_PHASES])
def test_search_with_a_network_is_reproducible_and_uses_it(tmp_path, layers):
    weights = W.save_network(tmp_path / "n.weights", random_net(seed=1, layers=layers), {"test": True})
    game = Game.from_moves(Position.start(), ["11-15", "23-19", "8-11"])
    stop = np.zeros(1, dtype=np.int64)
    first = Searcher(1, weights).search(game, SearchLimits(depth=7), None, stop)
    again = Searcher(1, weights).search(game, SearchLimits(depth=7), None, stop)
    assert (first.best, first.score, first.nodes) == (again.best, again.score, again.nodes)
    patterns = Searcher(1, W.pattern_weights()).search(game, SearchLimits(depth=7), None, stop)
    assert (first.score, first.nodes) != (patterns.score, patterns.nodes)


def quiet_leaf_roots(n: int, seed: int = 12, max_plies: int = 40):
    """(position, children) of random positions whose children are all leaves of a depth-1 search: no
    capture for either side there, and a legal move."""
    for pos in random_positions(n, seed=seed, max_plies=max_plies):
        children = [pos.play(m) for m in pos.legal_moves()]
        if children and not any(c.is_capture_pending() or not c.has_legal_move()
                                or Position(c.black, c.white, c.kings, 1 - c.turn).is_capture_pending()
                                for c in children):
            yield pos, children


# a leaf just below alpha would try its sacrifices (SearchParams QsShot): these tests want plain leaves
NO_LEAF_SHOTS = {"QsShot": 0}


def best_network_reply(children, net, acc) -> int:
    """The depth-1 score of the root: the best of minus the children's static network scores."""
    return max(-int(N.evaluate_position(c.black, c.white, c.kings, c.turn, net, acc)) for c in children)


def test_depth_one_search_scores_are_the_static_network_scores(tmp_path):
    """At depth 1 a root child where neither side can capture is a leaf: the search's score is the best
    of minus the children's evaluations (the lazy stack is refreshed at ply 1)."""
    weights = W.save_network(tmp_path / "n.weights", random_net(seed=2), {"test": True})
    net = N.kernel_net(weights.table)
    acc = N.new_accumulators()
    checked = 0
    for pos, children in quiet_leaf_roots(80):
        searcher = Searcher(1, weights)
        searcher.set_params(NO_LEAF_SHOTS)
        res = searcher.search(Game(pos), SearchLimits(depth=1), None, np.zeros(1, dtype=np.int64))
        assert res.score == best_network_reply(children, net, acc), pos.fen()
        checked += 1
    assert checked >= 10


def test_eval_terms_of_a_network_engine(tmp_path, monkeypatch):
    """The engine's ``eval`` terms come from the network when the weights are a network."""
    from uci_checkers.engine.facade import Engine
    from uci_checkers.search import alphabeta
    net = random_net(seed=9)
    weights = W.save_network(tmp_path / "n.weights", net, {"test": True})
    monkeypatch.setattr(W, "default_weights", lambda: weights)
    monkeypatch.setattr(alphabeta, "default_weights", lambda: weights)
    eng = Engine()
    eng.set_position(Position.from_fen("W:W18,24,27,28,K10:B6,12,16,K30"), [])
    terms = eng.evaluate_terms()
    pos = eng.game.position
    want = int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, N.kernel_net(net), N.new_accumulators()))
    assert terms == {"network": -want, "total": -want, "total_stm": want}


def test_static_score_cache_answers_with_the_evaluation(tmp_path):
    """The search's cache of static scores (alphabeta._static) returns what the evaluation returns, on
    the first call (a miss) and the second (a hit), for the pattern tables and the network; two keys of
    one slot never answer for each other."""
    from uci_checkers.search import alphabeta as A
    from uci_checkers.search.evaluate import evaluate
    net = N.kernel_net(random_net(seed=4))
    tables = np.array(W.pattern_weights().table, dtype=np.int64)
    positions = random_positions(60, seed=21, max_plies=60)
    for network in (False, True):
        ws = np.zeros(WS_SIZE, dtype=np.int64)
        nn = N.thread_array(net) if network else N.no_network()
        ev = np.zeros(1, dtype=np.int64) if network else tables
        acc = N.new_accumulators()
        for i, pos in enumerate(positions):
            if network:
                want = int(N.evaluate_position(pos.black, pos.white, pos.kings, pos.turn, net, acc))
            else:
                want = int(evaluate(pos.black, pos.white, pos.kings, pos.turn, tables))
            # the same slot for every position (low 16 bits equal), different upper bits: each call
            # after the first of another position must miss, not answer with the neighbour's score
            key = (i + 1) << 20
            for _ in range(2):
                if network:
                    N.note_position(ws, W_NNPOS, 1, pos.black, pos.white, pos.kings)
                got = int(A._static(pos.black, pos.white, pos.kings, pos.turn, key, 1, ws, ev, nn))
                assert got == want, (network, pos.fen())


def test_new_weights_forget_the_cached_static_scores(tmp_path):
    """A searcher that has searched with one evaluation and is given another scores with the new one:
    depth-1 scores after the switch are the network's static scores, not cached pattern scores."""
    weights = W.save_network(tmp_path / "n.weights", random_net(seed=2), {"test": True})
    net = N.kernel_net(weights.table)
    acc = N.new_accumulators()
    searcher = Searcher(1, W.pattern_weights())
    searcher.set_params(NO_LEAF_SHOTS)
    checked = 0
    for pos, children in quiet_leaf_roots(40):
        searcher.set_weights(W.pattern_weights())
        searcher.search(Game(pos), SearchLimits(depth=1), None, np.zeros(1, dtype=np.int64))
        searcher.set_weights(weights)
        res = searcher.search(Game(pos), SearchLimits(depth=1), None, np.zeros(1, dtype=np.int64))
        assert res.score == best_network_reply(children, net, acc), pos.fen()
        checked += 1
    assert checked >= 5
