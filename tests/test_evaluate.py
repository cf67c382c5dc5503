"""Static evaluation: symmetry, term bookkeeping and the endgame knowledge."""
from __future__ import annotations

import random

from uci_checkers.evaluate import TERM_NAMES, evaluate, evaluation_terms
from uci_checkers.position import Position


def mirror(pos: Position) -> Position:
    """Colours swapped and the board turned round: the same position for the other side."""
    def flip(bb_squares):
        return [33 - s for s in bb_squares]
    from uci_checkers.bitboard import bits_to_squares, squares_to_bits
    black = squares_to_bits(flip(bits_to_squares(pos.white)))
    white = squares_to_bits(flip(bits_to_squares(pos.black)))
    kings = squares_to_bits(flip(bits_to_squares(pos.kings)))
    return Position(black, white, kings, 1 - pos.turn)


def random_positions(n: int, seed: int = 1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        pos = Position.start()
        for _ in range(rng.randint(0, 60)):
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))
        out.append(pos)
    return out


def test_start_is_level():
    assert evaluate(*Position.start().placement_key()) == 0


def test_terms_sum_to_total_and_match_kernel():
    for pos in random_positions(60):
        terms = evaluation_terms(pos)
        assert sum(terms[name] for name in TERM_NAMES) == terms["total"]
        assert terms["total_stm"] == evaluate(pos.black, pos.white, pos.kings, pos.turn)
        assert terms["total_stm"] == (terms["total"] if pos.turn == 0 else -terms["total"])


def test_colour_symmetry():
    for pos in random_positions(60, seed=2):
        m = mirror(pos)
        assert evaluate(pos.black, pos.white, pos.kings, pos.turn) == evaluate(m.black, m.white, m.kings, m.turn)


def test_material_and_king_value():
    up = Position.from_fen("B:W30,31:B1,2,3")
    assert evaluation_terms(up)["material"] == 100
    kings = Position.from_fen("B:WK30:BK1")
    men = Position.from_fen("B:W30:B1")
    assert evaluation_terms(kings)["material"] == 0
    assert evaluation_terms(Position.from_fen("B:W30:BK1"))["material"] > 0


def test_one_king_each_is_draw_and_two_against_one_is_winning():
    assert evaluation_terms(Position.from_fen("B:WK14:BK19"))["total"] == 0
    two = evaluation_terms(Position.from_fen("B:WK1:BK19,K23"))
    assert two["total"] > 150
    # the lone king is worse off out of its double corner
    inside = evaluation_terms(Position.from_fen("B:WK1:BK19,K23"))["endgame"]
    outside = evaluation_terms(Position.from_fen("B:WK14:BK19,K23"))["endgame"]
    assert outside > inside


def test_runaway_man_counts():
    # Black man on 24 with nothing in front: a runaway
    run = evaluation_terms(Position.from_fen("W:W29:B24"))["runaway"]
    blocked = evaluation_terms(Position.from_fen("W:W29,28:B24"))["runaway"]
    assert run > 0 and blocked < run


def test_trade_down_bonus_when_ahead():
    many = evaluation_terms(Position.from_fen("B:W21,22,23,24,25,26,27,28,29,30,31:B1,2,3,4,5,6,7,8,9,10,11,12"))
    few = evaluation_terms(Position.from_fen("B:W30:B1,2"))
    assert few["trade"] > many["trade"] >= 0
