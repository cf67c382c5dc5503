"""The learned evaluation: features against a pure-Python reference, the kernel against the
feature sum, colour symmetry, and the package weights' basic knowledge."""
from __future__ import annotations

import random

import numpy as np
import pytest

from uci_checkers.search import evaluate as E
from uci_checkers.rules.bitboard import bits_to_squares, squares_to_bits
from uci_checkers.rules.position import Position
from uci_checkers.search.weights import pattern_weights


def mirror(pos: Position) -> Position:
    """Colours swapped and the board turned round: the same position for the other side."""
    def flip(squares):
        return [33 - s for s in squares]
    return Position(squares_to_bits(flip(bits_to_squares(pos.white))),
                    squares_to_bits(flip(bits_to_squares(pos.black))),
                    squares_to_bits(flip(bits_to_squares(pos.kings))), 1 - pos.turn)


def random_positions(n: int, seed: int = 1, max_plies: int = 90):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        pos = Position.start()
        for _ in range(rng.randint(0, max_plies)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))
        out.append(pos)
    return out


# --- a slow, obviously-correct reference of the feature list -------------------------------
def _rc(square: int) -> tuple[int, int]:
    """(row, column) on the 8x8 board, row 0 = Black's back row."""
    r = (square - 1) // 4
    q = (square - 1) % 4
    return r, (2 * q + 1 if r % 2 == 0 else 2 * q)


def _square_at(r: int, c: int) -> int | None:
    if not (0 <= r < 8 and 0 <= c < 8) or (r + c) % 2 == 0:
        return None
    return 4 * r + c // 2 + 1


def reference_features(pos: Position) -> dict[int, int]:
    """Feature -> count, computed square by square from the position (see evaluate's docstring)."""
    stm = pos.turn
    me, you = ("black", "white") if stm == 0 else ("white", "black")
    pieces = {s: pos.piece_at(s) for s in range(1, 33)}     # e.g. 'b', 'B', 'w', 'W' or None

    def owner(s):
        p = pieces[s]
        return None if p is None else ("black" if p in "bB" else "white")

    def is_king(s):
        return pieces[s] is not None and pieces[s].isupper()

    def oriented(s):                     # 0-31 in the side to move's frame
        return s - 1 if stm == 0 else 32 - s

    feats: dict[int, int] = {}

    def add(f, k=1):
        feats[f] = feats.get(f, 0) + k

    by_oriented = {oriented(s): s for s in range(1, 33)}
    for band in range(3):
        for j in range(3):
            index = 0
            for i in range(4):
                for k in range(2):
                    s = by_oriented[(2 * band + i) * 4 + j + k]
                    digit = 0 if pieces[s] is None else (1 if owner(s) == me else 2)
                    index += digit * 3 ** (2 * i + k)
            add(E.F_PATTERN + (3 * band + j) * E.WINDOW_STATES + index)
    men = {side: sum(1 for s in pieces if owner(s) == side and not is_king(s)) for side in ("black", "white")}
    kings = {side: sum(1 for s in pieces if owner(s) == side and is_king(s)) for side in ("black", "white")}
    dm = max(-6, min(6, men[me] - men[you]))
    dk = max(-6, min(6, kings[me] - kings[you]))
    add(E.F_MATERIAL + (dm + 6) * 13 + dk + 6)
    add(E.F_COUNTS + ((men[me] * 7 + min(6, kings[me])) * 13 + men[you]) * 7 + min(6, kings[you]))
    for s in range(1, 33):
        if is_king(s):
            add((E.F_KING_OWN if owner(s) == me else E.F_KING_OPP) + oriented(s))

    def steps(side):
        n = 0
        for s in range(1, 33):
            if owner(s) != side:
                continue
            r, c = _rc(s)
            fwd = 1 if side == "black" else -1
            dirs = [(fwd, -1), (fwd, 1)] + ([(-fwd, -1), (-fwd, 1)] if is_king(s) else [])
            for dr, dc in dirs:
                t = _square_at(r + dr, c + dc)
                if t is not None and pieces[t] is None:
                    n += 1
        return n
    add(E.F_MOB_OWN + min(15, steps(me)))
    add(E.F_MOB_OPP + min(15, steps(you)))

    for side, base in ((me, E.F_RUN_OWN), (you, E.F_RUN_OPP)):
        for s in range(1, 33):
            if owner(s) != side or is_king(s):
                continue
            r, c = _rc(s)
            togo = 7 - r if side == "black" else r
            if not 1 <= togo <= 4:
                continue
            cone_empty = True
            for t in range(1, 33):
                r2, c2 = _rc(t)
                ahead = r2 > r if side == "black" else r2 < r
                if ahead and abs(c2 - c) <= abs(r2 - r) and pieces[t] is not None:
                    cone_empty = False
            if cone_empty:
                add(base + togo - 1)
    add(E.F_TEMPO)
    return feats


def kernel_features(pos: Position) -> dict[int, int]:
    idx = np.zeros(E.MAX_ACTIVE, dtype=np.int64)
    cnt = np.zeros(E.MAX_ACTIVE, dtype=np.int64)
    m = int(E.feature_list(pos.black, pos.white, pos.kings, pos.turn, idx, cnt))
    out: dict[int, int] = {}
    for f, k in zip(idx[:m], cnt[:m]):
        out[int(f)] = out.get(int(f), 0) + int(k)
    return out


EXTRA = ["W:W29:B24", "W:W29,28:B24", "B:WK14:BK19", "B:WK1:BK19,K23", "W:W5,6,K9:B27,K28,26",
         "B:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12", "B:W30:B1,2"]


def test_feature_list_matches_reference():
    positions = random_positions(400, seed=5) + [Position.from_fen(f) for f in EXTRA]
    for pos in positions:
        assert kernel_features(pos) == reference_features(pos), pos.fen()


def test_kernel_sums_the_features_with_random_weights():
    rng = np.random.default_rng(7)
    ev = rng.integers(-3000, 3000, size=2 * E.NF).astype(np.int64)
    for pos in random_positions(300, seed=9):
        n = int(E.phase_pieces(pos.black, pos.white))
        total = sum(k * (int(ev[2 * f]) * n + int(ev[2 * f + 1]) * (24 - n))
                    for f, k in reference_features(pos).items())
        assert E.evaluate(pos.black, pos.white, pos.kings, pos.turn, ev) == total // (24 * E.UNIT)


def test_colour_symmetry_with_any_weights():
    rng = np.random.default_rng(3)
    for ev in (pattern_weights().table, rng.integers(-5000, 5000, size=2 * E.NF).astype(np.int64)):
        for pos in random_positions(200, seed=2):
            m = mirror(pos)
            assert E.evaluate(pos.black, pos.white, pos.kings, pos.turn, ev) == \
                E.evaluate(m.black, m.white, m.kings, m.turn, ev)


def test_terms_sum_to_total_and_match_kernel():
    ev = pattern_weights().table
    for pos in random_positions(60):
        terms = E.evaluation_terms(pos, ev)
        assert sum(terms[name] for name in E.TERM_NAMES) == terms["total"]
        assert terms["total_stm"] == E.evaluate(pos.black, pos.white, pos.kings, pos.turn, ev)
        assert terms["total_stm"] == (terms["total"] if pos.turn == 0 else -terms["total"])


@pytest.mark.parametrize("fen,better", [
    ("B:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12", "B"),   # a man up
    ("W:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12", "B"),
    ("B:W30,31:BK1,K2,3", "B"),                                                  # two kings and a man vs two men
    ("B:WK30:BK1,K2", "B"),
])
def test_package_weights_know_material(fen, better):
    """The shipped weights give the side a piece up the better score (Black's view)."""
    pos = Position.from_fen(fen)
    ev = pattern_weights().table
    assert E.evaluation_terms(pos, ev)["total"] > 50 if better == "B" else E.evaluation_terms(pos, ev)["total"] < -50
