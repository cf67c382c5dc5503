"""Game: result checks in rules.md order, the no-progress counter, push/pop and history keys."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from uci_checkers.rules.notation import IllegalMoveError
from uci_checkers.rules.position import DEFAULT_NO_PROGRESS_PLIES, Game, GameStatus, Position

KINGS = "B:WK29,K32:BK1,K4"


def quiet_king_walk(game: Game, plies: int, seed: int = 1) -> None:
    """Push ``plies`` king moves that neither capture, allow a capture, nor make any position occur three times.

    A seeded depth-first search with backtracking, so it cannot get stuck in a corner.
    """
    rng = random.Random(seed)
    seen = Counter(p.placement_key() for p in game.positions)

    def options():
        pos = game.position
        out = []
        for m in pos.legal_moves():
            if m.is_capture or not (pos.kings >> (m.word & 63)) & 1:
                continue
            nxt = pos.play(m)
            if seen[nxt.placement_key()] >= 2 or nxt.is_capture_pending() or not nxt.has_legal_move():
                continue
            out.append(m)
        rng.shuffle(out)
        return out

    stack = [options()]
    while len(stack) <= plies:
        if not stack[-1]:
            stack.pop()
            assert stack, "no quiet king walk of that length"
            seen[game.position.placement_key()] -= 1
            game.pop()
            continue
        game.push(stack[-1].pop())
        seen[game.position.placement_key()] += 1
        stack.append(options())


def test_default_no_progress_is_80():
    assert DEFAULT_NO_PROGRESS_PLIES == 80
    assert Game().no_progress_plies == 80


def test_no_progress_draw_after_80_plies_by_default():
    game = Game(Position.from_fen(KINGS))
    quiet_king_walk(game, 79)
    assert game.quiet_plies == 79
    assert game.status() is GameStatus.ONGOING
    quiet_king_walk(game, 1, seed=2)
    assert game.quiet_plies == 80
    assert game.status() is GameStatus.DRAW_NO_PROGRESS
    assert game.status().pdn_result == "1/2-1/2"


def test_no_progress_is_configurable():
    game = Game(Position.from_fen(KINGS), no_progress_plies=10)
    quiet_king_walk(game, 9)
    assert game.status() is GameStatus.ONGOING
    quiet_king_walk(game, 1, seed=3)
    assert game.status() is GameStatus.DRAW_NO_PROGRESS


def test_no_progress_zero_switches_the_rule_off():
    game = Game(Position.from_fen(KINGS), no_progress_plies=0)
    quiet_king_walk(game, 150)
    assert game.quiet_plies == 150
    assert game.status() is GameStatus.ONGOING


def test_man_move_and_capture_reset_the_counter():
    game = Game(Position.from_fen("B:WK29,K32,18:BK1,K4,9"), no_progress_plies=6)
    quiet_king_walk(game, 4)
    assert game.quiet_plies == 4
    # A man move resets the count even though kings keep moving afterwards.
    game = Game(Position.from_fen("B:WK32:BK1,9"), no_progress_plies=6)
    game.push_text("1-5")
    game.push_text("32-27")
    assert game.quiet_plies == 2
    game.push_text("9-13")
    assert game.quiet_plies == 0
    # A capture by a king resets it too.
    game = Game(Position.from_fen("W:WK23:BK1,18"))
    game.push_text("23x14")
    assert game.moves[-1].is_capture and game.quiet_plies == 0


def test_promotion_counts_as_a_man_move():
    game = Game(Position.from_fen("W:WK32,7:BK9"), no_progress_plies=4)
    for text in ["32-27", "9-13", "27-23", "13-17"]:
        game.push_text(text)
    assert game.quiet_plies == 4 and game.status() is GameStatus.DRAW_NO_PROGRESS
    game.pop()
    game.pop()
    # Instead, White's man on 7 crowns on 2: a man move, so the count starts again.
    game.push_text("7-2")
    assert game.moves[-1].promotes and game.quiet_plies == 0
    game.push_text("13-17")
    assert game.quiet_plies == 1 and game.status() is GameStatus.ONGOING


def test_threefold_repetition_counts_the_start_position():
    game = Game(Position.from_fen(KINGS), no_progress_plies=0)
    shuffle = ["1-5", "29-25", "5-1", "25-29"]
    for text in shuffle:
        game.push_text(text)
    assert game.repetition_count() == 2
    assert game.status() is GameStatus.ONGOING
    for text in shuffle[:2]:
        game.push_text(text)
    assert game.repetition_count() == 2 and game.status() is GameStatus.ONGOING
    for text in shuffle[2:]:
        game.push_text(text)
    assert game.repetition_count() == 3   # start, after 4 plies, after 8 plies
    assert game.status() is GameStatus.DRAW_REPETITION


def test_repetition_is_checked_before_no_progress():
    game = Game(Position.from_fen(KINGS), no_progress_plies=8)
    for text in ["1-5", "29-25", "5-1", "25-29"] * 2:
        game.push_text(text)
    assert game.quiet_plies == 8 and game.repetition_count() == 3
    assert game.status() is GameStatus.DRAW_REPETITION


def test_no_legal_move_is_checked_first():
    # Black's king move 20-24 blocks White's last man; it is also the N-th quiet ply.
    game = Game(Position.from_fen("B:W28:B19,K20"), no_progress_plies=1)
    game.push_text("20-24")
    assert game.quiet_plies == 1
    assert not game.position.has_legal_move()
    assert game.status() is GameStatus.BLACK_WINS


def test_status_of_fresh_games():
    assert Game().status() is GameStatus.ONGOING
    assert not GameStatus.ONGOING.is_over and GameStatus.DRAW_REPETITION.is_over
    assert Game(Position.from_fen("B:W9,14:B5")).status() is GameStatus.WHITE_WINS


def test_push_pop_restore_everything():
    rng = random.Random(3)
    game = Game()
    snapshots = []
    for _ in range(60):
        moves = game.position.legal_moves()
        if not moves:
            break
        snapshots.append((game.position, game.quiet_plies, game.repetition_count(), game.status(),
                          len(game.moves), game.history_keys()))
        game.push(rng.choice(moves))
    assert len(game.positions) == len(game.moves) + 1
    while snapshots:
        game.pop()
        assert (game.position, game.quiet_plies, game.repetition_count(), game.status(),
                len(game.moves), game.history_keys()) == snapshots.pop()
    assert game.position == Position.start() and game.moves == []
    with pytest.raises(IndexError):
        game.pop()


def test_pop_undoes_repetition_counts():
    game = Game(Position.from_fen(KINGS), no_progress_plies=0)
    for text in ["1-5", "29-25", "5-1", "25-29"] * 2:
        game.push_text(text)
    assert game.status() is GameStatus.DRAW_REPETITION
    game.pop()
    assert game.status() is GameStatus.ONGOING
    game.push_text("25-29")
    assert game.status() is GameStatus.DRAW_REPETITION


def test_push_text_rejects_illegal_moves_and_leaves_game_unchanged():
    game = Game()
    game.push_text("11-15")
    with pytest.raises(IllegalMoveError):
        game.push_text("11-15")
    assert len(game.moves) == 1 and game.position.turn == 1


def test_from_moves_and_history_keys():
    game = Game.from_moves(None, ["11-15", "23-19", "8-11", "22-17"])
    assert [str(m) for m in game.moves] == ["11-15", "23-19", "8-11", "22-17"]
    keys = game.history_keys()
    assert len(keys) == 5
    assert keys == [p.zobrist() for p in game.positions]
    assert keys[0] == Position.start().zobrist()
    assert len(set(keys)) == 5
    game2 = Game(Position.from_fen(KINGS))
    for text in ["1-5", "29-25", "5-1", "25-29"]:
        game2.push_text(text)
    k = game2.history_keys()
    assert k[0] == k[4] and k[1] != k[3]


@pytest.mark.parametrize("module_name", ["uci_checkers.rules.position", "uci_checkers.rules.perft", "uci_checkers.rules.notation",
                                         "uci_checkers.rules.bitboard"])
def test_doctests(module_name):
    import doctest
    import importlib
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if module_name in ("uci_checkers.rules.position", "uci_checkers.rules.perft"):
        assert result.attempted > 0  # the examples in the docstrings really ran
