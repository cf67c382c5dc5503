"""The search's quiet leaves: a side just below alpha tries its sacrifices (``QsShot``); a side without a move
has lost."""
from __future__ import annotations

import numpy as np
import pytest

from uci_checkers.rules import movegen as mg
from uci_checkers.rules.position import Position
from uci_checkers.search import alphabeta as ab
from uci_checkers.search import params as sp
from uci_checkers.search import tt as ttm


@pytest.fixture(scope="module")
def searcher() -> ab.Searcher:
    return ab.Searcher(1)


def node_value(searcher: ab.Searcher, pos: Position, plies: int, alpha: int, **params: int) -> int:
    """The kernel's value of ``pos`` searched ``plies`` deep with the null window (alpha, alpha + 1), from an
    empty table and workspace."""
    ws = np.zeros(ab.WS_SIZE, dtype=np.int64)
    ws[ab.W_PARAMS:ab.W_PARAMS + sp.N_PARAMS] = sp.pack(params)
    ws[ab.C_NODELIM] = 1 << 62
    ws[ab.C_MAXEXT] = 40
    return int(ab.search_child(pos.black, pos.white, pos.kings, pos.turn, pos.zobrist(), plies, alpha, alpha + 1, 0,
                               ws, ttm.new_table(1), searcher.egdb, np.zeros(1, dtype=np.int64),
                               searcher.ev, searcher.nn))


def leaf_value(searcher: ab.Searcher, pos: Position, alpha: int, **params: int) -> int:
    """:func:`node_value` at depth 0: a leaf."""
    return node_value(searcher, pos, 0, alpha, **params)


def quiet_leaf(fen: str) -> Position:
    pos = Position.from_fen(fen)
    assert not mg.has_capture(pos.black, pos.white, pos.kings, pos.turn)
    assert not mg.has_capture(pos.black, pos.white, pos.kings, 1 - pos.turn)
    return pos


# White to move: 23-19 gives a man (16x23), and 26x19x10x1 takes three back and crowns
SHOT = "W:W23,24,25,26,28,29,30,31:B2,3,4,5,6,7,12,15,16,21"


def test_a_side_just_below_alpha_finds_its_shot(searcher):
    pos = quiet_leaf(SHOT)
    stand = leaf_value(searcher, pos, 0, QsShot=0)
    alpha = stand + 30
    assert leaf_value(searcher, pos, alpha, QsShot=0) == stand           # off: the static score
    shot = leaf_value(searcher, pos, alpha, QsShot=4)
    assert shot > alpha + 100                                             # a man and more
    # only within the margin: far below alpha the static score stands
    assert leaf_value(searcher, pos, stand + 200, QsShot=4, QsShotMargin=150) == stand
    # above alpha there is nothing to look for
    assert leaf_value(searcher, pos, stand - 30, QsShot=4) == stand


def test_a_quiet_leaf_whose_side_cannot_move_is_lost(searcher):
    # Black's man on 5 is shut in by White's men on 9 and 14: no step, no capture, so Black has lost; a static
    # score would call it a man down and playable
    pos = quiet_leaf("B:W9,14:B5")
    assert mg.count_quiet(pos.black, pos.white, pos.kings, pos.turn) == 0
    assert leaf_value(searcher, pos, 0) <= -ab.MATE_BOUND
    assert leaf_value(searcher, pos, -ab.MATE_BOUND) == -ab.MATE + 1     # lost at the node's ply (1)


def test_a_shut_in_side_ahead_on_material_has_lost_at_any_depth(searcher):
    # Black's eight men on 21-28 cannot step or jump (White's men on 29-32 and their own men stand in the way):
    # Black has lost though eight men against five; reverse futility (depth 1-3) must not return that material
    pos = quiet_leaf("B:W5,29,30,31,32:B21,22,23,24,25,26,27,28")
    assert mg.count_quiet(pos.black, pos.white, pos.kings, pos.turn) == 0
    for plies in (0, 1, 2, 3, 6):
        assert node_value(searcher, pos, plies, -100) == -ab.MATE + 1
