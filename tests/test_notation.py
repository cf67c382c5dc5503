"""FEN and move text: round trips, accepted variants, and every error with its exception class."""
from __future__ import annotations

import random

import pytest

from uci_checkers.rules.notation import AmbiguousMoveError, IllegalMoveError, InvalidFenError, InvalidMoveError, NotationError, format_fen, format_path, parse_fen, parse_move_text
from uci_checkers.rules.position import Position

START = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"


# --- FEN ------------------------------------------------------------------------

def test_start_fen_round_trip():
    assert Position.start().fen() == START
    assert Position.from_fen(START) == Position.start()


@pytest.mark.parametrize("text", [
    START,
    "B:W21-32:B1-12",                                   # ranges
    "B:B1-12:W21-32",                                   # Black list first
    '[FEN "B:W21-32:B1-12"]',                           # PDN tag wrapper
    '[FEN "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"]',
    "b:w21-32:b1-12",                                   # lower case
    "  B : W21, 22, 23, 24, 25-28, 29-32 : B1-4, 5-8, 9-12  ",   # spaces
    "B:W21-32:B1-12.",                                  # trailing full stop
    "B:W21-32:B1-12:H0:F1",                             # PDN's optional clock fields
    "B:W32,31,30,29,28,27,26,25,24,23,22,21:B12,11,10,9,8,7,6,5,4,3,2,1",  # any order
])
def test_fen_variants_read_the_start(text):
    assert Position.from_fen(text) == Position.start()


@pytest.mark.parametrize("text,fen", [
    ("W:WK30,21:BK1,5", "W:W21,K30:BK1,5"),          # K marks only the square it precedes
    ("B:WK1-3:B", "B:WK1,K2,K3:B"),                     # king range, empty Black list
    ("W:W:BK5", "W:W:BK5"),                             # empty White list
    ("B:W:B", "B:W:B"),
    ("w:wk30:bk2,9", "W:WK30:BK2,9"),
])
def test_fen_kings_and_empty_lists(text, fen):
    pos = Position.from_fen(text)
    assert pos.fen() == fen
    assert Position.from_fen(pos.fen()) == pos


def test_fen_king_marks_one_square_only():
    pos = Position.from_fen("W:WK30,21:BK1,5")
    assert pos.piece_at(1) == "B" and pos.piece_at(5) == "b" and pos.piece_at(30) == "W" and pos.piece_at(21) == "w"


def test_fen_canonical_form_lists_squares_ascending_kings_marked():
    pos = Position.from_fen("W:BK5,1:WK30,21")
    assert pos.fen() == "W:W21,K30:B1,K5"
    assert pos.piece_at(5) == "B" and pos.piece_at(1) == "b" and pos.piece_at(30) == "W" and pos.piece_at(21) == "w"
    assert pos.turn == 1


def test_fen_round_trip_on_random_game_positions():
    rng = random.Random(7)
    for _ in range(30):
        pos = Position.start()
        for _ in range(100):
            assert Position.from_fen(pos.fen()) == pos
            assert parse_fen(pos.fen()) == parse_fen(format_fen(pos.black, pos.white, pos.kings, pos.turn))
            moves = pos.legal_moves()
            if not moves:
                break
            pos = pos.play(rng.choice(moves))


@pytest.mark.parametrize("text,needle", [
    ("B:W5,5:B1", "square 5 appears twice"),
    ("B:W18:B18", "square 18 appears twice"),
    ("B:W33:B1", "outside 1-32"),
    ("B:W21:B0", "outside 1-32"),
    ("B:W21-33:B1", "outside 1-32"),
    ("B:W1:B5", "White man cannot stand on square 1"),
    ("B:W21:B30", "Black man cannot stand on square 30"),
    ("B:W17-32:B1", "White has 16 pieces"),
    ("B:W21:B1-13", "Black has 13 pieces"),
    ("W21-32:B1-12", "side to move"),
    ("X:W21:B1", "side to move"),
    (":W21:B1", "side to move"),
    ("B:W21-32", "no Black piece list"),
    ("B:B1-12", "no White piece list"),
    ("B:W21:B1:W22", "White pieces twice"),
    ("B:W21:X1", "must start with 'W' or 'B'"),
    ("B:W2a:B1", "cannot read '2a'"),
    ("B:W21,,22:B1", "cannot read"),
    ("B:W25-21:B1", "runs backwards"),
    ("B::W21:B1", "empty field"),
    ("", "empty FEN"),
    ("   ", "empty FEN"),
    ('[FEN ""]', "empty FEN"),
    ("hello world", "side to move"),
])
def test_fen_errors(text, needle):
    with pytest.raises(InvalidFenError) as info:
        Position.from_fen(text)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, NotationError)


def test_fen_not_text():
    with pytest.raises(InvalidFenError):
        parse_fen(None)  # type: ignore[arg-type]


# --- move text ------------------------------------------------------------------

def test_move_text_tokenising():
    assert parse_move_text("11-15") == ([11, 15], False)
    assert parse_move_text(" 15x24x31 ") == ([15, 24, 31], True)
    assert parse_move_text("15X24") == ([15, 24], True)
    assert parse_move_text("15:24") == ([15, 24], True)
    assert format_path([15, 24, 31], True) == "15x24x31"
    assert format_path((11, 15), False) == "11-15"


@pytest.mark.parametrize("text,needle", [
    ("", "cannot read move"),
    ("11", "cannot read move"),
    ("11-", "cannot read move"),
    ("-15", "cannot read move"),
    ("11--15", "cannot read move"),
    ("a-b", "cannot read move"),
    ("11 15", "cannot read move"),
    ("11-15-", "cannot read move"),
    ("33-29", "square 33"),
    ("0-4", "square 0"),
    ("e3-d4", "cannot read move"),
])
def test_invalid_move_text(text, needle):
    with pytest.raises(InvalidMoveError) as info:
        Position.start().parse_move(text)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_move_text_not_a_string():
    with pytest.raises(InvalidMoveError):
        parse_move_text(1115)  # type: ignore[arg-type]


def test_plain_move():
    pos = Position.start()
    m = pos.parse_move("11-15")
    assert m.squares == (11, 15) and not m.is_capture and str(m) == "11-15"


def test_full_path_and_short_capture():
    pos = Position.from_fen("B:W10,19:B6")
    full = pos.parse_move("6x15x24")
    assert str(full) == "6x15x24" and full.is_capture and full.captured_squares == [10, 19]
    assert pos.parse_move("6x24") == full
    assert pos.parse_move("6-15-24") == full  # '-' and 'x' are not told apart: the squares decide


def test_every_legal_move_text_parses_back_to_itself():
    rng = random.Random(11)
    for _ in range(20):
        pos = Position.start()
        for _ in range(80):
            moves = pos.legal_moves()
            if not moves:
                break
            for m in moves:
                assert pos.parse_move(str(m)) == m
                assert pos.parse_move(str(m)).word == m.word
            pos = pos.play(rng.choice(moves))


def test_king_loop_short_form_either_way_is_accepted():
    pos = Position.from_fen("B:W9,10,17,18:BK6")
    a = pos.parse_move("6x15x22x13x6")
    b = pos.parse_move("6x13x22x15x6")
    assert a != b and str(a) == "6x15x22x13x6" and str(b) == "6x13x22x15x6"
    assert pos.play(a) == pos.play(b)
    for short in ("6x6", "6x22x6", "6x15x6"):
        assert pos.play(pos.parse_move(short)) == pos.play(a)


def test_ambiguous_short_form():
    # 10x12 could be 10x19x12 (one piece) or 10x17x26x19x12 (three pieces).
    pos = Position.from_fen("B:W14,15,K16,22,23:BK10,K11,21,K27")
    with pytest.raises(AmbiguousMoveError) as info:
        pos.parse_move("10x12")
    msg = str(info.value)
    assert "10x19x12" in msg and "10x17x26x19x12" in msg and "ambiguous" in msg
    assert isinstance(info.value, ValueError)
    # Giving enough of the path resolves it.
    assert str(pos.parse_move("10x19x12")) == "10x19x12"
    assert str(pos.parse_move("10x26x12")) == "10x17x26x19x12"
    assert pos.play(pos.parse_move("10x10")).fen() == "W:WK16:BK10,K11,21,K27"


def test_two_square_text_that_is_a_single_jump_means_that_jump():
    # 10x3 is a legal single jump; the king could also go round the loop and then jump to 3.
    pos = Position.from_fen("B:W7,14,15,22,23:BK10")
    assert sorted(str(m) for m in pos.legal_moves()) == ["10x17x26x19x10x3", "10x19x26x17x10x3", "10x3"]
    m = pos.parse_move("10x3")
    assert m.squares == (10, 3) and m.captured_squares == [7]
    loop = pos.parse_move("10x10x3")
    assert len(loop.captured_squares) == 5


@pytest.mark.parametrize("fen,text,needle", [
    (START, "11-14", "illegal move '11-14'"),
    (START, "22-18", "illegal move"),                       # a White move with Black to play
    (START, "11-15-19", "illegal move"),
    ("B:W18:B1,14", "1-5", "legal moves: 14x23"),            # capture is compulsory
    ("B:W10,19:B6", "6x15", "illegal move"),                 # the chain must go on
    ("B:W26,27:B22", "22x31x24", "illegal move"),            # crowning ends the move
    ("B:W9,14:B5", "5-9", "legal moves: none"),
])
def test_illegal_moves(fen, text, needle):
    with pytest.raises(IllegalMoveError) as info:
        Position.from_fen(fen).parse_move(text)
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text", ["١١-١٥", "１１-１５", "11\u00a0-15", "11-15\u00a0", "\u00a011-15", "11\u200b-15",
                                  "۱۱-۱۵"])
def test_move_text_accepts_ascii_only(text):
    with pytest.raises(InvalidMoveError, match="non-ASCII character U\\+"):
        parse_move_text(text)
    with pytest.raises(InvalidMoveError):
        Position.start().parse_move(text)


def test_capture_mark_times_sign_is_still_accepted():
    assert parse_move_text("15×24") == ([15, 24], True)


@pytest.mark.parametrize("text", ["B:W21-32:B1-１２", "B:W21-32:\u00a0B1-12", "B\u00a0:W21-32:B1-12",
                                  "B:W21-32:B١-١٢"])
def test_fen_accepts_ascii_only(text):
    with pytest.raises(InvalidFenError, match="non-ASCII character"):
        Position.from_fen(text)


@pytest.mark.parametrize("text", ["1" * 5000 + "-15", "11-" + "9" * 4400, "-".join(["1", "5"] * 20)])
def test_huge_or_endless_move_text_is_one_short_error(text):
    with pytest.raises(InvalidMoveError) as exc:
        parse_move_text(text)
    assert len(str(exc.value)) < 200


def test_huge_fen_number_is_one_short_error():
    with pytest.raises(InvalidFenError) as exc:
        Position.from_fen("B:W21-32:B1-" + "9" * 4400)
    assert len(str(exc.value)) < 200
