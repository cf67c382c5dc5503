"""Each rule of rules.md as its own test on a hand-built position.

Square geometry used to build the positions (Black at the top, moving down)::

     1   2   3   4            row 0 (Black's back row)
   5   6   7   8
     9  10  11  12
  13  14  15  16
    17  18  19  20
  21  22  23  24
    25  26  27  28
  29  30  31  32              row 7 (White's back row)
"""
from __future__ import annotations

import pytest

from uci_checkers.rules.position import Game, GameStatus, Position


def texts(fen: str) -> list[str]:
    return sorted(str(m) for m in Position.from_fen(fen).legal_moves())


def after(fen: str, move_text: str) -> str:
    pos = Position.from_fen(fen)
    return pos.play(pos.parse_move(move_text)).fen()


def test_start_has_exactly_seven_moves():
    moves = [str(m) for m in Position.start().legal_moves()]
    assert moves == ["9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16"]
    assert Position.start().turn == 0  # Black moves first


def test_men_move_forward_only():
    assert texts("B:W30:B14") == ["14-17", "14-18"]          # Black forward = toward 29-32
    assert texts("W:W14:B3") == ["14-10", "14-9"]             # White forward = toward 1-4
    assert texts("B:W30:B5") == ["5-9"]                       # side square: one neighbour forward


def test_men_capture_forward_only():
    # A White man behind the Black man cannot be jumped backwards by it.
    assert texts("B:W10:B14") == ["14-17", "14-18"]
    assert texts("W:W14:B18") == ["14-10", "14-9"]


def test_kings_move_one_square_in_four_directions():
    assert texts("B:W32:BK14") == ["14-10", "14-17", "14-18", "14-9"]
    assert texts("W:WK14:B1") == ["14-10", "14-17", "14-18", "14-9"]
    assert texts("B:W32:BK5") == ["5-1", "5-9"]


def test_kings_do_not_fly():
    # The White man on 23 is two steps away on the diagonal: no capture from a distance.
    assert texts("B:W23:BK14") == ["14-10", "14-17", "14-18", "14-9"]


def test_quiet_move_to_far_row_crowns():
    pos = Position.from_fen("B:WK1:B25")
    (m1, m2) = pos.legal_moves()
    assert m1.promotes and m2.promotes
    assert pos.play(m1).fen() == "W:WK1:BK29"
    assert after("W:W5:BK32", "5-1") == "B:WK1:BK32"
    assert not Position.from_fen("B:WK1:B21").legal_moves()[0].promotes


def test_capture_is_compulsory():
    assert texts("B:W18:B1,14") == ["14x23"]
    # Also for a king that could otherwise step anywhere.
    assert texts("W:WK30,19:B15") == ["19x10"]


def test_free_choice_among_captures_short_allowed_when_longer_exists():
    # 6x15x24 takes two pieces, 13x22 only one: both are legal (no majority rule).
    assert texts("B:W10,17,19:B6,13") == ["13x22", "6x15x24"]


def test_free_choice_within_one_piece():
    # The man on 10 may take one piece (over 14 to 17, where it must stop) or two (over 15, then 24).
    assert texts("B:W14,15,24:B10") == ["10x17", "10x19x28"]


def test_multi_jump_must_continue():
    assert texts("B:W10,19:B6") == ["6x15x24"]  # stopping on 15 is not a move
    assert after("B:W10,19:B6", "6x15x24") == "W:W:B24"


def test_black_man_crowned_mid_capture_ends_move():
    # 22x31 crowns; the new king on 31 could jump 27 but the move ends there.
    assert texts("B:W26,27:B22") == ["22x31"]
    assert after("B:W26,27:B22", "22x31") == "W:W27:BK31"


def test_white_man_crowned_mid_capture_ends_move():
    assert texts("W:W11:B6,7") == ["11x2"]
    assert after("W:W11:B6,7", "11x2") == "B:WK2:B6"


def test_crowning_capture_ends_after_several_jumps():
    # 15x24 then over 27 to 31 crowns; the king could go on over 26 to 22 but stops.
    assert texts("B:W19,26,27:B15") == ["15x24x31"]
    assert after("B:W19,26,27:B15", "15x24x31") == "W:W26:BK31"


def test_king_already_crowned_continues_capturing():
    # A king is not a man reaching the far row: its chain through the far row goes on.
    assert texts("B:W26,27:BK22") == ["22x31x24"]


def test_king_may_mix_directions():
    # Forward over 18 to 23, then backward over 19 to 16.
    assert texts("B:W18,19:BK14") == ["14x23x16"]
    assert after("B:W18,19:BK14", "14x23x16") == "W:W:BK16"
    # White: forward (toward 1-4) over 15 to 10, then backward over 14 to 17.
    assert texts("W:WK19:B14,15") == ["19x10x17"]


def test_piece_cannot_be_jumped_twice():
    # After 6x15 the king on 15 could jump 10 again back to its (now empty) start 6: not allowed.
    assert texts("B:W10:BK6") == ["6x15"]
    assert after("B:W10:BK6", "6x15") == "W:W:BK15"


def test_king_loop_gives_two_moves_with_the_same_result():
    # The king on 6 goes round 9, 10, 17, 18 either way and lands back on its start square.
    fen = "B:W9,10,17,18:BK6"
    pos = Position.from_fen(fen)
    moves = pos.legal_moves()
    assert sorted(str(m) for m in moves) == ["6x13x22x15x6", "6x15x22x13x6"]
    assert all(sorted(m.captured_squares) == [9, 10, 17, 18] for m in moves)
    assert pos.play(moves[0]) == pos.play(moves[1])
    assert pos.play(moves[0]).fen() == "W:W:BK6"


def test_men_can_jump_kings():
    assert texts("B:WK18:B14") == ["14x23"]
    assert after("B:WK18:B14", "14x23") == "W:W:B23"
    assert texts("W:W23:BK18") == ["23x14"]
    assert after("W:W23:BK18", "23x14") == "B:W14:B"


def test_jumped_pieces_are_removed_and_landing_needs_empty_square():
    assert texts("B:W18,23:B14,1") == ["1-5", "1-6", "14-17"]  # 23 occupied: no jump over 18


def test_blocked_side_loses():
    black_blocked = Game(Position.from_fen("B:W9,14:B5"))
    assert not black_blocked.position.legal_moves()
    assert black_blocked.status() is GameStatus.WHITE_WINS
    white_blocked = Game(Position.from_fen("W:W28:B19,24"))
    assert not white_blocked.position.legal_moves()
    assert white_blocked.status() is GameStatus.BLACK_WINS
    assert white_blocked.status().pdn_result == "1-0"


def test_side_without_pieces_loses():
    assert Game(Position.from_fen("W:W:B5")).status() is GameStatus.BLACK_WINS
    assert Game(Position.from_fen("B:W20:B")).status() is GameStatus.WHITE_WINS
    # Reached by play: Black's last piece is captured.
    game = Game(Position.from_fen("W:W22:B18"))
    game.push_text("22x15")
    assert game.status() is GameStatus.WHITE_WINS


@pytest.mark.parametrize("fen", ["B:W9,14:B5", "W:W28:B19,24", "W:W:B5", "B:W20:B"])
def test_no_legal_move_agrees_everywhere(fen):
    pos = Position.from_fen(fen)
    assert pos.legal_moves() == []
    assert not pos.has_legal_move()
