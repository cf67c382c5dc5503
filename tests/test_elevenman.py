"""The eleven-man starts are the package's own: made by a documented rule from a seed, regenerated here.

The whole deck takes minutes to make (``python -m uci_checkers.learn.elevenman``); the test makes
the starts of the first removals again (the first lines of the file) in a few seconds and checks
every start of the file against the rule's filter.
"""
from __future__ import annotations

from uci_checkers.learn import elevenman as E
from uci_checkers.rules.bitboard import BLACK
from uci_checkers.rules.position import Position

PAIRS_CHECKED = 4             # removals regenerated here: (1, 21) .. (1, 24), 8 lines of play each
REGENERATE = "out of date: python -m uci_checkers.learn.elevenman writes it again"


def test_the_first_removals_give_the_files_first_starts():
    part = E.generate(pairs=E.removals()[:PAIRS_CHECKED])
    assert part
    assert E.read_deck()[:len(part)] == part, REGENERATE
    assert E.generate(seed=E.SEED + 1, pairs=E.removals()[:1]) != E.generate(pairs=E.removals()[:1])  # the seed matters


def test_the_header_records_the_rule_and_the_weights_that_made_it():
    lines = E.shipped_path().read_text(encoding="utf-8").splitlines()
    assert lines[:len(E.header(E.SEED))] == E.header(E.SEED), REGENERATE


def test_every_start_is_eleven_men_each_balanced_black_to_move():
    deck = E.read_deck()
    assert len(deck) >= 200 and len(set(deck)) == len(deck)
    for fen in deck:
        pos = Position.from_fen(fen)
        assert pos.turn == BLACK and pos.piece_count(0) == 11 and pos.piece_count(1) == 11, fen
        assert pos.kings == 0 and not pos.is_capture_pending() and pos.fen() == fen, fen


def test_the_removals():
    pairs = E.removals()
    assert len(pairs) == len(set(pairs)) == 144
    assert E.removal_fen(1, 21) == "B:W22,23,24,25,26,27,28,29,30,31,32:B2,3,4,5,6,7,8,9,10,11,12"
    pos = Position.from_fen(E.removal_fen(12, 32))
    assert pos.piece_count(0) == pos.piece_count(1) == 11 and len(pos.legal_moves()) == 7
