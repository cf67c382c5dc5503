"""Endgame databases: indexing, the retrograde solver against a plain reference, files, resume, search and engine.

The reference solver below shares nothing with the package: it generates moves
with ``tests/reference.py`` and solves the closed world of every position with
at most three pieces by a breadth-first retrograde walk over dictionaries.
"""
from __future__ import annotations

import itertools
import random
import signal
from collections import deque
from math import comb
from pathlib import Path

import numpy as np
import pytest

import reference as ref
from uci_checkers.rules.bitboard import squares_to_bits
from uci_checkers.egdb import build as egbuild
from uci_checkers.tools import egdb_command
from uci_checkers.egdb import store
from uci_checkers.egdb.index import Slice, canonical, count_index_failures, king_set_counts, men_offsets, slice_size, slices_up_to
from uci_checkers.egdb.probe import NOT_FOUND, assemble_table, describe, probe_position
from uci_checkers.engine.facade import Engine
from uci_checkers.rules.position import Game, Position
from uci_checkers.protocols.uci import Protocol
from uci_checkers.search.alphabeta import MATE, Searcher, SearchLimits

SMALL = 3   # the tests build every slice with up to three pieces (about 200,000 positions, a few seconds)


@pytest.fixture(scope="module")
def db3(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("egdb3")
    assert egbuild.build(directory, SMALL, quiet=True) == len(slices_up_to(SMALL))
    return directory


@pytest.fixture(scope="module")
def table3(db3):
    loaded = store.load_directory(db3, SMALL)
    assert loaded.pieces == SMALL and not loaded.problems
    return loaded.table


def read_values(directory: Path, pieces: int = SMALL) -> dict:
    """Every value of every slice of ``directory`` read back in full (checksums checked), by slice."""
    out: dict = {}
    for s in slices_up_to(pieces):
        table = assemble_table({d: (out[d], men_offsets(d)) for d in out if d.pieces < s.pieces})
        out[s] = store.read_slice(directory, s, table)[0]
    return out


# --------------------------------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------------------------------
def _placements(s: Slice) -> int:
    """Brute-force count of the positions of a slice (both sides to move)."""
    n = 0
    bmen_squares = range(1, 29)
    for bmen in itertools.combinations(bmen_squares, s.bm):
        for wmen in itertools.combinations([q for q in range(5, 33) if q not in bmen], s.wm):
            free = 32 - s.bm - s.wm
            n += comb(free, s.bk) * comb(free - s.bk, s.wk)
    return 2 * n


def test_slice_sizes_match_brute_force_counts():
    for s in slices_up_to(SMALL) + [Slice(2, 0, 1, 1), Slice(1, 1, 2, 0), Slice(2, 0, 2, 0)]:
        assert slice_size(s) == _placements(s), s


def test_every_slice_is_canonical_once_and_in_dependency_order():
    slices = slices_up_to(5)
    assert len(set(slices)) == len(slices)
    assert all(canonical(s) == s for s in slices)
    seen = set()
    for s in slices:
        # a promotion (one man fewer) and a capture (one piece fewer) lead to slices built before
        for succ in (Slice(s.bm - 1, s.bk + 1, s.wm, s.wk), Slice(s.bm, s.bk, s.wm - 1, s.wk + 1),
                     Slice(s.bm, s.bk - 1, s.wm, s.wk), Slice(s.bm - 1, s.bk, s.wm, s.wk)):
            if min(succ) >= 0 and succ.bm + succ.bk > 0 and succ.wm + succ.wk > 0:
                assert canonical(succ) in seen, (s, succ)
        seen.add(s)


def test_index_round_trips_on_every_slice():
    """rank(unrank(i)) == i for every index of every slice up to 4 pieces; a sample of every 5-piece slice."""
    for s in slices_up_to(5):
        offsets = men_offsets(s)
        nbk, nwk = king_set_counts(s)
        n = slice_size(s, offsets)
        if s.pieces <= 3:
            ranges = [(0, n)]
        else:   # a few thousand indices spread over the slice, both ends included
            step = max(1, n // 2000)
            ranges = [(lo, min(n, lo + 1)) for lo in range(0, n, step)] + [(n - 1, n)]
        for lo, hi in ranges:
            assert count_index_failures(lo, hi, s.bm, s.bk, s.wm, s.wk, offsets, nbk, nwk) == 0, (s, lo)


# --------------------------------------------------------------------------------------------------
# The solver against a plain reference
# --------------------------------------------------------------------------------------------------
def _flip(key):
    items, side = key
    swap = {"b": "w", "w": "b", "B": "W", "W": "B"}
    flipped = tuple(sorted((33 - sq, swap[p]) for sq, p in items))
    return flipped, ref.opponent(side)


def _canon(key):
    other = _flip(key)
    return min(key, other)


def _all_keys(max_pieces: int):
    kinds = "bwBW"
    for n in range(2, max_pieces + 1):
        for squares in itertools.combinations(range(1, 33), n):
            for pieces in itertools.product(kinds, repeat=n):
                if "b" not in pieces and "B" not in pieces or "w" not in pieces and "W" not in pieces:
                    continue
                board = dict(zip(squares, pieces))
                if any((p == "b" and sq > 28) or (p == "w" and sq < 5) for sq, p in board.items()):
                    continue
                for side in "bw":
                    yield tuple(sorted(board.items())), side


def reference_distances(keys: set) -> dict:
    """Canonical key -> plies to the end under best play (absent: draw), by a plain retrograde walk from ``keys``."""
    succ: dict = {}
    todo = list(keys)
    while todo:
        key = todo.pop()
        if key in succ:
            continue
        items, side = key
        nxt = [_canon((m.result, ref.opponent(side))) for m in ref.legal_moves(dict(items), side)]
        succ[key] = nxt
        todo.extend(k for k in nxt if k not in succ)
    preds: dict = {k: [] for k in succ}
    for key, nxt in succ.items():
        for k in nxt:
            preds[k].append(key)
    remaining = {k: len(v) for k, v in succ.items()}
    dist = {k: 0 for k, v in succ.items() if not v}
    queue = deque(dist)
    while queue:
        key = queue.popleft()
        d = dist[key]
        for p in preds[key]:
            if p in dist:
                continue
            if d % 2 == 0:           # key is lost for its mover: p wins by moving there
                dist[p] = d + 1
                queue.append(p)
            else:
                remaining[p] -= 1
                if remaining[p] == 0:
                    dist[p] = d + 1
                    queue.append(p)
    return dist


def _bits(items, side):
    black = squares_to_bits(sq for sq, p in items if p in "bB")
    white = squares_to_bits(sq for sq, p in items if p in "wW")
    kings = squares_to_bits(sq for sq, p in items if p in "BW")
    return black, white, kings, 0 if side == "b" else 1


def test_every_position_up_to_three_pieces_matches_the_reference(table3):
    keys = {_canon(k) for k in _all_keys(SMALL)}
    dist = reference_distances(keys)
    checked = 0
    for key in keys:
        black, white, kings, stm = _bits(*key)
        code = probe_position(table3, black, white, kings, stm)
        expect = 0 if key not in dist else dist[key] + 1
        assert code == expect, (ref.board_to_fen(dict(key[0]), key[1]), describe(code), describe(expect))
        # the colour-reversed position is found through the stored mirror
        fb, fw, fk, fs = _bits(*_flip(key))
        assert probe_position(table3, fb, fw, fk, fs) == code
        checked += 1
    assert checked > 100_000


def test_four_pieces_are_not_in_a_three_piece_table(table3):
    pos = Position.from_fen("B:WK10,K20:BK1,K2")
    assert probe_position(table3, pos.black, pos.white, pos.kings, pos.turn) == NOT_FOUND


# --------------------------------------------------------------------------------------------------
# Files: corruption, resume
# --------------------------------------------------------------------------------------------------
def test_corrupt_truncated_and_missing_files_are_detected(db3, tmp_path):
    s = Slice(0, 1, 0, 2)
    data = store.slice_path(db3, s).read_bytes()
    target = tmp_path / "db"
    target.mkdir()
    for other in db3.glob("*.egdb"):
        (target / other.name).write_bytes(other.read_bytes())
    path = store.slice_path(target, s)
    two = read_values(db3, 2)
    table2 = assemble_table({d: (two[d], men_offsets(d)) for d in two})
    flipped = bytearray(data)
    flipped[-5] ^= 0x40
    path.write_bytes(bytes(flipped))
    with pytest.raises(store.EgdbFileError, match="corrupt"):
        store.read_slice(target, s, table2)
    path.write_bytes(data[:-100])
    with pytest.raises(store.EgdbFileError, match="truncated"):
        store.read_slice(target, s, table2)
    loaded = store.load_directory(target, SMALL)
    assert loaded.pieces == 2 and len(loaded.problems) == 1 and s.name in loaded.problems[0]
    path.unlink()
    with pytest.raises(store.EgdbFileError, match="missing"):
        store.read_slice(target, s, table2)
    # the build notices the bad slice and rebuilds it, byte for byte the same values
    path.write_bytes(bytes(flipped))
    assert egbuild.build(target, SMALL, quiet=True) == 1
    assert np.array_equal(store.read_slice(target, s, table2)[0], store.read_slice(db3, s, table2)[0])


def test_resumed_build_equals_an_uninterrupted_one(db3, tmp_path, monkeypatch):
    calls = []
    real_write = egbuild.write_slice

    def interrupting_write(*args, **kwargs):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(args[1])
        return real_write(*args, **kwargs)

    monkeypatch.setattr(egbuild, "write_slice", interrupting_write)
    assert egdb_command.main(["build", "--pieces", str(SMALL), "--dir", str(tmp_path), "-q"]) == 130
    assert len(list(tmp_path.glob("*.egdb"))) == 5 and not list(tmp_path.glob(".*tmp"))
    monkeypatch.setattr(egbuild, "write_slice", real_write)
    total = len(slices_up_to(SMALL))
    assert egbuild.build(tmp_path, SMALL, quiet=True) == total - 5      # finished slices are not redone
    assert egbuild.build(tmp_path, SMALL, quiet=True) == 0
    resumed, whole = read_values(tmp_path), read_values(db3)
    for s in slices_up_to(SMALL):
        assert np.array_equal(resumed[s], whole[s]), s
        info = store.read_info(store.slice_path(tmp_path, s))
        info_whole = store.read_info(store.slice_path(db3, s))
        assert (info.max_distance, info.wins, info.losses, info.draws, info.values_crc) == \
            (info_whole.max_distance, info_whole.wins, info_whole.losses, info_whole.draws, info_whole.values_crc)
    assert egbuild.verify_directory(tmp_path, SMALL) == 0


def test_parallel_build_equals_the_serial_one(db3, tmp_path):
    assert egbuild.build(tmp_path, SMALL, jobs=2, quiet=True) == len(slices_up_to(SMALL))
    parallel, serial = read_values(tmp_path), read_values(db3)
    for s in slices_up_to(SMALL):
        assert np.array_equal(parallel[s], serial[s]), s


def test_parallel_build_ends_although_the_parent_catches_sigterm(db3, tmp_path):
    """Forked workers inherit the parent's Python signal handlers.  One that does not end the process
    (any host's, or a tool's left behind) made Pool.terminate at the end of every level wait for ever."""
    def expired(signum, frame):
        raise TimeoutError("the parallel build did not end within 120 s")
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    previous_alarm = signal.signal(signal.SIGALRM, expired)
    signal.alarm(120)
    try:
        assert egbuild.build(tmp_path, SMALL, jobs=2, quiet=True) == len(slices_up_to(SMALL))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous_alarm)
        signal.signal(signal.SIGTERM, previous_term)
    parallel, serial = read_values(tmp_path), read_values(db3)
    for s in slices_up_to(SMALL):
        assert np.array_equal(parallel[s], serial[s]), s


def test_cli_probe_and_info(db3, capsys):
    assert egdb_command.main(["probe", "--dir", str(db3), "--fen", "W:WK32:BK1,K5"]) == 0
    out = capsys.readouterr().out
    assert "win in" in out or "loss in" in out or "draw" in out
    assert egdb_command.main(["info", "--dir", str(db3)]) == 0
    assert "3 pieces: 6 slices" in capsys.readouterr().out
    assert egdb_command.main(["build", "--pieces", "1", "--dir", str(db3)]) == 2


# --------------------------------------------------------------------------------------------------
# In the search and the engine
# --------------------------------------------------------------------------------------------------
def _random_positions(table, s: Slice, want: str, count: int, seed: int):
    """Random positions of slice ``s`` (no capture pending) that the table says the side to move wins/loses."""
    from uci_checkers.egdb.index import unrank_position

    rng = random.Random(seed)
    offsets = men_offsets(s)
    nbk, nwk = king_set_counts(s)
    n = slice_size(s, offsets)
    out = []
    for _ in range(200_000):
        b, w, k, stm = (int(x) for x in unrank_position(rng.randrange(n), s.bm, s.bk, s.wm, s.wk, offsets, nbk, nwk))
        pos = Position(b, w, k, stm)
        if pos.is_capture_pending():
            continue
        code = probe_position(table, b, w, k, stm)
        if code > 0 and ((code - 1) % 2 == 1) == (want == "win") and code > 4:
            out.append((pos, code - 1))
            if len(out) == count:
                break
    return out


@pytest.mark.parametrize("s", slices_up_to(SMALL), ids=str)
def test_engine_converts_won_positions_within_the_no_progress_limit(table3, s):
    """From random won positions of every slice the engine, playing both sides, wins in exactly the stored
    number of plies: through the root shortcut (MultiPV 1) and through the search's own probes (MultiPV 2)."""
    searcher = Searcher(4)
    searcher.set_egdb(table3)
    positions = _random_positions(table3, s, "win", 3, seed=s.key)
    assert positions
    for number, (pos, distance) in enumerate(positions):
        game = Game(pos)
        winner = pos.turn
        limits = SearchLimits(depth=6, multipv=1 + number % 2)
        for _ in range(distance):
            result = searcher.search(game, limits, lambda info: None, np.zeros(1, dtype=np.int64))
            assert result.best is not None
            game.push(result.best)
            assert not game.status().is_over or not game.position.has_legal_move()
        assert not game.position.has_legal_move() and game.position.turn != winner, pos.fen()
        assert game.quiet_plies < game.no_progress_plies


def test_search_probes_interior_nodes_and_scores_exact_mates(table3):
    # four pieces: not in the table, but every capture leads into it
    pos = Position.from_fen("B:WK18,K23:BK14,K1")
    searcher = Searcher(4)
    infos = []
    plain = searcher.search(Game(pos), SearchLimits(depth=5), infos.append, np.zeros(1, dtype=np.int64))
    assert all(i.tbhits == 0 for i in infos)
    searcher.set_egdb(table3)
    searcher.clear()
    infos = []
    result = searcher.search(Game(pos), SearchLimits(depth=5), infos.append, np.zeros(1, dtype=np.int64))
    assert infos[-1].tbhits > 0 and result.best is not None
    assert plain.best is not None
    # a three-piece root: every move is known, the best is played at once with the exact score
    pos = Position.from_fen("B:WK29:BK1,K2")
    code = probe_position(table3, pos.black, pos.white, pos.kings, pos.turn)
    result = searcher.search(Game(pos), SearchLimits(depth=10), lambda i: None, np.zeros(1, dtype=np.int64))
    assert result.score == MATE - (code - 1)
    after = pos.play(result.best)
    assert probe_position(table3, after.black, after.white, after.kings, after.turn) == code - 1


@pytest.mark.parametrize("multipv", [1, 2])
def test_a_database_draw_costs_the_contempt(table3, multipv):
    """A king against a king in its double corner: every move leads into a database draw.  With Contempt 25
    the search's probes score it -25 for the side that searches, with MultiPV 1 and 2 (the root shortcut of
    ``egdb.probe.root_choice`` declines a root whose moves draw, so the search scores those)."""
    pos = Position.from_fen("B:WK32:BK1")
    searcher = Searcher(4)
    searcher.set_egdb(table3)
    for contempt in (0, 25):
        infos = []
        result = searcher.search(Game(pos), SearchLimits(depth=4, multipv=multipv, contempt=contempt),
                                 infos.append, np.zeros(1, dtype=np.int64))
        assert result.score == -contempt and infos[-1].score == -contempt
        assert infos[-1].tbhits > 0


def _protocol_session():
    lines: list[str] = []
    proto = Protocol(write=lines.append, engine=Engine())
    return proto, lines


def _go_and_wait(proto, lines, command="go depth 3"):
    proto.handle(command)
    assert proto.engine.wait(60)
    return [line for line in lines if line.startswith("bestmove")]


def test_engine_option_loads_databases_and_d_shows_the_verdict(db3):
    proto, lines = _protocol_session()
    proto.handle(f"setoption name EGDB Path value {db3}")
    proto.handle("position fen W:WK29:BK1,K2")
    assert _go_and_wait(proto, lines)
    assert sum(1 for line in lines if line.startswith("info string egdb:")) == 1
    assert any(" tbhits " in line for line in lines if line.startswith("info depth"))
    lines.clear()
    proto.handle("d")
    assert any(line.startswith("Endgame database: loss in") and "white" in line for line in lines)
    proto.handle("setoption name EGDB Pieces value 0")
    proto.handle("isready")
    lines.clear()
    proto.handle("d")
    assert not any(line.startswith("Endgame database") for line in lines)
    proto.engine.quit()


def test_missing_or_corrupt_database_gives_one_info_string_and_the_engine_plays_on(db3, tmp_path):
    target = tmp_path / "bad"
    target.mkdir()
    for other in db3.glob("*.egdb"):
        (target / other.name).write_bytes(other.read_bytes())
    bad = store.slice_path(target, Slice(0, 1, 1, 1))
    bad.write_bytes(bad.read_bytes()[:-7])
    for path, expect in ((tmp_path / "nowhere", "no such directory"), (target, "truncated")):
        proto, lines = _protocol_session()
        proto.handle(f"setoption name EGDB Path value {path}")
        proto.handle("position fen W:WK29:BK1,K2")
        assert _go_and_wait(proto, lines) and not any("error" in line for line in lines)
        messages = [line for line in lines if line.startswith("info string egdb:")]
        assert len(messages) == 1 and expect in messages[0], messages
        lines.clear()
        assert _go_and_wait(proto, lines)                   # said once, not at every go
        assert not any(line.startswith("info string egdb:") for line in lines)
        proto.engine.quit()


def test_slices_without_distances_keep_exact_results_and_guide_the_search(db3, tmp_path):
    """--distance-pieces 2: three-piece slices where both sides have men keep win/loss/draw only."""
    assert egbuild.build(tmp_path, SMALL, quiet=True, distance_pieces=2) == len(slices_up_to(SMALL))
    assert egbuild.verify_directory(tmp_path, SMALL) == 0
    full_values, small_values = read_values(db3), read_values(tmp_path)
    for s in slices_up_to(SMALL):
        info = store.read_info(store.slice_path(tmp_path, s))
        assert info.distances == (s.pieces <= 2 or s.bm == 0 or s.wm == 0), s
        full, small = full_values[s], small_values[s]
        expect = full if info.distances else egbuild.to_win_loss_draw(full)
        assert np.array_equal(small, expect), s
    # converting a directory built with distances gives the same files' values
    copy = tmp_path / "converted"
    copy.mkdir()
    for other in db3.glob("*.egdb"):
        (copy / other.name).write_bytes(other.read_bytes())
    assert egbuild.build(copy, SMALL, quiet=True, distance_pieces=2) == 0
    converted = read_values(copy)
    for s in slices_up_to(SMALL):
        assert np.array_equal(converted[s], small_values[s]), s
    # the search: a won position of a slice without distances scores below every mate, above every evaluation
    table = store.load_directory(tmp_path, SMALL).table
    pos = Position.from_fen("B:W30:B14,K5")       # two black pieces against a man: won for Black
    code = probe_position(table, pos.black, pos.white, pos.kings, pos.turn)
    assert describe(code) == "win (distance not stored)"
    searcher = Searcher(4)
    searcher.set_egdb(table)
    infos = []
    result = searcher.search(Game(pos), SearchLimits(depth=6), infos.append, np.zeros(1, dtype=np.int64))
    assert 20000 < result.score < MATE - 1000 and infos[-1].tbhits > 0


def test_ray_backend_builds_the_same_files(db3, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'uci_checkers[cluster]')")
    from uci_checkers.util.raycluster import ray_runtime_env

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env=ray_runtime_env())
    try:
        assert egbuild.build(tmp_path, SMALL, quiet=True, backend="ray") == len(slices_up_to(SMALL))
    finally:
        ray.shutdown()
    by_ray, serial = read_values(tmp_path), read_values(db3)
    for s in slices_up_to(SMALL):
        assert np.array_equal(by_ray[s], serial[s]), s
