"""Cross-check the numba move generator against the pure-Python reference (tests/reference.py).

On more than 10,000 seeded random positions of three kinds (full boards, sparse
king endgames, capture-heavy middle boards), both sides to move, the kernels
and the reference must give the same set of landing paths, and per path the
same captured squares, promotion flag and resulting position.  The counting
kernels (count_moves, count_captures, count_quiet, has_capture) must agree
too, and the incremental Zobrist update must equal a from-scratch hash.
"""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

import reference as ref
from uci_checkers.rules import movegen as mg
from uci_checkers.rules.bitboard import SQUARE_TO_BIT
from uci_checkers.rules.position import Move, Position

SEED = 20240613
N_PER_KIND = 3500          # three kinds -> 10,500 positions


def to_bits(board: ref.Board, side: str) -> tuple[int, int, int, int]:
    black = white = kings = 0
    for sq, p in board.items():
        bit = 1 << SQUARE_TO_BIT[sq - 1]
        if ref.colour(p) == "b":
            black |= bit
        else:
            white |= bit
        if ref.is_king(p):
            kings |= bit
    return black, white, kings, (0 if side == "b" else 1)


def _place(rng: random.Random, board: ref.Board, squares: list[int], col: str, count: int, king_p: float) -> None:
    free = [s for s in squares if s not in board]
    rng.shuffle(free)
    placed = 0
    for sq in free:
        if placed == count:
            break
        king = rng.random() < king_p
        row = ref.square_rc(sq)[0]
        if not king and row == ref.crown_row(col):
            continue  # a man never stands on its own crowning row
        board[sq] = col.upper() if king else col
        placed += 1


def full_board(rng: random.Random) -> ref.Board:
    board: ref.Board = {}
    _place(rng, board, list(range(1, 33)), "b", rng.randint(8, 12), 0.12)
    _place(rng, board, list(range(1, 33)), "w", rng.randint(8, 12), 0.12)
    return board


def king_endgame(rng: random.Random) -> ref.Board:
    board: ref.Board = {}
    _place(rng, board, list(range(1, 33)), "b", rng.randint(1, 4), 0.8)
    _place(rng, board, list(range(1, 33)), "w", rng.randint(1, 4), 0.8)
    return board


def capture_heavy(rng: random.Random) -> ref.Board:
    """Pieces crowded with gaps, so that jumps, multi-jumps, loops and crowning jumps abound."""
    board: ref.Board = {}
    all_squares = list(range(1, 33))
    if rng.random() < 0.2:
        _loop_motif(rng, board)
    for _ in range(rng.randint(3, 7)):
        # An attacker with a victim next to it and the landing square left free.
        sq = rng.choice(all_squares)
        if sq in board:
            continue
        col = rng.choice("bw")
        king = rng.random() < 0.5
        piece = col.upper() if king else col
        if not king and ref.square_rc(sq)[0] == ref.crown_row(col):
            continue
        board[sq] = piece
        r, c = ref.square_rc(sq)
        dr = rng.choice(ref.forward_rows(piece))
        dc = rng.choice((-1, 1))
        over = ref.rc_square(r + dr, c + dc)
        if over is not None and over not in board:
            enemy = ref.opponent(col)
            vk = rng.random() < 0.3 or ref.square_rc(over)[0] == ref.crown_row(enemy)
            board[over] = enemy.upper() if vk else enemy
    nb = sum(1 for p in board.values() if p.lower() == "b")
    nw = len(board) - nb
    _place(rng, board, all_squares, "b", max(0, min(12, rng.randint(4, 10)) - nb), 0.3)
    _place(rng, board, all_squares, "w", max(0, min(12, rng.randint(4, 10)) - nw), 0.3)
    return board


def _loop_motif(rng: random.Random, board: ref.Board) -> None:
    """A king and four enemy pieces around a diamond: the king can jump round it either way."""
    while True:
        r, c = rng.randint(0, 3), rng.randint(2, 5)
        if ref.rc_square(r, c) is not None:
            break
    col = rng.choice("bw")
    enemy = ref.opponent(col)
    board[ref.rc_square(r, c)] = col.upper()
    for dr, dc in ((1, 1), (3, 1), (3, -1), (1, -1)):
        sq = ref.rc_square(r + dr, c + dc)
        crowned = ref.square_rc(sq)[0] == ref.crown_row(enemy)
        board[sq] = enemy.upper() if crowned or rng.random() < 0.3 else enemy


KINDS = {"full": full_board, "kings": king_endgame, "captures": capture_heavy}


def random_positions(n_per_kind: int = N_PER_KIND, seed: int = SEED):
    rng = random.Random(seed)
    for name, make in KINDS.items():
        for _ in range(n_per_kind):
            yield name, make(rng), rng.choice("bw")


def kernel_moves(black: int, white: int, kings: int, stm: int) -> list[Move]:
    moves = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    paths = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    n = mg.gen_moves(black, white, kings, stm, moves, paths, 0)
    return [Move.from_words(int(moves[i]), int(paths[i])) for i in range(n)]


def test_reference_agrees_with_published_start_counts():
    # The reference itself must be right before it can judge the kernels.
    board, side = ref.board_from_fen("B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12")
    assert [ref.perft(board, side, d) for d in range(1, 5)] == [7, 49, 302, 1469]
    board, side = ref.board_from_fen("B:W6,7,14,15,23:BK2,K10")
    assert [ref.perft(board, side, d) for d in range(1, 5)] == [8, 30, 70, 239]


def test_kernels_match_reference_on_random_positions():
    stats = Counter()
    buf_m = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    buf_p = np.zeros(mg.MAX_MOVES, dtype=np.int64)
    for kind, board, side in random_positions():
        stats["positions"] += 1
        stats[f"stm_{side}"] += 1
        black, white, kings, stm = to_bits(board, side)
        expected = ref.legal_moves(board, side)
        got = kernel_moves(black, white, kings, stm)
        where = f"{kind} position {ref.board_to_fen(board, side)}"
        exp_by_path = {m.path: m for m in expected}
        got_by_path = {m.squares: m for m in got}
        assert len(exp_by_path) == len(expected), "reference produced a duplicate path"
        assert len(got_by_path) == len(got), f"kernel produced a duplicate path in {where}"
        assert set(got_by_path) == set(exp_by_path), (
            f"{where}: kernel-only {sorted(set(got_by_path) - set(exp_by_path))}, "
            f"reference-only {sorted(set(exp_by_path) - set(got_by_path))}")
        any_capture = any(m.is_capture for m in expected)
        for path, m in got_by_path.items():
            e = exp_by_path[path]
            assert m.is_capture == e.is_capture, f"{where} {path}"
            assert set(m.captured_squares) == set(e.captured), f"{where} {path}"
            assert m.promotes == e.promotes, f"{where} {path}"
            b2, w2, k2 = mg.make_move(black, white, kings, stm, m.word)
            assert (b2, w2, k2) == to_bits(dict(e.result), side)[:3], f"{where} {path}"
            stats["moves"] += 1
            if e.is_capture:
                stats["captures"] += 1
                stats[f"captures_{kind}"] += 1
                if len(e.captured) > 1:
                    stats["multi_jumps"] += 1
                if e.promotes:
                    stats[f"crowning_capture_{side}"] += 1
                    if len(e.captured) > 1:
                        stats["crowning_multi_jump"] += 1
                if ref.is_king(board[path[0]]):
                    stats["king_captures"] += 1
                if path[0] == path[-1]:
                    stats["back_to_start"] += 1
            elif e.promotes:
                stats["crowning_step"] += 1
        results = Counter(m.result for m in expected if m.is_capture)
        stats["same_result_pairs"] += sum(c - 1 for c in results.values())
        # Counting kernels agree with the generator.
        assert mg.count_moves(black, white, kings, stm) == len(expected), where
        assert bool(mg.has_capture(black, white, kings, stm)) == any_capture, where
        if any_capture:
            assert mg.count_captures(black, white, kings, stm) == len(expected), where
            assert mg.gen_captures(black, white, kings, stm, buf_m, buf_p, 0) == len(expected), where
        else:
            assert mg.count_quiet(black, white, kings, stm) == len(expected), where
            assert mg.gen_quiet(black, white, kings, stm, buf_m, buf_p, 0) == len(expected), where
        # Zobrist: incremental update equals the hash from scratch, for every move.
        h = mg.hash_position(black, white, kings, stm)
        for m in got:
            b2, w2, k2 = mg.make_move(black, white, kings, stm, m.word)
            assert mg.hash_position(b2, w2, k2, 1 - stm) == h ^ mg.hash_delta(black, white, kings, stm, m.word), \
                f"{where} {m}"
    # The generators must really exercise the hard cases, or the comparison proves little.
    assert stats["positions"] >= 10_000
    assert min(stats["stm_b"], stats["stm_w"]) >= 4000
    assert stats["captures"] >= 5000, stats
    assert stats["multi_jumps"] >= 500, stats
    assert stats["king_captures"] >= 1000, stats
    assert stats["crowning_capture_b"] >= 100 and stats["crowning_capture_w"] >= 100, stats
    assert stats["crowning_multi_jump"] >= 20, stats
    assert stats["crowning_step"] >= 500, stats
    assert stats["same_result_pairs"] >= 50, stats
    assert stats["back_to_start"] >= 50, stats


def _random_game_positions(rng: random.Random, start: Position, plies: int):
    pos = start
    for _ in range(plies):
        moves = pos.legal_moves()
        if not moves:
            return
        yield pos, moves
        pos = pos.play(rng.choice(moves))


def test_zobrist_incremental_along_random_games():
    rng = random.Random(SEED + 1)
    seen: dict[int, tuple] = {}
    checked = 0
    for game in range(150):
        start = Position.start()
        for pos, moves in _random_game_positions(rng, start, 120):
            h = mg.hash_position(pos.black, pos.white, pos.kings, pos.turn)
            assert h == pos.zobrist()
            key = pos.placement_key()
            # Different positions get different keys (no collision among those seen).
            assert seen.setdefault(h, key) == key, f"Zobrist collision at {pos.fen()}"
            for m in moves:
                after = pos.play(m)
                assert after.zobrist() == h ^ mg.hash_delta(pos.black, pos.white, pos.kings, pos.turn, m.word), \
                    f"{pos.fen()} {m}"
                checked += 1
    assert checked > 20_000
    # The side to move is part of the key.
    p = Position.start()
    assert p.zobrist() != Position(p.black, p.white, p.kings, 1).zobrist()


def test_random_game_positions_match_reference():
    """Positions reached in play (not just random placements) agree with the reference too."""
    rng = random.Random(SEED + 2)
    n = 0
    for game in range(40):
        for pos, moves in _random_game_positions(rng, Position.start(), 150):
            board, side = ref.board_from_fen(pos.fen())
            exp = {m.path: m.result for m in ref.legal_moves(board, side)}
            got = {m.squares: m for m in moves}
            assert set(got) == set(exp), pos.fen()
            for path, m in got.items():
                assert ref.board_from_fen(pos.play(m).fen())[0] == dict(exp[path]), f"{pos.fen()} {m}"
            n += 1
    assert n > 1000


@pytest.mark.parametrize("fen,depth", [
    ("B:WK10,17,21,22,29:B1,4,6,14,15,19,23,K26", 4),
    ("W:WK5,6,10,12:BK4,K18,K25,K26", 3),
    ("B:W6,7,14,15,23:BK2,K10", 5),
])
def test_perft_kernel_matches_reference_perft(fen, depth):
    from uci_checkers.rules.perft import perft
    board, side = ref.board_from_fen(fen)
    pos = Position.from_fen(fen)
    for d in range(depth + 1):
        assert perft(pos, d) == ref.perft(board, side, d), (fen, d)


def test_perft_kernel_on_random_positions_matches_reference():
    from uci_checkers.rules.perft import perft
    rng = random.Random(SEED + 3)
    for kind, make in KINDS.items():
        for _ in range(15):
            board, side = make(rng), rng.choice("bw")
            pos = Position.from_fen(ref.board_to_fen(board, side))
            assert perft(pos, 3) == ref.perft(board, side, 3), ref.board_to_fen(board, side)


def test_bitboard_layout_matches_reference_geometry():
    """Every diagonal step of the padded layout is a shift by 4 or 5, and ghost bits never hold a square."""
    from uci_checkers.rules.bitboard import BIT_TO_SQUARE, SQUARES, bits_to_squares, square_bit, squares_to_bits
    assert bin(SQUARES).count("1") == 32
    for ghost in (8, 17, 26):
        assert not SQUARES >> ghost & 1 and BIT_TO_SQUARE[ghost] == 0
    for sq in range(1, 33):
        b = SQUARE_TO_BIT[sq - 1]
        assert BIT_TO_SQUARE[b] == sq and square_bit(sq) == 1 << b
        r, c = ref.square_rc(sq)
        # Neighbours from the reference geometry; the layout's shifts must give exactly these.
        toward_white = {ref.rc_square(r + 1, c - 1), ref.rc_square(r + 1, c + 1)} - {None}
        toward_black = {ref.rc_square(r - 1, c - 1), ref.rc_square(r - 1, c + 1)} - {None}
        down = {BIT_TO_SQUARE[b + s] for s in (4, 5) if b + s < 64 and SQUARES >> (b + s) & 1}
        up = {BIT_TO_SQUARE[b - s] for s in (4, 5) if b - s >= 0 and SQUARES >> (b - s) & 1}
        assert down == toward_white and up == toward_black, sq
    assert bits_to_squares(squares_to_bits([1, 17, 32])) == [1, 17, 32]


def test_zobrist_keys_are_fixed():
    # Keys come from a fixed seed, so every process and every compile cache agree.
    # (Changing the seed on purpose changes this fingerprint.)
    assert Position.start().zobrist() == 4476773180182058203
    from uci_checkers.rules.bitboard import ZOBRIST_PIECE
    assert ZOBRIST_PIECE.dtype == np.int64 and (ZOBRIST_PIECE >= 0).all()
    assert len(set(ZOBRIST_PIECE[:, list(SQUARE_TO_BIT)].ravel().tolist())) == 4 * 32
