"""Perft: count the leaf nodes of the legal-move tree (the move generator's test and benchmark)."""
from __future__ import annotations

from . import movegen as mg
from .position import Move, Position


def perft(position: Position, depth: int) -> int:
    """Leaves at ``depth`` plies; every capture landing path counts as its own move."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    moves, paths = mg.new_move_buffers(depth + 2)
    return int(mg.perft_kernel(position.black, position.white, position.kings, position.turn,
                               depth, moves, paths))


def divide(position: Position, depth: int) -> list[tuple[Move, int]]:
    """Per legal move, the leaves below it at ``depth`` plies (``depth >= 1``)."""
    if depth < 1:
        raise ValueError("divide needs depth >= 1")
    return [(m, perft(position.play(m), depth - 1)) for m in position.legal_moves()]
